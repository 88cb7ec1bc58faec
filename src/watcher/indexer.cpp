// SPDX-License-Identifier: MIT
#include "indexer.hpp"

#include "outcome.hpp"

#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/registry/records.hpp>
#include <primebeaker/toml/value.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <unordered_set>

namespace pb::watcher::detail {
namespace {

using nlohmann::json;

// ---- paths ----

std::string expand_user(const std::string &value) {
  if (value == "~" || text::starts_with(value, "~/")) {
    if (const auto home = env::get("HOME")) {
      return *home + value.substr(1);
    }
  }
  return value;
}

std::string clean(const std::string &path) {
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part(path.data() + start, end - start);
    if (!part.empty() && part != ".") {
      out += '/';
      out += part;
    }
    start = end + 1;
  }
  return out.empty() ? "/" : out;
}

std::string file_name(const std::string &path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string parent_of(const std::string &path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::vector<std::string> parts_of(const std::string &path) {
  std::vector<std::string> parts{"/"};
  for (auto &part : text::split(path, '/')) {
    if (!part.empty()) {
      parts.push_back(part);
    }
  }
  return parts;
}

bool is_dir(const std::string &path) {
  std::error_code ec;
  return stdfs::is_directory(path, ec);
}

bool is_file(const std::string &path) {
  std::error_code ec;
  return stdfs::is_regular_file(path, ec);
}

// Python's repr of an optional string, for messages that quote a value.
std::string python_repr(const json &value) {
  if (value.is_string()) {
    return "'" + value.get<std::string>() + "'";
  }
  if (value.is_null()) {
    return "None";
  }
  return value.dump();
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

namespace {

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

// ---- 16-hex-digit UIDs: maximal runs of exactly 16 hex digits ----

std::set<std::string> find_uids(const std::string &text) {
  std::set<std::string> uids;
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isxdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) {
      ++end;
    }
    if (end - i == 16) {
      uids.insert(text.substr(i, 16));
    }
    i = end;
  }
  return uids;
}

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

// ---- training artifacts ----

struct Artifact {
  std::string stage;
  std::optional<std::string> checkpoint;
  std::optional<std::string> output_dir;
  std::optional<std::string> config_path;
  const TrainConfig *config = nullptr;
};

} // namespace

std::optional<std::string> config_output_dir(const TrainConfig &config, const stdfs::path &repo) {
  const json *output = find(config.config, {"output_dir"});
  if (!config.v0_9) {
    if (output != nullptr && output->is_string()) {
      return resolve(output->get<std::string>(), repo);
    }
    return std::nullopt;
  }
  if (config.run_dir_name.empty() || (output != nullptr && !output->is_string())) {
    return std::nullopt; // a random run name Prime-RL chose: not findable from the TOML
  }
  const std::string base = output != nullptr ? output->get<std::string>() : "outputs";
  return resolve(base + "/" + config.run_dir_name, repo);
}

namespace {

std::optional<std::string> find_config(Catalog &catalog,
                                       const std::optional<std::string> &checkpoint,
                                       const std::optional<stdfs::path> &explicit_path,
                                       const std::string &stage,
                                       bool required) {
  if (explicit_path) {
    const std::string path = resolve(explicit_path->string(), catalog.repo());
    if (!is_file(path)) {
      throw input_error(stage + " TOML does not exist: " + path);
    }
    const TrainConfig &config = catalog.train_config(path);
    if (config.config.is_null()) {
      throw input_error(config.error);
    }
    if (checkpoint) {
      const std::string expected = checkpoint_output_dir(*checkpoint);
      const json *output = find(config.config, {"output_dir"});
      if (config_output_dir(config, catalog.repo()) != expected) {
        throw input_error(stage + " TOML " + path + " has output_dir " +
                          python_repr(output != nullptr ? *output : json()) +
                          (config.v0_9 ? " and run directory " + python_repr(config.run_dir_name)
                                       : std::string()) +
                          ", expected " + expected);
      }
    }
    return path;
  }
  if (!checkpoint) {
    return std::nullopt;
  }
  const std::string expected = checkpoint_output_dir(*checkpoint);
  std::vector<std::string> matches;
  for (const auto &path : catalog.train_files()) {
    const TrainConfig &config = catalog.train_config(path);
    if (!config.config.is_null() && config_output_dir(config, catalog.repo()) == expected) {
      matches.push_back(path);
    }
  }
  matches = collapse_equivalent(catalog, matches);
  if (matches.size() == 1) {
    return matches.front();
  }
  if (matches.empty()) {
    if (required) {
      throw input_error("could not find the " + stage + " TOML whose output_dir is " + expected +
                        "; pass --" + stage + "-config");
    }
    return std::nullopt;
  }
  Error error = input_error("multiple " + stage + " TOMLs have output_dir " + expected +
                            "; pass --" + stage + "-config:");
  for (const auto &path : matches) {
    error.add_context(path);
  }
  throw error;
}

Artifact make_artifact(Catalog &catalog,
                       const std::string &stage,
                       const std::optional<std::string> &checkpoint,
                       const std::optional<std::string> &config_path) {
  Artifact artifact{stage, checkpoint, std::nullopt, config_path, nullptr};
  if (!config_path) {
    if (checkpoint) {
      artifact.output_dir = checkpoint_output_dir(*checkpoint);
    }
    return artifact;
  }
  artifact.config = &catalog.train_config(*config_path);
  if (artifact.config->config.is_null()) {
    throw input_error(artifact.config->error);
  }
  artifact.output_dir = config_output_dir(*artifact.config, catalog.repo());
  return artifact;
}

std::optional<std::string> sft_predecessor(const json &config, const stdfs::path &repo) {
  std::set<std::string> candidates;
  for (const auto &section : {"trainer", "orchestrator", "inference"}) {
    const json *value = find(config, {section, "model", "name"});
    if (value != nullptr && value->is_string()) {
      const std::string name = value->get<std::string>();
      if (name.find('/') != std::string::npos && checkpoint_step(clean(name)).has_value()) {
        candidates.insert(resolve(name, repo));
      }
    }
  }
  if (candidates.empty()) {
    return std::nullopt;
  }
  if (candidates.size() > 1) {
    std::string listed;
    for (const auto &candidate : candidates) {
      listed += (listed.empty() ? "'" : ", '") + candidate + "'";
    }
    throw input_error("RL TOML refers to multiple predecessor checkpoints: [" + listed + "]");
  }
  return *candidates.begin();
}

// ---- W&B runs ----

struct WandbRecord {
  std::optional<std::string> run_id, project, entity, name, url;
  bool offline = false;
  std::optional<std::string> launch_spec_path, local_run_path, raw_launch_json;
};

std::string url_escape(const std::string &value) {
  std::string out;
  for (const unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buffer[4];
      std::snprintf(buffer, sizeof buffer, "%%%02X", c);
      out += buffer;
    }
  }
  return out;
}

void set_url(WandbRecord &record) {
  record.url.reset();
  if (record.run_id && record.project && record.entity && !record.offline) {
    record.url = "https://wandb.ai/" + url_escape(*record.entity) + "/" +
                 url_escape(*record.project) + "/runs/" + url_escape(*record.run_id);
  }
}

struct LocalRun {
  std::string run_id;
  std::string path;
  bool offline = false;
};

std::vector<LocalRun> local_wandb_runs(const std::optional<std::string> &output_dir) {
  if (!output_dir) {
    return {};
  }
  static const std::regex run_dir(R"(^(?:offline-)?run-\d{8}_\d{6}-(.+)$)");
  std::map<std::string, LocalRun> found;
  for (const auto &root : {*output_dir + "/wandb", *output_dir + "/run_default/wandb"}) {
    if (!is_dir(root)) {
      continue;
    }
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &entry : stdfs::directory_iterator(root, ec)) {
      if (entry.is_directory(ec)) {
        names.push_back(entry.path().filename().string());
      }
    }
    std::sort(names.begin(), names.end());
    for (const auto &name : names) {
      std::smatch match;
      if (std::regex_match(name, match, run_dir)) {
        found.emplace(
            match[1].str(),
            LocalRun{match[1].str(), root + "/" + name, text::starts_with(name, "offline-run-")});
      }
    }
  }
  std::vector<LocalRun> out;
  for (auto &[id, run] : found) {
    out.push_back(run);
  }
  return out;
}

// monitors.wandb of a v0.9 run's resolved configs (<run_dir>/configs/orchestrator.json, else
// trainer.json, else rl.json), keys that are null left out; {} when there is none.
json resolved_wandb(const std::optional<std::string> &run_dir) {
  if (!run_dir) {
    return json::object();
  }
  for (const char *name : {"orchestrator.json", "trainer.json", "rl.json"}) {
    const auto text = try_read(*run_dir + "/configs/" + name);
    if (!text) {
      continue;
    }
    const json parsed = json::parse(*text, nullptr, false);
    const json *table = parsed.is_discarded() ? nullptr : find(parsed, {"monitors", "wandb"});
    if (table == nullptr || !table->is_object()) {
      continue;
    }
    json out = json::object();
    for (const auto &[key, value] : table->items()) {
      if (!value.is_null()) {
        out[key] = value;
      }
    }
    return out;
  }
  return json::object();
}

std::vector<WandbRecord> wandb_runs(Catalog &catalog,
                                    const Artifact &artifact,
                                    const std::optional<std::string> &explicit_run_id) {
  const auto local_runs = local_wandb_runs(artifact.output_dir);
  if (artifact.config == nullptr && !explicit_run_id && local_runs.empty()) {
    return {};
  }
  json wandb = json::object();
  if (artifact.config != nullptr) {
    const json *table = artifact.config->v0_9 ? find(artifact.config->config, {"monitors", "wandb"})
                                              : find(artifact.config->config, {"wandb"});
    if (table != nullptr && table->is_object()) {
      wandb = *table;
    }
    if (artifact.config->v0_9) {
      // What the TOML leaves out, Prime-RL resolved into the run's configs (name = run.name).
      const json resolved = resolved_wandb(artifact.output_dir);
      for (const char *key : {"project", "entity", "name", "offline"}) {
        if (!wandb.contains(key) && resolved.contains(key)) {
          wandb[key] = resolved[key];
        }
      }
    }
  }
  const auto project = text_value(find(wandb, {"project"}));
  auto entity = text_value(find(wandb, {"entity"}));
  if (!entity) {
    entity = catalog.settings().wandb_entity;
  }
  const auto name = text_value(find(wandb, {"name"}));
  bool offline = false;
  if (const json *value = find(wandb, {"offline"}); value != nullptr) {
    offline = value->is_boolean()
                  ? value->get<bool>()
                  : !(value->is_null() || (value->is_number() && value->get<double>() == 0) ||
                      (value->is_string() && value->get_ref<const std::string &>().empty()));
  }
  auto record = [&](std::optional<std::string> run_id) {
    WandbRecord r;
    r.run_id = std::move(run_id);
    r.project = project;
    r.entity = entity;
    r.name = name;
    r.offline = offline;
    return r;
  };

  std::vector<WandbRecord> matches;
  for (const auto &spec : catalog.launch_specs()) {
    for (const auto &task : spec.spec["tasks"]) {
      if (!task.is_object()) {
        continue;
      }
      std::map<std::string, json> env;
      if (const auto vars = task.find("envVars"); vars != task.end() && vars->is_array()) {
        for (const auto &item : *vars) {
          if (item.is_object() && item.contains("name") && item["name"].is_string() &&
              item.contains("value")) {
            env[item["name"].get<std::string>()] = item["value"];
          }
        }
      }
      auto env_path = [&](const char *key) -> std::optional<std::string> {
        const auto it = env.find(key);
        if (it != env.end() && it->second.is_string() &&
            !it->second.get_ref<const std::string &>().empty()) {
          return resolve(it->second.get<std::string>(), catalog.repo());
        }
        return std::nullopt;
      };
      auto env_text = [&](const char *key) -> std::optional<std::string> {
        const auto it = env.find(key);
        return it == env.end() ? std::nullopt : text_value(&it->second);
      };
      // OUTPUT_DIR is authoritative when the task has it (a TOML is sometimes reused for a
      // renamed retry); CONFIG_PATH only counts for older specs without one.
      const auto env_output = env_path("OUTPUT_DIR");
      const auto env_config = env_path("CONFIG_PATH");
      const bool matched = env_output
                               ? (artifact.output_dir && *env_output == *artifact.output_dir)
                               : (artifact.config_path && env_config == artifact.config_path);
      if (!matched) {
        continue;
      }
      auto run_id = env_text("WANDB_SHARED_RUN_ID");
      if (!run_id) {
        run_id = env_text("WANDB_RUN_ID");
      }
      WandbRecord r = record(run_id);
      if (auto value = env_text("WANDB_PROJECT")) {
        r.project = value;
      }
      if (auto value = env_text("WANDB_ENTITY")) {
        r.entity = value;
      }
      if (auto value = env_text("WANDB_NAME")) {
        r.name = value;
      }
      r.launch_spec_path = spec.path;
      r.raw_launch_json = spec.text;
      matches.push_back(std::move(r));
    }
  }
  if (explicit_run_id && !explicit_run_id->empty()) {
    matches.push_back(record(explicit_run_id));
  }
  if (!local_runs.empty()) {
    std::vector<WandbRecord> concrete;
    std::vector<WandbRecord> placeholders;
    for (auto &match : matches) {
      (match.run_id ? concrete : placeholders).push_back(match);
    }
    const size_t concrete_before_local = concrete.size();
    for (const auto &local : local_runs) {
      bool same = false;
      for (size_t i = 0; i < concrete_before_local; ++i) {
        if (concrete[i].run_id == local.run_id) {
          concrete[i].local_run_path = local.path;
          same = true;
        }
      }
      if (same) {
        continue;
      }
      WandbRecord r = record(local.run_id);
      r.offline = offline || local.offline;
      r.local_run_path = local.path;
      if (placeholders.size() == 1) {
        r.launch_spec_path = placeholders.front().launch_spec_path;
        r.raw_launch_json = placeholders.front().raw_launch_json;
      }
      concrete.push_back(std::move(r));
    }
    matches = std::move(concrete);
  }
  if (matches.empty() && (project || entity || name)) {
    matches.push_back(record(std::nullopt));
  }
  // Deduplicated by (run id, launch spec, local run); a later duplicate replaces the earlier
  // one in place, keeping first-seen order.
  std::vector<WandbRecord> unique;
  for (auto &match : matches) {
    set_url(match);
    auto same = std::find_if(unique.begin(), unique.end(), [&](const WandbRecord &other) {
      return other.run_id == match.run_id && other.launch_spec_path == match.launch_spec_path &&
             other.local_run_path == match.local_run_path;
    });
    if (same != unique.end()) {
      *same = match;
    } else {
      unique.push_back(match);
    }
  }
  return unique;
}

// ---- datasets and manifests ----

void values_for_key(const json &value, const std::string &key, std::vector<const json *> &out) {
  if (value.is_object()) {
    for (const auto &[child_key, child] : value.items()) {
      if (child_key == key) {
        out.push_back(&child);
      }
      values_for_key(child, key, out);
    }
  } else if (value.is_array()) {
    for (const auto &child : value) {
      values_for_key(child, key, out);
    }
  }
}

std::vector<std::string>
dataset_paths(const std::string &stage, const json &config, const stdfs::path &repo) {
  std::vector<std::pair<std::string, std::string>> found;
  if (stage == "sft") {
    if (const json *name = find(config, {"data", "name"}); name && name->is_string()) {
      found.emplace_back("train", resolve(name->get<std::string>(), repo));
    }
    if (const json *name = find(config, {"val", "data", "name"}); name && name->is_string()) {
      found.emplace_back("validation", resolve(name->get<std::string>(), repo));
    }
  } else if (const json *orchestrator = find(config, {"orchestrator"});
             orchestrator && orchestrator->is_object()) {
    // TOML tables come back with sorted keys; document order only matters for which
    // configured path a deduplicated binding keeps, and both spellings resolve the same mix.
    for (const char *role : {"train", "eval"}) {
      if (const json *subtree = find(*orchestrator, {role})) {
        std::vector<const json *> values;
        values_for_key(*subtree, "dataset", values);
        for (const json *value : values) {
          if (value->is_string()) {
            found.emplace_back(role, resolve(value->get<std::string>(), repo));
          }
        }
      }
    }
  }
  std::vector<std::string> paths;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto &item : found) {
    if (seen.insert(item).second) {
      paths.push_back(item.second);
    }
  }
  return paths;
}

std::string dataset_stem(std::string name) {
  for (const std::string suffix :
       {".jsonl", ".parquet", "_train", "_validation", "_messages", "_prompt_split", "_harmony"}) {
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
    }
  }
  return name;
}

bool same_family(const std::string &left, const std::string &right) {
  const std::string a = dataset_stem(file_name(left));
  const std::string b = dataset_stem(file_name(right));
  return !a.empty() && !b.empty() && (a == b || text::starts_with(a, b) || text::starts_with(b, a));
}

std::string mix_signature(const Manifest &manifest) {
  json sources = json::array();
  for (const auto &source : manifest.raw["sources"]) {
    if (!source.is_object()) {
      continue;
    }
    json item = json::object();
    for (const char *key :
         {"name", "parquet", "path", "weight", "train_quota", "validation_quota"}) {
      item[key] = source.contains(key) ? source[key] : json();
    }
    sources.push_back(item);
  }
  return compact_sorted_json(sources);
}

size_t shared_prefix_depth(const std::string &left, const std::string &right) {
  const auto a = parts_of(left);
  const auto b = parts_of(right);
  size_t depth = 0;
  while (depth < a.size() && depth < b.size() && a[depth] == b[depth]) {
    ++depth;
  }
  return depth;
}

const Manifest *match_manifest(const std::string &dataset, const std::vector<Manifest> &manifests) {
  const auto dataset_uids = find_uids(dataset);
  std::vector<std::pair<int, const Manifest *>> scored;
  for (const auto &manifest : manifests) {
    int score = 0;
    const auto &paths = manifest.matched_paths;
    if (std::find(paths.begin(), paths.end(), dataset) != paths.end()) {
      score = 100;
    } else if (std::any_of(paths.begin(), paths.end(), [&](const std::string &path) {
                 return same_family(dataset, path);
               })) {
      score = 20;
    }
    if (std::any_of(dataset_uids.begin(), dataset_uids.end(), [&](const std::string &uid) {
          return manifest.uids.count(uid) > 0;
        })) {
      score += 40;
    }
    if (score > 0) {
      scored.emplace_back(score, &manifest);
    }
  }
  if (scored.empty()) {
    return nullptr;
  }
  int best = 0;
  for (const auto &[score, manifest] : scored) {
    best = std::max(best, score);
  }
  std::vector<const Manifest *> matches;
  for (const auto &[score, manifest] : scored) {
    if (score == best) {
      matches.push_back(manifest);
    }
  }
  if (matches.size() == 1) {
    return matches.front();
  }
  std::set<std::string> signatures;
  for (const auto *manifest : matches) {
    signatures.insert(mix_signature(*manifest));
  }
  if (signatures.size() == 1) {
    // Identical mixes materialised twice: the copy nearest the dataset is the one it came from.
    return *std::max_element(
        matches.begin(), matches.end(), [&](const Manifest *a, const Manifest *b) {
          const auto da = shared_prefix_depth(dataset, a->path);
          const auto db = shared_prefix_depth(dataset, b->path);
          return da != db ? da < db : a->path < b->path;
        });
  }
  std::string listed;
  for (const auto *manifest : matches) {
    listed += (listed.empty() ? "" : ", ") + manifest->path;
  }
  throw input_error("multiple data manifests match " + dataset + ": " + listed +
                    "; pass only the intended --manifest");
}

struct Binding {
  std::string configured_path;
  const Manifest *manifest = nullptr;
};

std::vector<Binding> dataset_bindings(Catalog &catalog, const Artifact &artifact) {
  std::vector<Binding> bindings;
  if (artifact.config == nullptr) {
    return bindings;
  }
  std::set<std::string> seen;
  for (const auto &configured :
       dataset_paths(artifact.stage, artifact.config->config, catalog.repo())) {
    const Manifest *manifest = match_manifest(configured, catalog.manifests());
    const std::string identity = manifest ? "manifest:" + manifest->path : "path:" + configured;
    if (seen.insert(identity).second) {
      bindings.push_back({configured, manifest});
    }
  }
  return bindings;
}

std::optional<double> number(const json &value) {
  if (value.is_number()) {
    return value.get<double>();
  }
  return std::nullopt;
}

std::optional<std::int64_t> integer(const json &value) {
  if (value.is_number_integer()) {
    return value.get<std::int64_t>();
  }
  return std::nullopt;
}

bool truthy(const json &value) {
  if (value.is_null()) {
    return false;
  }
  if (value.is_boolean()) {
    return value.get<bool>();
  }
  if (value.is_number()) {
    return value.get<double>() != 0;
  }
  if (value.is_string() || value.is_array() || value.is_object()) {
    return !value.empty() && !(value.is_string() && value.get_ref<const std::string &>().empty());
  }
  return true;
}

// Python's `raw.get(a) or raw.get(b) or ...`: the first truthy value, or null.
json first_truthy(const json &object, std::initializer_list<const char *> keys) {
  for (const char *key : keys) {
    const auto it = object.find(key);
    if (it != object.end() && truthy(*it)) {
      return *it;
    }
  }
  return nullptr;
}

SqlValue as_sql_text(const json &value) {
  if (value.is_null()) {
    return nullptr;
  }
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::int64_t upsert_dataset(Database &db, const Binding &binding, const stdfs::path &repo) {
  std::string identity;
  std::vector<SqlValue> values;
  if (binding.manifest == nullptr) {
    identity = "path:" + binding.configured_path;
    values = {identity,
              file_name(binding.configured_path),
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr,
              nullptr};
  } else {
    const json &raw = binding.manifest->raw;
    identity = "manifest:" + binding.manifest->path;
    const json name = first_truthy(raw, {"name", "mix_uid", "config_uid"});
    values = {identity,
              name.is_null() ? SqlValue(file_name(binding.configured_path)) : as_sql_text(name),
              binding.manifest->path,
              as_sql_text(raw.value("config_uid", json())),
              as_sql_text(first_truthy(raw, {"kind", "format"})),
              as_sql_text(raw.value("train_path", json())),
              as_sql_text(raw.value("validation_path", json())),
              as_sql_text(raw.value("hf_dataset_path", json())),
              binding.manifest->text};
  }
  db.run(R"(INSERT INTO datasets(identity_key, dataset_name, manifest_path, config_uid, kind,
                                 train_path, validation_path, hf_dataset_path, raw_manifest_json)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(identity_key) DO UPDATE SET
              dataset_name = excluded.dataset_name, manifest_path = excluded.manifest_path,
              config_uid = excluded.config_uid, kind = excluded.kind,
              train_path = excluded.train_path, validation_path = excluded.validation_path,
              hf_dataset_path = excluded.hf_dataset_path,
              raw_manifest_json = excluded.raw_manifest_json)",
         values);
  const std::int64_t dataset_id =
      db.scalar_int("SELECT id FROM datasets WHERE identity_key = ?", {identity});
  if (binding.manifest == nullptr) {
    return dataset_id;
  }
  db.run("DELETE FROM dataset_sources WHERE dataset_id = ?", {dataset_id});
  for (const auto &source : binding.manifest->raw["sources"]) {
    if (!source.is_object() || !source.contains("name") || !source["name"].is_string() ||
        source["name"].get_ref<const std::string &>().empty()) {
      continue;
    }
    const json location = first_truthy(source, {"parquet", "path"});
    const auto weight = number(source.value("weight", json()));
    const auto train_quota = integer(source.value("train_quota", json()));
    const auto validation_quota = integer(source.value("validation_quota", json()));
    db.run(R"(INSERT INTO dataset_sources(dataset_id, source_name, source_path, weight,
                                          train_quota, validation_quota, raw_source_json)
              VALUES (?, ?, ?, ?, ?, ?, ?))",
           {dataset_id,
            source["name"].get<std::string>(),
            location.is_string() ? SqlValue(resolve(location.get<std::string>(), repo))
                                 : SqlValue(nullptr),
            weight ? SqlValue(*weight) : SqlValue(nullptr),
            sql_int(train_quota),
            sql_int(validation_quota),
            compact_sorted_json(source)});
  }
  return dataset_id;
}

// ---- evaluations ----

std::vector<Evaluation> evaluations_for(Catalog &catalog, const std::string &model) {
  const auto &all = catalog.evaluations();
  const auto it = all.find(model);
  return it == all.end() ? std::vector<Evaluation>{} : it->second;
}

// ---- persisting one model graph ----

struct Graph {
  std::string model;
  std::vector<Artifact> artifacts;
  std::map<std::string, std::vector<WandbRecord>> wandb;
  std::map<std::string, std::vector<Binding>> datasets;
  std::vector<Evaluation> evaluations;
};

OrderedJson replace(Database &db, const Graph &graph, const stdfs::path &repo) {
  Transaction transaction(db);
  db.run("DELETE FROM models WHERE model_path = ?", {graph.model});
  const std::int64_t model_id = db.insert(
      "INSERT INTO models(model_path, output_dir, checkpoint_step, indexed_at) VALUES (?, ?, ?, ?)",
      {graph.model,
       checkpoint_output_dir(graph.model),
       sql_int(checkpoint_step(graph.model)),
       utc_now_iso()});
  std::map<std::string, std::int64_t> run_ids;
  for (const auto &artifact : graph.artifacts) {
    const TrainConfig *config = artifact.config;
    const std::int64_t run_id = db.insert(
        R"(INSERT INTO training_runs(model_id, stage, checkpoint_path, output_dir, config_path,
                                     config_sha256, raw_config_toml)
           VALUES (?, ?, ?, ?, ?, ?, ?))",
        {model_id,
         artifact.stage,
         sql_text(artifact.checkpoint),
         sql_text(artifact.output_dir),
         sql_text(artifact.config_path),
         config ? SqlValue(registry::sha256_hex(config->raw)) : SqlValue(nullptr),
         config ? SqlValue(config->raw) : SqlValue(nullptr)});
    run_ids[artifact.stage] = run_id;
    const auto runs = graph.wandb.find(artifact.stage);
    if (runs == graph.wandb.end()) {
      continue;
    }
    for (const auto &run : runs->second) {
      db.run(R"(INSERT INTO wandb_runs(training_run_id, run_id, project, entity, name, url,
                                       offline, launch_spec_path, local_run_path, raw_launch_json)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?))",
             {run_id,
              sql_text(run.run_id),
              sql_text(run.project),
              sql_text(run.entity),
              sql_text(run.name),
              sql_text(run.url),
              std::int64_t{run.offline ? 1 : 0},
              sql_text(run.launch_spec_path),
              sql_text(run.local_run_path),
              sql_text(run.raw_launch_json)});
    }
  }
  for (const auto &[stage, bindings] : graph.datasets) {
    for (const auto &binding : bindings) {
      const std::int64_t dataset_id = upsert_dataset(db, binding, repo);
      // Train and validation files are views of one mix when they resolve to one manifest:
      // the binding's role is the stage.
      db.run(R"(INSERT OR IGNORE INTO training_run_datasets(training_run_id, dataset_id, role,
                                                          configured_path) VALUES (?, ?, ?, ?))",
             {run_ids.at(stage), dataset_id, stage, binding.configured_path});
    }
  }
  for (const auto &evaluation : graph.evaluations) {
    const std::int64_t evaluation_id = db.insert(
        R"(INSERT INTO evaluations(model_id, config_path, workflow, run_dir, status, error,
                                   raw_config_yaml, outcome_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?))",
        {model_id,
         evaluation.config_path,
         evaluation.workflow,
         sql_text(evaluation.run_dir),
         evaluation.status,
         sql_text(evaluation.error),
         evaluation.raw_yaml,
         evaluation.outcome ? SqlValue(compact_sorted_json(*evaluation.outcome))
                            : SqlValue(nullptr)});
    for (const auto &benchmark : evaluation.benchmarks) {
      db.run(R"(INSERT INTO evaluation_benchmarks(evaluation_id, dataset, runs, mean_accuracy,
                                                  stdev_accuracy, min_accuracy, max_accuracy)
                VALUES (?, ?, ?, ?, ?, ?, ?))",
             {evaluation_id,
              benchmark.dataset,
              benchmark.runs,
              benchmark.mean_accuracy,
              benchmark.stdev_accuracy,
              benchmark.min_accuracy,
              benchmark.max_accuracy});
    }
  }
  db.run("DELETE FROM datasets WHERE NOT EXISTS "
         "(SELECT 1 FROM training_run_datasets WHERE dataset_id = datasets.id)");
  OrderedJson summary = OrderedJson::object();
  summary["database"] = stdfs::absolute(db.path()).string();
  summary["model"] = *db.row("SELECT * FROM models WHERE id = ?", {model_id});
  summary["counts"] = model_counts(db, model_id);
  transaction.commit();
  return summary;
}

} // namespace

// ---- public helpers ----

std::string resolve(const std::string &value, const stdfs::path &repo) {
  const std::string expanded = expand_user(value);
  if (!expanded.empty() && expanded.front() == '/') {
    return clean(expanded);
  }
  return clean(repo.string() + "/" + expanded);
}

std::optional<std::int64_t> checkpoint_step(const std::string &path) {
  static const std::regex step(R"((?:^|/)step[_-]?(\d+)$)");
  std::smatch match;
  if (!std::regex_search(path, match, step)) {
    return std::nullopt;
  }
  try {
    return std::stoll(match[1].str());
  } catch (const std::out_of_range &) {
    return std::nullopt;
  }
}

std::string checkpoint_output_dir(const std::string &checkpoint) {
  const std::string parent = parent_of(checkpoint);
  if (file_name(parent) == "weights" && checkpoint_step(checkpoint)) {
    return parent_of(parent);
  }
  // v0.9: <run_dir>/checkpoints/step_N/{trainer,orchestrator}; v0.8.0's orchestrator writes
  // under run_default/, never here.
  if (file_name(parent) == "checkpoints" && checkpoint_step(checkpoint) &&
      is_dir(checkpoint + "/orchestrator")) {
    return parent_of(parent);
  }
  return parent;
}

namespace {

void walk(const stdfs::path &dir,
          const std::vector<std::string> &suffixes,
          std::set<std::string> &visited_dirs,
          std::vector<std::string> &out) {
  std::error_code ec;
  const auto canonical = stdfs::canonical(dir, ec);
  if (ec || !visited_dirs.insert(canonical.string()).second) {
    return; // unreadable, or a directory symlink loop
  }
  for (const auto &entry : stdfs::directory_iterator(dir, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) {
      walk(entry.path(), suffixes, visited_dirs, out);
    } else if (entry.is_regular_file(type_ec)) {
      const std::string name = entry.path().filename().string();
      for (const auto &suffix : suffixes) {
        if (name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
          out.push_back(entry.path().string());
          break;
        }
      }
    }
  }
}

} // namespace

std::vector<std::string> find_files(const std::vector<stdfs::path> &roots,
                                    const std::vector<std::string> &suffixes) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const auto &root_path : roots) {
    const std::string root = resolve(root_path.string(), stdfs::current_path());
    std::vector<std::string> found;
    if (is_file(root)) {
      found.push_back(root);
    } else if (is_dir(root)) {
      std::set<std::string> visited;
      walk(root, suffixes, visited, found);
      std::sort(found.begin(), found.end());
    }
    for (auto &path : found) {
      path = clean(path);
      if (seen.insert(path).second) {
        out.push_back(path);
      }
    }
  }
  return out;
}

std::optional<std::string> try_read(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return std::nullopt;
  }
  return buffer.str();
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
    if (!is_dir(root)) {
      continue;
    }
    std::vector<std::string> run_dirs;
    std::error_code ec;
    for (const auto &entry : stdfs::directory_iterator(root, ec)) {
      if (entry.is_directory(ec)) {
        run_dirs.push_back(clean(entry.path().string()));
      }
    }
    std::sort(run_dirs.begin(), run_dirs.end());
    for (const auto &run_dir : run_dirs) {
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

Evaluation evaluation_outcome(const std::optional<std::string> &run_dir) {
  Evaluation evaluation;
  evaluation.run_dir = run_dir;
  if (!run_dir) {
    evaluation.status = "unconfigured";
    evaluation.error = "evaluation config has no run_dir";
    return evaluation;
  }
  if (!is_dir(*run_dir)) {
    evaluation.status = "not_started";
    return evaluation;
  }
  if (is_file(*run_dir + "/averages.jsonl") || is_file(*run_dir + "/summary.jsonl")) {
    try {
      MossOutcome parsed = parse_moss_outcome(*run_dir);
      evaluation.status = "complete";
      evaluation.outcome = parsed.outcome;
      evaluation.benchmarks = std::move(parsed.benchmarks);
    } catch (const Error &error) {
      evaluation.status = "incomplete";
      evaluation.error = error.what();
    }
    return evaluation;
  }
  const std::string failure_path = *run_dir + "/failure.json";
  if (is_file(failure_path)) {
    const std::string text = try_read(failure_path).value_or("");
    auto parsed = json::parse(text, nullptr, false);
    evaluation.status = "failed";
    evaluation.outcome = parsed.is_discarded() ? json{{"raw", text}} : parsed;
    return evaluation;
  }
  json artifacts = json::object();
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto &entry : stdfs::directory_iterator(*run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto &name : files) {
    auto parsed = json::parse(try_read(*run_dir + "/" + name).value_or(""), nullptr, false);
    if (!parsed.is_discarded()) {
      artifacts[name] = std::move(parsed);
    }
  }
  if (!artifacts.empty()) {
    evaluation.status = "complete";
    evaluation.outcome = json{{"artifacts", artifacts}};
    return evaluation;
  }
  evaluation.status = "incomplete";
  evaluation.error = "run directory exists but has no recognized outcome files";
  return evaluation;
}

OrderedJson index_rl(Database &db, Catalog &catalog, const IndexOptions &options) {
  Graph graph;
  graph.model = resolve(options.model.string(), catalog.repo());
  const auto rl_config = find_config(catalog, graph.model, options.rl_config, "rl", true);
  Artifact rl = make_artifact(catalog, "rl", graph.model, rl_config);
  const auto sft_checkpoint = sft_predecessor(rl.config->config, catalog.repo());
  const auto sft_config =
      sft_checkpoint ? find_config(catalog, sft_checkpoint, options.sft_config, "sft", false)
                     : std::nullopt;
  Artifact sft = make_artifact(catalog, "sft", sft_checkpoint, sft_config);
  graph.wandb["rl"] = wandb_runs(catalog, rl, options.rl_wandb_run_id);
  graph.wandb["sft"] = wandb_runs(catalog, sft, options.sft_wandb_run_id);
  graph.datasets["rl"] = dataset_bindings(catalog, rl);
  graph.datasets["sft"] = dataset_bindings(catalog, sft);
  graph.artifacts = {rl, sft};
  graph.evaluations = evaluations_for(catalog, graph.model);
  return replace(db, graph, catalog.repo());
}

OrderedJson index_sft(Database &db,
                      Catalog &catalog,
                      const std::string &model,
                      const std::optional<std::string> &config_path) {
  Graph graph;
  graph.model = model;
  Artifact sft = make_artifact(catalog, "sft", model, config_path);
  graph.wandb["sft"] = wandb_runs(catalog, sft, std::nullopt);
  graph.datasets["sft"] = dataset_bindings(catalog, sft);
  graph.artifacts = {sft};
  graph.evaluations = evaluations_for(catalog, model);
  return replace(db, graph, catalog.repo());
}

OrderedJson model_counts(Database &db, std::int64_t model_id) {
  OrderedJson counts = OrderedJson::object();
  counts["training_runs"] =
      db.scalar_int("SELECT count(*) FROM training_runs WHERE model_id = ?", {model_id});
  counts["wandb_runs"] = db.scalar_int("SELECT count(*) FROM wandb_runs WHERE training_run_id IN "
                                       "(SELECT id FROM training_runs WHERE model_id = ?)",
                                       {model_id});
  counts["datasets"] = db.scalar_int(
      "SELECT count(DISTINCT dataset_id) FROM training_run_datasets WHERE training_run_id IN "
      "(SELECT id FROM training_runs WHERE model_id = ?)",
      {model_id});
  counts["dataset_sources"] = db.scalar_int(
      "SELECT count(*) FROM dataset_sources WHERE dataset_id IN (SELECT dataset_id FROM "
      "training_run_datasets WHERE training_run_id IN (SELECT id FROM training_runs WHERE "
      "model_id = ?))",
      {model_id});
  counts["evaluations"] =
      db.scalar_int("SELECT count(*) FROM evaluations WHERE model_id = ?", {model_id});
  counts["benchmarks"] =
      db.scalar_int("SELECT count(*) FROM evaluation_benchmarks WHERE evaluation_id IN "
                    "(SELECT id FROM evaluations WHERE model_id = ?)",
                    {model_id});
  return counts;
}

} // namespace pb::watcher::detail
