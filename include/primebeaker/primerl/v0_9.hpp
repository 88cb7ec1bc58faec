// SPDX-License-Identifier: MIT
// The launch keys of a Prime-RL v0.9 training TOML (docs/launch.md "Prime-RL v0.9"), one typed
// model per entrypoint, read like the v0.8.0 readers of config.hpp: every problem collected with
// its line:column and the key that fixes it. Names follow v0.9's own config classes
// (`packages/prime-rl-configs/src/prime_rl/configs/rl.py` at 559b4477), defaults included, so
// what is read here is what Prime-RL will resolve.
#pragma once

#include <primebeaker/primerl/config.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pb::primerl::v0_9 {

// Prime-RL's fixed ports (multi_node_rl.sbatch.j2 and the config defaults).
inline constexpr int k_rendezvous_port = 29500;   // torchrun, on the first trainer host
inline constexpr int k_zmq_transport_port = 5555; // READY on +1
inline constexpr int k_dp_rpc_port = 13345;
inline constexpr int k_env_server_base_port = 5000;

using Source = EnvSource;

// The run identity: the run directory is output_dir / run.dir (default run.name). A TOML
// without either gets a random name from Prime-RL, which no resume could find again, so the
// launch passes its experiment name as run.name (named_by_launch).
struct Run {
  std::string name;             // run.name as written, or ""
  std::string dir;              // run.dir, else run.name, else ""
  bool named_by_launch = false; // neither is written: the launch names it
};

struct Rl {
  DeploymentType deployment = DeploymentType::single_node;
  PathKey output_dir; // default "outputs"
  Run run;
  Wandb wandb; // [monitors.wandb]; name may be empty (it defaults to run.name)
  std::int64_t gpus_per_node = 8;
  // single_node
  std::int64_t num_train_gpus = 1;
  std::int64_t num_infer_gpus = 1;
  // multi_node: inference nodes come first, then trainer nodes.
  std::int64_t num_train_nodes = 1;
  std::int64_t num_infer_nodes = 0; // per inference replica
  std::int64_t num_infer_replicas = 1;
  bool orchestrator_on_inference = false;
  bool has_inference = false;
  std::int64_t tensor_parallel = 1; // inference.vllm.tensor_parallel_size
  bool expert_parallel = false;     // inference.vllm.enable_expert_parallel
  std::optional<Disaggregated> disaggregated;
  Router router = Router::vllm_router;
  KvOffload kv_offload = KvOffload::none;
  std::int64_t weight_broadcast_port = 29501; // weight_broadcast.port
  std::int64_t router_port = 8000;            // inference.server.port
  std::int64_t backend_port = 8100;           // inference.backend_port
  std::vector<Source> sources;

  std::int64_t total_infer_nodes() const { return num_infer_nodes * num_infer_replicas; }
  std::int64_t total_nodes() const { return total_infer_nodes() + num_train_nodes; }
  // Trainer ranks writing each checkpoint step: one per trainer GPU.
  std::int64_t trainer_ranks() const {
    return deployment == DeploymentType::multi_node ? num_train_nodes * gpus_per_node
                                                    : num_train_gpus;
  }
  // The Beaker replica that runs the orchestrator and the env servers.
  std::int64_t orchestrator_replica() const {
    return orchestrator_on_inference && total_infer_nodes() > 0 ? total_infer_nodes() - 1
                                                                : total_infer_nodes();
  }
};

struct Sft {
  DeploymentType deployment = DeploymentType::single_node;
  PathKey output_dir;
  Run run;
  Wandb wandb;
  std::int64_t gpus_per_node = 8;
  std::int64_t num_train_gpus = 1;  // single_node
  std::int64_t num_infer_gpus = 0;  // single_node, online evals ([inference] only)
  std::int64_t num_train_nodes = 2; // multi_node
  std::int64_t num_infer_nodes = 0; // multi_node
  std::int64_t trainer_ranks() const {
    return deployment == DeploymentType::multi_node ? num_train_nodes * gpus_per_node
                                                    : num_train_gpus;
  }
  std::int64_t total_nodes() const { return num_train_nodes + num_infer_nodes; }
};

Rl read_rl(const toml::Document &document, Problems &problems);
Sft read_sft(const toml::Document &document, Problems &problems);
Rl read_rl(const toml::Document &document);
Sft read_sft(const toml::Document &document);

// The experiment name a v0.9 TOML gives: monitors.wandb.name, else run.name, else "".
std::string experiment_name(const Run &run, const Wandb &wandb);

} // namespace pb::primerl::v0_9
