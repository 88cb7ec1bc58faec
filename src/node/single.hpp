// SPDX-License-Identifier: MIT
// `primebeaker node single sft|rl`: the single-node container command (docs/node.md
// "node single"). Reads the replica contract (contract::ReplicaEnv) like `node rl|sft`.
#pragma once

#include "recovery.hpp"

#include <primebeaker/core/process.hpp>

#include <map>
#include <string>

namespace pb::node {

// What `node single` does before handing over to Prime-RL, as a value.
struct SingleNodeStart {
  std::string program; // "sft" or "rl"
  std::string working_dir;
  std::string setup_command;                         // empty: none
  std::map<std::string, std::string> cache_defaults; // only variables not already set
  std::vector<std::string> directories;              // created before the checks
  std::string config_path;
  std::string output_dir;
  std::string result_dir;
  std::string runtime_toml; // the TOML Prime-RL gets: the rewrite, with the resume decision
  // The recovery step (docs/recovery.md); trainer_ranks is read from the TOML at run time (rl)
  // or is NUM_GPUS (sft).
  RecoveryRequest recovery;
  double stop_grace_seconds = 15; // SIGTERM -> SIGKILL for Prime-RL's process group
  // Prime-RL v0.9: the run.name the launch gives an unnamed run ("" = none), written into the
  // runtime TOML; the run identity (PRL_RUN_ID ...) is in cache_defaults.
  bool v0_9 = false;
  std::string run_name;
};

// Reads the replica contract of a single-node launch from `environment` (missing CONFIG_PATH,
// OUTPUT_DIR, WORKING_DIR or SCRATCH -> pb::Error exit 2 naming them all). Pure.
SingleNodeStart plan_single_node(const std::string &program,
                                 const std::map<std::string, std::string> &environment);

// The start as `node single --dry-run` prints it (text, or one JSON object): what run_single_node
// will do, in order. Pure.
std::string single_plan_text(const SingleNodeStart &start);
std::string single_plan_json(const SingleNodeStart &start);

// Runs it: setup command with `bash -lc`, directories, checks, the recovery step (resume
// decision, incomplete steps moved aside, ledger), the runtime TOML (RL: the environment
// rewrite; both: the decided resume step), then Prime-RL's `sft`/`rl @ <runtime TOML>` as a
// supervised child (signals forwarded to its process group) whose exit ends the attempt in the
// ledger. Returns Prime-RL's exit code (128 + signal when killed); throws pb::Error before it.
int run_single_node(const SingleNodeStart &start, proc::Runner &runner);

} // namespace pb::node
