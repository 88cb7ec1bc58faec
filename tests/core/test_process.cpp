// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/process.hpp>

#include <gtest/gtest.h>

#include <csignal>

namespace {

using pb::proc::Command;

TEST(SystemRunner, ArgumentsArriveVerbatim) {
  Command c;
  c.argv = {"printf", "%s|", "a b", "$(touch x)", "`id`", "'q'", "-n", "é", ""};
  const auto r = pb::proc::SystemRunner().run(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r.out, "a b|$(touch x)|`id`|'q'|-n|é||");
}

TEST(SystemRunner, StdinAndExitCodeAndStderr) {
  Command c;
  c.argv = {"bash", "-c", "cat; echo oops >&2; exit 7"};
  c.stdin_data = std::string(200000, 'x'); // larger than a pipe buffer
  const auto r = pb::proc::SystemRunner().run(c);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out.size(), 200000U);
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_EQ(r.status(), "exit code 7");
}

// A child that ends before it reads its input: the rest is dropped, and this process lives on
// even where SIGPIPE has its default action (a test binary's, unlike the CLI's).
TEST(SystemRunner, AChildThatReadsNoInputEndsCleanly) {
  const auto previous = std::signal(SIGPIPE, SIG_DFL);
  for (int i = 0; i < 20; ++i) { // the child must be gone before the write, some of the times
    Command c;
    c.argv = {"bash", "-c", "exit 2"};
    c.stdin_data = std::string(1 << 20, 'x');
    const auto r = pb::proc::SystemRunner().run(c);
    EXPECT_EQ(r.exit_code, 2);
  }
  std::signal(SIGPIPE, previous);
}

TEST(SystemRunner, EnvironmentChangesAndCwd) {
  pb::test::TempDir dir;
  Command c;
  c.argv = {"bash", "-c", "echo \"$PB_X|${HOME-unset}|$(pwd)\""};
  c.env_set = {{"PB_X", "v a l"}};
  c.env_unset = {"HOME"};
  c.cwd = dir.path();
  const auto r = pb::proc::SystemRunner().run(c);
  EXPECT_EQ(r.out, "v a l|unset|" + dir.path().string() + "\n");
}

TEST(SystemRunner, MissingProgramIsToolError) {
  Command c;
  c.argv = {"pb-definitely-missing-program"};
  const auto error = pb::test::thrown_error([&] { pb::proc::SystemRunner().run(c); });
  EXPECT_EQ(error.code(), 4);
  EXPECT_STREQ(error.what(), "cannot run pb-definitely-missing-program: not found on PATH");
}

TEST(SystemRunner, TimeoutKillsTheChild) {
  Command c;
  c.argv = {"sleep", "10"};
  c.timeout = std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  const auto r = pb::proc::SystemRunner().run(c);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(FindExecutable, SearchesPathInOrder) {
  pb::test::TempDir dir;
  pb::test::write_file(dir / "a" / "tool", "#!/bin/sh\n", 0755);
  pb::test::write_file(dir / "b" / "tool", "#!/bin/sh\n", 0755);
  pb::test::write_file(dir / "b" / "plain", "not executable", 0644);
  const std::string path = (dir / "a").string() + ":" + (dir / "b").string();
  EXPECT_EQ(pb::proc::find_executable("tool", path), dir / "a" / "tool");
  EXPECT_FALSE(pb::proc::find_executable("plain", path));
  EXPECT_FALSE(pb::proc::find_executable("absent", path));
}

} // namespace
