// SPDX-License-Identifier: MIT
// The Catalog: training TOMLs, launch specs, data manifests and evaluations read once from the
// discovery roots; TOML values as JSON and lookups in them; copies of one TOML collapsed.
#include "indexer_internal.hpp"
#include "outcome.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/toml/value.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <tuple>

namespace pb::watcher::detail {
namespace {

using nlohmann::json;

// ---- YAML scalars the way yaml.safe_load types them ----

std::optional<std::string> yaml_string(const YAML::Node &node) {
  if (!node || !node.IsScalar()) {
    return std::nullopt;
  }
  const std::string &value = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
    return value; // quoted
  }
  static const std::regex non_string(
      R"(^(~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|[-+]?(0|[1-9][0-9_]*)|0o?[0-7_]+|0x[0-9a-fA-F_]+|[-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$)");
  if (value.empty() || std::regex_match(value, non_string)) {
    return std::nullopt;
  }
  return value;
}

} // namespace

json toml_to_json(const toml::Value &value) {
  switch (value.type()) {
  case toml::Type::string:
    return *value.string();
  case toml::Type::integer:
    return *value.integer();
  case toml::Type::floating:
    return *value.floating();
  case toml::Type::boolean:
    return *value.boolean();
  case toml::Type::array: {
    json out = json::array();
    for (const auto &item : *value.array()) {
      out.push_back(toml_to_json(item));
    }
    return out;
  }
  case toml::Type::table: {
    json out = json::object();
    for (const auto &[key, item] : *value.table()) {
      out[key] = toml_to_json(item);
    }
    return out;
  }
  default:
    return value.raw(); // dates and times: their source spelling
  }
}

const json *find(const json &root, std::initializer_list<const char *> keys) {
  const json *current = &root;
  for (const char *key : keys) {
    if (!current->is_object()) {
      return nullptr;
    }
    const auto it = current->find(key);
    if (it == current->end()) {
      return nullptr;
    }
    current = &*it;
  }
  return current;
}

std::optional<std::string> text_value(const json *value) {
  if (value != nullptr && value->is_string() && !value->get_ref<const std::string &>().empty()) {
    return value->get<std::string>();
  }
  return std::nullopt;
}

Catalog::Catalog(const Settings &settings) : m_settings(settings) {
  m_settings.repo_root = resolve(settings.repo_root.string(), stdfs::current_path());
}

const std::vector<std::string> &Catalog::train_files() {
  if (!m_train_files) {
    m_train_files = find_files(m_settings.roots.train_config_roots, {".toml"});
  }
  return *m_train_files;
}

const TrainConfig &Catalog::train_config(const std::string &path) {
  auto &slot = m_train_configs[path];
  if (slot) {
    return *slot;
  }
  slot = std::make_unique<TrainConfig>();
  slot->path = path;
  const auto text = try_read(path);
  if (!text) {
    slot->error = path + ": cannot read the file";
    slot->signature = "invalid:" + path;
    return *slot;
  }
  slot->raw = *text;
  try {
    const auto document = toml::Document::parse(*text, path);
    slot->config = toml_to_json(document.root());
    slot->signature = compact_sorted_json(slot->config);
    slot->v0_9 = primerl::detect_generation(document).generation == primerl::Generation::v0_9;
    if (slot->v0_9) {
      const json *wandb_name = find(slot->config, {"monitors", "wandb", "name"});
      try {
        slot->run_dir_name = primerl::run_dir_name(document,
                                                   wandb_name != nullptr && wandb_name->is_string()
                                                       ? wandb_name->get<std::string>()
                                                       : std::string());
      } catch (const Error &) {
        slot->run_dir_name.clear(); // a non-string run.name: no findable run directory
      }
    }
  } catch (const Error &error) {
    slot->config = nullptr;
    slot->error = error.what();
    slot->signature = "invalid:" + path;
  }
  return *slot;
}

const std::vector<LaunchSpec> &Catalog::launch_specs() {
  if (!m_launch_specs) {
    m_launch_specs.emplace();
    for (const auto &path : find_files(m_settings.roots.launch_spec_roots, {".json"})) {
      auto text = try_read(path);
      if (!text) {
        continue;
      }
      auto spec = json::parse(*text, nullptr, false);
      if (spec.is_object() && spec.contains("tasks") && spec["tasks"].is_array()) {
        m_launch_specs->push_back({path, std::move(spec), std::move(*text)});
      }
    }
  }
  return *m_launch_specs;
}

const std::vector<Manifest> &Catalog::manifests() {
  if (m_manifests) {
    return *m_manifests;
  }
  m_manifests.emplace();
  std::set<std::string> candidates;
  for (const auto &path : m_settings.roots.manifests) {
    candidates.insert(resolve(path.string(), repo()));
  }
  if (candidates.empty()) {
    for (const auto &path : find_files(m_settings.roots.manifest_roots, {".json"})) {
      std::string name = file_name(path);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
      });
      if (name.find("manifest") != std::string::npos) {
        candidates.insert(path);
      }
    }
  }
  for (const auto &path : candidates) {
    auto text = try_read(path);
    if (!text) {
      continue;
    }
    auto raw = json::parse(*text, nullptr, false);
    if (!raw.is_object() || !raw.contains("sources") || !raw["sources"].is_array()) {
      continue;
    }
    Manifest manifest;
    manifest.path = path;
    std::string uid_text = path;
    for (const char *key : {"config_uid", "mix_uid"}) {
      const json value = raw.value(key, json(""));
      uid_text += " " + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    for (const char *key : {"train_path", "validation_path", "hf_dataset_path"}) {
      if (raw.contains(key) && raw[key].is_string()) {
        manifest.matched_paths.push_back(resolve(raw[key].get<std::string>(), repo()));
        uid_text += " " + manifest.matched_paths.back();
      }
    }
    manifest.uids = find_uids(uid_text);
    manifest.raw = std::move(raw);
    manifest.text = std::move(*text);
    m_manifests->push_back(std::move(manifest));
  }
  return *m_manifests;
}

const std::map<std::string, std::vector<Evaluation>> &Catalog::evaluations() {
  if (m_evaluations) {
    return *m_evaluations;
  }
  m_evaluations.emplace();
  auto &catalog = *m_evaluations;
  std::set<std::pair<std::string, std::string>> known_run_dirs;
  for (const auto &path : find_files(m_settings.roots.eval_config_roots, {".yaml", ".yml"})) {
    const auto raw_yaml = try_read(path);
    if (!raw_yaml) {
      continue;
    }
    YAML::Node raw;
    try {
      raw = YAML::Load(*raw_yaml);
    } catch (const YAML::Exception &) {
      continue;
    }
    if (!raw.IsMap()) {
      continue;
    }
    std::string workflow = "moss";
    if (const auto value = raw["workflow"]; value && value.IsScalar() && !value.Scalar().empty()) {
      workflow = value.Scalar();
    }
    const YAML::Node payload = workflow == "search-agent"
                                   ? raw["search_agent"]
                                   : (raw["evaluation"] ? raw["evaluation"] : raw);
    if (!payload || !payload.IsMap()) {
      continue;
    }
    const auto model_value = yaml_string(payload["model"]);
    if (!model_value) {
      continue;
    }
    const std::string model = resolve(*model_value, repo());
    std::optional<std::string> run_dir;
    if (const auto value = yaml_string(payload["run_dir"])) {
      run_dir = resolve(*value, repo());
    }
    Evaluation evaluation = evaluation_outcome(run_dir);
    evaluation.config_path = path;
    evaluation.raw_yaml = *raw_yaml;
    evaluation.workflow = workflow;
    catalog[model].push_back(std::move(evaluation));
    if (run_dir) {
      known_run_dirs.emplace(model, *run_dir);
    }
  }
  for (const char *legacy : {"records/moss-evals", "records/evalmoss", "records/eval-moss"}) {
    const std::string root = repo().string() + "/" + legacy;
    for (const auto &name : subdirectory_names(root)) {
      const std::string run_dir = clean(root + "/" + name);
      if (!is_file(run_dir + "/averages.jsonl") && !is_file(run_dir + "/summary.jsonl")) {
        continue;
      }
      MossOutcome parsed;
      try {
        parsed = parse_moss_outcome(run_dir);
      } catch (const Error &) {
        continue;
      }
      if (!parsed.model) {
        continue;
      }
      const std::string model = resolve(*parsed.model, repo());
      if (known_run_dirs.count({model, run_dir}) > 0) {
        continue;
      }
      const auto launcher = try_read(run_dir + "/launcher.log");
      if (!launcher) {
        continue;
      }
      Evaluation evaluation = evaluation_outcome(run_dir);
      evaluation.config_path = run_dir + "/launcher.log";
      evaluation.raw_yaml = *launcher;
      evaluation.workflow = "moss-archive";
      catalog[model].push_back(std::move(evaluation));
    }
  }
  return catalog;
}

std::vector<std::string> collapse_equivalent(Catalog &catalog, std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  if (paths.empty()) {
    return paths;
  }
  std::set<std::string> signatures;
  for (const auto &path : paths) {
    signatures.insert(catalog.train_config(path).signature);
  }
  if (signatures.size() != 1) {
    return paths;
  }
  auto rank = [](const std::string &path) {
    return std::make_tuple(path.find("examples/configs/train") != std::string::npos ? 0 : 1,
                           parts_of(path).size(),
                           path);
  };
  return {*std::min_element(
      paths.begin(), paths.end(), [&](const auto &a, const auto &b) { return rank(a) < rank(b); })};
}

} // namespace pb::watcher::detail
