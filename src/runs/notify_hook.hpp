// SPDX-License-Identifier: MIT
// Private to runs: what `follow --recover` and the recovery controller post about the run they
// watch (docs/notify.md "Who posts"): its end, each preemption, each resubmission and a spent
// budget, claimed in the run's ledger so that two watchers post once.
#pragma once

#include "recover_step.hpp"

#include <primebeaker/runs/runs.hpp>

#include <map>
#include <string>

namespace pb::runs {

class RunNotifier {
public:
  explicit RunNotifier(const RecoverOptions &options) : m_options(options) {}
  // Waits a few seconds at most for posts still in flight: the process is about to end.
  ~RunNotifier();
  // The followed experiment ended (preempted, failed, succeeded or stopped).
  void ended(const RunView &run);
  // What the recovery of `run` did: a resubmission, or a spent budget.
  void recovered(const RunView &run, const RecoverResult &result);

private:
  void post(const RunView &run,
            const std::string &event,
            const std::string &experiment_id,
            const std::string &previous,
            const std::string &detail);
  const RecoverOptions &m_options;
  std::map<std::string, RunView> m_seen; // the chain's experiments this follow saw end
};

} // namespace pb::runs
