// SPDX-License-Identifier: MIT
// What a replica of `node rl|sft|single` reads from its environment (docs/node.md): the replica
// contract (contract::ReplicaEnv, docs/contract.md), the rank Beaker sets, the identity of this
// start, and the node's own timing knobs. Pure: the environment is passed in.
#pragma once

#include <primebeaker/primerl/config.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::node {

using EnvMap = std::map<std::string, std::string>;

// Timing knobs, from PRIMEBEAKER_NODE_* variables (docs/node.md) so tests can run fast.
struct Tuning {
  double poll_seconds = 0.5;           // rendezvous waits and the peer watcher
  double stop_grace_seconds = 15.0;    // SIGTERM -> SIGKILL for each child's process group
  double gateway_settle_seconds = 5.0; // before the first gateway liveness check
  int gateway_probe_attempts = 35;
  double gateway_probe_interval_seconds = 2.0;
  double gateway_probe_timeout_seconds = 70.0;
  std::optional<std::string> host;           // the address to publish (default: first local IPv4)
  std::filesystem::path local_root = "/tmp"; // node-local root for the default TMPDIR
  // Mooncake's master RPC, metadata HTTP and client ports (Prime-RL's 50051, 8080, 50052).
  std::array<int, 3> mooncake_ports = {50051, 8080, 50052};
  // Replaces every port barrier's timeout (Prime-RL's: 120 s for the master, 60 s for a client).
  std::optional<int> port_wait_seconds;
};

// Who this start is, for the attempt ledger (docs/recovery.md): the W&B run id (or the shared
// one, or the launch id), the launch key (LAUNCH_ID, or the experiment for single-node), the job.
struct StartIdentity {
  std::string run_id;
  std::string launch_key;
  std::string job_id = "manual"; // BEAKER_JOB_ID
  std::string experiment_id;     // BEAKER_EXPERIMENT_ID
};

// Fields common to every kind of replica.
struct CommonEnv {
  int rank = 0;
  int total_nodes = 0;
  int gpus_per_node = 0;
  std::filesystem::path config_path;
  std::filesystem::path output_dir;
  std::filesystem::path working_dir;
  std::filesystem::path scratch;
  std::string launch_id;
  std::filesystem::path rendezvous_dir; // empty for node single
  int rendezvous_timeout_seconds = 0;
  std::optional<std::string> setup_command; // PRIMEBEAKER_SETUP_COMMAND
  std::int64_t max_recoveries = 10;         // PRIMEBEAKER_MAX_RECOVERIES (docs/recovery.md)
  std::int64_t max_restarts_on_errors = 0;  // PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS
  Tuning tuning;
  StartIdentity identity;
  // Prime-RL v0.9 (PRIME_RL_GENERATION): artifacts under output_dir / run_dir_name; run_name is
  // what the launch passes as run.name ("" = the TOML's own).
  primerl::Generation generation = primerl::Generation::v0_8;
  std::string run_dir_name;
  std::string run_name;
  std::string run_id; // WANDB_RUN_ID: v0.9's PRL_RUN_ID
  bool v0_9() const { return generation == primerl::Generation::v0_9; }
  std::filesystem::path run_dir() const { return v0_9() ? output_dir / run_dir_name : output_dir; }
};

struct SftEnv : CommonEnv {};

struct RlEnv : CommonEnv {
  int total_infer_ranks = 0;
  int trainer_gpu_count = 0;
  int mixed_infer_gpu_count = 0;
  std::string registry;         // the URI as given (children need its password)
  std::string registry_display; // canonical, password redacted: for messages
  int gateway_port = 0;
  int gateway_workers = 0;
  std::string required_services_json;           // verbatim, for messages
  std::map<std::string, int> required_services; // decoded
  std::vector<std::string> local_search_model_paths;
  std::optional<std::string> managed_service_experiment_id;
  // Prime-RL's placement (v0.9, and v0.8.0 with PRIME_RL_PLACEMENT): inference replicas first,
  // then trainer replicas.
  bool prime_rl_placement = false;
  int num_train_nodes = 0;
  int num_infer_nodes = 0; // in all
  int inference_tp = 1;
  int orchestrator_replica = 0;
  std::vector<std::string> env_servers; // "train/<name>"
  // Expert parallelism across the nodes of each inference replica: one engine per DP rank.
  bool expert_parallel = false;
  int nodes_per_infer_replica = 0;
  // Disaggregated prefill/decode inference replicas (roles per node, docs/node.md).
  std::optional<primerl::Disaggregated> disaggregated;
  // llm-d's endpoint picker and Envoy instead of vllm-router; the KV-cache offload.
  primerl::Router router = primerl::Router::vllm_router;
  primerl::KvOffload kv_offload = primerl::KvOffload::none;
};

// `node single sft|rl`: one container, Prime-RL's own launcher supervised.
struct SingleEnv : CommonEnv {
  std::string program;                // "sft" or "rl"
  std::int64_t num_gpus = 0;          // NUM_GPUS: SFT's trainer ranks
  std::filesystem::path result_dir;   // PRIMEBEAKER_RESULT_DIR
  std::filesystem::path runtime_toml; // PRIMEBEAKER_RUNTIME_TOML: what Prime-RL reads
};

// Read the replica contract from `env`, plus BEAKER_REPLICA_RANK and the node's own knobs.
// Missing or empty required variables throw pb::Error exit 2 naming every one; malformed values
// exit 2 naming the variable.
SftEnv parse_sft_env(const EnvMap &env);
RlEnv parse_rl_env(const EnvMap &env);
SingleEnv parse_single_env(const std::string &program, const EnvMap &env);
Tuning parse_tuning(const EnvMap &env);

} // namespace pb::node
