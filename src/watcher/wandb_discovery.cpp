// SPDX-License-Identifier: MIT
// A training run's W&B runs: its TOML's wandb table (v0.9: also the run's resolved configs),
// the launch specs that ran it, and the local run directories under its output directory.
#include "indexer_internal.hpp"

#include <primebeaker/core/text.hpp>

#include <algorithm>
#include <regex>

namespace pb::watcher::detail {
namespace {

using nlohmann::json;

void set_url(WandbRecord &record) {
  record.url.reset();
  if (record.run_id && record.project && record.entity && !record.offline) {
    record.url = "https://wandb.ai/" + text::percent_encode(*record.entity) + "/" +
                 text::percent_encode(*record.project) + "/runs/" +
                 text::percent_encode(*record.run_id);
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
    for (const auto &name : subdirectory_names(root)) {
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

} // namespace

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

} // namespace pb::watcher::detail
