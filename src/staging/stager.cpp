// SPDX-License-Identifier: MIT
// Building a stage atomically, and checking one that is already there (docs/staging.md).
#include "copy.hpp"
#include "hash_cache.hpp"
#include "python_files.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/random.hpp>
#include <primebeaker/core/self.hpp>
#include <primebeaker/staging/stage.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace pb::staging {
namespace {

namespace stdfs = std::filesystem;

void sync_directory(const stdfs::path &dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd); // best effort: some network filesystems refuse fsync on a directory
    ::close(fd);
  }
}

// Renames `from` to `to` unless `to` exists. False when it does (another stager won).
bool rename_no_replace(const stdfs::path &from, const stdfs::path &to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return true;
  }
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {
    // A filesystem without RENAME_NOREPLACE: a plain rename still refuses a non-empty target.
    if (::rename(from.c_str(), to.c_str()) == 0) {
      return true;
    }
    err = errno;
  }
  if (err == EEXIST || err == ENOTEMPTY) {
    return false;
  }
  throw failure(fmt::format("cannot stage primebeaker at {}: {}", to.string(), std::strerror(err)));
}

// Removes a temporary stage, whatever state a failure left it in.
class TemporaryDirectory {
public:
  explicit TemporaryDirectory(stdfs::path path) : m_path(std::move(path)) {}
  ~TemporaryDirectory() {
    if (!m_path.empty()) {
      std::error_code ec;
      stdfs::remove_all(m_path, ec);
    }
  }
  TemporaryDirectory(const TemporaryDirectory &) = delete;
  TemporaryDirectory &operator=(const TemporaryDirectory &) = delete;
  const stdfs::path &path() const { return m_path; }
  void keep() { m_path.clear(); }

private:
  stdfs::path m_path;
};

// Returns the bytes it copied and wrote.
std::uintmax_t build_into(const stdfs::path &temp, const Contents &contents) {
  detail::Manifest manifest;
  const stdfs::path libraries = temp / k_library_dir;
  for (const auto &dir : {temp / "libexec", libraries}) {
    std::error_code ec;
    if (!stdfs::create_directory(dir, ec)) {
      throw failure(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    }
  }
  manifest[std::string(k_program)] =
      detail::copy_verified(contents.program, temp / k_program, 0755);
  const std::string loader_name = contents.loader.filename().string();
  manifest[fmt::format("{}/{}", k_library_dir, loader_name)] =
      detail::copy_verified(contents.loader, libraries / loader_name, 0755);
  for (const auto &library : contents.libraries) {
    const std::string name = library.filename().string();
    manifest[fmt::format("{}/{}", k_library_dir, name)] =
        detail::copy_verified(library, libraries / name, 0644);
  }
  for (const auto &file : detail::python_files()) {
    const stdfs::path target = temp / k_python_dir / file.path;
    std::error_code ec;
    stdfs::create_directories(target.parent_path(), ec);
    if (ec) {
      throw failure(
          fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message()));
    }
    manifest[fmt::format("{}/{}", k_python_dir, file.path)] = detail::write_new(
        target, std::string(reinterpret_cast<const char *>(file.data), file.size), 0644);
  }
  manifest[std::string(k_wrapper)] =
      detail::write_new(temp / k_wrapper, contents.wrapper_text, 0755);
  // Last: a stage with its manifest is complete (and the rename publishes all of it at once).
  detail::write_new(temp / k_manifest, detail::format_manifest(manifest), 0444);
  sync_directory(libraries);
  sync_directory(temp / "libexec");
  sync_directory(temp);
  std::uintmax_t bytes = 0;
  for (const auto &entry : stdfs::recursive_directory_iterator(temp)) {
    std::error_code ec;
    if (entry.is_regular_file(ec)) {
      bytes += entry.file_size(ec);
    }
  }
  return bytes;
}

} // namespace

void verify(const stdfs::path &directory, const stdfs::path &program, Verify how) {
  detail::HashCache cache(how == Verify::cached ? detail::HashCache::default_file()
                                                : stdfs::path());
  const stdfs::path manifest_path = directory / k_manifest;
  std::error_code ec;
  if (!stdfs::exists(manifest_path, ec)) {
    throw failure(fmt::format("{} exists but is not a complete stage (no {}): remove it and "
                              "submit again",
                              directory.string(),
                              k_manifest));
  }
  const auto manifest =
      detail::parse_manifest(fs::read_file(manifest_path, 1), manifest_path.string());
  for (const auto &[relative, expected] : manifest) {
    const auto actual = cache.sha256(directory / relative);
    if (actual != expected) {
      throw failure(fmt::format("stage {} is damaged: {} has sha256 {}, its {} says {}; remove "
                                "the stage and submit again",
                                directory.string(),
                                relative,
                                actual,
                                k_manifest,
                                expected));
    }
  }
  const auto staged = manifest.find(std::string(k_program));
  const std::string ours = cache.sha256(program);
  if (staged == manifest.end() || staged->second != ours) {
    throw failure(fmt::format("stage {} holds another program than this primebeaker (sha256 {}) "
                              "under the same build id; it is never overwritten: remove it, or "
                              "stage from the build that made it",
                              directory.string(),
                              ours));
  }
  cache.save(); // only what was verified: a refused stage leaves the cache as it was
  spdlog::debug("verified {}: {} of {} files hashed", directory.string(), cache.hashed(),
                manifest.size() + 1);
}

Staged RealStager::stage(const stdfs::path &directory) {
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&started] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  Staged staged{directory, directory / k_wrapper, Outcome::reused};
  std::error_code ec;
  if (stdfs::exists(directory, ec)) {
    // A reuse needs only this program to compare: loading the on-demand libraries to list them
    // (gather_contents) is for building a stage, and costs a reuse ~20 ms.
    verify(directory, self::executable(), m_verify);
    spdlog::info("reusing the stage {}", directory.string());
    staged.seconds = elapsed();
    return staged;
  }
  const Contents contents = gather_contents();
  const stdfs::path parent = directory.parent_path();
  stdfs::create_directories(parent, ec);
  if (ec) {
    throw failure(
        fmt::format("cannot stage primebeaker under {}: {}", parent.string(), ec.message()));
  }
  TemporaryDirectory temp(parent / fmt::format(".{}.tmp-{}-{}",
                                               directory.filename().string(),
                                               ::getpid(),
                                               random::hex_id().substr(0, 8)));
  if (!stdfs::create_directory(temp.path(), ec)) {
    throw failure(fmt::format("cannot stage primebeaker under {}: {}",
                              parent.string(),
                              ec ? ec.message() : std::string("already exists")));
  }
  try {
    staged.bytes_copied = build_into(temp.path(), contents);
  } catch (const Error &error) {
    throw failure(
        fmt::format("cannot stage primebeaker at {}: {}", directory.string(), error.what()));
  }
  if (!rename_no_replace(temp.path(), directory)) {
    spdlog::info("{} was staged meanwhile by another submit; checking it", directory.string());
    verify(directory, contents.program);
    staged.bytes_copied = 0; // ours was discarded: the stage there is reused
    staged.seconds = elapsed();
    return staged;
  }
  temp.keep();
  sync_directory(parent);
  spdlog::info("staged primebeaker at {}", directory.string());
  staged.outcome = Outcome::created;
  staged.seconds = elapsed();
  return staged;
}

std::string summary(const Staged &staged, const Identity &identity) {
  const std::string how =
      staged.outcome == Outcome::reused
          ? std::string("reused")
          : fmt::format("copied {:.0f} MB in {:.1f} s",
                        static_cast<double>(staged.bytes_copied) / (1024.0 * 1024.0),
                        staged.seconds);
  return fmt::format(
      "staged primebeaker {} at {} ({})", identity.version, staged.directory.string(), how);
}

std::filesystem::path tool_directory(std::string_view scratch_dir, const Tool &tool) {
  return stdfs::path(std::string(scratch_dir)) / "primebeaker" / "tools" /
         fmt::format("{}-{}", tool.name, tool.sha256.substr(0, 16));
}

std::filesystem::path staged_tool(std::string_view scratch_dir, const Tool &tool) {
  return tool_directory(scratch_dir, tool) / tool.name;
}

std::string file_sha256(const std::filesystem::path &path, Verify how) {
  if (how == Verify::full) {
    return detail::hash_file(path).hex;
  }
  detail::HashCache cache(detail::HashCache::default_file());
  return cache.sha256(path);
}

Staged Stager::stage_tool(const stdfs::path &directory, const Tool &tool) {
  Staged staged{directory, directory / tool.name, Outcome::reused};
  detail::HashCache cache(m_verify == Verify::cached ? detail::HashCache::default_file()
                                                     : stdfs::path());
  // The local file as planned: a launch plans with the hash it remembers, checked here.
  if (const auto local = cache.sha256(tool.local); local != tool.sha256) {
    throw failure(fmt::format("{} changed since the launch was planned (sha256 {}, planned {})",
                              tool.local.string(),
                              local,
                              tool.sha256));
  }
  const auto check = [&] {
    const auto manifest_path = directory / k_manifest;
    const auto manifest =
        detail::parse_manifest(fs::read_file(manifest_path, 1), manifest_path.string());
    const auto entry = manifest.find(tool.name);
    const auto actual = cache.sha256(directory / tool.name);
    if (entry == manifest.end() || entry->second != tool.sha256 || actual != tool.sha256) {
      throw failure(fmt::format("{} does not hold {} with sha256 {} (it is never overwritten): "
                                "remove it and submit again",
                                directory.string(),
                                tool.name,
                                tool.sha256));
    }
  };
  std::error_code ec;
  if (stdfs::exists(directory, ec)) {
    check();
    cache.save();
    return staged;
  }
  const stdfs::path parent = directory.parent_path();
  stdfs::create_directories(parent, ec);
  if (ec) {
    throw failure(
        fmt::format("cannot stage {} under {}: {}", tool.name, parent.string(), ec.message()));
  }
  TemporaryDirectory temp(parent / fmt::format(".{}.tmp-{}-{}",
                                               directory.filename().string(),
                                               ::getpid(),
                                               random::hex_id().substr(0, 8)));
  if (!stdfs::create_directory(temp.path(), ec)) {
    throw failure(fmt::format("cannot stage {} under {}: {}",
                              tool.name,
                              parent.string(),
                              ec ? ec.message() : std::string("already exists")));
  }
  const auto copied = detail::copy_verified(tool.local, temp.path() / tool.name, 0755);
  if (copied != tool.sha256) {
    throw failure(fmt::format("{} changed while it was staged (sha256 {}, planned {})",
                              tool.local.string(),
                              copied,
                              tool.sha256));
  }
  detail::write_new(temp.path() / k_manifest, detail::format_manifest({{tool.name, copied}}), 0444);
  sync_directory(temp.path());
  if (!rename_no_replace(temp.path(), directory)) {
    check(); // staged meanwhile by another submit
    cache.save();
    return staged;
  }
  temp.keep();
  sync_directory(parent);
  cache.save();
  spdlog::info("staged {} at {}", tool.name, directory.string());
  staged.outcome = Outcome::created;
  return staged;
}

} // namespace pb::staging
