// SPDX-License-Identifier: MIT
// Terminating signals noted instead of obeyed, for as long as a scope lives, so that a command
// can clean up what it started (stop a service experiment, signal a child's process group)
// before it exits 128 + signal. The node runtime, the evaluation submission and the evaluation
// worker all need this; one scope may be alive at a time (the state is process-wide).
#pragma once

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

namespace pb::signals {

struct ScopeOptions {
  bool hangup = false;           // note SIGHUP too, not only SIGINT and SIGTERM
  bool child_exit_wakes = false; // SIGCHLD (never noted) wakes sleep() at once
};

// While alive, SIGINT and SIGTERM (and SIGHUP when asked) are noted instead of killing the
// process, and wake sleep(). The previous dispositions come back when the scope ends.
class Scope {
public:
  Scope() : Scope(ScopeOptions{}) {}
  explicit Scope(ScopeOptions options);
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

  // The first terminating signal noted since the scope began, 0 for none.
  static int pending();
  // Up to `duration`, returning early when a signal arrives (or input on `extra_fds`).
  static void sleep(std::chrono::milliseconds duration, const std::vector<int> &extra_fds = {});
  // Throws pb::Error exit 128 + signal, "interrupted (SIGINT) <what>", when one is pending.
  static void throw_if_pending(const std::string &what);

private:
  std::vector<int> m_signals;
  std::vector<struct sigaction> m_previous;
};

// "SIGINT", "SIGTERM", "SIGHUP", "SIGCHLD", else "a signal".
const char *name(int signal);

} // namespace pb::signals
