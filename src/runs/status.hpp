// SPDX-License-Identifier: MIT
// What `status` shows beyond the replica table, and its two renderings (docs/runs.md).
#pragma once

#include <primebeaker/runs/queue.hpp>
#include <primebeaker/runs/runs.hpp>
#include <primebeaker/runs/usage.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::runs {

struct StatusExtras {
  OrderedJson registry = nullptr;   // registry_readiness()
  OrderedJson checkpoint = nullptr; // newest_checkpoint()
  OrderedJson recovery = nullptr;   // recovery_history()
  OrderedJson chain = nullptr;      // chain_json() when the ledger could be read
  std::optional<std::string> wandb_url;
  std::optional<ChainUsage> usage;    // GPU-hours and cost over the chain
  std::optional<QueuePosition> queue; // while the run waits to be scheduled
};

// Left-aligned columns two spaces apart; the last column is not padded.
std::string render_table(const std::vector<std::vector<std::string>> &rows);

// Lower-case ASCII copy.
std::string lower_case(std::string_view text);

// "2026-08-10T09:14:03.512Z".
std::string format_time(TimePoint time);

// The receipt's experiment_url, else https://beaker.org/ex/<id>.
std::string experiment_url(const RunView &run, const RunTarget &target);

// The service stack a joint run owns: the run-launch receipt's service_experiment_id, else
// the task's PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID; empty when none.
std::string service_experiment_id(const RunView &run, const RunTarget &target);

// {uri, ready, services: {name: {required, live}}} from the task's REGISTRY and
// REQUIRED_LITEREGISTRY_SERVICES, or {uri, ready: null, error}; null without a registry.
// `object[key]` of Beaker's JSON, or null when `object` is not an object or lacks the key: the
// one accessor the parsers of this module share.
const OrderedJson &field(const OrderedJson &object, const char *key);

// A span as "1h02m", "4m05s", "12s" (rounded to the second).
std::string duration_text(double seconds);

OrderedJson registry_readiness(const RunView &run, TimePoint now);

// {config_path, output_dir, newest_complete_step} from the task's CONFIG_PATH read where this
// command runs (WORKING_DIR resolves a relative output_dir), or {config_path, error}; null
// when the task has no CONFIG_PATH.
OrderedJson newest_checkpoint(const RunView &run);

// The run's history from its attempt ledger (docs/recovery.md) under the checkpoint's
// output_dir, keyed by the task's WANDB_RUN_ID: {ledger, attempts, preemptions_recovered,
// error_restarts, resubmissions, refused, steps_lost_per_preemption, last_resume_step,
// total_seconds, useful_seconds, lost_seconds, downtime_seconds, last_refusal, beaker_restarts}
// (beaker_restarts: Beaker's extra jobs per replica, the most of any replica), or {ledger,
// error}; null without an output_dir or a run id.
OrderedJson recovery_history(const RunView &run, const OrderedJson &checkpoint, TimePoint now);

// Beaker's view of restarts: the most extra jobs any replica had (retries, preemption resumes).
int beaker_restarts(const RunView &run);

// The receipt's wandb_run.url, else one built from WANDB_RUN_ID and the TOML's [wandb].
std::optional<std::string> wandb_url(const RunView &run, const RunTarget &target);

// "A (from start) -> B (from step 20); 1 of 10 recoveries used; 3 steps lost". Pure.
std::string chain_line(const OrderedJson &chain);

OrderedJson replica_json(const Replica &replica);
OrderedJson status_json(const RunView &run, const RunTarget &target, const StatusExtras &extras);
std::string status_table(const RunView &run, const RunTarget &target, const StatusExtras &extras);

} // namespace pb::runs
