// SPDX-License-Identifier: MIT
// make_plan, part 2: one reader per topology (docs/launch.md "Topologies"). Each takes the
// launch keys of the training TOML through primerl and fills the topology's replica fields.
#include "plan_parts.hpp"

#include <primebeaker/core/text.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

namespace pb::launch::detail {

namespace {

CheckedPath toml_path(const toml::Document &document, const primerl::PathKey &key) {
  const toml::Value *value = document.root().find_path(text::split(key.key, '.'));
  return {
      fmt::format("{} at {}", key.key, value ? document.location(*value) : document.source_name()),
      key.value,
      true};
}

TopologyRead single_sft(const toml::Document &document) {
  const auto sft = primerl::read_single_node_sft(document);
  TopologyRead read;
  read.wandb = sft.wandb;
  read.output_dir = sft.output_dir;
  read.paths = {toml_path(document, sft.output_dir),
                toml_path(document, sft.data_name),
                toml_path(document, sft.val_data_name)};
  read.task_name = "sft";
  read.description_kind = "SFT";
  read.gpu_count = sft.num_gpus;
  read.replica.num_gpus = sft.num_gpus;
  return read;
}

TopologyRead single_rl(const toml::Document &document) {
  const auto rl = primerl::read_single_node_rl(document);
  TopologyRead read;
  read.wandb = rl.wandb;
  read.output_dir = rl.output_dir;
  read.paths = {toml_path(document, rl.output_dir)};
  read.task_name = "rl";
  read.description_kind = "RL";
  read.gpu_count = rl.gpu_count();
  read.replica.num_gpus = rl.gpu_count();
  return read;
}

TopologyRead multi_sft(const toml::Document &document) {
  const auto sft = primerl::read_multi_node_sft(document);
  TopologyRead read;
  read.wandb = sft.wandb;
  read.output_dir = sft.output_dir;
  read.paths = {toml_path(document, sft.output_dir),
                toml_path(document, sft.data_name),
                toml_path(document, sft.val_data_name)};
  read.task_name = "prime-sft-multinode";
  read.description_kind = "multi-node SFT";
  read.gpu_count = sft.gpus_per_node;
  read.replicas = sft.num_nodes;
  read.replica.total_nodes = sft.num_nodes;
  read.replica.gpus_per_node = sft.gpus_per_node;
  return read;
}

TopologyRead multi_rl(const toml::Document &document) {
  const auto rl = primerl::read_multi_node_rl(document);
  TopologyRead read;
  read.wandb = rl.wandb;
  read.output_dir = rl.output_dir;
  read.paths = {toml_path(document, rl.output_dir)};
  read.task_name = "prime-rl-multinode";
  read.description_kind = "multi-node RL";
  read.gpu_count = rl.gpus_per_node;
  read.replicas = rl.total_nodes;
  read.replica.total_nodes = rl.total_nodes;
  read.replica.gpus_per_node = rl.gpus_per_node;
  read.replica.total_infer_ranks = rl.total_infer_ranks;
  read.replica.trainer_gpu_count = rl.trainer_gpus;
  read.replica.mixed_infer_gpu_count = rl.mixed_infer_gpus;
  read.replica.local_search_model_paths = rl.local_search_model_paths;
  return read;
}

} // namespace

TopologyRead read_topology(const toml::Document &document, contract::Kind kind) {
  switch (kind) {
  case contract::Kind::single_sft:
    return single_sft(document);
  case contract::Kind::single_rl:
    return single_rl(document);
  case contract::Kind::multi_sft:
    return multi_sft(document);
  case contract::Kind::multi_rl:
    break;
  }
  return multi_rl(document);
}

} // namespace pb::launch::detail
