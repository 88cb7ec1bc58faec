// SPDX-License-Identifier: MIT
// Indexing one checkpoint: its training TOMLs found by output directory, its SFT predecessor,
// then its W&B runs, datasets and evaluations gathered into one graph and written.
#include "indexer_internal.hpp"

#include <primebeaker/core/error.hpp>

namespace pb::watcher::detail {
namespace {

using nlohmann::json;

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

std::vector<Evaluation> evaluations_for(Catalog &catalog, const std::string &model) {
  const auto &all = catalog.evaluations();
  const auto it = all.find(model);
  return it == all.end() ? std::vector<Evaluation>{} : it->second;
}

} // namespace

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

} // namespace pb::watcher::detail
