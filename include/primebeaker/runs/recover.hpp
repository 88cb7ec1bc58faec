// SPDX-License-Identifier: MIT
// `follow --recover` (docs/recovery.md "Multi-node recovery"): Beaker does not restart a
// multi-node topology together, so when a followed run ends preempted (or failed, within
// --max-restarts-on-errors) the follower resubmits it through `primebeaker rl resume`, run as a
// child from an argv vector, within the run's budget and with backoff, writes the ledger's
// `<n>.recover.json` and follows the new experiment. The pure half (where the ledger is, the
// budget, the verdict) is here for tests; follow_run() in runs.hpp drives it.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/runs/runs.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace pb::runs {

// The attempt ledger of the run an experiment belongs to, as the node runtime names it: the
// task's OUTPUT_DIR (relative to WORKING_DIR; else the TOML's output_dir at CONFIG_PATH) and
// the W&B run id (WANDB_RUN_ID, else WANDB_SHARED_RUN_ID, else LAUNCH_ID). `error` says why
// there is none (no output dir or run id in the task, an unreadable TOML); `dir` is empty then.
struct LedgerLocation {
  std::filesystem::path output_dir;
  std::filesystem::path dir;
  std::string error;
};
// Reads at most the TOML at CONFIG_PATH (only when the task has no OUTPUT_DIR); never lists
// checkpoints.
LedgerLocation ledger_location(const RunView &run);

// What `list` shows of a run's ledger: {ledger, attempts, recoveries, preemptions_recovered,
// error_restarts, resubmissions, refused} (recoveries = preemptions recovered + restarts on
// errors), {ledger, error} when it cannot be read here, null when the task names no ledger.
// Reads the ledger directory's small files only.
OrderedJson ledger_counts(const RunView &run);

// Who recovers the run and what it last did (docs/recovery.md "The controller"): {mode,
// controller, state, following, last_action, updated_at, restarts}; the last five from the
// ledger's controller.json (null where the output dir is not visible here or the controller
// wrote nothing yet). Null for a run whose spec names no recovery mode (older launches).
OrderedJson controller_view(const RunView &run);
// One line of it for `status` and `list`. Pure.
std::string controller_line(const OrderedJson &view);

// The run's recovery budget: the experiment's PRIMEBEAKER_MAX_RECOVERIES /
// PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS (what its launch or `rl resume` set), else the newest
// start in the ledger, else the defaults (10, 0). `from` names the source. Pure.
struct RecoveryBudget {
  std::int64_t max_recoveries = 10;
  std::int64_t max_restarts_on_errors = 0;
  std::string from = "default";
};
RecoveryBudget recovery_budget(const RunView &run, const recovery::ledger::Ledger &ledger);

// Recoveries the ledger already counts, as the runtime counts them: starts caused by a
// preemption / an error (refused ones not), plus every resubmission (a claim, or an older
// follower's `<n>.recover.json`) whose new experiment has not recorded its start yet: claimed
// and in flight, or submitted and not started. Pure.
struct RecoveriesUsed {
  std::int64_t preemptions = 0;
  std::int64_t errors = 0;
};
RecoveriesUsed recoveries_used(const recovery::ledger::Ledger &ledger);

// Whether and how to resubmit a run that ended. Pure.
struct RecoveryVerdict {
  bool resubmit = false;
  std::string cause;            // ledger::k_preemption or ledger::k_error; empty: not a recovery
  std::optional<int> exit_code; // of the replica that decided a failure
  std::int64_t number = 0;      // this recovery's number against its budget (1 = the first)
  std::int64_t budget = 0;      // --max-recoveries or --max-restarts-on-errors
  std::string flag;             // "--max-recoveries" or "--max-restarts-on-errors"
  std::string refusal;          // why not (one line), when !resubmit and cause is set
  // The refusal is certain, not a matter of budget: a configuration error (exit 3) fails again
  // on every retry. follow then exits k_exit_not_recoverable.
  bool certain = false;
};
// `used` counts what the ledger holds plus this follower's resubmissions it could not record.
RecoveryVerdict
judge_recovery(const RunView &run, const RecoveryBudget &budget, const RecoveriesUsed &used);

// True when `rl resume` can resubmit the run: a `primebeaker node rl` (multi-node RL) task.
bool resubmittable(const RunView &run);

// The name every experiment of a run is named after: `experiment_name` without its author and
// without each suffix earlier recoveries ("-recover<k>-<hex8>", "-restart<k>-<hex8>") and
// resumes ("-resume-step<N>-<attempt[:8]>") added, so that names do not grow along a chain of
// them. Pure.
std::string run_base_name(std::string_view experiment_name);

// The exact name of the experiment that recovers `run` (a claim fixes it, docs/recovery.md
// "Exactly one resubmission"): run_base_name(run.name) ("run" when that is empty), then
// "-recover<k>-<hex8>" ("-restart<k>-..." after an error), at most 128 characters. Pure.
std::string
recovery_child_name(const RunView &run, const RecoveryVerdict &verdict, std::string_view hex8);

// Who resubmits from this process: "controller <experiment id>" inside a controller
// (BEAKER_EXPERIMENT_ID), else "terminal <host> <pid>".
std::string actor_identity(bool controller);

// The newest experiment of the run `experiment_id` belongs to, following the ledger's
// resubmission records (claims, then older followers' records) from it. Pure.
std::string newest_in_chain(const recovery::ledger::Ledger &ledger, std::string experiment_id);

// One run's whole chain of experiments (docs/runs.md "One chain"): the first, then each one a
// recovery, a restart after an error or a resume submitted after the one before, as the
// ledger's claims and recovery records tell. Pure.
struct ChainLink {
  std::string experiment_id;
  std::string cause;       // "" for the first; ledger::k_preemption, k_error or k_resubmission
  std::int64_t number = 0; // its recovery's number against the budget (0: not a recovery)
  // Where it started: a step, or the start; `known` false when nothing recorded it.
  std::optional<std::int64_t> resume_step;
  bool from_start = false;
  bool known = false;
};
struct Chain {
  std::vector<ChainLink> links; // oldest first; never empty
  const std::string &newest() const { return links.back().experiment_id; }
  const std::string &original() const { return links.front().experiment_id; }
};
// The chain through `experiment_id`, whichever of its experiments that is.
Chain run_chain(const recovery::ledger::Ledger &ledger, const std::string &experiment_id);

// What `status` and `list` say of a chain: {original_experiment_id, current_experiment_id,
// experiments: [{experiment_id, cause, recovery, from}], recoveries, max_recoveries,
// restarts_on_errors, max_restarts_on_errors, steps_lost}. `from` is "step N", "start" or
// null. Pure.
OrderedJson chain_json(const Chain &chain,
                       const recovery::ledger::Ledger &ledger,
                       const RecoveryBudget &budget);

// The ledger slot for this experiment's recovery record: the last attempt when it belongs to
// `experiment_id` (or names none) and has no recovery record yet; nullopt otherwise. Pure.
std::optional<std::int64_t> recover_slot(const recovery::ledger::Ledger &ledger,
                                         const std::string &experiment_id);

// The child a recovery record of the last attempt already names for `experiment_id` (another
// follower resubmitted it): its id, else empty. Pure.
std::string already_resubmitted(const recovery::ledger::Ledger &ledger,
                                const std::string &experiment_id);

// The wait before the k-th resubmission of this follow (k from 0): backoff * 2^k, capped. Pure.
std::chrono::milliseconds recovery_wait(const RecoverOptions &options, int k);

// What `rl resume` printed: {child_experiment_id, step, attempt_id}, from its JSON receipt.
// Throws pb::Error (exit 1) when the output names no child experiment. Pure.
struct ResumeReceipt {
  std::string child_experiment_id;
  std::optional<std::int64_t> step;
  bool from_start = false; // the run had no complete checkpoint: relaunched from the start
  std::string attempt_id;
};
ResumeReceipt parse_resume_receipt(const std::string &stdout_text);

} // namespace pb::runs
