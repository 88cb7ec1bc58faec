// SPDX-License-Identifier: MIT
// pb::proc::Child (core/subprocess.hpp): async children in their own process groups.
#include "test_support.hpp"

#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/subprocess.hpp>

#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <thread>

namespace {

using namespace std::chrono_literals;
using pb::proc::Child;
using pb::proc::Output;
using pb::proc::SpawnSpec;

SpawnSpec bash(const std::string &script) {
  SpawnSpec s;
  s.argv = {"bash", "-c", script};
  s.env = pb::env::snapshot();
  return s;
}

// Running, not merely an unreaped zombie (an orphan's reaper may be slow or absent).
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) {
    return false;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

pid_t read_pid(const std::filesystem::path &file) {
  for (int i = 0; i < 500; ++i) {
    std::error_code ec;
    if (std::filesystem::file_size(file, ec) > 0 && !ec) {
      const auto text = pb::test::read_file(file);
      if (!text.empty() && text.back() == '\n') {
        return static_cast<pid_t>(std::stoi(text));
      }
    }
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

TEST(Child, ExitStatusAndOutputToFile) {
  pb::test::TempDir dir;
  auto spec = bash("echo out; echo err >&2; exit 7");
  spec.out = Output::truncate_to(dir / "log");
  spec.err = Output::append_to(dir / "log");
  auto child = Child::spawn(spec);
  const auto status = child.wait();
  EXPECT_EQ(status.code(), 7);
  EXPECT_EQ(status.describe(), "exit code 7");
  const auto log = pb::test::read_file(dir / "log");
  EXPECT_NE(log.find("out"), std::string::npos);
  EXPECT_NE(log.find("err"), std::string::npos);
}

TEST(Child, PollIsNonBlockingAndSignalsAreReported) {
  auto child = Child::spawn(bash("sleep 30"));
  EXPECT_FALSE(child.poll());
  EXPECT_EQ(::getpgid(child.pid()), child.pid()); // leads its own group
  child.signal_group(SIGTERM);
  const auto status = child.wait();
  EXPECT_EQ(status.signal, SIGTERM);
  EXPECT_EQ(status.code(), 143);
}

TEST(Child, StopKillsTheWholeGroupIncludingGrandchildren) {
  pb::test::TempDir dir;
  // The grandchild ignores SIGTERM, so only the SIGKILL after the grace period ends it.
  auto child = Child::spawn(bash("bash -c 'trap \"\" TERM; echo $$ > " + (dir / "pid").string() +
                                 "; while :; do sleep 0.05; done' & wait"));
  const pid_t grandchild = read_pid(dir / "pid");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(alive(grandchild));
  const auto start = std::chrono::steady_clock::now();
  child.stop(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  for (int i = 0; i < 100 && alive(grandchild); ++i) {
    std::this_thread::sleep_for(10ms); // reaped by init or by us
  }
  EXPECT_FALSE(alive(grandchild));
}

TEST(Child, PipeCarriesBothStreams) {
  auto spec = bash("echo one; echo two >&2");
  spec.out = Output::pipe();
  spec.err = Output::pipe();
  auto child = Child::spawn(spec);
  std::string data;
  while (child.pipe_fd() >= 0) {
    data += child.read_available();
    std::this_thread::sleep_for(5ms);
  }
  child.wait();
  EXPECT_NE(data.find("one\n"), std::string::npos);
  EXPECT_NE(data.find("two\n"), std::string::npos);
}

TEST(Child, MissingProgramIsExit4) {
  SpawnSpec s;
  s.argv = {"pb-no-such-program-xyz"};
  s.env = pb::env::snapshot();
  EXPECT_PB_ERROR(Child::spawn(s), 4, "pb-no-such-program-xyz");
}

TEST(Child, DestructorKillsARunningChild) {
  pid_t pid = -1;
  {
    auto child = Child::spawn(bash("sleep 30"));
    pid = child.pid();
    EXPECT_TRUE(alive(pid));
  }
  EXPECT_FALSE(alive(pid));
}

TEST(Child, OrphansInOtherGroupsAreFoundAfterBecomingSubreaper) {
  pb::test::TempDir dir;
  pb::proc::become_subreaper();
  // setsid escapes the process group; the subreaper still adopts the orphan.
  auto child = Child::spawn(bash("setsid bash -c 'echo $$ > " + (dir / "pid").string() +
                                 "; sleep 30' & sleep 0.2; exit 0"));
  const pid_t escaped = read_pid(dir / "pid");
  ASSERT_GT(escaped, 0);
  child.wait();
  EXPECT_TRUE(alive(escaped));
  pb::proc::kill_remaining_children();
  EXPECT_FALSE(alive(escaped));
}

TEST(Child, UntrackedZombiesAreReapedTrackedOnesAreLeftAlone) {
  pb::test::TempDir dir;
  pb::proc::become_subreaper();
  auto tracked = Child::spawn(bash("exit 5"));
  // An orphan that exits: as subreaper we inherit it, and it turns into our zombie.
  auto parent =
      Child::spawn(bash("(echo $BASHPID > " + (dir / "pid").string() + "; sleep 0.2) & exit 0"));
  const pid_t orphan = read_pid(dir / "pid");
  ASSERT_GT(orphan, 0);
  parent.wait();
  ASSERT_TRUE(std::filesystem::exists("/proc/" + std::to_string(orphan)));
  for (int i = 0; i < 200 && alive(orphan); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(50ms); // tracked has exited by now as well
  pb::proc::reap_untracked_zombies({tracked.pid()});
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(orphan))); // reaped
  EXPECT_EQ(tracked.wait().code(), 5); // its status was not stolen
}

} // namespace
