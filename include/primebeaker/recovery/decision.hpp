// SPDX-License-Identifier: MIT
// The resume decision every start of a replica makes (docs/recovery.md): which step Prime-RL
// resumes from (the newest step the checkpoint rule of docs/checkpoints.md finds complete on
// every rank and component), which newer incomplete steps are moved aside, which rollouts and
// broadcasts are stale, why this start happened and whether the run's recovery budget allows it.
// decide() is pure; gather(), set_aside() and remove_stale_state() are the only I/O.
#pragma once

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/recovery/ledger.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::toml {
class Document;
}

namespace pb::recovery {

// The checkpoint rule it decides with (docs/checkpoints.md).
using checkpoints::CheckpointSource;
using checkpoints::StepListing;
using checkpoints::StepStatus;
using checkpoints::TreeListing;

// The launch's recovery policy (--max-recoveries, --max-restarts-on-errors).
struct Policy {
  std::int64_t max_recoveries = 10;
  std::int64_t max_restarts_on_errors = 0;
};

// What the training TOML says about resuming; read, never edited.
struct TomlIntent {
  std::optional<std::int64_t> resume_step;     // the step as written (-1 = latest)
  bool clean_output_dir = false;               // clean_output_dir (v0.8.0) / clean (v0.9)
  std::string resume_key = "ckpt.resume_step"; // where the step was read, for messages
  // v0.9 resume.dir: fork another run's step directory (kept while this run has no step).
  std::optional<std::string> resume_dir;
};
// v0.8.0: ckpt.resume_step (trainer. one when the shared one is absent) and clean_output_dir.
// v0.9: resume.step (trainer.resume.step when the shared one is absent; an empty [resume] is
// -1, latest), resume.dir and clean. Pure.
TomlIntent read_intent(const toml::Document &document);

// What is on disk, as gather() saw it.
struct DiskFacts {
  std::vector<StepStatus> steps;                  // ascending by step
  std::map<std::int64_t, double> complete_mtimes; // complete step -> newest mtime of its files
  // The newest step the trainer is shown to have completed (docs/recovery.md "Work lost"): a
  // trainer-side step directory (step_N/trainer, complete or not: the trainer saves step N once
  // it has trained it) or a weight broadcast broadcasts/step_N. Not rollouts, which the
  // orchestrator writes ahead of training, nor an orchestrator-only step directory.
  std::optional<std::int64_t> newest_trained_step;
  // The newest mtime among what the run writes as it goes (the newest step directory, rollouts,
  // broadcasts): when the previous attempt was last seen alive.
  std::optional<double> newest_evidence_mtime;
  bool full_listing = false; // every step listed (else only the newest complete and newer)
};

// Who is starting, and when.
struct StartFacts {
  std::string run_id;
  std::string launch_key; // LAUNCH_ID (multi-node) or BEAKER_EXPERIMENT_ID (single-node)
  std::string job_id;
  std::string experiment_id;
  std::string replica; // "node rl", ...
  double now_unix = 0;
  Policy policy;
  TomlIntent toml;
};

struct Decision {
  ledger::Start record;                    // what the ledger gets (attempt assigned when appended)
  std::optional<std::int64_t> resume_step; // nullopt: a fresh start
  std::vector<std::string> set_aside;      // step directory names to move aside
  std::int64_t stale_above = -1;           // rollouts/broadcasts step_<n> with n above it are stale
  bool keep_output = true;                 // give Prime-RL clean_output_dir = false
  bool honours_pin = false; // the TOML's own resume step was used (first start of a launch)
  bool keeps_fork = false;  // v0.9: no step of this run yet; the TOML's resume.dir stays
  std::string refusal;      // non-empty: do not train; exit refusal_code with this line
  int refusal_code = 0;
};

// The cause of a start from the ledger (docs/recovery.md "Causes") and the exit code behind it.
struct Cause {
  std::string name; // ledger::k_first_start, ...
  std::optional<int> exit_code;
  bool first_of_launch = true; // no earlier start of this launch key
};
Cause cause_of(const ledger::Ledger &ledger, const std::string &launch_key);

// Whether a listing needs every step (a pinned step of the TOML applies), before listing.
bool needs_full_listing(const ledger::Ledger &ledger, const StartFacts &facts);

// The decision. Pure.
Decision decide(const ledger::Ledger &ledger, const DiskFacts &disk, const StartFacts &facts);

// --- effects --------------------------------------------------------------------------------

// The checkpoint rule without an orchestrator side (SFT has none): the trainer's shards and
// .metadata decide. The same evaluate_step(), with progress.pt deemed present.
std::vector<StepStatus> evaluate_trainer_only(const TreeListing &listing);

// Lists the checkpoint tree (newest complete first, or every step when `full`; SFT always
// lists everything), stats the complete steps' files for their times and reads the step
// numbers under the layout's step_dirs (rollouts and broadcasts): the newest trained step from
// the trainer-side step directories and the broadcasts only, the newest mtime from all of them.
DiskFacts gather(const CheckpointSource &source,
                 const primerl::RunLayout &layout,
                 bool trainer_only,
                 bool full);

// Moves each named step directory of both roots to `destination`/<root relative to the output
// directory>/<name> (rename; never deleted, never copied). Returns the paths moved to.
// Throws pb::Error (exit 1) when a rename fails.
std::vector<std::string> set_aside(const CheckpointSource &source,
                                   const std::vector<std::string> &names,
                                   const std::filesystem::path &destination);

// Removes step_<n> directories with n > `above` under the layout's step_dirs (v0.8.0:
// <out>/rollouts, <out>/run_default/{rollouts,broadcasts}; v0.9: <run>/{rollouts,broadcasts}),
// as Prime-RL itself does on a resume (pathing.py clean_future_steps). Returns the removed
// paths.
std::vector<std::string> remove_stale_state(const primerl::RunLayout &layout, std::int64_t above);

// The TOML Prime-RL is given: `document`'s text with the resume step written explicitly, keys
// per generation (primerl::resume_keys). v0.8.0: ckpt.resume_step = K (trainer./orchestrator.
// copies kept in step), or those keys removed for a fresh start; clean_output_dir = false where
// the TOML sets it and keep_output. v0.9: [resume] step = K (resume.dir removed, sub-config
// copies kept in step); a fresh start with keep_output writes an empty [resume] (every step
// directory was moved aside, so "latest" finds none and Prime-RL starts from scratch without
// refusing a run directory that holds earlier attempts' logs); a fresh start asked for with
// clean = true removes [resume]; keeps_fork leaves [resume] dir as written; clean = false where
// the TOML sets it and keep_output. Everything else byte for byte. Pure.
std::string resume_toml(const toml::Document &document, const Decision &decision);

} // namespace pb::recovery
