// SPDX-License-Identifier: MIT
// Private to the node module: what every start of a replica does about recovery before Prime-RL
// runs (docs/recovery.md). The decision itself is pure (checkpoints/recovery.hpp); this is its
// glue: read the TOML's intent and the ledger, list the checkpoints, move incomplete steps
// aside, remove stale rollouts and broadcasts, append the start to the ledger; and, on exit,
// the end record.
#pragma once

#include <primebeaker/checkpoints/recovery.hpp>
#include <primebeaker/primerl/layout.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace pb::node {

struct RecoveryRequest {
  std::string replica; // "node rl", "node sft", "node single rl", "node single sft"
  std::filesystem::path working_dir;
  std::filesystem::path output_dir; // as in OUTPUT_DIR (relative to working_dir)
  std::filesystem::path config_path;
  int trainer_ranks = 1;
  bool trainer_only = false; // SFT: no orchestrator side
  // The Prime-RL generation the TOML is written for (PRIME_RL_GENERATION); a v0.8 request for a
  // TOML primerl detects as v0.9 reads it as v0.9.
  primerl::Generation generation = primerl::Generation::v0_8;
  // v0.9: the run directory under output_dir (PRIME_RL_RUN_DIR); "" takes run.dir / run.name
  // from the TOML.
  std::string run_dir_name;
  std::string run_id;        // WANDB_RUN_ID
  std::string launch_key;    // LAUNCH_ID, or BEAKER_EXPERIMENT_ID for single-node
  std::string job_id;        // BEAKER_JOB_ID or "manual"
  std::string experiment_id; // BEAKER_EXPERIMENT_ID
  checkpoints::recovery::Policy policy;
};

// The request's fields that come from the environment Beaker and the launch set.
void fill_identity(RecoveryRequest &request, const std::map<std::string, std::string> &env);

// The run layout of a request: OUTPUT_DIR (relative to WORKING_DIR), the run directory of a
// v0.9 run, and the trainer's root moved by ckpt.output_dir / trainer.ckpt.output_dir. Throws
// pb::Error exit 3 when a v0.9 run has no run directory name.
primerl::RunLayout layout_of(const RecoveryRequest &request, const toml::Document &document);

struct RecoveryOutcome {
  std::filesystem::path ledger_dir;
  primerl::RunLayout layout;
  std::int64_t attempt = 0;
  checkpoints::recovery::Decision decision;
  // What replica 0 publishes as recovery.json for the others (attempt, cause, resume step,
  // refusal), and what the config helper gets ({"step": K or null, "keep_output": bool}).
  nlohmann::json published() const;
  nlohmann::json helper_request() const;
};

// Decides and acts (docs/recovery.md "What a start does"). A refused start is still appended to
// the ledger; the caller then stops with decision.refusal. `note` prints milestone lines.
RecoveryOutcome start_recovery(const RecoveryRequest &request,
                               const std::function<void(const std::string &)> &note);

// The TOML Prime-RL v0.9 reads on this start (the source is never edited): the decided resume
// point as checkpoints::recovery::resume_toml writes it, and `run_name` as run.name when the TOML
// names no run (the launch's name, so the run directory is found again). Single-node writes it
// for `rl`/`sft`, multi-node for the config helper.
std::string v0_9_runtime_toml(const toml::Document &document,
                              const checkpoints::recovery::Decision &decision,
                              const std::string &run_name);

// The end record of the attempt (no-op when nothing was appended). Never throws.
void record_end(const RecoveryOutcome &outcome,
                int exit_code,
                int root_code,
                const std::string &message);

} // namespace pb::node
