// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/signals.hpp>

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;

TEST(SignalScope, NotesTheFirstSignalAndRestoresTheDispositions) {
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  {
    const pb::signals::Scope scope;
    EXPECT_EQ(pb::signals::Scope::pending(), 0);
    ::raise(SIGTERM); // would end the test binary without the scope
    ::raise(SIGINT);
    EXPECT_EQ(pb::signals::Scope::pending(), SIGTERM);
    EXPECT_PB_ERROR(pb::signals::Scope::throw_if_pending("while testing"),
                    143,
                    "interrupted (SIGTERM) while testing");
  }
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST(SignalScope, ASignalWakesSleepAtOnce) {
  const pb::signals::Scope scope(pb::signals::ScopeOptions{.hangup = true});
  ::raise(SIGHUP);
  const auto start = std::chrono::steady_clock::now();
  pb::signals::Scope::sleep(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(pb::signals::Scope::pending(), SIGHUP);
  EXPECT_STREQ(pb::signals::name(SIGHUP), "SIGHUP");
}

TEST(SignalScope, ChildExitWakesSleepWithoutBeingNoted) {
  const pb::signals::Scope scope(pb::signals::ScopeOptions{.child_exit_wakes = true});
  ::raise(SIGCHLD);
  const auto start = std::chrono::steady_clock::now();
  pb::signals::Scope::sleep(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(pb::signals::Scope::pending(), 0);
}

TEST(SignalScope, SleepsTheFullTimeWithoutASignal) {
  const pb::signals::Scope scope;
  const auto start = std::chrono::steady_clock::now();
  pb::signals::Scope::sleep(50ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 45ms);
}

} // namespace
