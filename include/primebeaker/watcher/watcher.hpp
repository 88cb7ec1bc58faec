// SPDX-License-Identifier: MIT
// The provenance watcher (docs/watcher.md): a SQLite graph from saved checkpoints to their
// training TOMLs, launch specs, W&B runs, data manifests and evaluation results.
#pragma once

#include <primebeaker/core/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::watcher {

// Where discovery looks. A root may be a file (used directly) or a directory (searched
// recursively); missing roots are skipped.
struct Roots {
  std::vector<std::filesystem::path> train_config_roots;
  std::vector<std::filesystem::path> eval_config_roots;
  std::vector<std::filesystem::path> launch_spec_roots;
  std::vector<std::filesystem::path> manifest_roots;
  std::vector<std::filesystem::path> manifests; // explicit manifests replace manifest_roots
};

struct Settings {
  std::filesystem::path database = "watcher.sqlite3";
  std::filesystem::path repo_root; // absolute
  Roots roots;
  std::optional<std::string> wandb_entity;
};

// Where the user's own files are (docs/config.md): `shared_dir` (<mount_path>/<user> unless
// configured; empty when no user name is known) and the launches' `scratch_dir`.
struct UserPlaces {
  std::filesystem::path shared_dir;
  std::filesystem::path scratch_dir;
};

// The discovery roots for `repo_root` (docs/watcher.md "Default roots"): JTC_ROOT and
// PRIMEBEAKER_ROOT from `env`, else under the user's shared dir; launch specs where submit
// writes them (<scratch_dir>/primebeaker/beaker_experiments).
Roots default_roots(const std::filesystem::path &repo_root,
                    const std::map<std::string, std::string> &env,
                    const UserPlaces &places);

struct IndexOptions {
  std::filesystem::path model;
  std::optional<std::filesystem::path> rl_config;
  std::optional<std::filesystem::path> sft_config;
  std::optional<std::string> rl_wandb_run_id;
  std::optional<std::string> sft_wandb_run_id;
};

// `watcher index MODEL`: {"database", "model", "counts"}. Ambiguities throw pb::Error (exit 3).
OrderedJson index_model(const Settings &settings, const IndexOptions &options);

// Called with (done, total, current checkpoint) while a bulk run indexes.
using Progress = std::function<void(size_t, size_t, const std::string &)>;

struct BulkOptions {
  bool skip_indexed = true;
  bool details = false;
  Progress progress;
};

// `watcher update`: incremental bulk index in place; the CLI summary.
OrderedJson update(const Settings &settings, const BulkOptions &options);

struct RebuildOptions {
  bool backup = true;
  bool require_clean = true;
  bool require_models = true;
  bool details = false;
  Progress progress;
};

// `watcher rebuild`: a fresh temporary database, checked, then renamed over the target.
OrderedJson rebuild(const Settings &settings, const RebuildOptions &options);

// `watcher show MODEL` (MODEL relative to repo_root).
OrderedJson show(const std::filesystem::path &database,
                 const std::filesystem::path &repo_root,
                 const std::filesystem::path &model);

// `watcher status`.
OrderedJson status(const std::filesystem::path &database);

} // namespace pb::watcher
