// SPDX-License-Identifier: MIT
// make_plan, part 2: the topology readers (docs/launch.md "Topologies"). Each takes the launch
// keys of the training TOML through primerl (collecting every problem) and fills the
// topology's replica fields; what all four share is one helper.
#include "plan_parts.hpp"

#include <primebeaker/core/text.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::launch::detail {

namespace {

CheckedPath toml_path(const toml::Document &document, const primerl::PathKey &key) {
  const toml::Value *value = document.root().find_path(text::split(key.key, '.'));
  return {
      fmt::format("{} at {}", key.key, value ? document.location(*value) : document.source_name()),
      key.value,
      true};
}

// The fields every topology has: W&B, output_dir and the TOML paths under the mount (SFT also
// its data paths), the task name and the description.
template <typename Config>
TopologyRead shared_fields(const toml::Document &document,
                           const Config &config,
                           const char *task_name,
                           const char *description_kind) {
  TopologyRead read;
  read.wandb = config.wandb;
  read.output_dir = config.output_dir;
  read.paths = {toml_path(document, config.output_dir)};
  if constexpr (requires { config.data_name; }) {
    for (const primerl::PathKey *data : {&config.data_name, &config.val_data_name}) {
      if (!data->key.empty()) { // a name the TOML writes (Prime-RL defaults the others)
        read.paths.push_back(toml_path(document, *data));
      }
    }
  }
  read.task_name = task_name;
  read.description_kind = description_kind;
  return read;
}

} // namespace

namespace {

// Expert parallelism in Prime-RL's placement: the replica's engines form one DP group when it
// spans more than one engine (group DP = nodes x gpus_per_node / tp); otherwise the flag only
// shards experts inside each engine and the replicas need not know.
// A disaggregated replica's prefill and decode instances are DP groups of their own (docs/node.md).
void inference_shape_fields(bool expert_parallel,
                            std::int64_t nodes_per_replica,
                            const std::optional<primerl::Disaggregated> &disaggregated,
                            contract::ReplicaEnv &replica) {
  const std::int64_t group_dp =
      nodes_per_replica * replica.gpus_per_node / std::max<std::int64_t>(1, replica.inference_tp);
  if (expert_parallel && group_dp > 1 && !disaggregated) {
    replica.expert_parallel = true;
    replica.nodes_per_infer_replica = nodes_per_replica;
  }
  if (disaggregated) {
    replica.disaggregated = disaggregated;
    replica.nodes_per_infer_replica = nodes_per_replica;
  }
}

// The replica fields of Prime-RL's placement, from either generation's multi-node RL reading
// (inference replicas first, then the trainer's; the orchestrator's replica; its env servers).
template <typename Rl> void prime_rl_topology_fields(const Rl &rl, TopologyRead &read) {
  read.replica.num_train_nodes = rl.num_train_nodes;
  read.replica.num_infer_nodes = rl.total_infer_nodes();
  read.replica.inference_tp = rl.tensor_parallel;
  read.replica.orchestrator_replica = rl.orchestrator_replica();
  read.weight_broadcast_port = rl.weight_broadcast_port;
  for (const auto &source : rl.sources) {
    read.replica.env_servers.push_back(source.split + "/" + source.name);
  }
  inference_shape_fields(rl.expert_parallel, rl.num_infer_nodes, rl.disaggregated, read.replica);
  read.replica.router = rl.router;
  read.replica.kv_offload = rl.kv_offload;
}

// Prime-RL v0.9: one reader per entrypoint; the placement is Prime-RL's own
// (multi_node_rl.sbatch.j2): inference nodes first, then trainer nodes.
TopologyRead read_topology_v0_9(const toml::Document &document,
                                contract::Kind kind,
                                primerl::Problems &problems) {
  TopologyRead read;
  read.generation = primerl::Generation::v0_9;
  read.replica.generation = primerl::Generation::v0_9;
  const bool multi = contract::is_multi_node(kind);
  // What both entrypoints name alike: the run, its W&B, output_dir.
  const auto identity = [&](const auto &config) {
    read.wandb = config.wandb;
    read.wandb.name = primerl::v0_9::experiment_name(config.run, config.wandb);
    read.output_dir = config.output_dir;
    read.run = config.run;
    read.paths = {toml_path(document, config.output_dir)};
  };
  if (kind == contract::Kind::single_sft || kind == contract::Kind::multi_sft) {
    const auto sft = primerl::v0_9::read_sft(document, problems);
    identity(sft);
    read.task_name = multi ? "prime-sft-multinode" : "sft";
    read.description_kind = multi ? "multi-node SFT (Prime-RL v0.9)" : "SFT (Prime-RL v0.9)";
    if (multi) {
      read.gpu_count = read.replica.gpus_per_node = sft.gpus_per_node;
      read.replicas = read.replica.total_nodes = sft.total_nodes();
      read.replica.num_train_nodes = sft.num_train_nodes;
    } else {
      read.gpu_count = read.replica.num_gpus = sft.num_train_gpus + sft.num_infer_gpus;
    }
    return read;
  }
  const auto rl = primerl::v0_9::read_rl(document, problems);
  identity(rl);
  read.task_name = multi ? "prime-rl-multinode" : "rl";
  read.description_kind = multi ? "multi-node RL (Prime-RL v0.9)" : "RL (Prime-RL v0.9)";
  if (!multi) {
    read.gpu_count = read.replica.num_gpus = rl.num_train_gpus + rl.num_infer_gpus;
    return read;
  }
  read.gpu_count = read.replica.gpus_per_node = rl.gpus_per_node;
  read.replicas = read.replica.total_nodes = rl.total_nodes();
  prime_rl_topology_fields(rl, read);
  return read;
}

} // namespace

TopologyRead read_topology(const toml::Document &document,
                           contract::Kind kind,
                           primerl::Generation generation,
                           primerl::Problems &problems) {
  if (generation == primerl::Generation::v0_9) {
    return read_topology_v0_9(document, kind, problems);
  }
  switch (kind) {
  case contract::Kind::single_sft: {
    const auto sft = primerl::read_single_node_sft(document, problems);
    TopologyRead read = shared_fields(document, sft, "sft", "SFT");
    read.gpu_count = read.replica.num_gpus = sft.num_gpus;
    return read;
  }
  case contract::Kind::single_rl: {
    const auto rl = primerl::read_single_node_rl(document, problems);
    TopologyRead read = shared_fields(document, rl, "rl", "RL");
    read.gpu_count = read.replica.num_gpus = rl.gpu_count();
    return read;
  }
  case contract::Kind::multi_sft: {
    const auto sft = primerl::read_multi_node_sft(document, problems);
    TopologyRead read = shared_fields(document, sft, "prime-sft-multinode", "multi-node SFT");
    read.gpu_count = read.replica.gpus_per_node = sft.gpus_per_node;
    read.replicas = read.replica.total_nodes = sft.num_nodes;
    return read;
  }
  case contract::Kind::multi_rl:
    break;
  }
  const auto rl = primerl::read_multi_node_rl(document, problems);
  TopologyRead read = shared_fields(document,
                                    rl,
                                    "prime-rl-multinode",
                                    rl.prime_rl_placement ? "multi-node RL (Prime-RL's placement)"
                                                          : "multi-node RL");
  read.gpu_count = read.replica.gpus_per_node = rl.gpus_per_node;
  read.replicas = read.replica.total_nodes = rl.total_nodes;
  if (rl.prime_rl_placement) {
    // As Prime-RL's multi_node_rl.sbatch.j2 places it (docs/launch.md "Placements").
    read.replica.prime_rl_placement = true;
    prime_rl_topology_fields(rl, read);
    return read;
  }
  read.replica.total_infer_ranks = rl.total_infer_ranks;
  read.replica.trainer_gpu_count = rl.trainer_gpus;
  read.replica.mixed_infer_gpu_count = rl.mixed_infer_gpus;
  read.replica.local_search_model_paths = rl.local_search_model_paths;
  return read;
}

} // namespace pb::launch::detail
