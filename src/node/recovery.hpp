// SPDX-License-Identifier: MIT
// Private to the node module: what every start of a replica does about recovery before Prime-RL
// runs (docs/recovery.md). The decision itself is pure (checkpoints/recovery.hpp); this is its
// glue: read the TOML's intent and the ledger, list the checkpoints, move incomplete steps
// aside, remove stale rollouts and broadcasts, append the start to the ledger; and, on exit,
// the end record.
#pragma once

#include <primebeaker/node/replica_plan.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/recovery/decision.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace pb::node {

// The run layout of a request: OUTPUT_DIR (relative to WORKING_DIR), the run directory of a
// v0.9 run, and the trainer's root moved by ckpt.output_dir / trainer.ckpt.output_dir. Throws
// pb::Error exit 3 when a v0.9 run has no run directory name.
primerl::RunLayout layout_of(const RecoveryRequest &request, const toml::Document &document);

struct RecoveryOutcome {
  std::filesystem::path ledger_dir;
  primerl::RunLayout layout;
  std::int64_t attempt = 0;
  recovery::Decision decision;
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
// point as recovery::resume_toml writes it, and `run_name` as run.name when the TOML
// names no run (the launch's name, so the run directory is found again). Single-node writes it
// for `rl`/`sft`, multi-node for the config helper.
std::string v0_9_runtime_toml(const toml::Document &document,
                              const recovery::Decision &decision,
                              const std::string &run_name);

// The end record of the attempt (no-op when nothing was appended). Never throws.
void record_end(const RecoveryOutcome &outcome,
                int exit_code,
                int root_code,
                const std::string &message);

} // namespace pb::node
