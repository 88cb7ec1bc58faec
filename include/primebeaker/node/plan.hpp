// SPDX-License-Identifier: MIT
// The pure half of `primebeaker node rl|sft` (docs/node.md): the environment contract, role and
// GPU placement, the global inference worker list, every child's argv, the peer watcher's
// verdict and the stale-state cleanup choice. No I/O, no env reads, no clock: all passed in.
#pragma once

#include <primebeaker/core/process.hpp>
#include <primebeaker/primerl/config.hpp>

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
};

// Fields common to both kinds of replica.
struct CommonEnv {
  int rank = 0;
  int total_nodes = 0;
  int gpus_per_node = 0;
  std::filesystem::path config_path;
  std::filesystem::path output_dir;
  std::filesystem::path working_dir;
  std::filesystem::path scratch;
  std::string launch_id;
  std::filesystem::path rendezvous_dir;
  int rendezvous_timeout_seconds = 0;
  std::optional<std::string> setup_command; // PRIMEBEAKER_SETUP_COMMAND
  std::int64_t max_recoveries = 10;         // PRIMEBEAKER_MAX_RECOVERIES (docs/recovery.md)
  std::int64_t max_restarts_on_errors = 0;  // PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS
  Tuning tuning;
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
  // v0.9: Prime-RL's placement (inference replicas first, then trainer replicas).
  int num_train_nodes = 0;
  int num_infer_nodes = 0;
  int inference_tp = 1;
  int orchestrator_replica = 0;
  std::vector<std::string> env_servers; // "train/<name>"
};

// Reads the replica contract (contract::ReplicaEnv, docs/contract.md) from `env`, plus
// BEAKER_REPLICA_RANK and the node's own knobs. Missing or empty required variables throw
// pb::Error exit 2 naming every one; malformed values exit 2 naming the variable.
SftEnv parse_sft_env(const EnvMap &env);
RlEnv parse_rl_env(const EnvMap &env);
Tuning parse_tuning(const EnvMap &env);

enum class Role { trainer, mixed, inference };
std::string role_name(Role role); // "trainer", "mixed", "inference"

// A contiguous GPU range on one node.
struct Slice {
  int start = 0;
  int count = 0;
};

// Role and placement of one RL replica (docs/node.md). Exit 2 on a bad rank or a
// partition larger than the node.
struct RlPlacement {
  Role role = Role::inference;
  int train_gpus = 0;
  Slice inference;
};
RlPlacement place_rl(const RlEnv &env);

// "start count" as published in layout.<rank>, and back (nullopt when malformed).
std::string layout_text(const Slice &slice);
std::optional<Slice> parse_layout(const std::string &text);

// The CUDA_VISIBLE_DEVICES value of each TP block of a slice ("4,5", "6,7").
std::vector<std::string> tp_blocks(const Slice &slice, int tp);

struct Worker {
  std::string url;       // http://<host>:<port>
  std::string admin_url; // <url>/v1
};
struct NodeSlot {
  std::string host;
  Slice inference;
};
// Every inference rank of the job in rank order (docs/node.md). Exit 2 when a slice is
// not divisible by tp or the total differs from `expected_ranks`.
std::vector<Worker>
global_workers(const std::vector<NodeSlot> &nodes, int backend_port, int tp, int expected_ranks);

// Paths of one replica (docs/node.md).
struct Paths {
  std::filesystem::path config_dir; // <OUTPUT_DIR>/configs
  std::filesystem::path logs;       // <OUTPUT_DIR>/logs
  std::filesystem::path local_tmp;  // the node-local TMPDIR default
};
Paths rl_paths(const RlEnv &env);
Paths sft_paths(const SftEnv &env);

// Cache defaults of docs/node.md (each only when unset in `env`) plus TMPDIR.
EnvMap cache_defaults(const EnvMap &env,
                      const std::filesystem::path &scratch,
                      const std::filesystem::path &local_tmp);

// The argv of the children whose arguments need nothing learned at run time. The others
// (router, inference servers, trainer, orchestrator, SFT torchrun) are written with ${...}
// placeholders in node::plan_rl / plan_sft (replica_plan.hpp).

// The local tool gateway (docs/node.md): the one place naming its program. Today
// LiteRegistry's own `python3 -m literegistry.gateway`; a native `primebeaker gateway` later.
proc::Argv local_gateway_argv(const RlEnv &env);

// The registry steps run as supervised children of this binary (`primebeaker registry ...`,
// src/registry), so a barrier never blocks the watcher and dies with its process group.
proc::Argv
wait_redis_argv(const std::string &self, const RlEnv &env, const std::filesystem::path &stop_file);
proc::Argv wait_services_argv(const std::string &self,
                              const RlEnv &env,
                              const std::filesystem::path &stop_file);
proc::Argv probe_gateway_argv(const std::string &self, const RlEnv &env);

// What the peer watcher saw in the rendezvous directory (docs/node.md).
struct PeerStatus {
  int code = 0;
  std::string role; // "trainer", "mixed", "inference", "sft"
};
struct Observation {
  bool complete = false;
  bool shutdown_requested = false;
  std::map<int, PeerStatus> statuses; // other ranks only
};
// The exit code the watcher asks for, or nullopt to keep running: 0 when `complete`, 92 when a
// shutdown was requested, 90 for a failed peer, 0 for a finished non-inference peer, 91 for an
// inference peer that exited cleanly. With `sft`, peers that exited 0 are not a verdict.
std::optional<int> watcher_verdict(const Observation &seen, bool sft = false);
// "<code> <role>" of status.<rank>, and back.
std::string status_text(int code, const std::string &role);
std::optional<PeerStatus> parse_status(const std::string &text);

// Strips a leading "[<letters><digits>]:" (torchrun's rank prefix) from a log line.
std::string strip_rank_prefix(const std::string &line);

// Shell "export NAME=<quoted>" lines of an env file; exit 3 on a name outside [A-Z_][A-Z0-9_]*.
std::string env_file_text(const EnvMap &values, const std::string &file_name);

} // namespace pb::node
