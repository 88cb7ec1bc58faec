// SPDX-License-Identifier: MIT
// Staging (docs/staging.md) through the real binary: what a stage holds, that it runs in a root
// with no library of this machine, reuse, races, damaged and foreign stages, a second build
// beside the first, and the failures that must leave nothing behind.
#include "../../src/staging/hash_cache.hpp"
#include "test_support.hpp"

#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/staging/stage.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <fstream>
#include <thread>

namespace pb::test {
namespace {

namespace stdfs = std::filesystem;

proc::Result run_tool(const proc::Argv &argv) {
  proc::SystemRunner runner;
  proc::Command command;
  command.argv = argv;
  command.timeout = std::chrono::seconds(120);
  return runner.run(command);
}

OrderedJson stage_json(const RunResult &result) {
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return OrderedJson::parse(result.out);
}

RunResult stage(const stdfs::path &scratch) {
  return run_primebeaker({"stage", "--scratch-dir", scratch.string()});
}

// Runs `binary stage --scratch-dir scratch` for a binary other than the one under test.
proc::Result stage_with(const stdfs::path &binary, const stdfs::path &scratch) {
  return run_tool({binary.string(), "stage", "--scratch-dir", scratch.string()});
}

// The build id `readelf -n` reads from the file, to compare with what the program reads from
// its own memory.
std::string readelf_build_id(const stdfs::path &binary) {
  const auto result = run_tool({"readelf", "-n", binary.string()});
  const auto at = result.out.find("Build ID: ");
  if (!result.ok() || at == std::string::npos) {
    return {};
  }
  const auto start = at + 10;
  return result.out.substr(start, result.out.find('\n', start) - start);
}

struct FileStamp {
  stdfs::file_time_type time;
  ino_t inode = 0;
  bool operator==(const FileStamp &) const = default;
};

FileStamp stamp(const stdfs::path &path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return {stdfs::last_write_time(path), st.st_ino};
}

std::vector<std::string> entries(const stdfs::path &dir) {
  std::vector<std::string> names;
  for (const auto &entry : stdfs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool privileged_namespaces_available() {
  return ::geteuid() == 0 && run_tool({"unshare", "-m", "true"}).ok();
}

// `stage` without --scratch-dir stages where launches look: the scratch_dir of the user's config
// (PRIMEBEAKER_SCRATCH_DIR, the project or user file, else /weka), as `rl preview` renders it.
TEST(Staging, WithoutAFlagItStagesUnderTheConfiguredScratchDir) {
  TempDir tmp;
  const std::string mount = tmp.path().string();
  const stdfs::path scratch = tmp.path() / "scratch";
  write_file(tmp.path() / "xdg/primebeaker/config.toml",
             "mount_path = \"" + mount + "\"\nworking_dir = \"" + mount + "\"\nhome_dir = \"" +
                 mount + "\"\nscratch_dir = \"" + scratch.string() + "\"\n");
  write_file(tmp.path() / "rl.toml", read_file(source_dir() / "examples/rl/rl.toml"));
  RunOptions options;
  options.env = {{"XDG_CONFIG_HOME", (tmp.path() / "xdg").string()}};
  options.cwd = tmp.path();
  const auto planned = stage_json(run_primebeaker({"stage", "--dry-run"}, options));
  EXPECT_EQ(stdfs::path(planned["directory"].get<std::string>()).parent_path(),
            scratch / "primebeaker" / "bin");
  const auto preview = run_primebeaker({"rl", "preview", "--toml", "rl.toml"}, options);
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  EXPECT_EQ(OrderedJson::parse(preview.out)["spec"]["tasks"][0]["command"][0], planned["program"]);
  // The variable beats the file, the flag beats both.
  options.env["PRIMEBEAKER_SCRATCH_DIR"] = (tmp.path() / "env").string();
  const auto from_env = stage_json(run_primebeaker({"stage", "--dry-run"}, options));
  EXPECT_EQ(stdfs::path(from_env["directory"].get<std::string>()).parent_path(),
            tmp.path() / "env" / "primebeaker" / "bin");
  const auto flagged = stage_json(run_primebeaker(
      {"stage", "--dry-run", "--scratch-dir", (tmp.path() / "flag").string()}, options));
  EXPECT_EQ(stdfs::path(flagged["directory"].get<std::string>()).parent_path(),
            tmp.path() / "flag" / "primebeaker" / "bin");
  EXPECT_FALSE(stdfs::exists(scratch)) << "a dry run wrote";
}

TEST(Staging, PreviewNamesTheStageFromTheBuildIdWithoutWriting) {
  TempDir tmp;
  const auto before = tree_digest(tmp.path());
  const auto planned =
      stage_json(run_primebeaker({"stage", "--scratch-dir", tmp.path().string(), "--dry-run"}));
  EXPECT_EQ(tree_digest(tmp.path()), before) << "a dry run wrote";
  EXPECT_EQ(planned["outcome"], "planned");
  const std::string build_id = planned["build_id"];
  EXPECT_EQ(build_id, readelf_build_id(binary_path()));
  const std::string name = std::string(planned["version"]) + "-" + build_id.substr(0, 16);
  EXPECT_EQ(planned["directory"], (tmp.path() / "primebeaker" / "bin" / name).string());
  EXPECT_EQ(planned["program"],
            (tmp.path() / "primebeaker" / "bin" / name / "primebeaker").string());
  staging::Identity identity{"1.2.3", "abcdef0123456789abcdef"};
  EXPECT_EQ(staging::directory_name(identity), "1.2.3-abcdef0123456789");
  EXPECT_EQ(staging::staged_program("/weka/x/", identity),
            "/weka/x/primebeaker/bin/1.2.3-abcdef0123456789/primebeaker");
}

TEST(Staging, AStageHoldsTheProgramItsLoaderAndEveryLibraryAndVerifies) {
  TempDir tmp;
  const auto staged = stage_json(stage(tmp.path()));
  EXPECT_EQ(staged["outcome"], "created");
  const stdfs::path dir = staged["directory"].get<std::string>();
  EXPECT_EQ(entries(dir),
            (std::vector<std::string>{"SHA256SUMS", "lib", "libexec", "primebeaker", "python"}));
  // The environments' Python shim, byte for byte, every module of it.
  size_t modules = 0;
  for (const auto &entry :
       stdfs::recursive_directory_iterator(source_dir() / "python" / "primebeaker")) {
    if (entry.path().extension() == ".py") {
      ++modules;
      const auto relative = stdfs::relative(entry.path(), source_dir() / "python");
      EXPECT_EQ(read_file(dir / "python" / relative), read_file(entry.path())) << relative;
    }
  }
  EXPECT_GE(modules, 16u);
  EXPECT_EQ(read_file(dir / "libexec" / "primebeaker"), read_file(binary_path()));
  const auto libraries = entries(dir / "lib");
  for (const std::string needed : {"ld-linux-x86-64.so.2",
                                   "libc.so.6",
                                   "libcurl.so.4",
                                   "libsqlite3.so.0",
                                   "libm.so.6",
                                   "libcrypto.so.3"}) {
    EXPECT_NE(std::find(libraries.begin(), libraries.end(), needed), libraries.end())
        << needed << " not staged";
  }
  // The manifest is in sha256sum's format and covers every file.
  proc::SystemRunner runner;
  proc::Command check;
  check.argv = {"sha256sum", "--check", "--strict", "SHA256SUMS"};
  check.cwd = dir;
  const auto verified = runner.run(check);
  EXPECT_TRUE(verified.ok()) << verified.out << verified.err;
  size_t files = 0;
  for (const auto &entry : stdfs::recursive_directory_iterator(dir)) {
    files += entry.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(std::count(verified.out.begin(), verified.out.end(), '\n'), files - 1);
  // Nothing is left beside it.
  EXPECT_EQ(entries(dir.parent_path()), (std::vector<std::string>{dir.filename().string()}));
  // The staged program runs, as itself.
  const auto version = run_tool({staged["program"].get<std::string>(), "--version"});
  EXPECT_TRUE(version.ok()) << version.err;
  EXPECT_EQ(version.out, run_primebeaker({"--version"}).out);
  const auto again = run_tool({staged["program"].get<std::string>(),
                               "stage",
                               "--scratch-dir",
                               tmp.path().string(),
                               "--dry-run"});
  EXPECT_EQ(OrderedJson::parse(again.out)["directory"], staged["directory"])
      << "the staged program names another stage than its source";
}

TEST(Staging, AStageIsReusedWithoutARewrite) {
  TempDir tmp;
  const auto first = stage_json(stage(tmp.path()));
  const stdfs::path dir = first["directory"].get<std::string>();
  const auto program = stamp(dir / "libexec" / "primebeaker");
  const auto manifest = stamp(dir / "SHA256SUMS");
  const auto second = stage_json(stage(tmp.path()));
  EXPECT_EQ(second["outcome"], "reused");
  EXPECT_EQ(second["directory"], first["directory"]);
  EXPECT_EQ(stamp(dir / "libexec" / "primebeaker"), program);
  EXPECT_EQ(stamp(dir / "SHA256SUMS"), manifest);
}

// How many files a reuse hashed, from `-vv`'s "verified DIR: N of M files hashed".
std::string hashed_of(const RunResult &result) {
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const auto at = result.err.find(": ", result.err.find("verified "));
  const auto end = result.err.find(" files hashed", at);
  return at == std::string::npos || end == std::string::npos
             ? result.err
             : result.err.substr(at + 2, end - at - 2);
}

// A reuse hashes only what changed since this machine last verified it (docs/staging.md
// "Reuse"); --verify-stage hashes everything; a file damaged after a remembered verification is
// still refused (its ctime moved).
TEST(Staging, AReuseHashesOnlyWhatChangedSinceItWasLastVerified) {
  TempDir tmp;
  RunOptions options;
  options.env["XDG_CACHE_HOME"] = (tmp.path() / "cache").string();
  const auto args = [&](std::vector<std::string> more) {
    std::vector<std::string> argv = {"-vv", "stage", "--scratch-dir", (tmp.path() / "s").string()};
    argv.insert(argv.end(), more.begin(), more.end());
    return argv;
  };
  const stdfs::path dir =
      stage_json(run_primebeaker(args({}), options))["directory"].get<std::string>();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100)); // past the racy second
  const auto first = hashed_of(run_primebeaker(args({}), options));
  const std::string all = first.substr(first.find(" of ") + 4);
  EXPECT_EQ(first, all + " of " + all) << "nothing was remembered yet";
  EXPECT_TRUE(stdfs::exists(tmp.path() / "cache/primebeaker/verified-sha256.json"));
  EXPECT_EQ(hashed_of(run_primebeaker(args({}), options)), "0 of " + all);
  EXPECT_EQ(hashed_of(run_primebeaker(args({"--verify-stage"}), options)), all + " of " + all);

  // Damaged after a remembered verification, with its mtime put back: refused all the same.
  const auto library = dir / "lib" / "libc.so.6";
  struct stat before {};
  ASSERT_EQ(::stat(library.c_str(), &before), 0);
  {
    std::fstream file(library, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096);
    file.put('\x5b');
  }
  const struct utimbuf times {before.st_atime, before.st_mtime};
  ASSERT_EQ(::utime(library.c_str(), &times), 0);
  const auto refused = run_primebeaker(args({}), options);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find(" is damaged: lib/libc.so.6 has sha256"), std::string::npos)
      << refused.err;
}

TEST(StagingHashCache, RemembersSettledFilesByTheirStateOnly) {
  TempDir tmp;
  const stdfs::path cache_file = tmp.path() / "cache.json";
  const stdfs::path settled = tmp.path() / "settled";
  write_file(settled, "one");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const stdfs::path fresh = tmp.path() / "fresh";
  write_file(fresh, "new");
  {
    staging::detail::HashCache cache(cache_file);
    EXPECT_EQ(cache.sha256(settled), sha2::sha256_hex("one"));
    EXPECT_EQ(cache.sha256(fresh), sha2::sha256_hex("new"));
    EXPECT_EQ(cache.hashed(), 2u);
    cache.save();
  }
  {
    staging::detail::HashCache cache(cache_file);
    EXPECT_EQ(cache.sha256(settled), sha2::sha256_hex("one"));
    EXPECT_EQ(cache.hashed(), 0u) << "a settled file is remembered";
    EXPECT_EQ(cache.sha256(fresh), sha2::sha256_hex("new"));
    EXPECT_EQ(cache.hashed(), 1u) << "a file changed in the second before hashing is not";
  }
  // The same size and mtime, other bytes: its ctime tells.
  struct stat before {};
  ASSERT_EQ(::stat(settled.c_str(), &before), 0);
  write_file(settled, "two");
  const struct utimbuf times {before.st_atime, before.st_mtime};
  ASSERT_EQ(::utime(settled.c_str(), &times), 0);
  staging::detail::HashCache cache(cache_file);
  EXPECT_EQ(cache.sha256(settled), sha2::sha256_hex("two"));
  EXPECT_EQ(cache.hashed(), 1u);
  // A damaged cache file is an empty cache, not an error.
  write_file(cache_file, "{not json");
  staging::detail::HashCache damaged(cache_file);
  EXPECT_EQ(damaged.sha256(settled), sha2::sha256_hex("two"));
  EXPECT_EQ(damaged.hashed(), 1u);
}

TEST(Staging, ConcurrentStagingsLeaveOneCompleteStage) {
  TempDir tmp;
  constexpr int k_stagers = 4;
  std::vector<RunResult> results(k_stagers);
  std::vector<std::thread> threads;
  for (int i = 0; i < k_stagers; ++i) {
    threads.emplace_back([&, i] { results[i] = stage(tmp.path()); });
  }
  for (auto &thread : threads) {
    thread.join();
  }
  int created = 0;
  std::string directory;
  for (const auto &result : results) {
    const auto json = stage_json(result);
    created += json["outcome"] == "created" ? 1 : 0;
    directory = json["directory"];
  }
  EXPECT_EQ(created, 1);
  EXPECT_EQ(entries(stdfs::path(directory).parent_path()),
            (std::vector<std::string>{stdfs::path(directory).filename().string()}))
      << "a temporary stage was left behind";
  const auto verified = stage_json(stage(tmp.path()));
  EXPECT_EQ(verified["outcome"], "reused");
}

TEST(Staging, ADamagedStageIsRefusedAndNotRepaired) {
  TempDir tmp;
  const stdfs::path dir = stage_json(stage(tmp.path()))["directory"].get<std::string>();
  const auto library = dir / "lib" / "libc.so.6";
  {
    std::fstream file(library, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096);
    file.put('\x5a');
  }
  const auto damaged = read_file(library);
  const auto refused = stage(tmp.path());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("primebeaker: error: stage " + dir.string() +
                             " is damaged: lib/libc.so.6 has sha256"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_EQ(read_file(library), damaged) << "the stage was repaired in place";
}

TEST(Staging, ADifferentProgramUnderTheSameNameIsRefused) {
  TempDir tmp;
  const stdfs::path dir = stage_json(stage(tmp.path()))["directory"].get<std::string>();
  // A consistent stage (manifest and files agree) of another program under this build's name.
  const auto program = dir / "libexec" / "primebeaker";
  std::string bytes = read_file(program);
  bytes += "another build";
  stdfs::permissions(program, stdfs::perms::owner_write, stdfs::perm_options::add);
  write_file(program, bytes, 0755);
  stdfs::permissions(dir / "SHA256SUMS", stdfs::perms::owner_write, stdfs::perm_options::add);
  proc::SystemRunner runner;
  proc::Command sums;
  sums.argv = {"sh",
               "-c",
               "find . -type f ! -name SHA256SUMS | sed 's|^./||' | sort | "
               "xargs sha256sum > SHA256SUMS"};
  sums.cwd = dir;
  ASSERT_TRUE(runner.run(sums).ok());
  const auto refused = stage(tmp.path());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("holds another program than this primebeaker"), std::string::npos)
      << refused.err;
  EXPECT_EQ(read_file(program), bytes) << "another build's stage was overwritten";
}

// Another build: the same program with another build id patched into its note.
stdfs::path another_build(const stdfs::path &dir) {
  const std::string id = readelf_build_id(binary_path());
  std::string bytes = read_file(binary_path());
  std::string raw;
  for (size_t i = 0; i + 1 < id.size(); i += 2) {
    raw += static_cast<char>(std::stoi(id.substr(i, 2), nullptr, 16));
  }
  const auto at = bytes.find(raw);
  EXPECT_NE(at, std::string::npos);
  for (size_t i = 0; i < raw.size(); ++i) {
    bytes[at + i] = static_cast<char>(~bytes[at + i]);
  }
  const auto path = dir / "primebeaker-other-build";
  write_file(path, bytes, 0755);
  return path;
}

TEST(Staging, ASecondBuildIsStagedBesideTheFirst) {
  TempDir tmp;
  const auto scratch = tmp / "scratch";
  const stdfs::path first = stage_json(stage(scratch))["directory"].get<std::string>();
  const auto first_digest = tree_digest(first);
  const auto other = another_build(tmp.path());
  const auto result = stage_with(other, scratch);
  ASSERT_TRUE(result.ok()) << result.err;
  const auto second = OrderedJson::parse(result.out);
  EXPECT_EQ(second["outcome"], "created");
  EXPECT_NE(second["directory"], first.string());
  EXPECT_EQ(stdfs::path(second["directory"].get<std::string>()).parent_path(), first.parent_path());
  EXPECT_EQ(tree_digest(first), first_digest) << "the first build's stage changed";
  for (const auto &program :
       {first / "primebeaker", stdfs::path(second["program"].get<std::string>())}) {
    EXPECT_TRUE(run_tool({program.string(), "--version"}).ok()) << program;
  }
}

// Runs `script` (sh) in a mount namespace of its own, so that it may mount.
proc::Result in_mount_namespace(const std::string &script) {
  return run_tool({"unshare", "-m", "sh", "-c", script});
}

TEST(Staging, AReadOnlyMountIsOneLineAndNothingWritten) {
  if (!privileged_namespaces_available()) {
    GTEST_SKIP() << "needs root and unshare -m";
  }
  TempDir tmp;
  const auto mount = tmp / "ro";
  stdfs::create_directories(mount);
  const auto result =
      in_mount_namespace("mount -t tmpfs -o ro,size=1m tmpfs '" + mount.string() + "' && '" +
                         binary_path().string() + "' stage --scratch-dir '" + mount.string() + "'");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("primebeaker: error: cannot stage primebeaker under " +
                            (mount / "primebeaker" / "bin").string()),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("Read-only file system"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

TEST(Staging, AFullDiskIsOneLineAndLeavesNoHalfStage) {
  if (!privileged_namespaces_available()) {
    GTEST_SKIP() << "needs root and unshare -m";
  }
  TempDir tmp;
  const auto mount = tmp / "small";
  stdfs::create_directories(mount);
  const auto result = in_mount_namespace(
      "mount -t tmpfs -o size=2m tmpfs '" + mount.string() + "' && { '" + binary_path().string() +
      "' stage --scratch-dir '" + mount.string() + "'; echo \"exit=$?\"; ls -A '" +
      (mount / "primebeaker" / "bin").string() + "'; }");
  EXPECT_NE(result.out.find("exit=1\n"), std::string::npos) << result.out << result.err;
  EXPECT_TRUE(result.out.ends_with("exit=1\n")) << "left in the bin directory: " << result.out;
  EXPECT_NE(result.err.find("No space left on device"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

// The acceptance test of docs/staging.md: a root holding only the stage, /proc, /dev/null and
// a static shell runs the staged program: nothing of this machine's libraries is there.
TEST(Staging, TheStagedProgramRunsInARootWithNoLibraryOfThisMachine) {
  if (!privileged_namespaces_available() || !stdfs::exists("/bin/busybox")) {
    GTEST_SKIP() << "needs root, unshare -m and a static shell (busybox-static)";
  }
  TempDir tmp;
  const auto root = tmp / "root";
  for (const auto *dir : {"bin", "proc", "dev", "weka"}) {
    stdfs::create_directories(root / dir);
  }
  stdfs::copy_file("/bin/busybox", root / "bin" / "sh");
  write_file(root / "dev" / "null", "");
  write_file(root / "weka" / "rl.toml", "# a comment\n[trainer]\nmax_steps = 42 # why\n");
  const auto staged = stage_json(stage(root / "weka"));
  const std::string inside =
      staged["program"].get<std::string>().substr(root.string().size()); // /weka/primebeaker/...
  // Only the shell, the stage and the two mount points are in the root.
  size_t outside_stage = 0;
  for (const auto &entry : stdfs::recursive_directory_iterator(root)) {
    const auto text = entry.path().string();
    if (entry.is_regular_file() && text.find("/weka/primebeaker/") == std::string::npos) {
      ++outside_stage;
    }
  }
  EXPECT_EQ(outside_stage, 3u) << "sh, dev/null and rl.toml only";
  const std::string r = root.string();
  const auto result =
      in_mount_namespace("mount -t proc proc '" + r + "/proc' && mount --bind /dev/null '" + r +
                         "/dev/null' && exec chroot '" + r + "' /bin/sh -c '" + inside +
                         " --version && " + inside + " toml get /weka/rl.toml trainer.max_steps'");
  ASSERT_TRUE(result.ok()) << result.out << result.err;
  EXPECT_EQ(result.out, run_primebeaker({"--version"}).out + "42\n");
  // Its SHA-256 (core/sha2.hpp): the staged libcrypto.so.3 verifies the stage for reuse; a copy
  // of the stage without it, in a root with no other, falls back to our own code and stages
  // again, every file hashed right (sha256sum checks the new manifest). (Under ASan, what the
  // staged loader allocates for dlopen in the root is reported by LeakSanitizer as ours.)
  const stdfs::path stage_dir = staged["directory"].get<std::string>();
  const stdfs::path bare = root / "weka" / "bare";
  stdfs::copy(stage_dir, bare, stdfs::copy_options::recursive);
  ASSERT_TRUE(stdfs::remove(bare / "lib" / "libcrypto.so.3"));
  const auto hashed =
      in_mount_namespace("mount -t proc proc '" + r + "/proc' && mount --bind /dev/null '" + r +
                         "/dev/null' && exec chroot '" + r +
                         "' /bin/sh -c 'export ASAN_OPTIONS=detect_leaks=0; " + inside +
                         " stage --scratch-dir /weka && /weka/bare/primebeaker stage --scratch-dir "
                         "/weka/again'");
  ASSERT_TRUE(hashed.ok()) << hashed.out << hashed.err;
  const auto reused = hashed.out.find("\"outcome\": \"reused\"");
  EXPECT_NE(reused, std::string::npos) << hashed.out;
  EXPECT_NE(hashed.out.find("\"outcome\": \"created\"", reused), std::string::npos) << hashed.out;
  const stdfs::path again = root / "weka" / "again" / "primebeaker" / "bin" / stage_dir.filename();
  EXPECT_FALSE(stdfs::exists(again / "lib" / "libcrypto.so.3"));
  proc::Command check;
  check.argv = {"sha256sum", "--check", "--strict", "--quiet", "SHA256SUMS"};
  check.cwd = again;
  const auto verified = proc::SystemRunner().run(check);
  EXPECT_TRUE(verified.ok()) << verified.out << verified.err;
}

// The wrapper's contract, with a stand-in loader that prints what it was given.
TEST(Staging, TheWrapperRunsTheLoaderOnTheProgramAndExportsItself) {
  TempDir tmp;
  const auto dir = tmp / "stage dir";
  write_file(dir / "lib" / "ld-stand-in",
             "#!/bin/sh\nprintf '%s|' \"$@\"; echo \"BIN=$PRIMEBEAKER_BIN PY=$PYTHONPATH\"\n",
             0755);
  write_file(dir / "primebeaker", staging::wrapper_text({"1.0", "ab"}, "ld-stand-in"), 0755);
  const auto wrapper = (dir / "primebeaker").string();
  const auto result = run_tool({wrapper, "toml", "get", "a b"});
  ASSERT_TRUE(result.ok()) << result.err;
  const std::string d = dir.string();
  EXPECT_EQ(result.out,
            "--library-path|" + d + "/lib|--argv0|" + wrapper + "|" + d +
                "/libexec/primebeaker|toml|get|a b|BIN=" + wrapper + " PY=" + d + "/python\n");
  proc::SystemRunner runner;
  proc::Command preset;
  preset.argv = {wrapper};
  preset.env_set = {{"PRIMEBEAKER_BIN", "/elsewhere/primebeaker"}, {"PYTHONPATH", "/site"}};
  const auto kept = runner.run(preset).out;
  EXPECT_TRUE(kept.ends_with("BIN=/elsewhere/primebeaker PY=" + d + "/python:/site\n")) << kept;
}

} // namespace
} // namespace pb::test
