// SPDX-License-Identifier: MIT
// `services images install` end to end with fake docker, beaker, pip and build script: every
// external step is recorded with its time, so the tests assert the exact command sequence.
#include "fake_literegistry.hpp"
#include "test_support.hpp"

#include <primebeaker/core/text.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace pb::test {
namespace {

using nlohmann::json;

// docker, pip and the build script log "<nanoseconds> <name> <args>"; beaker's calls are the fake
// beaker's records, which carry the same clock.
const char *k_log_call = "echo \"$(date +%s%N) $(basename \"$0\") $*\" >> \"$SEQ_LOG\"\n";

class ImagesInstall : public ::testing::Test {
protected:
  void SetUp() override {
    write_fake_literegistry(m_dir / "py", "0.1.2", "0.2.13");
    m_fakes.add("docker",
                std::string(k_log_call) +
                    "if [ \"$1\" = image ]; then tag=\"${@: -1}\"; echo \"sha256:${tag%%:*}\"; fi");
    FakeAnswer image{"[{\"id\": \"01-{5}\"}]\n"}; // `image create sha256:... --name NAME ...`
    image.expand_arguments = true;
    m_beaker.on({"account", "whoami"}, "").on_sequence({"image", "create"}, {image});
    m_fakes.add("pip",
                std::string(k_log_call) +
                    "dest=''; prev=''; for a in \"$@\"; do [ \"$prev\" = --dest ] && dest=$a; "
                    "prev=$a; done\n"
                    "spec=\"${@: -1}\"; name=\"${spec%%==*}\"; ver=\"${spec##*==}\"\n"
                    "top=\"${name//-/_}-$ver\"; tmp=$(mktemp -d)\n"
                    "mkdir -p \"$tmp/$top/scripts\" && cp \"$FAKE_BUILD_SCRIPT\" "
                    "\"$tmp/$top/scripts/build-images.sh\"\n"
                    "if [ -n \"$FAKE_EVIL_ARCHIVE\" ]; then python3 -c 'import sys, tarfile, io\n"
                    "with tarfile.open(sys.argv[1], \"w:gz\") as t:\n"
                    "  i = tarfile.TarInfo(\"../evil\"); i.size = 1; t.addfile(i, "
                    "io.BytesIO(b\"x\"))' \"$dest/$top.tar.gz\";\n"
                    "else tar -czf \"$dest/$top.tar.gz\" -C \"$tmp\" \"$top\"; fi\n"
                    "echo 'pip progress on stdout'");
    write_file(
        build_script(),
        "#!/bin/bash\n"
        "echo \"$(date +%s%N) build-images.sh '$1' $2 DOCKER_BIN=$DOCKER_BIN "
        "PULL_BASES=$PULL_BASES "
        "BUILD_LOCAL_SEARCH=$BUILD_LOCAL_SEARCH JTC_BUILD_CONTEXT=${JTC_BUILD_CONTEXT-unset} "
        "cwd=$(basename \"$(pwd)\")\" >> \"$SEQ_LOG\"\n"
        "echo 'build progress on stdout'\n",
        0755);
    // A local checkout holding both companion packages.
    for (const char *name : {"literegistry_base_deployment", "literegistry_podman_beaker"}) {
      write_file(m_dir / "checkout" / name / "scripts" / "build-images.sh",
                 read_file(build_script()),
                 0755);
    }
  }

  std::filesystem::path build_script() const { return m_dir / "build-images.sh"; }

  RunResult run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), {"services", "images", "install"});
    RunOptions options;
    options.env = {{"PYTHONPATH", (m_dir / "py").string()},
                   {"SEQ_LOG", (m_dir / "seq.log").string()},
                   {"FAKE_BUILD_SCRIPT", build_script().string()}};
    for (auto &[name, value] : env) {
      options.env[name] = value;
    }
    options.path_prepend = {m_fakes.bin()};
    options.cwd = m_dir.path();
    return run_primebeaker(args, options);
  }

  // Every external call in the order they were made, as "<name> <args>".
  std::vector<std::string> sequence() const {
    std::vector<std::pair<long long, std::string>> timed;
    if (std::filesystem::exists(m_dir / "seq.log")) {
      for (const auto &line : pb::text::split(read_file(m_dir / "seq.log"), '\n')) {
        if (const auto space = line.find(' '); space != std::string::npos) {
          timed.emplace_back(std::stoll(line.substr(0, space)), line.substr(space + 1));
        }
      }
    }
    for (const auto &call : m_beaker.calls()) {
      timed.emplace_back(call.time_ns, pb::text::join(call.argv, " "));
    }
    std::sort(timed.begin(), timed.end());
    std::vector<std::string> lines;
    for (auto &[time, line] : timed) {
      lines.push_back(std::move(line));
    }
    return lines;
  }

  TempDir m_dir;
  FakeBin m_fakes{m_dir.path() / "fakes"};
  FakeBeaker m_beaker{m_fakes};
};

std::vector<std::string> publish(const std::string &local,
                                 const std::string &beaker_name,
                                 const std::string &version,
                                 const std::string &workspace) {
  return {"docker image inspect --format {{.Id}} " + local + ":" + version,
          "beaker image create sha256:" + local + " --name " + beaker_name + " --workspace " +
              workspace + " --format json"};
}

TEST_F(ImagesInstall, PodmanFromSourceRootRunsTheExactSequence) {
  const auto result = run({"--workspace",
                           "ai2/test",
                           "--stack",
                           "podman",
                           "--source-root",
                           (m_dir / "checkout").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> expected = {
      "docker version",
      "beaker account whoami",
      "build-images.sh '' 0.2.13 DOCKER_BIN=docker PULL_BASES=1 BUILD_LOCAL_SEARCH=0 "
      "JTC_BUILD_CONTEXT=unset cwd=literegistry_podman_beaker"};
  for (const auto &[local, name] : std::vector<std::pair<std::string, std::string>>{
           {"literegistry-redis", "literegistry-redis-podman-0-2-13"},
           {"literegistry-podman-gateway", "literegistry-podman-gateway-0-2-13"},
           {"literegistry-podman-server", "literegistry-podman-server-0-2-13"},
           {"literegistry-docker-mirror", "literegistry-docker-mirror-0-2-13"}}) {
    for (auto &line : publish(local, name, "0.2.13", "ai2/test")) {
      expected.push_back(line);
    }
  }
  EXPECT_EQ(sequence(), expected);
  // stdout is only the result; build output went to stderr.
  EXPECT_EQ(json::parse(result.out), json::parse(R"({"workspace": "ai2/test", "stacks": {"podman": {
              "distribution": "literegistry-podman-beaker", "version": "0.2.13",
              "launcher_args": {"redis_image": "01-literegistry-redis-podman-0-2-13",
                                "gateway_image": "01-literegistry-podman-gateway-0-2-13",
                                "podman_image": "01-literegistry-podman-server-0-2-13",
                                "docker_mirror_image": "01-literegistry-docker-mirror-0-2-13"}}}})"));
  EXPECT_NE(result.err.find("build progress on stdout"), std::string::npos);
  EXPECT_NE(result.err.find("services images: podman: publishing"), std::string::npos);
}

TEST_F(ImagesInstall, AllStacksFromPipWithLocalSearch) {
  write_file(m_dir / "jtc" / "search" / "README", "x");
  const auto result = run({"--workspace=ai2/test",
                           "--build-local-search",
                           "--jtc-build-context",
                           "jtc",
                           "--no-pull-bases",
                           "--docker-bin",
                           "docker"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto seq = sequence();
  const std::string jtc = (m_dir / "jtc").string();
  ASSERT_GE(seq.size(), 4U);
  EXPECT_EQ(seq[0], "docker version");
  EXPECT_EQ(seq[1], "beaker account whoami");
  EXPECT_TRUE(seq[2].starts_with("pip download --no-deps --no-binary :all: --dest "));
  EXPECT_TRUE(seq[2].ends_with("/base/download literegistry-base-deployment==0.1.2")) << seq[2];
  EXPECT_EQ(seq[3],
            "build-images.sh '' 0.1.2 DOCKER_BIN=docker PULL_BASES=0 BUILD_LOCAL_SEARCH=1 "
            "JTC_BUILD_CONTEXT=" +
                jtc + " cwd=literegistry_base_deployment-0.1.2");
  // Base publishes five images (Redis named by stack) before podman is built.
  ASSERT_EQ(seq.size(), 4U + 10U + 2U + 8U);
  EXPECT_EQ(seq[4],
            publish("literegistry-redis", "literegistry-redis-base-0-1-2", "0.1.2", "ai2/test")[0]);
  EXPECT_EQ(seq[13],
            publish("jtc-local-search-lucene-bm25",
                    "jtc-local-search-lucene-bm25-0-1-2",
                    "0.1.2",
                    "ai2/test")[1]);
  EXPECT_TRUE(seq[14].ends_with("/podman/download literegistry-podman-beaker==0.2.13")) << seq[14];
  EXPECT_EQ(seq[15],
            "build-images.sh '' 0.2.13 DOCKER_BIN=docker PULL_BASES=0 BUILD_LOCAL_SEARCH=0 "
            "JTC_BUILD_CONTEXT=" +
                jtc + " cwd=literegistry_podman_beaker-0.2.13");
  const auto out = json::parse(result.out);
  EXPECT_EQ(out["stacks"]["base"]["launcher_args"]["local_search_image"],
            "01-jtc-local-search-lucene-bm25-0-1-2");
  EXPECT_EQ(out["stacks"]["base"]["launcher_args"].size(), 5U);
  EXPECT_EQ(out["stacks"]["podman"]["launcher_args"].size(), 4U);
  EXPECT_EQ(result.out.find("progress on stdout"), std::string::npos);
  // The temporary build directory is gone.
  for (const auto &entry :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    EXPECT_FALSE(entry.path().filename().string().starts_with("primebeaker-literegistry-images-") &&
                 std::filesystem::exists(entry.path() / "base" / "download" /
                                         "literegistry_base_deployment-0.1.2.tar.gz"));
  }
}

TEST_F(ImagesInstall, ValidationRunsNothing) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--workspace=ai2/test", "--stack=gpu"},
       "--stack must be one of: all, base, podman (not 'gpu')"},
      {{"--workspace= "}, "--workspace must be a non-empty Beaker workspace"},
      {{"--workspace=ai2/test", "--stack=podman", "--build-local-search", "--jtc-build-context=x"},
       "--build-local-search belongs to the base stack, not --stack podman"},
      {{"--workspace=ai2/test", "--build-local-search"},
       "--jtc-build-context is required with --build-local-search"},
  };
  for (const auto &[args, message] : cases) {
    const auto result = run(args);
    EXPECT_EQ(result.exit_code, 2) << message;
    EXPECT_EQ(result.err, "primebeaker: error: " + message + "\n");
  }
  EXPECT_TRUE(sequence().empty());
}

TEST_F(ImagesInstall, MissingExecutablesAndFailingChecksStopEarly) {
  auto result = run({"--workspace=ai2/test", "--docker-bin=no-such-docker"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.err, "primebeaker: error: required executable was not found: no-such-docker\n");
  EXPECT_TRUE(sequence().empty());
  m_beaker.clear().on({"account", "whoami"}, "", 1, "not logged in\n");
  result = run({"--workspace=ai2/test", "--stack=base"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("[\"beaker\",\"account\",\"whoami\"] failed (exit code 1)"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("not logged in"), std::string::npos);
  EXPECT_EQ(sequence(), (std::vector<std::string>{"docker version", "beaker account whoami"}));
}

TEST_F(ImagesInstall, CompanionMustBeInstalled) {
  std::filesystem::remove_all(m_dir / "py" / "literegistry_podman_beaker-0.2.13.dist-info");
  const auto result = run({"--workspace=ai2/test", "--stack=podman"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("literegistry-podman-beaker is not installed for python3"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("python3 -m pip install literegistry-podman-beaker"),
            std::string::npos);
}

TEST_F(ImagesInstall, SourceRootWithoutTheScriptIsRefused) {
  const auto result = run({"--workspace=ai2/test", "--stack=base", "--source-root", "nowhere"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("primebeaker: error: could not find literegistry_base_deployment/"
                            "scripts/build-images.sh under " +
                            (m_dir / "nowhere").string() + "\n"),
            std::string::npos)
      << result.err;
}

TEST_F(ImagesInstall, UnsafeArchiveIsNotUnpacked) {
  const auto result = run({"--workspace=ai2/test", "--stack=podman"}, {{"FAKE_EVIL_ARCHIVE", "1"}});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("unsafe path in "), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(": ../evil"), std::string::npos) << result.err;
  for (const auto &line : sequence()) {
    EXPECT_FALSE(line.starts_with("build-images.sh")) << line;
  }
}

} // namespace
} // namespace pb::test
