// SPDX-License-Identifier: MIT
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::fs {

// Reads a whole file, or stdin when path is "-". Throws pb::Error with `missing_code`
// (bad_input by default) naming the path and the OS reason.
std::string read_file(const std::filesystem::path &path, int missing_code = 3);

// Writes `content` atomically: a temporary sibling created exclusively, written, fsynced,
// given the original file's mode (or `new_file_mode` masked by the umask when the file is new),
// then renamed over the target; the directory is fsynced. A symlink target is replaced, not the
// link. A device or FIFO (/dev/null, a pipe) is written in place instead: renaming over it would
// replace the device. On any failure the old file is untouched, the temporary is removed, and
// pb::Error (exit 1) names the path and the reason.
void write_file_atomic(const std::filesystem::path &path,
                       std::string_view content,
                       std::optional<mode_t> new_file_mode = std::nullopt);

// The same atomic write for content produced in pieces (never held whole): the temporary
// sibling is created on construction, written by write(), and becomes the target only on
// commit(); until then the target is untouched, and a writer destroyed without commit() removes
// its temporary. Errors are those of write_file_atomic(); a target that exists and is not a
// regular file (a device, a FIFO) is refused (exit 1), as it cannot be replaced atomically.
class AtomicWriter {
public:
  explicit AtomicWriter(const std::filesystem::path &path,
                        std::optional<mode_t> new_file_mode = std::nullopt);
  ~AtomicWriter();
  AtomicWriter(const AtomicWriter &) = delete;
  AtomicWriter &operator=(const AtomicWriter &) = delete;

  void write(std::string_view content);
  // The temporary file, complete so far (e.g. to read back what was written before commit()).
  const std::string &temporary_path() const { return m_tmp_path; }
  // Mode, fsync, rename over the target, fsync of the directory.
  void commit();
  // Removes the temporary now; the target stays untouched (also what the destructor does).
  void abandon();

private:
  std::filesystem::path m_requested;
  std::filesystem::path m_path; // the file replaced (a symlink's target)
  std::filesystem::path m_dir;
  mode_t m_mode = 0;
  std::string m_tmp_path;
  int m_fd = -1;
};

// Creates `path` (its parents too) holding `content`, only if it does not exist: written to a
// temporary sibling, fsynced, then linked into place, so that no reader sees it half-written and
// of two racing creators exactly one wins. False when `path` existed; pb::Error (exit 1) naming
// the path on any other failure.
bool create_exclusive(const std::filesystem::path &path, std::string_view content);

// The filesystem effects commands use, behind an interface so that tests can record them.
class FileSystem {
public:
  virtual ~FileSystem() = default;
  virtual std::string read_file(const std::filesystem::path &path) = 0;
  virtual void write_file_atomic(const std::filesystem::path &path, std::string_view content) = 0;
  virtual bool exists(const std::filesystem::path &path) = 0;
  // create_exclusive() above.
  virtual bool create_exclusive(const std::filesystem::path &path, std::string_view content) = 0;
  virtual bool is_directory(const std::filesystem::path &path) = 0;
  // The names in a directory, sorted; none when it is missing or unreadable.
  virtual std::vector<std::string> list_directory(const std::filesystem::path &path) = 0;
  // Removes a file; one already gone is no error.
  virtual void remove(const std::filesystem::path &path) = 0;
  // A directory and its parents; pb::Error (exit 1) "cannot create DIR: reason" when it cannot.
  virtual void create_directories(const std::filesystem::path &path) = 0;
  // Moves a file or directory to a path that does not exist; pb::Error (exit 1) "cannot move A
  // to B: reason" when it cannot.
  virtual void rename(const std::filesystem::path &from, const std::filesystem::path &to) = 0;
};

// The real thing.
class RealFileSystem final : public FileSystem {
public:
  std::string read_file(const std::filesystem::path &path) override;
  void write_file_atomic(const std::filesystem::path &path, std::string_view content) override;
  bool exists(const std::filesystem::path &path) override;
  bool create_exclusive(const std::filesystem::path &path, std::string_view content) override;
  bool is_directory(const std::filesystem::path &path) override;
  std::vector<std::string> list_directory(const std::filesystem::path &path) override;
  void remove(const std::filesystem::path &path) override;
  void create_directories(const std::filesystem::path &path) override;
  void rename(const std::filesystem::path &from, const std::filesystem::path &to) override;
};

} // namespace pb::fs
