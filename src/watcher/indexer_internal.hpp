// SPDX-License-Identifier: MIT
// What the indexer's parts share (internal to the watcher module; indexer.hpp is their API):
//   paths.cpp            path helpers (Python's Path rules), checkpoint steps, file discovery;
//   catalog.cpp          the Catalog read once from the discovery roots, TOML values as JSON;
//   wandb_discovery.cpp  a training run's W&B runs;
//   dataset_match.cpp    a training TOML's datasets and the data manifests they came from;
//   outcome.cpp          evaluation outcome files and a run directory's status;
//   model_graph.cpp      one model's graph written to the database;
//   indexer.cpp          a checkpoint matched to its TOMLs, and index_rl / index_sft.
// The rules they implement: docs/watcher.md, "Indexing one checkpoint".
#pragma once

#include "indexer.hpp"

#include <initializer_list>

namespace pb::watcher::detail {

// ----- paths (paths.cpp)

// `path` with empty and "." components dropped, always starting with "/".
std::string clean(const std::string &path);
// The last component, and everything before it ("/" at the root).
std::string file_name(const std::string &path);
std::string parent_of(const std::string &path);
// "/", then each non-empty component.
std::vector<std::string> parts_of(const std::string &path);
bool is_dir(const std::string &path);
bool is_file(const std::string &path);
// The names of the directories directly under `root`, sorted; none when it is not a directory.
std::vector<std::string> subdirectory_names(const std::string &root);

// ----- lookups in TOML values as JSON (catalog.cpp)

// The value under `keys`, or nullptr where one is missing or its parent is not a table.
const nlohmann::json *find(const nlohmann::json &root, std::initializer_list<const char *> keys);
// A non-empty string, or nullopt.
std::optional<std::string> text_value(const nlohmann::json *value);

// ----- training artifacts (indexer.cpp)

struct Artifact {
  std::string stage;
  std::optional<std::string> checkpoint;
  std::optional<std::string> output_dir;
  std::optional<std::string> config_path;
  const TrainConfig *config = nullptr;
};

// ----- W&B runs (wandb_discovery.cpp)

struct WandbRecord {
  std::optional<std::string> run_id, project, entity, name, url;
  bool offline = false;
  std::optional<std::string> launch_spec_path, local_run_path, raw_launch_json;
};

// The W&B runs of one artifact, deduplicated, in first-seen order.
std::vector<WandbRecord> wandb_runs(Catalog &catalog,
                                    const Artifact &artifact,
                                    const std::optional<std::string> &explicit_run_id);

// ----- datasets and manifests (dataset_match.cpp)

// Maximal runs of exactly 16 hex digits.
std::set<std::string> find_uids(const std::string &text);

struct Binding {
  std::string configured_path;
  const Manifest *manifest = nullptr;
};

// The datasets an artifact's TOML names, each with the manifest it matches (if any), one
// binding per manifest or unmatched path.
std::vector<Binding> dataset_bindings(Catalog &catalog, const Artifact &artifact);

// ----- persisting one model graph (model_graph.cpp)

struct Graph {
  std::string model;
  std::vector<Artifact> artifacts;
  std::map<std::string, std::vector<WandbRecord>> wandb;
  std::map<std::string, std::vector<Binding>> datasets;
  std::vector<Evaluation> evaluations;
};

// Replaces the model's rows with `graph` in one transaction; returns the summary.
OrderedJson replace(Database &db, const Graph &graph, const stdfs::path &repo);

} // namespace pb::watcher::detail
