// SPDX-License-Identifier: MIT
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace pb::fs {

// Reads a whole file, or stdin when path is "-". Throws pb::Error with `missing_code`
// (bad_input by default) naming the path and the OS reason.
std::string read_file(const std::filesystem::path &path, int missing_code = 3);

// Writes `content` atomically: a temporary sibling created exclusively, written, fsynced,
// given the original file's mode (or `new_file_mode` masked by the umask when the file is new),
// then renamed over the target; the directory is fsynced. A symlink target is replaced, not the
// link. On any failure the old file is untouched, the temporary is removed, and pb::Error (exit 1)
// names the path and the reason.
void write_file_atomic(const std::filesystem::path &path,
                       std::string_view content,
                       std::optional<mode_t> new_file_mode = std::nullopt);

// The filesystem effects commands use, behind an interface so that tests can record them.
class FileSystem {
public:
  virtual ~FileSystem() = default;
  virtual std::string read_file(const std::filesystem::path &path) = 0;
  virtual void write_file_atomic(const std::filesystem::path &path, std::string_view content) = 0;
  virtual bool exists(const std::filesystem::path &path) = 0;
};

// The real thing.
class RealFileSystem final : public FileSystem {
public:
  std::string read_file(const std::filesystem::path &path) override;
  void write_file_atomic(const std::filesystem::path &path, std::string_view content) override;
  bool exists(const std::filesystem::path &path) override;
};

} // namespace pb::fs
