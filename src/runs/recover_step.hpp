// SPDX-License-Identifier: MIT
// The effectful step of `follow --recover` (docs/recovery.md): after a followed experiment
// ended, decide from its ledger, wait, run `rl resume` as a child, record the resubmission.
#pragma once

#include <primebeaker/runs/recover.hpp>
#include <primebeaker/runs/runs.hpp>

#include <functional>
#include <iosfwd>
#include <string>

namespace pb::runs {

// What one follow has done so far (the ledger holds the rest).
struct RecoverState {
  int resubmissions = 0;       // by this follow: the backoff doubles with each
  RecoveriesUsed unrecorded{}; // resubmissions this follow could not write to the ledger
};

struct RecoverResult {
  std::string child; // the experiment to follow next; empty: stop with the outcome's code
  int signal = 0;    // a Ctrl-C / SIGTERM arrived while waiting (child is empty then)
};

// `run` has ended (run.outcome != running). Prints what it does to `err`.
RecoverResult recover_run(const RunView &run,
                          const RecoverOptions &options,
                          RecoverState &state,
                          BeakerCalls &beaker,
                          Clock &clock,
                          const std::function<bool(std::chrono::milliseconds)> &sleep,
                          const std::function<int()> &signal,
                          std::ostream &err);

} // namespace pb::runs
