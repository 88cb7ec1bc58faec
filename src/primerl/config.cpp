// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/limits.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace pb::primerl {

using toml::Document;
using toml::Type;
using toml::Value;

namespace {

// Reads launch keys for one topology (`what`, e.g. "single-node SFT"), naming the key and its
// line:column in every message.
class Reader {
public:
  Reader(const Document &document, std::string what) : m_doc(document), m_what(std::move(what)) {}

  const Value *find(std::string_view key) const {
    return m_doc.root().find_path(text::split(key, '.'));
  }

  const Value &table(std::string_view key) const {
    const Value *value = find(key);
    if (value == nullptr) {
      throw input_error(fmt::format("{}: {} needs a [{}] table", m_doc.source_name(), m_what, key));
    }
    if (!value->is(Type::table)) {
      throw input_error(fmt::format("{}: {} must be a table, got {} {}",
                                    m_doc.location(*value),
                                    key,
                                    article(value->type()),
                                    toml::type_name(value->type())));
    }
    return *value;
  }

  [[noreturn]] void missing(std::string_view key) const {
    const auto parts = text::split(key, '.');
    std::string where = m_doc.source_name();
    if (parts.size() > 1) {
      const auto parent = std::vector<std::string>(parts.begin(), parts.end() - 1);
      if (const Value *table = m_doc.root().find_path(parent)) {
        where = m_doc.location(*table);
      }
    }
    throw input_error(fmt::format("{}: {} is required for {}", where, key, m_what));
  }

  [[noreturn]] void
  wrong(const Value &value, std::string_view key, std::string_view expected) const {
    throw input_error(fmt::format(
        "{}: {} must be {}, got {}", m_doc.location(value), key, expected, shown(value)));
  }

  [[noreturn]] void rule(const Value *value, const std::string &message) const {
    throw input_error(
        fmt::format("{}: {}", value ? m_doc.location(*value) : m_doc.source_name(), message));
  }

  // A true TOML integer >= 1 (booleans and floats rejected).
  std::int64_t positive(std::string_view key, std::optional<std::int64_t> fallback = {}) const {
    const Value *value = find(key);
    if (value == nullptr) {
      if (fallback) {
        return *fallback;
      }
      missing(key);
    }
    const auto number = value->integer();
    if (!number || *number < 1) {
      wrong(*value, key, "a positive integer");
    }
    return *number;
  }

  // positive(), at most `max`: every count that enters GPU arithmetic is bounded first, so the
  // arithmetic cannot overflow (limits.hpp).
  std::int64_t
  count(std::string_view key, std::int64_t max, std::optional<std::int64_t> fallback = {}) const {
    const std::int64_t number = positive(key, fallback);
    if (number > max) {
      wrong(*find(key), key, fmt::format("a positive integer at most {}", max));
    }
    return number;
  }

  std::string string(std::string_view key, bool non_empty) const {
    const Value *value = find(key);
    if (value == nullptr) {
      missing(key);
    }
    const std::string *text = value->string();
    if (text == nullptr || (non_empty && text->empty())) {
      wrong(*value, key, non_empty ? "a non-empty string" : "a string");
    }
    return *text;
  }

  std::optional<std::string> optional_string(std::string_view key) const {
    const Value *value = find(key);
    if (value == nullptr) {
      return std::nullopt;
    }
    const std::string *text = value->string();
    if (text == nullptr) {
      wrong(*value, key, "a string");
    }
    return *text;
  }

  bool boolean(std::string_view key, std::optional<bool> fallback) const {
    const Value *value = find(key);
    if (value == nullptr) {
      if (fallback) {
        return *fallback;
      }
      missing(key);
    }
    const auto flag = value->boolean();
    if (!flag) {
      wrong(*value, key, "true or false");
    }
    return *flag;
  }

  PathKey path(std::string_view key) const { return {std::string(key), string(key, true)}; }

  const Document &doc() const { return m_doc; }

private:
  static std::string_view article(Type type) {
    return type == Type::array || type == Type::integer ? "an" : "a";
  }
  static std::string shown(const Value &value) {
    if (value.is(Type::table)) {
      return "a table";
    }
    if (value.is(Type::array)) {
      return "an array";
    }
    std::string spelled = value.raw();
    // A float spelled like an integer (an engine that re-renders "2.0" as "2") would read as
    // a contradiction next to "(float)".
    if (value.is(Type::floating) && spelled.find_first_of(".eEn") == std::string::npos) {
      spelled += ".0";
    }
    return fmt::format("{} ({})", spelled, toml::type_name(value.type()));
  }

  const Document &m_doc;
  std::string m_what;
};

void require_type(const Reader &reader, std::string_view expected) {
  const Value *type = reader.find("deployment.type");
  const std::string *text = type ? type->string() : nullptr;
  if (text == nullptr || *text != expected) {
    reader.rule(type, fmt::format("deployment.type must be '{}' here", expected));
  }
}

// Every table entry of orchestrator.<split>.<collection> (an array of tables or one table).
template <typename Visit> void for_each_environment_entry(const Document &document, Visit &&visit) {
  for (const char *split : {"train", "eval"}) {
    for (const char *collection : {"source", "env"}) {
      const Value *entries = document.root().find_path({"orchestrator", split, collection});
      if (entries == nullptr || !entries->is(Type::array)) {
        continue;
      }
      for (const auto &entry : *entries->array()) {
        if (entry.is(Type::table)) {
          visit(std::string_view(split), std::string_view(collection), entry);
        }
      }
    }
  }
}

} // namespace

std::string_view generation_name(Generation generation) {
  switch (generation) {
  case Generation::v0_2_to_v0_4:
    return "v0.2-v0.4";
  case Generation::v0_5:
    return "v0.5";
  case Generation::v0_6_to_v0_7:
    return "v0.6-v0.7";
  case Generation::v0_8:
    return "v0.8.0";
  case Generation::post_v0_8:
    return "post-v0.8.0";
  case Generation::undetermined:
    break;
  }
  return "undetermined";
}

GenerationInfo detect_generation(const Document &document) {
  const Value &root = document.root();
  auto at = [&](const Value &value, const std::string &key) {
    return fmt::format("{} at {}", key, document.location(value));
  };
  for (const char *table : {"resume", "monitors", "run"}) {
    if (const Value *value = root.find(table); value && value->is(Type::table)) {
      return {Generation::post_v0_8, at(*value, fmt::format("[{}]", table))};
    }
  }
  if (const Value *clean = root.find("clean"); clean && root.find("deployment")) {
    return {Generation::post_v0_8, at(*clean, "top-level clean")};
  }
  for (const char *split : {"train", "eval"}) {
    if (const Value *value = root.find_path({"orchestrator", split, "source"})) {
      return {Generation::v0_8, at(*value, fmt::format("orchestrator.{}.source", split))};
    }
  }
  for (const char *split : {"train", "eval"}) {
    if (const Value *value = root.find_path({"orchestrator", split, "env"})) {
      return {Generation::v0_6_to_v0_7, at(*value, fmt::format("orchestrator.{}.env", split))};
    }
  }
  if (const Value *value = root.find_path({"orchestrator", "env"})) {
    if (root.find("deployment") != nullptr) {
      return {Generation::v0_5, at(*value, "orchestrator.env with [deployment]")};
    }
    return {Generation::v0_2_to_v0_4, at(*value, "orchestrator.env without [deployment]")};
  }
  for (const char *key : {"inference_gpu_ids", "trainer_gpu_ids"}) {
    if (const Value *value = root.find(key)) {
      return {Generation::v0_2_to_v0_4, at(*value, key)};
    }
  }
  return {Generation::undetermined, {}};
}

void require_supported_generation(const Document &document) {
  const auto info = detect_generation(document);
  std::string unsupported;
  switch (info.generation) {
  case Generation::v0_8:
  case Generation::undetermined:
    return;
  case Generation::post_v0_8:
    unsupported = "[resume], [run], [monitors.wandb] and clean are not supported yet";
    break;
  case Generation::v0_6_to_v0_7:
    unsupported = "environments must be [[orchestrator.train.source]] / "
                  "[[orchestrator.eval.source]] entries";
    break;
  case Generation::v0_5:
  case Generation::v0_2_to_v0_4:
    unsupported = "environments must be [[orchestrator.train.source]] entries and placement a "
                  "[deployment] table";
    break;
  }
  throw input_error(fmt::format("{}: this is a Prime-RL {} config ({}); primebeaker launches the "
                                "v0.8.0 generation: {}",
                                document.source_name(),
                                generation_name(info.generation),
                                info.evidence,
                                unsupported));
}

DeploymentType read_deployment_type(const Document &document) {
  const Value *type = document.root().find_path({"deployment", "type"});
  const std::string *text = type ? type->string() : nullptr;
  if (text == nullptr) {
    throw input_error(fmt::format("{}: training TOML needs deployment.type (\"single_node\" or "
                                  "\"multi_node\")",
                                  type ? document.location(*type) : document.source_name()));
  }
  if (*text == "single_node") {
    return DeploymentType::single_node;
  }
  if (*text == "multi_node") {
    return DeploymentType::multi_node;
  }
  throw input_error(fmt::format("{}: unsupported deployment.type '{}' (expected single_node or "
                                "multi_node)",
                                document.location(*type),
                                *text));
}

Wandb read_wandb(const Document &document) {
  const Reader reader(document, "a Beaker launch");
  reader.table("wandb");
  Wandb wandb;
  wandb.name = reader.string("wandb.name", true);
  const bool name_ok = std::all_of(wandb.name.begin(), wandb.name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
  if (!name_ok || wandb.name.size() > 128) {
    reader.rule(reader.find("wandb.name"),
                fmt::format("wandb.name '{}' cannot be a Beaker experiment name: use letters, "
                            "digits, '.', '_' and '-' (at most 128)",
                            wandb.name));
  }
  wandb.project = reader.string("wandb.project", true);
  if (auto entity = reader.optional_string("wandb.entity"); entity && !entity->empty()) {
    wandb.entity = std::move(entity);
  }
  wandb.offline = reader.boolean("wandb.offline", false);
  return wandb;
}

SingleNodeSft read_single_node_sft(const Document &document) {
  const Reader reader(document, "single-node SFT");
  for (const char *table : {"deployment", "wandb", "data", "val", "val.data", "ckpt"}) {
    reader.table(table);
  }
  require_type(reader, "single_node");
  SingleNodeSft sft;
  sft.output_dir = reader.path("output_dir");
  sft.max_steps = reader.positive("max_steps");
  sft.num_gpus = reader.count("deployment.num_gpus", k_max_gpus_per_node);
  sft.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node);
  if (sft.num_gpus != sft.gpus_per_node) {
    reader.rule(reader.find("deployment.num_gpus"),
                fmt::format("single-node SFT requires deployment.num_gpus ({}) == "
                            "deployment.gpus_per_node ({})",
                            sft.num_gpus,
                            sft.gpus_per_node));
  }
  sft.wandb = read_wandb(document);
  sft.data_name = reader.path("data.name");
  sft.val_data_name = reader.path("val.data.name");
  sft.val_interval = reader.positive("val.interval");
  if (!reader.boolean("val.eval_on_start", std::nullopt)) {
    reader.rule(reader.find("val.eval_on_start"), "SFT TOML must set val.eval_on_start = true");
  }
  sft.ckpt_interval = reader.positive("ckpt.interval");
  if (sft.val_interval > sft.max_steps) {
    reader.rule(reader.find("val.interval"),
                fmt::format("SFT val.interval ({}) must not exceed max_steps ({})",
                            sft.val_interval,
                            sft.max_steps));
  }
  if (sft.val_interval > sft.ckpt_interval) {
    reader.rule(reader.find("val.interval"),
                fmt::format("SFT val.interval ({}) must be no larger than ckpt.interval ({})",
                            sft.val_interval,
                            sft.ckpt_interval));
  }
  return sft;
}

SingleNodeRl read_single_node_rl(const Document &document) {
  const Reader reader(document, "single-node RL");
  reader.table("wandb");
  reader.table("deployment");
  require_type(reader, "single_node");
  SingleNodeRl rl;
  rl.output_dir = reader.path("output_dir");
  rl.wandb = read_wandb(document);
  rl.num_train_gpus = reader.count("deployment.num_train_gpus", k_max_gpus_per_node);
  rl.num_infer_gpus = reader.count("deployment.num_infer_gpus", k_max_gpus_per_node);
  rl.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node);
  if (rl.num_train_gpus + rl.num_infer_gpus != rl.gpus_per_node) {
    reader.rule(reader.find("deployment.gpus_per_node"),
                fmt::format("single-node RL requires deployment.num_train_gpus ({}) + "
                            "num_infer_gpus ({}) == gpus_per_node ({})",
                            rl.num_train_gpus,
                            rl.num_infer_gpus,
                            rl.gpus_per_node));
  }
  // The container's environment rewrite needs it; say so here rather than on the GPU node.
  reader.table("orchestrator");
  return rl;
}

MultiNodeSft read_multi_node_sft(const Document &document) {
  const Reader reader(document, "multi-node SFT");
  for (const char *table : {"deployment", "wandb", "data", "val", "val.data"}) {
    reader.table(table);
  }
  require_type(reader, "multi_node");
  MultiNodeSft sft;
  sft.output_dir = reader.path("output_dir");
  sft.wandb = read_wandb(document);
  sft.data_name = reader.path("data.name");
  sft.val_data_name = reader.path("val.data.name");
  sft.num_nodes = reader.count("deployment.num_nodes", k_max_nodes, 2);
  if (sft.num_nodes < 2) {
    reader.rule(reader.find("deployment.num_nodes"),
                "multi-node SFT needs deployment.num_nodes >= 2 (use single_node for one node)");
  }
  sft.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node, 8);
  return sft;
}

MultiNodeRl read_multi_node_rl(const Document &document) {
  const Reader reader(document, "multi-node RL");
  for (const char *table :
       {"deployment", "inference", "inference.parallel", "trainer", "trainer.model", "wandb"}) {
    reader.table(table);
  }
  require_type(reader, "multi_node");
  // Checked in the container by the reference (it renders dense engines whatever the type);
  // failing here saves a multi-node allocation.
  if (const Value *deployment = reader.find("inference.deployment.type")) {
    const std::string *type = deployment->string();
    if (type == nullptr) {
      reader.wrong(*deployment, "inference.deployment.type", "a string");
    }
    if (*type != "single_node" && *type != "multi_node") {
      reader.rule(deployment,
                  fmt::format("heterogeneous Beaker RL currently supports dense inference: "
                              "inference.deployment.type '{}' is not supported (use "
                              "\"single_node\" or \"multi_node\"; primebeaker places the "
                              "inference nodes itself)",
                              *type));
    }
  }
  MultiNodeRl rl;
  rl.output_dir = reader.path("output_dir");
  rl.wandb = read_wandb(document);
  rl.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node, 8);
  rl.num_train_nodes = reader.positive("deployment.num_train_nodes");
  // One node is the trainer's, so at most k_max_nodes - 1 inference nodes fit the replicas.
  rl.num_infer_nodes = reader.count("deployment.num_infer_nodes", k_max_nodes - 1);
  const auto replicas = reader.positive("deployment.num_infer_replicas", 1);
  const auto cp = reader.count("trainer.model.cp", k_max_gpus_per_node, 1);
  const auto dp_replicate = reader.count("trainer.model.dp_replicate", k_max_gpus_per_node, 1);
  rl.tensor_parallel = reader.count("inference.parallel.tp", k_max_gpus_per_node, 1);
  const auto dp = reader.positive("inference.parallel.dp", 1);
  const auto api_servers = reader.positive("inference.api_server_count", 1);

  if (rl.num_train_nodes != 1) {
    reader.rule(reader.find("deployment.num_train_nodes"),
                fmt::format("heterogeneous Beaker RL currently supports exactly one trainer "
                            "node (deployment.num_train_nodes = 1), got {}",
                            rl.num_train_nodes));
  }
  if (replicas != 1) {
    reader.rule(reader.find("deployment.num_infer_replicas"),
                fmt::format("heterogeneous Beaker RL requires deployment.num_infer_replicas = 1, "
                            "got {}",
                            replicas));
  }
  rl.trainer_gpus = cp * dp_replicate;
  if (rl.trainer_gpus > rl.gpus_per_node) {
    reader.rule(reader.find("trainer.model.dp_replicate")
                    ? reader.find("trainer.model.dp_replicate")
                    : reader.find("trainer.model.cp"),
                fmt::format("trainer GPU count trainer.model.cp x dp_replicate = {} exceeds "
                            "deployment.gpus_per_node ({})",
                            rl.trainer_gpus,
                            rl.gpus_per_node));
  }
  rl.mixed_infer_gpus = rl.trainer_gpus < rl.gpus_per_node ? rl.gpus_per_node - rl.trainer_gpus : 0;
  const bool mixed = rl.mixed_infer_gpus > 0;
  if (rl.gpus_per_node % rl.tensor_parallel != 0 ||
      (mixed && rl.mixed_infer_gpus % rl.tensor_parallel != 0)) {
    reader.rule(reader.find("inference.parallel.tp"),
                fmt::format("each inference-bearing GPU slice must be divisible by "
                            "inference.parallel.tp ({}): gpus_per_node {}, mixed-node inference "
                            "GPUs {}",
                            rl.tensor_parallel,
                            rl.gpus_per_node,
                            rl.mixed_infer_gpus));
  }
  rl.total_infer_gpus =
      rl.mixed_infer_gpus + (rl.num_infer_nodes - (mixed ? 1 : 0)) * rl.gpus_per_node;
  rl.total_infer_ranks = rl.total_infer_gpus / rl.tensor_parallel;
  if (rl.total_infer_ranks > k_max_infer_ranks) {
    reader.rule(reader.find("deployment.num_infer_nodes"),
                fmt::format("{} inference ranks ({} inference GPUs / tp {}) exceed the {} one "
                            "launch supports",
                            rl.total_infer_ranks,
                            rl.total_infer_gpus,
                            rl.tensor_parallel,
                            k_max_infer_ranks));
  }
  if (dp != rl.total_infer_ranks || api_servers != rl.total_infer_ranks) {
    reader.rule(dp != rl.total_infer_ranks ? reader.find("inference.parallel.dp")
                                           : reader.find("inference.api_server_count"),
                fmt::format("inference.parallel.dp ({}) and inference.api_server_count ({}) must "
                            "both equal the external-LB rank count ({} inference GPUs / tp {} = "
                            "{})",
                            dp,
                            api_servers,
                            rl.total_infer_gpus,
                            rl.tensor_parallel,
                            rl.total_infer_ranks));
  }
  rl.total_nodes = mixed ? rl.num_infer_nodes : 1 + rl.num_infer_nodes;

  // Checked in the container by the reference; failing here saves a multi-node allocation.
  if (const Value *ep = reader.find("inference.enable_expert_parallel");
      ep && ep->boolean().value_or(false)) {
    reader.rule(ep,
                "heterogeneous Beaker RL currently supports dense inference "
                "(inference.enable_expert_parallel must be false)");
  }
  if (const Value *router = reader.find("inference.router");
      router && router->string() && *router->string() == "None") {
    reader.rule(router, "multi-node RL requires inference with a router (inference.router)");
  }

  std::set<std::string> paths;
  for_each_environment_entry(
      document, [&](std::string_view split, std::string_view collection, const Value &entry) {
        if (collection != "source") {
          return;
        }
        const Value *path = entry.find_path({"legacy", "args", "local_search_model_path"});
        if (path == nullptr) {
          return;
        }
        const std::string *text = path->string();
        if (text == nullptr || text->empty()) {
          reader.rule(path,
                      fmt::format("orchestrator.{}.source[].legacy.args.local_search_model_path "
                                  "must be a non-empty string",
                                  split));
        }
        paths.insert(*text);
      });
  rl.local_search_model_paths.assign(paths.begin(), paths.end());
  return rl;
}

} // namespace pb::primerl
