// SPDX-License-Identifier: MIT
// Discovery and matching (docs/watcher.md "Indexing one checkpoint", "Bulk discovery").
#pragma once

#include "database.hpp"

#include <primebeaker/watcher/watcher.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pb::toml {
class Value;
}

namespace pb::watcher::detail {

namespace stdfs = std::filesystem;

// Python's Path(value).expanduser() made absolute against `repo` (".." is kept, "." and
// repeated or trailing slashes are dropped), as a string.
std::string resolve(const std::string &value, const stdfs::path &repo);
// The trailing `step[_-]?N` component's N.
std::optional<std::int64_t> checkpoint_step(const std::string &path);
// The grandparent when the parent is `weights` and a step was found, or when the parent is
// `checkpoints` and the step directory holds `orchestrator/` (a Prime-RL v0.9 run directory's
// checkpoint, docs/watcher.md); else the parent.
std::string checkpoint_output_dir(const std::string &checkpoint);
// Every file under `roots` whose name ends with one of `suffixes` (roots that are files are
// used directly), sorted, without duplicates; missing roots are skipped.
std::vector<std::string> find_files(const std::vector<stdfs::path> &roots,
                                    const std::vector<std::string> &suffixes);
// A TOML value as JSON: types kept, tables with sorted keys, dates as their source spelling.
nlohmann::json toml_to_json(const toml::Value &value);
// A whole file, or nullopt when it cannot be read.
std::optional<std::string> try_read(const std::string &path);

// A parsed training TOML, as JSON (TOML values keep their types; dates become strings).
struct TrainConfig {
  std::string path;
  std::string raw;
  nlohmann::json config; // null when the file is not valid TOML
  std::string error;     // why it is invalid
  std::string signature; // compact sorted JSON of the parsed values
  // Prime-RL v0.9 (primerl's detection): artifacts live in output_dir / run_dir_name, which is
  // run.dir, else run.name, else monitors.wandb.name ("" when none of them is set).
  bool v0_9 = false;
  std::string run_dir_name;
};

// The directory a training TOML's artifacts live in: its output_dir, resolved against the repo;
// v0.9: output_dir (default "outputs") / run_dir_name. nullopt when it cannot be told.
std::optional<std::string> config_output_dir(const TrainConfig &config, const stdfs::path &repo);

struct LaunchSpec {
  std::string path;
  nlohmann::json spec;
  std::string text;
};

struct Manifest {
  std::string path;
  nlohmann::json raw;
  std::string text;
  std::vector<std::string> matched_paths;
  std::set<std::string> uids;
};

struct Benchmark {
  std::string dataset;
  std::int64_t runs = 0;
  double mean_accuracy = 0, stdev_accuracy = 0, min_accuracy = 0, max_accuracy = 0;
};

struct Evaluation {
  std::string config_path;
  std::string raw_yaml;
  std::string workflow;
  std::optional<std::string> run_dir;
  std::string status;
  std::optional<std::string> error;
  std::optional<nlohmann::json> outcome;
  std::vector<Benchmark> benchmarks;
};

// Everything read from the discovery roots, read once and shared by every checkpoint a
// command indexes.
class Catalog {
public:
  explicit Catalog(const Settings &settings);

  const Settings &settings() const { return m_settings; }
  const stdfs::path &repo() const { return m_settings.repo_root; }
  const std::vector<std::string> &train_files();
  const TrainConfig &train_config(const std::string &path);
  const std::vector<LaunchSpec> &launch_specs();
  const std::vector<Manifest> &manifests();
  // model path -> its evaluations (YAMLs under eval roots, then legacy archives).
  const std::map<std::string, std::vector<Evaluation>> &evaluations();

private:
  Settings m_settings;
  std::optional<std::vector<std::string>> m_train_files;
  std::map<std::string, std::unique_ptr<TrainConfig>> m_train_configs;
  std::optional<std::vector<LaunchSpec>> m_launch_specs;
  std::optional<std::vector<Manifest>> m_manifests;
  std::optional<std::map<std::string, std::vector<Evaluation>>> m_evaluations;
};

// Copies of one TOML with identical parsed values count once (preferring a path under
// examples/configs/train, then fewer components, then the lexically first); anything else
// returns all paths sorted.
std::vector<std::string> collapse_equivalent(Catalog &catalog, std::vector<std::string> paths);

// Indexes an RL checkpoint with its SFT predecessor (`watcher index`); returns the summary.
OrderedJson index_rl(Database &db, Catalog &catalog, const IndexOptions &options);
// Indexes an evaluated standalone SFT checkpoint.
OrderedJson index_sft(Database &db,
                      Catalog &catalog,
                      const std::string &model,
                      const std::optional<std::string> &config_path);

// {"training_runs", "wandb_runs", "datasets", "dataset_sources", "evaluations", "benchmarks"}
OrderedJson model_counts(Database &db, std::int64_t model_id);

} // namespace pb::watcher::detail
