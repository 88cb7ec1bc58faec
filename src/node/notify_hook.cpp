// SPDX-License-Identifier: MIT
// `node single`'s notifications (docs/notify.md "Who posts").
#include "notify_hook.hpp"

#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/notify/notify.hpp>
#include <primebeaker/recovery/ledger.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace pb::node {

namespace ledger = recovery::ledger;

namespace {

bool single(const RecoveryOutcome &outcome) {
  return outcome.attempt > 0 && outcome.decision.record.replica.starts_with("node single");
}

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// GPU-hours of this experiment's attempts from the ledger: NUM_GPUS x (end, else now, - start);
// the runs module's chain figures need Beaker, which the container does not ask.
std::optional<double> gpu_hours(const RecoveryOutcome &outcome,
                                const std::map<std::string, std::string> &env) {
  const auto gpus = env.find(contract::var::num_gpus);
  const auto count = gpus == env.end() ? std::nullopt : text::parse_integer(gpus->second);
  if (!count) {
    return std::nullopt;
  }
  double seconds = 0;
  for (const auto &attempt : ledger::read(outcome.ledger_dir).attempts) {
    if (attempt.start.experiment_id != outcome.decision.record.experiment_id ||
        !attempt.start.refused.empty()) {
      continue;
    }
    const double end = attempt.end ? attempt.end->ended_unix : now_unix();
    seconds += std::max(0.0, end - attempt.start.started_unix);
  }
  return static_cast<double>(*count) * seconds / 3600.0;
}

void post(const RecoveryOutcome &outcome,
          std::string_view event,
          const std::string &subject,
          const std::string &detail) {
  // Off the start's path: the ledger reads and the claim's fsync (docs/notify.md).
  notify::in_background([outcome, event = std::string(event), subject, detail] {
    const auto env = env::snapshot();
    const auto settings = notify::settings_from(env, {});
    if (!settings || !settings->wants(event)) {
      return;
    }
    const auto &record = outcome.decision.record;
    notify::Event e;
    e.event = std::string(event);
    const auto name = env.find(contract::var::experiment_name);
    e.run = name == env.end() ? record.run_id : name->second;
    e.experiment_id = record.experiment_id;
    e.recoveries = record.preemptions_recovered + record.error_restarts;
    std::int64_t lost = 0;
    for (const auto steps :
         ledger::summarize(ledger::read(outcome.ledger_dir), 0).steps_lost_per_preemption) {
      lost += steps;
    }
    e.steps_lost = lost;
    e.gpu_hours = gpu_hours(outcome, env);
    e.detail = detail;
    notify::announce(
        *settings, outcome.ledger_dir, subject, e, fmt::format("node single {}", record.job_id));
  });
}

} // namespace

void notify_start(const RecoveryOutcome &outcome) {
  if (!single(outcome)) {
    return;
  }
  const auto &record = outcome.decision.record;
  // Each restart is its own transition: the attempt keys it (one experiment, many restarts).
  const std::string subject = fmt::format("{}.attempt{}", record.experiment_id, outcome.attempt);
  if (!outcome.decision.refusal.empty()) {
    const bool budget = record.cause == ledger::k_preemption
                            ? record.preemptions_recovered > record.max_recoveries
                            : record.cause == ledger::k_error &&
                                  record.error_restarts > record.max_restarts_on_errors;
    post(outcome,
         budget ? notify::k_budget_spent : notify::k_failed,
         subject,
         outcome.decision.refusal);
    return;
  }
  const std::string from = outcome.decision.resume_step
                               ? fmt::format("resuming from step {}", *outcome.decision.resume_step)
                               : std::string("starting fresh");
  if (record.cause == ledger::k_preemption) {
    post(outcome, notify::k_preempted, subject, "restarted by Beaker, " + from);
  } else if (record.cause == ledger::k_error) {
    post(outcome,
         notify::k_failed,
         subject,
         fmt::format("exit code {}; restarted, {}", record.previous_exit_code.value_or(1), from));
  }
}

void notify_end(const RecoveryOutcome &outcome, int code) {
  if (!single(outcome) || !outcome.decision.refusal.empty() || code == 130 || code == 143) {
    return;
  }
  const auto &record = outcome.decision.record;
  const std::string subject = fmt::format("{}.attempt{}", record.experiment_id, outcome.attempt);
  if (code == 0) {
    post(outcome, notify::k_succeeded, record.experiment_id, "");
  } else {
    post(outcome, notify::k_failed, subject, fmt::format("exit code {}", code));
  }
  // The container ends with this process: give the post a moment, never more.
  notify::drain(std::chrono::seconds(5));
}

} // namespace pb::node
