// SPDX-License-Identifier: MIT
// Ctrl-C and SIGTERM while following: remembered, so the follow loop can say how to re-attach
// and exit 130/143. Nothing is stopped (docs/runs.md "follow").
#pragma once

#include <primebeaker/runs/runs.hpp>

#include <csignal>

namespace pb::runs {

// While alive, SIGINT and SIGTERM set a flag instead of killing the process.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard &) = delete;
  InterruptGuard &operator=(const InterruptGuard &) = delete;
  // The last signal received while a guard was alive, 0 for none.
  static int signal();

private:
  struct sigaction m_old_int {};
  struct sigaction m_old_term {};
};

// Real time: the system clock, a sleep that wakes up early on a remembered signal.
Timing interruptible_timing();

} // namespace pb::runs
