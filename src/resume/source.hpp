// SPDX-License-Identifier: MIT
// The source experiment of `rl resume`, read from `beaker experiment get --format json`
// (docs/resume.md).
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pb::resume {

// What a new launch inherits from the source experiment.
struct SourceExperiment {
  std::string id;
  std::string name;      // E.name after the first '/', or the id
  std::string workspace; // E.workspaceRef.fullName, default ai2/oe-agents
  std::vector<std::string> job_ids;
  std::string image; // beaker://<S.image.beaker>, or S.image.docker
  // The Prime-RL the source's image holds (PRIME_RL_VERSION), "" for specs that predate it; and
  // the generation its TOML was read as (PRIME_RL_GENERATION).
  std::string prime_rl_version;
  std::string recover;         // PRIMEBEAKER_RECOVER: who resubmits it (empty: older specs)
  std::string controller_name; // PRIMEBEAKER_CONTROLLER_NAME
  bool v0_9 = false;
  // A v0.8.0 run placed as Prime-RL places it (PRIME_RL_PLACEMENT): no registry needed.
  bool prime_rl_placement = false;
  std::vector<std::string> clusters;
  std::string priority;
  std::int64_t min_runtime_hours = 0;
  std::string mount_path;
  std::string dataset;
  std::string config_path;
  std::string output_dir;
  std::optional<std::string> registry;
  std::optional<std::string> wandb_run_id;
  // Prime-RL v0.9: the run directory under output_dir the source launch named
  // (PRIME_RL_RUN_DIR); "" for v0.8.0 launches.
  std::string run_dir_name;
  std::string working_dir;
  std::string scratch_dir;
  std::string home_dir;
  std::int64_t gateway_port = 1212;
  std::int64_t gateway_workers = 8;
  std::int64_t rendezvous_timeout_seconds = 1800;
  // The recovery policy (docs/recovery.md), carried so a resumed run keeps its budget.
  std::int64_t max_recoveries = 10;
  std::int64_t max_restarts_on_errors = 0;
  std::map<std::string, std::int64_t> required_services;
  std::optional<std::string> setup_command;
  std::optional<std::string> wandb_secret;                  // secret behind WANDB_API_KEY
  std::optional<std::string> hf_secret;                     // secret behind HF_TOKEN
  std::vector<std::pair<std::string, std::string>> env;     // carried plain values, by name
  std::vector<std::pair<std::string, std::string>> secrets; // carried secrets, by name
  // Plain values deliberately not carried (docs/resume.md): name=value.
  std::vector<std::pair<std::string, std::string>> not_inherited;
};

// Parses the experiment payload (an array, first element used, or one object). Pure.
// `keep_managed_service`: carry PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID (off by default).
// Throws pb::Error (exit 1) with Python PrimeBeaker's messages: "Beaker did not return experiment
// ID", "experiment ID has no jobs", "... is not a PrimeBeaker/Prime-RL launch", "... has no
// Beaker image", "source experiment has invalid NAME=value".
SourceExperiment
parse_source(const std::string &id, const OrderedJson &payload, bool keep_managed_service);

// Environment names the launcher regenerates, so they are never carried (docs/resume.md).
bool is_regenerated_env_name(const std::string &name);

// One job of `beaker job get`, judged: active unless its status has a set `exited` or
// `finalized` timestamp (Go's zero time 0001-01-01... counts as unset).
struct JobState {
  std::string id;
  std::string name;
  bool active = true;
};

// Parses `beaker job get ... --format json` (array or one object) for `job_ids`; a requested
// job missing from the answer is active with status unknown. Pure.
std::vector<JobState> parse_jobs(const OrderedJson &payload,
                                 const std::vector<std::string> &job_ids);

} // namespace pb::resume
