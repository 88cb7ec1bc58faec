// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/random.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <iterator>
#include <sstream>
#include <vector>

namespace pb::fs {
namespace {

std::string os_reason(int err) {
  return std::strerror(err);
}

Error write_error(const std::filesystem::path &path, const std::string &what, int err) {
  return failure(fmt::format("cannot write {}: {}: {}", path.string(), what, os_reason(err)));
}

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

// The file a write should replace: follows symlinks so the link itself survives.
std::filesystem::path write_target(const std::filesystem::path &path) {
  std::error_code ec;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) {
    auto resolved = std::filesystem::weakly_canonical(path, ec);
    if (!ec) {
      return resolved;
    }
  }
  return path;
}

// Devices and FIFOs (/dev/null, a pipe) are written in place: renaming a temporary over them
// would replace the device itself with a regular file.
bool is_special(const std::filesystem::path &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

void write_all(int fd, std::string_view content) {
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw errno;
    }
    written += static_cast<size_t>(n);
  }
}

} // namespace

std::string read_file(const std::filesystem::path &path, int missing_code) {
  if (path == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(missing_code, fmt::format("cannot read {}: {}", path.string(), os_reason(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(missing_code, fmt::format("cannot read {}: Is a directory", path.string()));
  }
  // Read straight into the result: one byte more than the size fstat gave, so a file read
  // whole is known to be at its end after one more read() that returns 0; a file that grows, or
  // reports no size (/proc, pipes), grows the buffer. (A stack buffer here cost a copy and, at
  // 64 KB, pushed the callers' frames onto fresh stack pages at every start.)
  std::string content(st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 4096, '\0');
  size_t size = 0;
  for (;;) {
    if (size == content.size()) {
      content.resize(content.size() * 2);
    }
    const ssize_t n = ::read(fd, content.data() + size, content.size() - size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(missing_code, fmt::format("cannot read {}: {}", path.string(), os_reason(err)));
    }
    if (n == 0) {
      break;
    }
    size += static_cast<size_t>(n);
  }
  ::close(fd);
  content.resize(size);
  return content;
}

AtomicWriter::AtomicWriter(const std::filesystem::path &requested,
                           std::optional<mode_t> new_file_mode)
    : m_requested(requested), m_path(write_target(requested)), m_dir(m_path.parent_path()) {
  if (m_dir.empty()) {
    m_dir = ".";
  }
  m_mode = new_file_mode.value_or(0666) & ~current_umask();
  struct stat existing {};
  if (::stat(m_path.c_str(), &existing) == 0) {
    if (S_ISDIR(existing.st_mode)) {
      throw failure(fmt::format("cannot write {}: Is a directory", requested.string()));
    }
    if (!S_ISREG(existing.st_mode)) {
      throw failure(fmt::format("cannot write {}: not a regular file", requested.string()));
    }
    m_mode = existing.st_mode & 07777;
  }
  std::string tmpl = (m_dir / ("." + m_path.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  m_fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (m_fd < 0) {
    throw write_error(requested, "cannot create a temporary file in " + m_dir.string(), errno);
  }
  m_tmp_path = name.data();
}

AtomicWriter::~AtomicWriter() {
  abandon();
}

void AtomicWriter::abandon() {
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
  if (!m_tmp_path.empty()) {
    ::unlink(m_tmp_path.c_str());
    m_tmp_path.clear();
  }
}

void AtomicWriter::write(std::string_view content) {
  if (m_fd < 0) {
    throw write_error(m_requested, "write failed", EBADF);
  }
  try {
    write_all(m_fd, content);
  } catch (const int err) {
    abandon();
    throw write_error(m_requested, "write failed", err);
  }
}

void AtomicWriter::commit() {
  auto fail = [&](const std::string &what) {
    const int err = errno;
    abandon();
    return write_error(m_requested, what, err);
  };
  if (m_fd < 0) {
    errno = EBADF;
    throw fail("write failed");
  }
  if (::fchmod(m_fd, m_mode) != 0) {
    throw fail("cannot set the file mode");
  }
  if (::fsync(m_fd) != 0) {
    throw fail("fsync failed");
  }
  const int fd = m_fd;
  m_fd = -1;
  if (::close(fd) != 0) {
    throw fail("close failed");
  }
  if (::rename(m_tmp_path.c_str(), m_path.c_str()) != 0) {
    throw fail("rename failed");
  }
  m_tmp_path.clear();
  // Durability of the rename itself; failure here does not undo a completed write.
  const int dir_fd = ::open(m_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void write_file_atomic(const std::filesystem::path &requested,
                       std::string_view content,
                       std::optional<mode_t> new_file_mode) {
  if (is_special(write_target(requested))) {
    const int fd = ::open(requested.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      throw write_error(requested, "cannot open", errno);
    }
    try {
      write_all(fd, content);
    } catch (const int err) {
      ::close(fd);
      throw write_error(requested, "write failed", err);
    }
    ::close(fd);
    return;
  }
  AtomicWriter writer(requested, new_file_mode);
  writer.write(content);
  writer.commit();
}

bool create_exclusive(const std::filesystem::path &path, std::string_view content) {
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw failure(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  }
  const std::filesystem::path tmp =
      dir / fmt::format(".{}.{}.{}.tmp", path.filename().string(), ::getpid(), random::hex_id(8));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw write_error(tmp, "cannot create", errno);
  }
  try {
    write_all(fd, content);
    if (::fsync(fd) != 0) {
      throw errno;
    }
  } catch (const int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw write_error(tmp, "write failed", err);
  }
  ::close(fd);
  // link(2), unlike rename(2), never replaces: of two racing creators exactly one wins.
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0) {
    if (link_errno == EEXIST) {
      return false;
    }
    throw write_error(path, "cannot create", link_errno);
  }
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return true;
}

std::string RealFileSystem::read_file(const std::filesystem::path &path) {
  return fs::read_file(path);
}

void RealFileSystem::write_file_atomic(const std::filesystem::path &path,
                                       std::string_view content) {
  fs::write_file_atomic(path, content);
}

bool RealFileSystem::exists(const std::filesystem::path &path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

bool RealFileSystem::create_exclusive(const std::filesystem::path &path, std::string_view content) {
  return fs::create_exclusive(path, content);
}

bool RealFileSystem::is_directory(const std::filesystem::path &path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

std::vector<std::string> RealFileSystem::list_directory(const std::filesystem::path &path) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(path, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void RealFileSystem::remove(const std::filesystem::path &path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

void RealFileSystem::create_directories(const std::filesystem::path &path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    throw failure(fmt::format("cannot create {}: {}", path.string(), ec.message()));
  }
}

void RealFileSystem::rename(const std::filesystem::path &from, const std::filesystem::path &to) {
  std::error_code ec;
  std::filesystem::rename(from, to, ec);
  if (ec) {
    throw failure(
        fmt::format("cannot move {} to {}: {}", from.string(), to.string(), ec.message()));
  }
}

} // namespace pb::fs
