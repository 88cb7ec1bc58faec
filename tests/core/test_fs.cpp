// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

namespace {

mode_t mode_of(const std::filesystem::path &p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

TEST(AtomicWrite, ReplacesContentAndKeepsMode) {
  pb::test::TempDir dir;
  const auto file = dir / "a.toml";
  pb::test::write_file(file, "old\n", 0640);
  pb::fs::write_file_atomic(file, "new\n");
  EXPECT_EQ(pb::test::read_file(file), "new\n");
  EXPECT_EQ(mode_of(file), 0640U);
  // No temporary left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(AtomicWrite, NewFileGetsRequestedModeUnderUmask) {
  pb::test::TempDir dir;
  const mode_t old = ::umask(022);
  pb::fs::write_file_atomic(dir / "spec.json", "{}", 0666);
  ::umask(old);
  EXPECT_EQ(mode_of(dir / "spec.json"), 0644U);
}

TEST(AtomicWrite, WritesThroughSymlinkKeepingTheLink) {
  pb::test::TempDir dir;
  pb::test::write_file(dir / "real.toml", "a = 1\n");
  std::filesystem::create_symlink("real.toml", dir / "link.toml");
  pb::fs::write_file_atomic(dir / "link.toml", "a = 2\n");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.toml"));
  EXPECT_EQ(pb::test::read_file(dir / "real.toml"), "a = 2\n");
}

TEST(AtomicWrite, RefusingDirectoryLeavesOldFileIntact) {
  if (::geteuid() == 0) {
    // root ignores directory permissions; use a full-path failure instead.
    pb::test::TempDir dir;
    EXPECT_PB_ERROR(pb::fs::write_file_atomic(dir / "missing-dir" / "x", "y"), 1, "missing-dir/x");
    return;
  }
  pb::test::TempDir dir;
  pb::test::write_file(dir / "sub" / "a.toml", "keep\n");
  std::filesystem::permissions(
      dir / "sub", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  EXPECT_PB_ERROR(pb::fs::write_file_atomic(dir / "sub" / "a.toml", "lost\n"), 1, "sub/a.toml");
  EXPECT_EQ(pb::test::read_file(dir / "sub" / "a.toml"), "keep\n");
}

TEST(AtomicWrite, ErrorNamesThePath) {
  pb::test::TempDir dir;
  EXPECT_PB_ERROR(pb::fs::write_file_atomic(dir / "nope" / "x.json", "{}"), 1, "nope/x.json");
}

TEST(AtomicWriter, PiecesBecomeTheFileOnlyOnCommit) {
  pb::test::TempDir dir;
  const auto file = dir / "a.toml";
  pb::test::write_file(file, "old\n", 0640);
  {
    pb::fs::AtomicWriter writer(file);
    writer.write("new ");
    writer.write("text\n");
    EXPECT_EQ(pb::test::read_file(writer.temporary_path()), "new text\n");
    EXPECT_EQ(pb::test::read_file(file), "old\n");
  } // destroyed without commit(): the temporary goes, the file stays
  EXPECT_EQ(pb::test::read_file(file), "old\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
  pb::fs::AtomicWriter abandoned(file);
  abandoned.write("lost\n");
  abandoned.abandon();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
  EXPECT_PB_ERROR(abandoned.commit(), 1, "a.toml");
  pb::fs::AtomicWriter writer(file);
  writer.write("new\n");
  writer.commit();
  EXPECT_EQ(pb::test::read_file(file), "new\n");
  EXPECT_EQ(mode_of(file), 0640U);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

// Renaming a temporary over /dev/null (as root) would turn it into a regular file for the whole
// machine: devices and FIFOs are written in place, and the streaming writer refuses them.
TEST(AtomicWrite, FifoIsWrittenInPlaceNotReplaced) {
  pb::test::TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  pb::fs::write_file_atomic(fifo, "data\n");
  char buffer[64] = {};
  const ssize_t n = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<size_t>(n) : 0), "data\n");
  EXPECT_TRUE(std::filesystem::is_fifo(std::filesystem::symlink_status(fifo)));
  EXPECT_PB_ERROR(pb::fs::AtomicWriter{fifo}, 1, "pipe: not a regular file");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(ReadFile, MissingFileIsBadInputNamingIt) {
  const auto error = pb::test::thrown_error([] { pb::fs::read_file("/nonexistent/file.toml"); });
  EXPECT_EQ(error.code(), 3);
  EXPECT_STREQ(error.what(), "cannot read /nonexistent/file.toml: No such file or directory");
}

TEST(ReadFile, ReadsBinaryExactly) {
  pb::test::TempDir dir;
  const std::string bytes("\xEF\xBB\xBF"
                          "a = 1\r\n\0b",
                          11);
  pb::test::write_file(dir / "f", bytes);
  EXPECT_EQ(pb::fs::read_file(dir / "f"), bytes);
}

TEST(ReadFile, ReadsWhatHasNoSizeAndEmptyFiles) {
  pb::test::TempDir dir;
  pb::test::write_file(dir / "empty", "");
  EXPECT_EQ(pb::fs::read_file(dir / "empty"), "");
  // Longer than the 4 KB a file without a size starts with, so the buffer grows.
  std::string expected;
  for (int i = 0; i < 3000; ++i) {
    expected += std::to_string(i) + '\n';
  }
  pb::test::write_file(dir / "long", expected);
  const auto fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&fifo, &expected] { pb::test::write_file(fifo, expected); });
  EXPECT_EQ(pb::fs::read_file(fifo), expected); // a pipe: no size, many short reads
  writer.join();
  EXPECT_EQ(pb::fs::read_file(dir / "long"), expected);
  // /proc reports size 0 for text that is there.
  EXPECT_NE(pb::fs::read_file("/proc/self/status").find("Name:"), std::string::npos);
}

} // namespace
