// SPDX-License-Identifier: MIT
// index, update, rebuild, show and status (docs/watcher.md).
#include "database.hpp"
#include "indexer.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/sqlite.hpp>
#include <primebeaker/watcher/watcher.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>

namespace pb::watcher {

using registry::sqlite;
namespace {

namespace stdfs = std::filesystem;
using detail::Catalog;

std::string absolute_string(const stdfs::path &path) {
  return detail::resolve(path.string(), stdfs::current_path());
}

bool is_file(const stdfs::path &path) {
  std::error_code ec;
  return stdfs::is_regular_file(path, ec);
}

struct BulkResult {
  std::size_t rl_outputs_with_configs = 0;
  std::size_t discovered = 0;
  std::vector<std::string> indexed, indexed_sft, skipped;
  OrderedJson unresolved = OrderedJson::array();
  OrderedJson failures = OrderedJson::array();
  OrderedJson invalid_configs = OrderedJson::array();
};

// Every saved checkpoint of an unambiguous RL TOML, then evaluated standalone SFT checkpoints.
// Several TOMLs for one output directory are reported, never guessed: a resumed run may have
// changed its configuration, and a name or mtime heuristic would corrupt provenance.
BulkResult index_all(Database &db, Catalog &catalog, bool skip_indexed, const Progress &progress) {
  BulkResult result;
  std::map<std::string, std::vector<std::string>> rl_outputs, sft_outputs;
  std::set<std::string> v0_9_outputs; // run directories: checkpoints/step_N, not weights/step_N
  for (const auto &path : catalog.train_files()) {
    const auto &config = catalog.train_config(path);
    if (config.config.is_null()) {
      result.invalid_configs.push_back({{"config", path}, {"error", config.error}});
      continue;
    }
    const auto &root = config.config;
    // v0.9: output_dir (default "outputs") / the run directory (docs/watcher.md).
    const auto resolved_output = detail::config_output_dir(config, catalog.repo());
    if (!resolved_output) {
      continue;
    }
    const std::string &output = *resolved_output;
    const bool rl = root.contains("trainer") && root["trainer"].is_object() &&
                    root.contains("orchestrator") && root["orchestrator"].is_object();
    const auto data = root.find("data");
    const bool sft = !rl && data != root.end() && data->is_object() &&
                     ((data->contains("type") && (*data)["type"] == "sft") ||
                      (data->contains("name") && (*data)["name"].is_string()));
    if (rl) {
      rl_outputs[output].push_back(path);
      if (config.v0_9) {
        v0_9_outputs.insert(output);
      }
    } else if (sft) {
      sft_outputs[output].push_back(path);
    }
  }
  result.rl_outputs_with_configs = rl_outputs.size();

  std::set<std::string> existing;
  if (skip_indexed) {
    for (const auto &row : db.rows("SELECT model_path FROM models")) {
      existing.insert(row["model_path"].get<std::string>());
    }
  }

  struct Job {
    std::string checkpoint;
    std::string config;
  };
  std::vector<Job> jobs;
  for (const auto &[output_dir, paths] : rl_outputs) {
    std::vector<std::pair<std::int64_t, std::string>> checkpoints;
    std::error_code ec;
    // v0.8.0 exports weights/step_N; v0.9 saves checkpoints/step_N/{trainer,orchestrator}, a
    // step counting once the orchestrator wrote its side.
    const bool v0_9 = v0_9_outputs.count(output_dir) > 0;
    const std::string root = output_dir + (v0_9 ? "/checkpoints" : "/weights");
    for (const auto &entry : stdfs::directory_iterator(root, ec)) {
      const std::string name = entry.path().filename().string();
      const std::string path = root + "/" + name;
      const auto step = detail::checkpoint_step(path);
      if (name.rfind("step_", 0) == 0 && step && entry.is_directory(ec) &&
          (!v0_9 || stdfs::is_directory(path + "/orchestrator", ec))) {
        checkpoints.emplace_back(*step, path);
      }
    }
    std::sort(checkpoints.begin(), checkpoints.end());
    result.discovered += checkpoints.size();
    const auto configs = detail::collapse_equivalent(catalog, paths);
    if (configs.size() != 1) {
      if (!checkpoints.empty()) {
        OrderedJson entry = OrderedJson::object();
        entry["output_dir"] = output_dir;
        entry["checkpoints"] = OrderedJson::array();
        for (const auto &[step, path] : checkpoints) {
          entry["checkpoints"].push_back(path);
        }
        entry["reason"] = "multiple RL TOMLs target this output directory";
        entry["configs"] = configs;
        result.unresolved.push_back(std::move(entry));
      }
      continue;
    }
    for (const auto &[step, path] : checkpoints) {
      jobs.push_back({path, configs.front()});
    }
  }

  const std::size_t total = jobs.size();
  std::size_t done = 0;
  for (const auto &job : jobs) {
    if (progress) {
      progress(done, total, job.checkpoint);
    }
    ++done;
    if (existing.count(job.checkpoint) > 0) {
      result.skipped.push_back(job.checkpoint);
      continue;
    }
    try {
      IndexOptions options;
      options.model = job.checkpoint;
      options.rl_config = job.config;
      detail::index_rl(db, catalog, options);
      result.indexed.push_back(job.checkpoint);
    } catch (const Error &error) {
      result.failures.push_back({{"checkpoint", job.checkpoint}, {"error", error.what()}});
    }
  }
  if (progress) {
    progress(total, total, "");
  }

  for (const auto &[model, evaluations] : catalog.evaluations()) {
    std::error_code ec;
    if (!stdfs::is_directory(model, ec) || !detail::checkpoint_step(model)) {
      continue;
    }
    const std::string output_dir = detail::checkpoint_output_dir(model);
    if (rl_outputs.count(output_dir) > 0) {
      continue;
    }
    const auto found = sft_outputs.find(output_dir);
    const auto configs = detail::collapse_equivalent(
        catalog, found == sft_outputs.end() ? std::vector<std::string>{} : found->second);
    std::string name = output_dir.substr(output_dir.rfind('/') + 1);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    if (configs.empty() && name.find("sft") == std::string::npos) {
      continue;
    }
    if (configs.size() > 1) {
      OrderedJson entry = OrderedJson::object();
      entry["output_dir"] = output_dir;
      entry["checkpoints"] = OrderedJson::array({model});
      entry["reason"] = "multiple SFT TOMLs target this output directory";
      entry["configs"] = configs;
      result.unresolved.push_back(std::move(entry));
      continue;
    }
    if (existing.count(model) > 0) {
      result.skipped.push_back(model);
      continue;
    }
    try {
      detail::index_sft(db,
                        catalog,
                        model,
                        configs.empty() ? std::nullopt : std::optional<std::string>(configs[0]));
      result.indexed_sft.push_back(model);
    } catch (const Error &error) {
      result.failures.push_back({{"checkpoint", model}, {"error", error.what()}});
    }
  }
  return result;
}

OrderedJson bulk_summary(const std::string &operation,
                         const std::string &database,
                         const BulkResult &result,
                         bool details) {
  OrderedJson out = OrderedJson::object();
  out["operation"] = operation;
  out["database"] = database;
  out["rl_outputs_with_configs"] = result.rl_outputs_with_configs;
  out["discovered_checkpoints"] = result.discovered;
  out["indexed_checkpoints"] = result.indexed.size();
  out["indexed_sft_checkpoints"] = result.indexed_sft.size();
  out["skipped_indexed"] = result.skipped.size();
  out["unresolved_outputs"] = result.unresolved.size();
  out["failures"] = result.failures.size();
  out["invalid_configs"] = result.invalid_configs.size();
  if (!result.unresolved.empty()) {
    out["unresolved"] = result.unresolved;
  }
  if (!result.failures.empty()) {
    out["failure_details"] = result.failures;
  }
  if (!result.invalid_configs.empty()) {
    out["invalid_config_details"] = result.invalid_configs;
  }
  if (details) {
    out["indexed"] = result.indexed;
    out["indexed_sft"] = result.indexed_sft;
    out["skipped_indexed_paths"] = result.skipped;
  }
  return out;
}

void remove_with_companions(const stdfs::path &path) {
  std::error_code ec;
  for (const char *suffix : {"", "-wal", "-shm", "-journal"}) {
    stdfs::remove(path.string() + suffix, ec);
  }
}

// Checkpoints the WAL into the main file and leaves WAL mode, so one file holds everything.
void quiesce(Database &db, bool strict) {
  sqlite().busy_timeout(db.handle(), 10000);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const auto mode = db.scalar_text("PRAGMA journal_mode = DELETE");
  if (strict && mode != "delete") {
    throw failure("could not switch " + db.path().string() + " to journal_mode=DELETE (got " +
                  mode.value_or("nothing") + ")");
  }
}

void online_backup(Database &source, const stdfs::path &target) {
  sqlite3 *copy = nullptr;
  if (sqlite().open(target.c_str(), &copy) != SQLITE_OK) {
    const std::string reason = copy ? sqlite().errmsg(copy) : "out of memory";
    sqlite().close(copy);
    throw failure("cannot create backup " + target.string() + ": " + reason);
  }
  sqlite3_backup *backup = sqlite().backup_init(copy, "main", source.handle(), "main");
  int rc = backup ? sqlite().backup_step(backup, -1) : SQLITE_ERROR;
  if (backup) {
    sqlite().backup_finish(backup);
  }
  const std::string reason = sqlite().errmsg(copy);
  sqlite().close(copy);
  if (rc != SQLITE_DONE) {
    throw failure("backup of " + source.path().string() + " to " + target.string() +
                  " failed: " + reason);
  }
}

} // namespace

Roots default_roots(const stdfs::path &repo_root,
                    const std::map<std::string, std::string> &env,
                    const UserPlaces &places) {
  const auto lookup = [&](const char *name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() || it->second.empty() ? std::nullopt
                                                 : std::optional<std::string>(it->second);
  };
  const stdfs::path repo = absolute_string(repo_root);
  const stdfs::path jtc_root = lookup("JTC_ROOT").value_or(repo.string());
  Roots roots;
  roots.train_config_roots = {jtc_root / "examples" / "configs" / "train"};
  // Where `sft|rl submit` writes its specs, then the older PRIMEBEAKER_ROOT layout.
  if (!places.scratch_dir.empty()) {
    roots.launch_spec_roots.push_back(places.scratch_dir / "primebeaker" / "beaker_experiments");
  }
  std::optional<stdfs::path> primebeaker_root;
  if (const auto root = lookup("PRIMEBEAKER_ROOT")) {
    primebeaker_root = *root;
  } else if (!places.shared_dir.empty()) {
    primebeaker_root = places.shared_dir / "primebeaker";
  }
  if (primebeaker_root) {
    roots.eval_config_roots = {*primebeaker_root / "examples" / "configs" / "eval"};
    const auto specs = *primebeaker_root / "beaker_experiments";
    if (std::find(roots.launch_spec_roots.begin(), roots.launch_spec_roots.end(), specs) ==
        roots.launch_spec_roots.end()) {
      roots.launch_spec_roots.push_back(specs);
    }
  }
  roots.manifest_roots = {stdfs::path(absolute_string(jtc_root)).parent_path() / "prime_sft" /
                              "data",
                          jtc_root / "data"};
  return roots;
}

OrderedJson index_model(const Settings &settings, const IndexOptions &options) {
  Catalog catalog(settings);
  Database db(settings.database, Database::Mode::read_write_schema);
  return detail::index_rl(db, catalog, options);
}

OrderedJson update(const Settings &settings, const BulkOptions &options) {
  Catalog catalog(settings);
  Database db(settings.database, Database::Mode::read_write_schema);
  const BulkResult result = index_all(db, catalog, options.skip_indexed, options.progress);
  return bulk_summary("update", absolute_string(settings.database), result, options.details);
}

OrderedJson rebuild(const Settings &settings, const RebuildOptions &options) {
  const stdfs::path target = absolute_string(settings.database);
  std::random_device random;
  const stdfs::path temporary =
      target.parent_path() /
      ("." + target.filename().string() + ".rebuild-" + std::to_string(::getpid()) + "-" +
       std::to_string(random()) + ".sqlite3");
  struct Cleanup {
    stdfs::path path;
    ~Cleanup() { remove_with_companions(path); }
  } cleanup{temporary};
  remove_with_companions(temporary); // SQLite creates it fresh

  Settings fresh = settings;
  fresh.database = temporary;
  Catalog catalog(fresh);
  OrderedJson summary;
  std::string integrity;
  {
    Database db(temporary, Database::Mode::read_write_schema);
    const BulkResult result = index_all(db, catalog, false, options.progress);
    summary = bulk_summary("rebuild", target.string(), result, options.details);
    const std::size_t failures = result.failures.size();
    const std::size_t invalid = result.invalid_configs.size();
    if (options.require_clean && (failures > 0 || invalid > 0)) {
      Error error =
          failure("rebuild refused to replace the current database: " + std::to_string(failures) +
                  " indexing failures and " + std::to_string(invalid) + " invalid configs");
      for (const auto &item : result.failures) {
        error.add_context(item["checkpoint"].get<std::string>() + ": " +
                          item["error"].get<std::string>());
      }
      for (const auto &item : result.invalid_configs) {
        error.add_context(item["config"].get<std::string>() + ": " +
                          item["error"].get<std::string>());
      }
      throw error;
    }
    if (options.require_models && result.indexed.empty()) {
      throw failure("rebuild refused to install an empty checkpoint database");
    }
    quiesce(db, true);
    db.exec("PRAGMA optimize");
    if (const auto violations = db.rows("PRAGMA foreign_key_check"); !violations.empty()) {
      throw failure("rebuild refused: the new database has " + std::to_string(violations.size()) +
                    " foreign-key violations");
    }
    integrity = db.scalar_text("PRAGMA integrity_check").value_or("");
    if (integrity != "ok") {
      throw failure("rebuild refused: integrity_check of the new database says " + integrity);
    }
  }
  std::optional<std::string> backup_path;
  if (is_file(target)) {
    Database current(target, Database::Mode::read_write_schema);
    quiesce(current, false);
    if (options.backup) {
      const stdfs::path backup = target.parent_path() / (target.filename().string() + ".backup-" +
                                                         utc_now("%Y%m%dT%H%M%S", ".%06lldZ"));
      online_backup(current, backup);
      backup_path = backup.string();
    }
  }
  std::error_code ec;
  stdfs::rename(temporary, target, ec);
  if (ec) {
    throw failure("cannot install the rebuilt database at " + target.string() + ": " +
                  ec.message());
  }
  // The replaced file's WAL companions belong to the old database: never let SQLite replay
  // them into the new one.
  stdfs::remove(target.string() + "-wal", ec);
  stdfs::remove(target.string() + "-shm", ec);
  summary["backup"] = backup_path ? OrderedJson(*backup_path) : OrderedJson(nullptr);
  summary["integrity"] = integrity;
  return summary;
}

OrderedJson
show(const stdfs::path &database, const stdfs::path &repo_root, const stdfs::path &model) {
  Database db(database, Database::Mode::read_write_schema);
  const std::string path = detail::resolve(model.string(), absolute_string(repo_root));
  const auto row = db.row("SELECT id FROM models WHERE model_path = ?", {path});
  if (!row) {
    throw failure("model is not indexed: " + path);
  }
  const std::int64_t model_id = (*row)["id"].get<std::int64_t>();
  OrderedJson out = OrderedJson::object();
  out["provenance"] = *db.row("SELECT * FROM model_provenance WHERE rl_model = ?", {path});
  out["wandb_runs"] =
      db.rows("SELECT * FROM model_wandb_runs WHERE rl_model = ? ORDER BY stage, run_id", {path});
  out["dataset_mix"] = db.rows(
      "SELECT * FROM dataset_mix WHERE rl_model = ? ORDER BY stage, role, source_name", {path});
  out["evaluations"] = db.rows(
      "SELECT * FROM evaluation_results WHERE rl_model = ? ORDER BY config_path, dataset", {path});
  out["counts"] = detail::model_counts(db, model_id);
  return out;
}

OrderedJson status(const stdfs::path &database) {
  const std::string path = absolute_string(database);
  OrderedJson out = OrderedJson::object();
  out["database"] = path;
  if (!is_file(path)) {
    out["exists"] = false;
    return out;
  }
  Database db(path, Database::Mode::read_only);
  out["exists"] = true;
  out["size_bytes"] = stdfs::file_size(path);
  out["integrity"] = db.scalar_text("PRAGMA integrity_check").value_or("");
  out["schema_version"] = db.row("SELECT max(version) AS v FROM schema_metadata")->at("v");
  out["first_indexed_at"] = db.row("SELECT min(indexed_at) AS v FROM models")->at("v");
  out["last_indexed_at"] = db.row("SELECT max(indexed_at) AS v FROM models")->at("v");
  out["rl_checkpoints"] =
      db.scalar_int("SELECT count(DISTINCT model_id) FROM training_runs WHERE stage = 'rl'");
  out["sft_checkpoints"] = db.scalar_int(
      "SELECT count(DISTINCT m.id) FROM models m JOIN training_runs s ON s.model_id = m.id AND "
      "s.stage = 'sft' WHERE NOT EXISTS (SELECT 1 FROM training_runs r WHERE r.model_id = m.id "
      "AND r.stage = 'rl')");
  out["rl_outputs"] = db.scalar_int(
      "SELECT count(DISTINCT m.output_dir) FROM models m JOIN training_runs r ON r.model_id = "
      "m.id AND r.stage = 'rl'");
  out["sft_outputs"] = db.scalar_int(
      "SELECT count(DISTINCT m.output_dir) FROM models m JOIN training_runs s ON s.model_id = "
      "m.id AND s.stage = 'sft' WHERE NOT EXISTS (SELECT 1 FROM training_runs r WHERE "
      "r.model_id = m.id AND r.stage = 'rl')");
  out["training_stages"] = db.scalar_int("SELECT count(*) FROM training_runs");
  out["wandb_attempts"] = db.scalar_int("SELECT count(*) FROM wandb_runs");
  out["datasets"] = db.scalar_int("SELECT count(*) FROM datasets");
  out["source_parquets"] = db.scalar_int("SELECT count(*) FROM dataset_sources");
  out["evaluations"] = db.scalar_int("SELECT count(*) FROM evaluations");
  out["benchmark_outcomes"] = db.scalar_int("SELECT count(*) FROM evaluation_benchmarks");
  return out;
}

} // namespace pb::watcher
