// SPDX-License-Identifier: MIT
#include "copy.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/sha2.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace pb::staging::detail {
namespace {

constexpr size_t k_chunk = 1 << 20;

class Fd {
public:
  explicit Fd(int fd) : m_fd(fd) {}
  ~Fd() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return m_fd; }
  int release() {
    const int fd = m_fd;
    m_fd = -1;
    return fd;
  }

private:
  int m_fd;
};

Error os_error(std::string_view what, const std::filesystem::path &path, int err) {
  return failure(fmt::format("{} {}: {}", what, path.string(), std::strerror(err)));
}

int open_read(const std::filesystem::path &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw os_error("cannot read", path, errno);
  }
  return fd;
}

// Reads the whole of `fd`, handing each piece to `sink`.
template <typename Sink>
std::uintmax_t read_all(int fd, const std::filesystem::path &path, Sink &&sink) {
  std::vector<char> buffer(k_chunk);
  std::uintmax_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw os_error("cannot read", path, errno);
    }
    if (n == 0) {
      return total;
    }
    sink(std::string_view(buffer.data(), static_cast<size_t>(n)));
    total += static_cast<std::uintmax_t>(n);
  }
}

void write_all(int fd, const std::filesystem::path &path, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw os_error("cannot write", path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

int create_new(const std::filesystem::path &path, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    throw os_error("cannot create", path, errno);
  }
  if (::fchmod(fd, mode) != 0) { // the umask does not decide whether the loader can run
    const int err = errno;
    ::close(fd);
    throw os_error("cannot set the mode of", path, err);
  }
  return fd;
}

void sync_and_close(Fd &fd, const std::filesystem::path &path) {
  if (::fsync(fd.get()) != 0) {
    throw os_error("cannot write", path, errno);
  }
  if (::close(fd.release()) != 0) {
    throw os_error("cannot write", path, errno);
  }
}

} // namespace

FileHash hash_file(const std::filesystem::path &path) {
  Fd fd(open_read(path));
  sha2::Sha256 hasher;
  FileHash out;
  out.size = read_all(fd.get(), path, [&](std::string_view piece) { hasher.update(piece); });
  out.hex = sha2::hex(hasher.finish());
  return out;
}

std::string
copy_verified(const std::filesystem::path &from, const std::filesystem::path &to, mode_t mode) {
  Fd in(open_read(from));
  Fd out(create_new(to, mode));
  sha2::Sha256 hasher;
  read_all(in.get(), from, [&](std::string_view piece) {
    hasher.update(piece);
    write_all(out.get(), to, piece);
  });
  sync_and_close(out, to);
  const std::string read = sha2::hex(hasher.finish());
  const std::string written = hash_file(to).hex;
  if (written != read) {
    throw failure(fmt::format("the copy of {} at {} reads back differently (sha256 {} != {})",
                              from.string(),
                              to.string(),
                              written,
                              read));
  }
  return read;
}

std::string write_new(const std::filesystem::path &to, const std::string &content, mode_t mode) {
  Fd out(create_new(to, mode));
  write_all(out.get(), to, content);
  sync_and_close(out, to);
  return sha2::sha256_hex(content);
}

std::string format_manifest(const Manifest &manifest) {
  std::string text;
  for (const auto &[path, hex] : manifest) {
    text += fmt::format("{}  {}\n", hex, path);
  }
  return text;
}

Manifest parse_manifest(const std::string &text, const std::string &source) {
  Manifest manifest;
  size_t line_start = 0;
  int line_number = 0;
  while (line_start < text.size()) {
    ++line_number;
    size_t end = text.find('\n', line_start);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string_view line(text.data() + line_start, end - line_start);
    line_start = end + 1;
    const bool hex_ok =
        line.size() > 66 && line.substr(64, 2) == "  " &&
        line.substr(0, 64).find_first_not_of("0123456789abcdef") == std::string_view::npos;
    if (!hex_ok) {
      throw failure(fmt::format("{}:{}: not a sha256sum line", source, line_number));
    }
    manifest[std::string(line.substr(66))] = std::string(line.substr(0, 64));
  }
  return manifest;
}

} // namespace pb::staging::detail
