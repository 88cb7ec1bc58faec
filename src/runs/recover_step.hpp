// SPDX-License-Identifier: MIT
// The effectful step of `follow --recover` (docs/recovery.md): after a followed experiment
// ended, decide from its ledger, wait, run `rl resume` as a child, record the resubmission.
#pragma once

#include <primebeaker/runs/recover.hpp>
#include <primebeaker/runs/runs.hpp>

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>

namespace pb::runs {

// What one follow has done so far (the ledger holds the rest).
struct RecoverState {
  int resubmissions = 0; // by this follow: the backoff doubles with each
  // What a controller reports in the ledger's controller.json (empty dir: nothing yet).
  std::filesystem::path ledger_dir;
  std::string last_action;
};

struct RecoverResult {
  std::string child; // the experiment to follow next; empty: stop with the outcome's code
  int signal = 0;    // a Ctrl-C / SIGTERM arrived while waiting (child is empty then)
  bool not_recoverable = false; // stop with k_exit_not_recoverable
  // `rl resume` kept failing in a way that may pass (beaker down, the source not finalized):
  // a controller, which nobody watches, tries again later instead of ending.
  bool retry_later = false;
  bool budget_spent = false; // not resubmitted: past its budget (docs/notify.md)
};

// "1m00s", "15s", "250ms".
std::string wait_text(std::chrono::milliseconds wait);

// `run` has ended (run.outcome != running). Prints what it does to `err`.
RecoverResult recover_run(const RunView &run,
                          const RecoverOptions &options,
                          RecoverState &state,
                          beaker::Client &beaker,
                          Clock &clock,
                          const std::function<bool(std::chrono::milliseconds)> &sleep,
                          const std::function<int()> &signal,
                          std::ostream &err);

} // namespace pb::runs
