// SPDX-License-Identifier: MIT
// The replica contract (docs/contract.md): the environment a launch gives every Beaker replica,
// as one typed value. `launch` renders it (to_env), `node rl|sft|single` read it (from_env),
// `rl resume` decodes a source experiment with its names and decoders, and `run` adds its
// managed-service names. Every name lives here; required services, registry URIs, counts and
// paths are typed values checked once, with the parser the replica itself uses.
#pragma once

#include <primebeaker/primerl/config.hpp>
#include <primebeaker/registry/location.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::contract {

using EnvMap = std::map<std::string, std::string>;

// The environment names of the contract (docs/contract.md has the table).
namespace var {
inline constexpr const char *home = "HOME";
inline constexpr const char *working_dir = "WORKING_DIR";
inline constexpr const char *scratch = "SCRATCH";
inline constexpr const char *config_path = "CONFIG_PATH";
inline constexpr const char *output_dir = "OUTPUT_DIR";
inline constexpr const char *wandb_run_id = "WANDB_RUN_ID";
inline constexpr const char *wandb_resume = "WANDB_RESUME";
inline constexpr const char *wandb_shared_run_id = "WANDB_SHARED_RUN_ID";
inline constexpr const char *wandb_entity = "WANDB_ENTITY";
inline constexpr const char *setup_command = "PRIMEBEAKER_SETUP_COMMAND";
inline constexpr const char *experiment_name = "EXPERIMENT_NAME";
inline constexpr const char *num_gpus = "NUM_GPUS";
inline constexpr const char *registry = "REGISTRY";
inline constexpr const char *launch_id = "LAUNCH_ID";
inline constexpr const char *rendezvous_dir = "RENDEZVOUS_DIR";
inline constexpr const char *rendezvous_timeout_seconds = "RENDEZVOUS_TIMEOUT_SECONDS";
inline constexpr const char *total_nodes = "TOTAL_NODES";
inline constexpr const char *gpus_per_node = "GPUS_PER_NODE";
inline constexpr const char *total_infer_ranks = "TOTAL_INFER_RANKS";
inline constexpr const char *trainer_gpu_count = "TRAINER_GPU_COUNT";
inline constexpr const char *mixed_infer_gpu_count = "MIXED_INFER_GPU_COUNT";
inline constexpr const char *gateway_port = "GATEWAY_PORT";
inline constexpr const char *gateway_workers = "GATEWAY_WORKERS";
inline constexpr const char *required_services = "REQUIRED_LITEREGISTRY_SERVICES";
inline constexpr const char *local_search_model_paths = "LOCAL_SEARCH_MODEL_PATHS_JSON";
// Prime-RL v0.9 (docs/contract.md "Generations"): absent generation = v0.8.0.
inline constexpr const char *prime_rl_generation = "PRIME_RL_GENERATION";
// The Prime-RL version the image holds, as the launch knew it (catalog or --prime-rl): what
// `rl resume` relaunches with and the node logs. Older specs lack it.
inline constexpr const char *prime_rl_version = "PRIME_RL_VERSION";
inline constexpr const char *run_dir_name = "PRIME_RL_RUN_DIR";
inline constexpr const char *run_name = "PRIME_RL_RUN_NAME";
inline constexpr const char *num_train_nodes = "NUM_TRAIN_NODES";
inline constexpr const char *num_infer_nodes = "NUM_INFER_NODES";
inline constexpr const char *inference_tp = "INFERENCE_TP";
inline constexpr const char *orchestrator_replica = "ORCHESTRATOR_REPLICA";
inline constexpr const char *env_servers = "ENV_SERVERS_JSON";
// Prime-RL v0.8.0 multi-node RL placed as Prime-RL places it ("prime-rl"; absent = the mixed
// layout): the v0.9 topology names above then describe it (docs/contract.md "Placements").
inline constexpr const char *placement = "PRIME_RL_PLACEMENT";
// Expert parallelism across the nodes of an inference replica: one DP group per replica, one
// engine per DP rank (Prime-RL's INFERENCE_ENABLE_EXPERT_PARALLEL, NODES_PER_INFER_REPLICA).
inline constexpr const char *expert_parallel = "INFERENCE_ENABLE_EXPERT_PARALLEL";
inline constexpr const char *nodes_per_infer_replica = "NODES_PER_INFER_REPLICA";
// Disaggregated prefill/decode inference (INFERENCE_DEPLOYMENT=disaggregated): Prime-RL's names.
inline constexpr const char *inference_deployment = "INFERENCE_DEPLOYMENT";
inline constexpr const char *nodes_per_prefill_replica = "NODES_PER_PREFILL_REPLICA";
inline constexpr const char *num_prefill_replicas = "NUM_PREFILL_REPLICAS";
inline constexpr const char *nodes_per_decode_replica = "NODES_PER_DECODE_REPLICA";
inline constexpr const char *num_decode_replicas = "NUM_DECODE_REPLICAS";
// What fronts the engines ("llm-d"; absent = vllm-router) and the KV-cache offload ("native",
// "mooncake"; absent = none), Prime-RL's placement only.
inline constexpr const char *inference_router = "INFERENCE_ROUTER";
inline constexpr const char *kv_cache_offload = "KV_CACHE_OFFLOAD";
// The recovery policy (docs/recovery.md): every launch writes both; older specs lack them and
// read as the defaults.
inline constexpr const char *max_recoveries = "PRIMEBEAKER_MAX_RECOVERIES";
inline constexpr const char *max_restarts_on_errors = "PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS";
// Who resubmits a preempted multi-node run (controller, terminal, off; single-node: beaker)
// and the name of its recovery controller experiment (`stop` stops it too).
inline constexpr const char *recover = "PRIMEBEAKER_RECOVER";
inline constexpr const char *controller_name = "PRIMEBEAKER_CONTROLLER_NAME";
// Set by Beaker on every replica, not by the launch.
inline constexpr const char *replica_rank = "BEAKER_REPLICA_RANK";
inline constexpr const char *job_id = "BEAKER_JOB_ID";
inline constexpr const char *experiment_id = "BEAKER_EXPERIMENT_ID";
// Added by `run` (through --env / --secret) so the trainer stops the managed service stack.
inline constexpr const char *managed_service_experiment_id =
    "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID";
inline constexpr const char *beaker_token = "BEAKER_TOKEN";
} // namespace var

// What the contract accepts: the limits every replica checks, so a launch can refuse the same
// values up front. GPU and node limits live in primerl (primerl/limits.hpp).
inline constexpr std::int64_t k_max_gateway_workers = 100'000;
inline constexpr std::int64_t k_max_rendezvous_timeout_seconds = 1'000'000'000;
inline constexpr std::int64_t k_max_service_count = 1'000'000;
// Recovery budgets (docs/recovery.md): restarts after errors are bounded by what Beaker's
// retry.allowedTaskRetries accepts (10); preemptions by a sanity limit.
inline constexpr std::int64_t k_max_recoveries = 1000;
inline constexpr std::int64_t k_max_restarts_on_errors = 10;
inline constexpr std::int64_t k_default_max_recoveries = 10;

// The four replica shapes a launch renders.
enum class Kind { single_sft, single_rl, multi_sft, multi_rl };
bool is_multi_node(Kind kind);
bool is_rl(Kind kind);

// A LiteRegistry URI as the replica receives it (text, verbatim) and as the replica's own
// parser reads it (location). Equal when the text is.
struct RegistryUri {
  std::string text;
  registry::Location location;
  bool operator==(const RegistryUri &other) const { return text == other.text; }
};

// Parses `text` with registry::parse_location against the container's working directory and
// home. `opened_natively` (multi-node RL, whose replicas open the registry with this binary)
// also refuses rediss://, plain or behind head+: Debian's hiredis has no TLS. Errors are
// pb::Error exit 2 starting with `what` ("--registry", "REGISTRY").
RegistryUri parse_registry(std::string_view text,
                           const registry::ParseContext &context,
                           std::string_view what,
                           bool opened_natively = true);

// Service name -> how many live servers the replicas wait for.
using RequiredServices = std::map<std::string, std::int64_t>;

// REQUIRED_LITEREGISTRY_SERVICES: a JSON object of non-empty name -> integer count in
// 1..k_max_service_count. `accept_string_counts` also takes "3" (older launchers wrote
// strings; rl resume reads those). Throws pb::Error exit 2 "invalid REQUIRED_...: ...".
RequiredServices decode_required_services(std::string_view json, bool accept_string_counts = false);
std::string encode_required_services(const RequiredServices &services); // {"a":1,"b":2}

// LOCAL_SEARCH_MODEL_PATHS_JSON: a JSON array of non-empty strings ("[\"a\", \"b\"]").
std::vector<std::string> decode_string_list(std::string_view json, std::string_view name);
std::string encode_string_list(const std::vector<std::string> &items);

// The whole contract of one launch. Fields not used by `kind` stay at their defaults.
struct ReplicaEnv {
  Kind kind = Kind::single_sft;

  // Every replica.
  std::string home;
  std::string working_dir;
  std::string scratch;
  std::string config_path;
  std::string output_dir;
  std::string wandb_run_id;
  std::optional<std::string> setup_command;

  // Single node.
  std::string experiment_name;
  std::int64_t num_gpus = 0;

  // RL (and multi-node SFT: wandb_shared_run_id).
  std::string wandb_shared_run_id;
  std::optional<std::string> wandb_entity; // single-node RL
  std::optional<RegistryUri> registry;     // optional single-node, required multi-node RL

  // Multi node.
  std::string launch_id;
  std::string rendezvous_dir;
  std::int64_t rendezvous_timeout_seconds = 0;
  std::int64_t total_nodes = 0;
  std::int64_t gpus_per_node = 0;

  // Multi-node RL.
  std::int64_t total_infer_ranks = 0;
  std::int64_t trainer_gpu_count = 0;
  std::int64_t mixed_infer_gpu_count = 0;
  std::int64_t gateway_port = 0;
  std::int64_t gateway_workers = 0;
  RequiredServices required_services;
  std::vector<std::string> local_search_model_paths;

  // The Prime-RL generation the TOML is written for: v0_8 (written as nothing, as every
  // launcher before v0.9 support did) or v0_9.
  primerl::Generation generation = primerl::Generation::v0_8;
  std::string prime_rl_version; // "v0.8.0"; "" when the spec predates it
  // v0.9: the run directory under output_dir, and the run.name the launch passes to Prime-RL
  // ("" when the TOML names its run itself).
  std::string run_dir_name;
  std::string run_name;
  // v0.9 multi-node RL: inference nodes are replicas [0, num_infer_nodes), trainer nodes the
  // rest; env servers ("train/<name>") run beside the orchestrator.
  std::int64_t num_train_nodes = 0;
  std::int64_t num_infer_nodes = 0;
  std::int64_t inference_tp = 1;
  std::int64_t orchestrator_replica = 0;
  std::vector<std::string> env_servers;
  // v0.8.0 multi-node RL in Prime-RL's placement (the topology names above, no registry).
  bool prime_rl_placement = false;
  // Both generations, Prime-RL's placement: expert parallelism and the nodes of one inference
  // replica (written only with expert parallelism).
  bool expert_parallel = false;
  std::int64_t nodes_per_infer_replica = 0; // with expert parallelism or disaggregated
  // Disaggregated prefill/decode inference replicas (Prime-RL's placement).
  std::optional<primerl::Disaggregated> disaggregated;
  primerl::Router router = primerl::Router::vllm_router;
  primerl::KvOffload kv_offload = primerl::KvOffload::none;
  // Whether the topology is Prime-RL's (inference replicas first, then trainer replicas).
  bool prime_rl_topology() const {
    return generation == primerl::Generation::v0_9 || prime_rl_placement;
  }

  // Every launch: the recovery policy the runtime enforces from the attempt ledger.
  std::int64_t max_recoveries = k_default_max_recoveries;
  std::int64_t max_restarts_on_errors = 0;
  std::string recover;         // empty in older specs
  std::string controller_name; // multi-node with a recovery controller

  // Every name `kind` carries, with WANDB_RESUME=allow. Throws pb::Error exit 2 naming the
  // variable when a value is outside the contract (check()).
  EnvMap to_env() const;

  // Reads the contract of `kind` from a replica's environment: names the replica needs must be
  // set and non-empty (all missing ones named at once, see required_names), the others are read
  // when present. Malformed or out-of-range values throw pb::Error exit 2 naming the variable.
  static ReplicaEnv from_env(Kind kind, const EnvMap &env);

  // The range checks of from_env on a value (to_env runs them too).
  void check() const;

  bool operator==(const ReplicaEnv &other) const = default;
};

// The names a replica of `kind` cannot start without, in the order messages list them.
std::vector<std::string> required_names(Kind kind,
                                        primerl::Generation generation = primerl::Generation::v0_8,
                                        bool prime_rl_placement = false);

// PRIME_RL_PLACEMENT of `env`: true for "prime-rl", false when unset; others throw exit 2.
bool prime_rl_placement_of(const EnvMap &env);

// PRIME_RL_GENERATION of `env`: v0_8 when unset; "v0.9" is v0_9; others throw exit 2.
primerl::Generation generation_of(const EnvMap &env);

// Throws pb::Error exit 2 "missing required environment variable(s): A, B" for every name of
// `names` that is unset or empty in `env`.
void require_set(const EnvMap &env, const std::vector<std::string> &names);

// Whether a launch of `kind` writes `name` (so users may not set it with --env, and rl resume
// regenerates rather than carries it).
bool is_launcher_owned(std::string_view name, Kind kind);

} // namespace pb::contract
