// SPDX-License-Identifier: MIT
// `primebeaker node single sft|rl`: the single-node container command (docs/node.md
// "node single"). Reads the replica contract (contract::ReplicaEnv) like `node rl|sft`.
#pragma once

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
  std::string runtime_toml;      // rl: where the rewritten TOML goes
  std::string quarantine_suffix; // sft: ".incomplete-<BEAKER_JOB_ID or manual>"
};

// Reads the replica contract of a single-node launch from `environment` (missing CONFIG_PATH,
// OUTPUT_DIR, WORKING_DIR or SCRATCH -> pb::Error exit 2 naming them all). Pure.
SingleNodeStart plan_single_node(const std::string &program,
                                 const std::map<std::string, std::string> &environment);

// Runs it: setup command with `bash -lc`, directories, checks, SFT checkpoint quarantine or the
// RL environment rewrite, then execs Prime-RL's `sft`/`rl @ CONFIG`. Returns only by throwing.
[[noreturn]] void run_single_node(const SingleNodeStart &start, proc::Runner &runner);

} // namespace pb::node
