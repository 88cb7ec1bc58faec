// SPDX-License-Identifier: MIT
#include "reader.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/limits.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace pb::primerl {

using toml::Document;
using toml::Type;
using toml::Value;

namespace {

using detail::parent_of;
using detail::Reader;
using detail::require_type;
using detail::toml_string;

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

Problems::Problems(const Document &document) : m_document(document) {}

void Problems::add(std::string message) {
  m_lines.push_back({std::move(message), {}, {}, {}});
}

bool Problems::already_reports(const std::string &location, const std::string &key) const {
  for (const auto &line : m_lines) {
    if ((!location.empty() && text::starts_with(line.text, location + ":")) ||
        (!key.empty() && (line.missing_key == key || line.table == key ||
                          (!line.table.empty() && text::starts_with(key, line.table + "."))))) {
      return true;
    }
  }
  return false;
}

void Problems::add_missing_key(const std::string &key, std::string message) {
  m_lines.push_back({std::move(message), {}, {}, key});
}

void Problems::add_missing_table(const std::string &table, std::string message) {
  Line line{std::move(message), table, {}, {}};
  // Keys reported missing before the table was: one problem, not two.
  for (auto it = m_lines.begin(); it != m_lines.end();) {
    if (text::starts_with(it->missing_key, table + ".")) {
      line.keys.push_back(it->missing_key.substr(table.size() + 1));
      it = m_lines.erase(it);
    } else {
      ++it;
    }
  }
  m_lines.push_back(std::move(line));
}

bool Problems::fold_into_missing_table(const std::string &key) {
  Line *innermost = nullptr; // [val.data], not [val], takes val.data.name
  for (auto &line : m_lines) {
    if (!line.table.empty() && text::starts_with(key, line.table + ".") &&
        (innermost == nullptr || line.table.size() > innermost->table.size())) {
      innermost = &line;
    }
  }
  if (innermost == nullptr) {
    return false;
  }
  innermost->keys.push_back(key.substr(innermost->table.size() + 1));
  return true;
}

void Problems::suggest(const std::string &dotted_key, std::string value, bool replaces) {
  Suggestion suggestion;
  suggestion.table = parent_of(dotted_key);
  suggestion.key =
      suggestion.table.empty() ? dotted_key : dotted_key.substr(suggestion.table.size() + 1);
  suggestion.value = std::move(value);
  suggestion.replaces = replaces;
  if (suggestion.table.empty()) {
    suggestion.table_exists = true;
  } else if (const Value *table = m_document.root().find_path(text::split(suggestion.table, '.'));
             table != nullptr && table->is(Type::table) && table->position().line != 0) {
    // (an implicit table, such as [a] of a lone [a.b], gets its header like a new one)
    suggestion.table_exists = true;
    suggestion.table_location = m_document.location(*table);
  }
  for (auto &known : m_suggestions) {
    if (known.table == suggestion.table && known.key == suggestion.key) {
      known = std::move(suggestion); // the later, better informed value wins
      return;
    }
  }
  m_suggestions.push_back(std::move(suggestion));
}

std::vector<std::string> Problems::lines() const {
  std::vector<std::string> out;
  for (const auto &line : m_lines) {
    out.push_back(line.keys.empty()
                      ? line.text
                      : fmt::format("{} (with {})", line.text, text::join(line.keys, ", ")));
  }
  return out;
}

void Problems::suggest_removal(const std::string &dotted_key, std::string location) {
  m_removals.emplace_back(dotted_key, std::move(location));
}

std::vector<std::string> Problems::snippet() const {
  std::vector<std::string> out;
  const auto key_line = [](const Suggestion &s) {
    return fmt::format(
        "{} = {}{}", s.key, s.value, s.replaces ? "  # replaces the current value" : "");
  };
  // Top-level keys, then keys of existing tables, then new tables, each group in order found.
  std::vector<std::string> tables;
  for (const auto &s : m_suggestions) {
    if (!s.table.empty() && std::find(tables.begin(), tables.end(), s.table) == tables.end()) {
      tables.push_back(s.table);
    }
  }
  bool top = false;
  for (const auto &s : m_suggestions) {
    if (s.table.empty()) {
      if (!top) {
        out.emplace_back("# at the top of the file, above the first [table]:");
        top = true;
      }
      out.push_back(key_line(s));
    }
  }
  // New tables by name, so that a parent's header comes before its children's.
  std::vector<std::string> sorted = tables;
  std::stable_sort(sorted.begin(), sorted.end());
  for (const bool existing : {true, false}) {
    for (const auto &table : existing ? tables : sorted) {
      bool header = false;
      for (const auto &s : m_suggestions) {
        if (s.table != table || s.table_exists != existing) {
          continue;
        }
        if (!header) {
          out.push_back(existing ? fmt::format("# under [{}] ({}):", table, s.table_location)
                                 : fmt::format("[{}]", table));
          header = true;
        }
        out.push_back(key_line(s));
      }
    }
  }
  for (const auto &[key, location] : m_removals) {
    out.push_back(fmt::format("# remove {} ({})", key, location));
  }
  return out;
}

Error Problems::to_error() const {
  const auto all = lines();
  Error error = all.size() == 1 ? input_error(all.front())
                                : input_error(fmt::format("{}: {} problems (all of them: fix them, "
                                                          "then retry once)",
                                                          m_document.source_name(),
                                                          all.size()));
  if (all.size() > 1) {
    for (const auto &line : all) {
      error.add_context(line);
    }
  }
  const auto add = snippet();
  if (!add.empty()) {
    error.add_context("add this (TOML; adjust the values):");
    for (const auto &line : add) {
      error.add_context("  " + line);
    }
  }
  return error;
}

void Problems::throw_if_any() const {
  if (!empty()) {
    throw to_error();
  }
}

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
  case Generation::v0_9:
    return "v0.9";
  case Generation::undetermined:
    break;
  }
  return "undetermined";
}

GenerationInfo detect_generation(const Document &document) {
  const Value &root = document.root();
  auto at = [&](const Value &value, const std::string &key) {
    // A table made only by its sub-tables' headers ([monitors.wandb]) has no place of its own:
    // its first member's is where it shows.
    const Value *shown = &value;
    while (shown->position().line == 0 && shown->is(Type::table) && !shown->table()->empty()) {
      shown = &shown->table()->begin()->second;
    }
    return fmt::format("{} at {}", key, document.location(*shown));
  };
  // Keys only v0.9 has (docs/primerl-schema.md "Prime-RL v0.9").
  for (const char *table : {"resume", "monitors", "run"}) {
    if (const Value *value = root.find(table); value && value->is(Type::table)) {
      return {Generation::v0_9, at(*value, fmt::format("[{}]", table))};
    }
  }
  if (const Value *clean = root.find("clean"); clean && root.find("deployment")) {
    return {Generation::v0_9, at(*clean, "top-level clean")};
  }
  for (const std::vector<std::string> &path :
       {std::vector<std::string>{"inference", "vllm"},
        std::vector<std::string>{"orchestrator", "concurrency"}}) {
    if (const Value *value = root.find_path(path)) {
      return {Generation::v0_9, at(*value, text::join(path, "."))};
    }
  }
  // The older generations' environment and placement keys.
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
  // Keys v0.9 moved away: only v0.8.0 (and the v0.7.1.dev83 fork) reads them. Environment
  // sources alone show no generation: both read [[orchestrator.train.source]].
  if (const Value *value = root.find("wandb"); value && value->is(Type::table)) {
    return {Generation::v0_8, at(*value, "[wandb]")};
  }
  for (const std::vector<std::string> &path :
       {std::vector<std::string>{"clean_output_dir"},
        std::vector<std::string>{"ckpt", "resume_step"},
        std::vector<std::string>{"orchestrator", "max_inflight_episodes"},
        std::vector<std::string>{"inference", "parallel"},
        std::vector<std::string>{"inference", "model"}}) {
    if (const Value *value = root.find_path(path)) {
      return {Generation::v0_8, at(*value, text::join(path, "."))};
    }
  }
  if (root.find("orchestrator") == nullptr && root.find("data") != nullptr) {
    // SFT: v0.9 renamed the single-node deployment's num_gpus to num_train_gpus.
    if (const Value *value = root.find_path({"deployment", "num_train_gpus"})) {
      return {Generation::v0_9, at(*value, "SFT deployment.num_train_gpus")};
    }
    if (const Value *value = root.find_path({"deployment", "num_gpus"})) {
      return {Generation::v0_8, at(*value, "SFT deployment.num_gpus")};
    }
  }
  return {Generation::undetermined, {}};
}

void require_supported_generation(const Document &document, Problems &problems) {
  const auto info = detect_generation(document);
  std::string unsupported;
  switch (info.generation) {
  case Generation::v0_8:
  case Generation::v0_9:
  case Generation::undetermined:
    return;
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
  problems.add(fmt::format("{}: this is a Prime-RL {} config ({}); primebeaker launches the "
                           "v0.8.0 and v0.9 generations: {}",
                           document.source_name(),
                           generation_name(info.generation),
                           info.evidence,
                           unsupported));
}

void require_supported_generation(const Document &document) {
  Problems problems(document);
  require_supported_generation(document, problems);
  problems.throw_if_any();
}

DeploymentType
read_deployment_type(const Document &document, Problems &problems, DeploymentType fallback) {
  const std::string fallback_name =
      fallback == DeploymentType::multi_node ? "multi_node" : "single_node";
  const Value *type = document.root().find_path({"deployment", "type"});
  const std::string *text = type ? type->string() : nullptr;
  if (text == nullptr) {
    problems.add_missing_key(
        "deployment.type",
        fmt::format("{}: training TOML needs deployment.type (\"single_node\" or "
                    "\"multi_node\")",
                    type ? document.location(*type) : document.source_name()));
    problems.suggest("deployment.type", toml_string(fallback_name), type != nullptr);
    return fallback;
  }
  if (*text == "single_node") {
    return DeploymentType::single_node;
  }
  if (*text == "multi_node") {
    return DeploymentType::multi_node;
  }
  problems.add(fmt::format("{}: unsupported deployment.type '{}' (expected single_node or "
                           "multi_node)",
                           document.location(*type),
                           *text));
  problems.suggest("deployment.type", toml_string(fallback_name), true);
  return fallback;
}

DeploymentType read_deployment_type(const Document &document) {
  Problems problems(document);
  const auto type = read_deployment_type(document, problems, DeploymentType::single_node);
  problems.throw_if_any();
  return type;
}

namespace {

Wandb read_wandb(Reader &reader) {
  const std::string name_default = reader.default_name();
  Wandb wandb;
  if (reader.find("wandb") == nullptr) {
    // Prime-RL's default: no W&B run. The experiment is still named.
    wandb.enabled = false;
    wandb.name = name_default;
    reader.defaulted(fmt::format("no [wandb]: no W&B run (Prime-RL's default); the experiment is "
                                 "named '{}' (--name to choose)",
                                 name_default));
    return wandb;
  }
  reader.table("wandb");
  if (reader.find("wandb.name") == nullptr) {
    wandb.name = name_default;
    reader.defaulted(fmt::format("wandb.name: none, so W&B names its run; the experiment is "
                                 "named '{}' (--name to choose)",
                                 name_default));
  } else {
    wandb.name = reader.string("wandb.name", true, name_default);
  }
  if (!is_experiment_name(wandb.name)) {
    reader.rule(reader.find("wandb.name"),
                fmt::format("wandb.name '{}' cannot be a Beaker experiment name: use letters, "
                            "digits, '.', '_' and '-' (at most 128)",
                            wandb.name));
  }
  if (reader.find("wandb.project") == nullptr) {
    wandb.project = "prime-rl";
    reader.defaulted("wandb.project = \"prime-rl\" (Prime-RL's default)");
  } else {
    wandb.project = reader.string("wandb.project", true, "prime-rl");
  }
  if (auto entity = reader.optional_string("wandb.entity"); entity && !entity->empty()) {
    wandb.entity = std::move(entity);
  }
  wandb.offline = reader.boolean("wandb.offline", false, false);
  return wandb;
}

// Runs `read` with a collecting Reader and throws every problem it found at once (the public
// one-argument readers below; `read` names the overload that takes the Problems).
template <typename Result>
Result read_all(const Document &document, Result (*read)(const Document &, Problems &)) {
  Problems problems(document);
  auto result = read(document, problems);
  problems.throw_if_any();
  return result;
}

// data.name and val.data.name as written (val.data.name defaults to data.name), of either SFT
// topology; a name not written is Prime-RL's to default (an empty PathKey: nothing to check).
std::pair<PathKey, PathKey> read_sft_data_names(Reader &reader) {
  PathKey data_name;
  if (reader.find("data.name") != nullptr) {
    data_name = reader.path("data.name", "data/train.jsonl");
  }
  PathKey val_data_name;
  if (reader.find("val") == nullptr) {
    return {std::move(data_name), std::move(val_data_name)};
  }
  if (reader.find("val.data.name") != nullptr) {
    val_data_name = reader.path("val.data.name", data_name.value);
  } else if (!data_name.key.empty()) {
    val_data_name = {"val.data.name", data_name.value};
  }
  return {std::move(data_name), std::move(val_data_name)};
}

} // namespace

std::string launch_run_name(const Document &document, const std::string &given) {
  if (!given.empty()) {
    return given;
  }
  if (const Value *name = document.root().find_path({"wandb", "name"});
      name != nullptr && name->string() != nullptr && !name->string()->empty()) {
    return *name->string();
  }
  return default_experiment_name(document);
}

std::string default_experiment_name(const Document &document) {
  const std::filesystem::path path(document.source_name());
  std::string name = path.stem().string();
  const std::string folder = path.parent_path().filename().string();
  if (!folder.empty() && folder != "." && folder != "..") {
    name = folder + "-" + name;
  }
  for (char &c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      c = '-';
    }
  }
  return name.empty() || name == "-" ? std::string("my-run") : name.substr(0, 128);
}

bool is_experiment_name(std::string_view name) {
  return !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Wandb read_wandb(const Document &document, Problems &problems) {
  Reader reader(document, "a Beaker launch", problems);
  return read_wandb(reader);
}

// [deployment] absent: Prime-RL's default single-node deployment.
void default_deployment(Reader &reader, const char *gpus) {
  if (reader.find("deployment") == nullptr) {
    reader.defaulted(fmt::format("no [deployment]: one node, {} (Prime-RL's default)", gpus));
  } else {
    reader.table("deployment");
  }
}

SingleNodeSft read_single_node_sft(const Document &document, Problems &problems) {
  Reader reader(document, "single-node SFT", problems);
  default_deployment(reader, "deployment.num_gpus = 1");
  // [data], [val] and [ckpt] are Prime-RL's to default (no validation, no checkpoints);
  // present, they must be tables.
  for (const char *table : {"data", "val", "val.data", "ckpt"}) {
    if (reader.find(table) != nullptr) {
      reader.table(table);
    }
  }
  require_type(reader, "single_node");
  SingleNodeSft sft;
  sft.output_dir = reader.defaulted_path("output_dir", "outputs");
  // Prime-RL runs until the data ends without max_steps; the card shows what is known.
  sft.max_steps = reader.positive("max_steps", 100, 0);
  // num_gpus must equal gpus_per_node: suggest the one that is there for the other.
  const auto num_written = reader.integer_as_written("deployment.num_gpus");
  const auto per_node_written = reader.integer_as_written("deployment.gpus_per_node");
  const std::int64_t gpus = num_written.value_or(per_node_written.value_or(1));
  sft.num_gpus = reader.count("deployment.num_gpus", k_max_gpus_per_node, gpus, gpus);
  sft.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node, gpus, gpus);
  if (sft.num_gpus != sft.gpus_per_node &&
      !reader.bad({"deployment.num_gpus", "deployment.gpus_per_node"})) {
    reader.rule(reader.find("deployment.num_gpus"),
                fmt::format("single-node SFT requires deployment.num_gpus ({}) == "
                            "deployment.gpus_per_node ({}): the task asks Beaker for the node's "
                            "GPUs",
                            sft.num_gpus,
                            sft.gpus_per_node));
  }
  sft.wandb = read_wandb(reader);
  std::tie(sft.data_name, sft.val_data_name) = read_sft_data_names(reader);
  if (reader.find("val") == nullptr) {
    sft.ckpt_interval = reader.positive("ckpt.interval", 1, 0);
    return sft;
  }
  // With [val]: validation and checkpoints every max_steps unless the file says otherwise.
  const std::int64_t steps = sft.max_steps > 0 ? sft.max_steps : 100;
  const auto ckpt_written = reader.integer_as_written("ckpt.interval");
  const std::int64_t interval = std::min(steps, ckpt_written.value_or(steps));
  sft.val_interval = reader.positive("val.interval", std::max<std::int64_t>(interval, 1), 50);
  sft.ckpt_interval = reader.positive("ckpt.interval", std::max(steps, sft.val_interval), 0);
  if (sft.max_steps > 0 && sft.val_interval > sft.max_steps &&
      !reader.bad({"val.interval", "max_steps"})) {
    reader.rule(
        "val.interval",
        fmt::format("SFT val.interval ({}) must not exceed max_steps ({})",
                    sft.val_interval,
                    sft.max_steps),
        std::to_string(std::min(sft.max_steps, std::max<std::int64_t>(sft.ckpt_interval, 1))));
  }
  return sft;
}

SingleNodeRl read_single_node_rl(const Document &document, Problems &problems) {
  Reader reader(document, "single-node RL", problems);
  default_deployment(reader, "deployment.num_train_gpus = 1, num_infer_gpus = 1");
  require_type(reader, "single_node");
  SingleNodeRl rl;
  rl.output_dir = reader.defaulted_path("output_dir", "outputs");
  rl.wandb = read_wandb(reader);
  const std::int64_t train = reader.integer_as_written("deployment.num_train_gpus").value_or(1);
  const std::int64_t infer = reader.integer_as_written("deployment.num_infer_gpus").value_or(1);
  rl.num_train_gpus = reader.count("deployment.num_train_gpus", k_max_gpus_per_node, train, 1);
  rl.num_infer_gpus = reader.count("deployment.num_infer_gpus", k_max_gpus_per_node, infer, 1);
  // The task asks Beaker for the GPUs the run uses; Prime-RL's gpus_per_node is a bound only.
  const std::int64_t used = rl.num_train_gpus + rl.num_infer_gpus;
  rl.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node, used, used);
  if (used > rl.gpus_per_node &&
      !reader.bad(
          {"deployment.num_train_gpus", "deployment.num_infer_gpus", "deployment.gpus_per_node"})) {
    reader.rule(reader.find("deployment.gpus_per_node"),
                fmt::format("single-node RL needs deployment.num_train_gpus ({}) + "
                            "num_infer_gpus ({}) <= gpus_per_node ({})",
                            rl.num_train_gpus,
                            rl.num_infer_gpus,
                            rl.gpus_per_node));
  }
  detail::refuse_single_node_llm_d(reader);
  // The container's environment rewrite needs it; say so here rather than on the GPU node.
  reader.table("orchestrator");
  return rl;
}

MultiNodeSft read_multi_node_sft(const Document &document, Problems &problems) {
  Reader reader(document, "multi-node SFT", problems);
  reader.table("deployment");
  for (const char *table : {"data", "val", "val.data"}) {
    if (reader.find(table) != nullptr) {
      reader.table(table);
    }
  }
  require_type(reader, "multi_node");
  MultiNodeSft sft;
  sft.output_dir = reader.defaulted_path("output_dir", "outputs");
  sft.wandb = read_wandb(reader);
  std::tie(sft.data_name, sft.val_data_name) = read_sft_data_names(reader);
  sft.num_nodes = reader.count("deployment.num_nodes", k_max_nodes, 2, 2);
  if (sft.num_nodes < 2 && !reader.bad({"deployment.num_nodes"})) {
    reader.rule("deployment.num_nodes",
                "multi-node SFT needs deployment.num_nodes >= 2 (use single_node for one node)",
                "2");
  }
  sft.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node, 8, 8);
  return sft;
}

namespace {

// Whether the mixed layout cannot place this TOML as written while Prime-RL's own placement can:
// several trainer nodes or inference replicas, expert parallelism, disaggregated inference,
// llm-d's router, Mooncake's KV store, or a trainer node whose inference slice tp does not divide
// (the trainer then takes its whole node, as in Prime-RL).
// Values are peeked, not judged: the placement's reader reports what is wrong with them.
bool needs_prime_rl_placement(const Reader &reader, std::int64_t gpus_per_node) {
  // Out of range reads as the default here, so the arithmetic below cannot overflow.
  const auto peek = [&](std::string_view key, std::int64_t max) -> std::int64_t {
    const auto value = reader.integer_as_written(key);
    return value && *value >= 1 && *value <= max ? *value : 1;
  };
  const auto is = [&](std::string_view key, std::string_view value) {
    const Value *found = reader.find(key);
    return found != nullptr && found->string() && *found->string() == value;
  };
  if (peek("deployment.num_train_nodes", k_max_nodes) > 1 ||
      peek("deployment.num_infer_replicas", k_max_nodes) > 1) {
    return true;
  }
  if (is("inference.deployment.type", "disaggregated")) {
    return true;
  }
  if (const Value *ep = reader.find("inference.enable_expert_parallel");
      ep != nullptr && ep->boolean().value_or(false)) {
    return true;
  }
  // llm-d's router and Mooncake's store are started the way Prime-RL's template starts them.
  if (is("inference.router.type", "llm-d") || is("inference.kv_cache_offload.type", "mooncake")) {
    return true;
  }
  const auto cp = peek("trainer.model.cp", k_max_gpus_per_node);
  const auto trainer = cp * peek("trainer.model.dp_replicate", k_max_gpus_per_node);
  const auto tp = peek("inference.parallel.tp", k_max_gpus_per_node);
  const auto mixed = gpus_per_node - trainer;
  return trainer < gpus_per_node && mixed % tp != 0 && gpus_per_node % tp == 0 &&
         gpus_per_node % cp == 0;
}

// Prime-RL's own multi-node placement of a v0.8.0 TOML, read with Prime-RL's defaults
// (RLConfig.auto_setup_infer_nodes): each trainer node takes all its GPUs; the inference GPUs are
// gpus_per_node / tp engines per node, whose dp and api_server_count Prime-RL derives itself.
void read_prime_rl_placement(Reader &reader,
                             const Document &document,
                             Problems &problems,
                             MultiNodeRl &rl) {
  rl.prime_rl_placement = true;
  rl.num_infer_replicas = reader.count("deployment.num_infer_replicas", k_max_nodes, 1, 1);
  const bool has_inference = reader.find("inference") != nullptr;
  std::int64_t inferred = has_inference ? 1 : 0;
  if (reader.optional_string("inference.deployment.type").value_or("") == "multi_node") {
    inferred = reader.integer_as_written("inference.deployment.num_nodes").value_or(1);
  }
  rl.disaggregated = detail::read_disaggregated(reader);
  if (rl.disaggregated) {
    inferred = rl.disaggregated->nodes();
  }
  rl.num_infer_nodes = inferred;
  if (const Value *nodes = reader.find("deployment.num_infer_nodes")) {
    // 0 is Prime-RL's "no inference" (fake data), so not positive().
    const auto number = nodes->integer();
    if (!number || *number < 0 || *number > k_max_nodes) {
      reader.wrong(*nodes,
                   "deployment.num_infer_nodes",
                   fmt::format("an integer from 0 to {}", k_max_nodes),
                   std::to_string(inferred));
    } else {
      rl.num_infer_nodes = *number;
    }
    if (rl.disaggregated && rl.num_infer_nodes != inferred) {
      reader.rule(nodes,
                  fmt::format("deployment.num_infer_nodes ({}) must equal the disaggregated "
                              "inference nodes per replica ({} prefill + {} decode)",
                              rl.num_infer_nodes,
                              rl.disaggregated->prefill_nodes(),
                              rl.disaggregated->decode_nodes()));
    }
  }
  rl.orchestrator_on_inference =
      reader.boolean("deployment.orchestrator_on_inference", false, false);
  rl.tensor_parallel = reader.count("inference.parallel.tp", k_max_gpus_per_node, 1, 1);
  rl.expert_parallel = reader.boolean("inference.enable_expert_parallel", false, false);
  rl.total_nodes = rl.total_infer_nodes() + rl.num_train_nodes;
  rl.trainer_gpus = rl.gpus_per_node;
  if (rl.total_nodes > k_max_nodes && !reader.bad({"deployment.num_train_nodes"})) {
    reader.rule(reader.find("deployment.num_train_nodes"),
                fmt::format("{} nodes in all is more than primebeaker launches ({})",
                            rl.total_nodes,
                            k_max_nodes));
  }
  if (rl.num_infer_nodes > 0 && !has_inference) {
    problems.add_missing_table(
        "inference",
        fmt::format("{}: multi-node RL with inference nodes needs an [inference] table",
                    document.source_name()));
  }
  if (has_inference && rl.gpus_per_node % rl.tensor_parallel != 0 &&
      !reader.bad({"inference.parallel.tp", "deployment.gpus_per_node"})) {
    reader.rule("inference.parallel.tp",
                fmt::format("deployment.gpus_per_node ({}) must be a multiple of "
                            "inference.parallel.tp ({}): each inference node runs gpus_per_node / "
                            "tp engines",
                            rl.gpus_per_node,
                            rl.tensor_parallel),
                std::to_string(rl.gpus_per_node));
  }
  // Expert parallelism across nodes makes one DP group of every engine of a replica; Prime-RL
  // checks its size against the GPUs in its config validator, checked here before the nodes.
  const std::int64_t group_dp =
      rl.num_infer_nodes * rl.gpus_per_node / std::max<std::int64_t>(1, rl.tensor_parallel);
  if (rl.expert_parallel && group_dp > 1 && !rl.disaggregated) {
    const auto dp = reader.integer_as_written("inference.parallel.dp").value_or(1);
    // Bounded before multiplying: a dp past every GPU a launch can have fails the same check.
    const bool in_range = dp >= 1 && dp <= k_max_nodes * k_max_gpus_per_node;
    if (!in_range || dp * rl.tensor_parallel != rl.num_infer_nodes * rl.gpus_per_node) {
      reader.rule(reader.find("inference.parallel.dp") ? reader.find("inference.parallel.dp")
                                                       : reader.find("inference"),
                  fmt::format("expert parallelism across {} inference nodes needs "
                              "inference.parallel.dp x tp = the replica's {} GPUs, got {} x {}",
                              rl.num_infer_nodes,
                              rl.num_infer_nodes * rl.gpus_per_node,
                              dp,
                              rl.tensor_parallel));
    }
  }
  rl.total_infer_gpus = rl.total_infer_nodes() * rl.gpus_per_node;
  rl.total_infer_ranks = rl.total_infer_gpus / std::max<std::int64_t>(1, rl.tensor_parallel);
  const auto serving = detail::read_serving(reader, "inference.enable_return_routed_experts");
  rl.router = serving.router;
  rl.kv_offload = serving.kv_offload;
  rl.weight_broadcast_port = reader.count("weight_broadcast.port", 65535, 29501, 29501);
  rl.sources = read_env_sources(document);
}

} // namespace

namespace detail {

std::optional<Disaggregated> read_disaggregated(Reader &reader) {
  if (reader.optional_string("inference.deployment.type").value_or("") != "disaggregated") {
    return std::nullopt;
  }
  Disaggregated d;
  d.prefill_nodes_per_replica =
      reader.count("inference.deployment.prefill_nodes_per_replica", k_max_nodes, 1, 1);
  d.decode_nodes_per_replica =
      reader.count("inference.deployment.decode_nodes_per_replica", k_max_nodes, 1, 1);
  d.num_prefill_replicas =
      reader.count("inference.deployment.num_prefill_replicas", k_max_nodes, 1, 1);
  d.num_decode_replicas =
      reader.count("inference.deployment.num_decode_replicas", k_max_nodes, 1, 1);
  return d;
}

Serving read_serving(Reader &reader, const char *routed_experts_key) {
  Serving serving;
  if (reader.optional_string("inference.router.type").value_or("") == "llm-d") {
    serving.router = Router::llm_d;
    if (reader.boolean(routed_experts_key, false, false)) {
      reader.rule(reader.find(routed_experts_key),
                  fmt::format("{} does not work behind the llm-d router (Prime-RL refuses it: it "
                              "breaks prefill/decode); use inference.router.type = "
                              "\"vllm-router\" for routed-expert runs",
                              routed_experts_key));
    }
  }
  const auto offload = reader.optional_string("inference.kv_cache_offload.type").value_or("");
  serving.kv_offload = offload == "mooncake" ? KvOffload::mooncake
                       : offload == "native" ? KvOffload::native
                                             : KvOffload::none;
  return serving;
}

void refuse_single_node_llm_d(Reader &reader) {
  if (reader.optional_string("inference.router.type").value_or("") == "llm-d") {
    reader.rule(reader.find("inference.router.type"),
                "inference.router.type = \"llm-d\" needs a multi-node deployment (Prime-RL "
                "starts llm-d's router only in front of several nodes' engines); use "
                "\"vllm-router\" or deployment.type = \"multi_node\"");
  }
}

} // namespace detail

MultiNodeRl read_multi_node_rl(const Document &document, Problems &problems) {
  Reader reader(document, "multi-node RL", problems);
  // [trainer.model], [inference] and [inference.parallel] keys all have defaults; the rank
  // accounting below names (and suggests) the ones that must change.
  reader.table("deployment");
  require_type(reader, "multi_node");
  MultiNodeRl rl;
  rl.output_dir = reader.defaulted_path("output_dir", "outputs");
  rl.wandb = read_wandb(reader);
  rl.gpus_per_node = reader.count("deployment.gpus_per_node", k_max_gpus_per_node, 8, 8);
  rl.num_train_nodes = reader.positive("deployment.num_train_nodes", 1);
  // Refused, not rewritten: another inference deployment would be another experiment.
  if (const Value *deployment = reader.find("inference.deployment.type")) {
    const std::string *type = deployment->string();
    if (type == nullptr) {
      reader.wrong(*deployment, "inference.deployment.type", "a string", toml_string("multi_node"));
    } else if (*type != "single_node" && *type != "multi_node" && *type != "disaggregated") {
      reader.rule(deployment,
                  fmt::format("inference.deployment.type '{}' is not one Prime-RL v0.8.0 knows "
                              "(single_node, multi_node or disaggregated)",
                              *type));
      return rl;
    }
  }
  if (needs_prime_rl_placement(reader, rl.gpus_per_node)) {
    read_prime_rl_placement(reader, document, problems, rl);
    return rl;
  }
  // One node is the trainer's, so at most k_max_nodes - 1 inference nodes fit the replicas.
  rl.num_infer_nodes = reader.count("deployment.num_infer_nodes", k_max_nodes - 1, 1);
  reader.positive("deployment.num_infer_replicas", 1, 1); // > 1: Prime-RL's placement
  const auto cp = reader.count("trainer.model.cp", k_max_gpus_per_node, 1, 1);
  const auto dp_replicate = reader.count("trainer.model.dp_replicate", k_max_gpus_per_node, 1, 1);
  rl.tensor_parallel = reader.count("inference.parallel.tp", k_max_gpus_per_node, 1, 1);

  rl.trainer_gpus = cp * dp_replicate;
  const bool trainer_fits = rl.trainer_gpus <= rl.gpus_per_node;
  if (!trainer_fits) {
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
  const bool divisible = rl.gpus_per_node % rl.tensor_parallel == 0 &&
                         (!mixed || rl.mixed_infer_gpus % rl.tensor_parallel == 0);
  const bool layout_ok = divisible;
  if (!divisible) {
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
  const auto ranks_text = std::to_string(rl.total_infer_ranks);
  // dp and api_server_count have no default that could be right: suggest the rank count.
  const auto dp = reader.positive("inference.parallel.dp", rl.total_infer_ranks, 1);
  const auto api_servers = reader.positive("inference.api_server_count", rl.total_infer_ranks, 1);
  // Missing or invalid counts were read as their suggestions, so the rank count is the one the
  // file will have once the snippet is applied.
  const bool accounting_known = trainer_fits && layout_ok;
  if (rl.total_infer_ranks > k_max_infer_ranks) {
    reader.rule(reader.find("deployment.num_infer_nodes"),
                fmt::format("{} inference ranks ({} inference GPUs / tp {}) exceed the {} one "
                            "launch supports",
                            rl.total_infer_ranks,
                            rl.total_infer_gpus,
                            rl.tensor_parallel,
                            k_max_infer_ranks));
  } else if (accounting_known &&
             (dp != rl.total_infer_ranks || api_servers != rl.total_infer_ranks) &&
             !reader.bad({"inference.parallel.dp", "inference.api_server_count"})) {
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
    if (dp != rl.total_infer_ranks) {
      problems.suggest("inference.parallel.dp", ranks_text, reader.find("inference.parallel.dp"));
    }
    if (api_servers != rl.total_infer_ranks) {
      problems.suggest(
          "inference.api_server_count", ranks_text, reader.find("inference.api_server_count"));
    }
  }
  rl.total_nodes = mixed ? rl.num_infer_nodes : 1 + rl.num_infer_nodes;

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
          return;
        }
        paths.insert(*text);
      });
  rl.local_search_model_paths.assign(paths.begin(), paths.end());
  return rl;
}

std::vector<EnvSource> read_env_sources(const Document &document) {
  std::vector<EnvSource> sources;
  for (const char *split : {"train", "eval"}) {
    const Value *entries = document.root().find_path({"orchestrator", split, "source"});
    if (entries == nullptr || !entries->is(Type::array)) {
      continue;
    }
    for (const auto &entry : *entries->array()) {
      if (!entry.is(Type::table)) {
        continue;
      }
      auto text = [&](std::initializer_list<std::string> path) -> std::string {
        const Value *value = entry.find_path(std::vector<std::string>(path));
        return value && value->string() ? *value->string() : std::string();
      };
      if (!text({"serve", "address"}).empty()) {
        continue; // externally managed: no env server here
      }
      EnvSource source;
      source.split = split;
      source.taskset_id = text({"env", "taskset", "id"});
      source.name = text({"name"});
      if (source.name.empty()) {
        source.name = text({"env", "id"});
      }
      if (source.name.empty()) {
        source.name = source.taskset_id;
      }
      sources.push_back(std::move(source));
    }
  }
  return sources;
}

Wandb read_wandb(const Document &document) {
  return read_all(document, read_wandb);
}

SingleNodeSft read_single_node_sft(const Document &document) {
  return read_all(document, read_single_node_sft);
}

SingleNodeRl read_single_node_rl(const Document &document) {
  return read_all(document, read_single_node_rl);
}

MultiNodeSft read_multi_node_sft(const Document &document) {
  return read_all(document, read_multi_node_sft);
}

MultiNodeRl read_multi_node_rl(const Document &document) {
  return read_all(document, read_multi_node_rl);
}

} // namespace pb::primerl
