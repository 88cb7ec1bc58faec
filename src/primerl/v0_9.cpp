// SPDX-License-Identifier: MIT
// The Prime-RL v0.9 launch keys (include/primebeaker/primerl/v0_9.hpp). Only what the launch
// and the replicas need is read here; every other key is the schema checker's
// (docs/primerl-schema.md), so a key is never judged twice.
#include "reader.hpp"

#include <primebeaker/primerl/limits.hpp>
#include <primebeaker/primerl/v0_9.hpp>

namespace pb::primerl::v0_9 {

namespace {

using detail::Reader;
using detail::toml_string;
using toml::Document;
using toml::Type;
using toml::Value;

Run read_run(Reader &reader) {
  Run run;
  run.name = reader.optional_string("run.name").value_or("");
  run.dir = reader.optional_string("run.dir").value_or(run.name);
  run.named_by_launch = run.dir.empty();
  if (!run.dir.empty() &&
      (run.dir.find('/') != std::string::npos || run.dir == "." || run.dir == "..")) {
    reader.rule(
        reader.find(reader.find("run.dir") ? "run.dir" : "run.name"),
        fmt::format("the run directory '{}' must be one directory name under output_dir", run.dir));
  }
  return run;
}

// [monitors.wandb]: every key has a default in v0.9 (project "prime-rl", name = run.name).
Wandb read_wandb(Reader &reader) {
  Wandb wandb;
  // No [monitors.wandb]: Prime-RL logs to no W&B run (its default).
  wandb.enabled = reader.find("monitors.wandb") != nullptr;
  if (!wandb.enabled) {
    reader.defaulted("no [monitors.wandb]: no W&B run (Prime-RL's default)");
  }
  wandb.project = reader.optional_string("monitors.wandb.project").value_or("prime-rl");
  wandb.name = reader.optional_string("monitors.wandb.name").value_or("");
  if (auto entity = reader.optional_string("monitors.wandb.entity"); entity && !entity->empty()) {
    wandb.entity = std::move(entity);
  }
  wandb.offline = reader.boolean("monitors.wandb.offline", false, false);
  return wandb;
}

// deployment.num_infer_nodes: 0 is allowed (no inference); unset is `fallback`.
std::int64_t infer_nodes(Reader &reader, std::int64_t fallback) {
  const Value *value = reader.find("deployment.num_infer_nodes");
  if (value == nullptr) {
    return fallback;
  }
  const auto number = value->integer();
  if (!number || *number < 0 || *number > k_max_nodes) {
    reader.wrong(*value,
                 "deployment.num_infer_nodes",
                 fmt::format("an integer from 0 to {}", k_max_nodes),
                 std::to_string(fallback));
    return fallback;
  }
  return *number;
}

// Where the deployment table says how many GPUs and nodes the run takes.
DeploymentType read_type(Reader &reader, const Document &document, Problems &problems) {
  // v0.9 defaults deployment to single_node: a missing table or type is not a problem.
  if (reader.find("deployment.type") == nullptr) {
    return DeploymentType::single_node;
  }
  return read_deployment_type(document, problems, DeploymentType::single_node);
}

} // namespace

std::string experiment_name(const Run &run, const Wandb &wandb) {
  return !wandb.name.empty() ? wandb.name : run.name;
}

namespace {

// What every entrypoint reads alike: deployment type, output_dir, the run, W&B, GPUs per node.
template <typename Config>
void read_common(Reader &reader, const Document &document, Problems &problems, Config &config) {
  config.deployment = read_type(reader, document, problems);
  config.output_dir = reader.find("output_dir") != nullptr
                          ? reader.path("output_dir", "outputs")
                          : reader.defaulted_path("output_dir", "outputs");
  config.run = read_run(reader);
  config.wandb = read_wandb(reader);
  config.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node, 8, 8);
}

} // namespace

Rl read_rl(const Document &document, Problems &problems) {
  Reader reader(document, "Prime-RL v0.9 RL", problems);
  Rl rl;
  read_common(reader, document, problems, rl);
  rl.has_inference = reader.find("inference") != nullptr;
  rl.tensor_parallel =
      reader.count("inference.vllm.tensor_parallel_size", k_max_gpus_per_node, 1, 1);
  rl.router_port = reader.count("inference.server.port", 65535, 8000, 8000);
  rl.backend_port =
      reader.count("inference.backend_port", 65535, rl.router_port + 100, rl.router_port + 100);
  if (rl.deployment == DeploymentType::single_node) {
    detail::refuse_single_node_llm_d(reader);
    rl.num_train_gpus = reader.count("deployment.num_train_gpus", k_max_gpus_per_node, 1, 1);
    rl.num_infer_gpus = reader.count("deployment.num_infer_gpus", k_max_gpus_per_node, 1, 1);
    if (rl.num_train_gpus + rl.num_infer_gpus > rl.gpus_per_node &&
        !reader.bad({"deployment.num_train_gpus",
                     "deployment.num_infer_gpus",
                     "deployment.gpus_per_node"})) {
      reader.rule(reader.find("deployment.num_infer_gpus"),
                  fmt::format("deployment.num_train_gpus ({}) + num_infer_gpus ({}) exceeds "
                              "gpus_per_node ({})",
                              rl.num_train_gpus,
                              rl.num_infer_gpus,
                              rl.gpus_per_node));
    }
  } else {
    rl.num_train_nodes = reader.count("deployment.num_train_nodes", k_max_nodes, 1);
    // Unset: one node per inference replica, or inference.deployment.num_nodes (rl.py's
    // auto_setup_infer_nodes).
    rl.disaggregated = detail::read_disaggregated(reader);
    const std::int64_t inferred =
        !rl.has_inference ? 0
        : rl.disaggregated
            ? rl.disaggregated->nodes()
            : reader.integer_as_written("inference.deployment.num_nodes").value_or(1);
    rl.num_infer_nodes = infer_nodes(reader, inferred);
    rl.num_infer_replicas = reader.count("deployment.num_infer_replicas", k_max_nodes, 1, 1);
    rl.orchestrator_on_inference =
        reader.boolean("deployment.orchestrator_on_inference", false, false);
    if (rl.total_nodes() > k_max_nodes && !reader.bad({"deployment.num_train_nodes"})) {
      reader.rule(reader.find("deployment.num_train_nodes"),
                  fmt::format("{} nodes in all is more than primebeaker launches ({})",
                              rl.total_nodes(),
                              k_max_nodes));
    }
    if (rl.num_infer_nodes > 0 && !rl.has_inference) {
      problems.add_missing_table(
          "inference",
          fmt::format("{}: multi-node RL with inference nodes needs an [inference] table",
                      document.source_name()));
      problems.suggest("inference.vllm.tensor_parallel_size", "1");
    }
    if (rl.has_inference && rl.gpus_per_node % rl.tensor_parallel != 0 &&
        !reader.bad({"inference.vllm.tensor_parallel_size", "deployment.gpus_per_node"})) {
      reader.rule("inference.vllm.tensor_parallel_size",
                  fmt::format("deployment.gpus_per_node ({}) must be a multiple of "
                              "inference.vllm.tensor_parallel_size ({}): each inference node "
                              "runs gpus_per_node / tensor_parallel_size engines",
                              rl.gpus_per_node,
                              rl.tensor_parallel),
                  std::to_string(rl.gpus_per_node));
    }
    rl.expert_parallel = reader.boolean("inference.vllm.enable_expert_parallel", false, false);
    rl.weight_broadcast_port = reader.count("weight_broadcast.port", 65535, 29501, 29501);
    const auto serving =
        detail::read_serving(reader, "inference.vllm.enable_return_routed_experts");
    rl.router = serving.router;
    rl.kv_offload = serving.kv_offload;
  }
  // No source is Prime-RL's business (train.source defaults to an empty list).
  rl.sources = read_env_sources(document);
  return rl;
}

Sft read_sft(const Document &document, Problems &problems) {
  Reader reader(document, "Prime-RL v0.9 SFT", problems);
  Sft sft;
  read_common(reader, document, problems, sft);
  if (sft.deployment == DeploymentType::single_node) {
    sft.num_train_gpus = reader.count("deployment.num_train_gpus", k_max_gpus_per_node, 1, 1);
    if (reader.find("inference") != nullptr) {
      sft.num_infer_gpus = reader.count("deployment.num_infer_gpus", k_max_gpus_per_node, 1, 1);
    }
    if (sft.num_train_gpus + sft.num_infer_gpus > sft.gpus_per_node &&
        !reader.bad({"deployment.num_train_gpus", "deployment.gpus_per_node"})) {
      reader.rule(reader.find("deployment.num_train_gpus"),
                  fmt::format("deployment.num_train_gpus ({}) + num_infer_gpus ({}) exceeds "
                              "gpus_per_node ({})",
                              sft.num_train_gpus,
                              sft.num_infer_gpus,
                              sft.gpus_per_node));
    }
  } else {
    sft.num_train_nodes = reader.count("deployment.num_train_nodes", k_max_nodes, 2, 2);
    sft.num_infer_nodes = infer_nodes(reader, 0);
    // One replica per node: Prime-RL's multi-node SFT runs torchrun across the trainer nodes.
    if (sft.num_infer_nodes > 0) {
      reader.rule(reader.find("deployment.num_infer_nodes"),
                  "multi-node SFT with online-eval inference nodes is not launched by "
                  "primebeaker yet: set deployment.num_infer_nodes = 0 or evaluate separately");
    }
  }
  return sft;
}

Rl read_rl(const Document &document) {
  Problems problems(document);
  auto rl = read_rl(document, problems);
  problems.throw_if_any();
  return rl;
}

Sft read_sft(const Document &document) {
  Problems problems(document);
  auto sft = read_sft(document, problems);
  problems.throw_if_any();
  return sft;
}

} // namespace pb::primerl::v0_9
