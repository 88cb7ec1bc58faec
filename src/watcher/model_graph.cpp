// SPDX-License-Identifier: MIT
// Writing one model's graph to the database (training runs, W&B runs, datasets and their
// sources, evaluations and benchmarks) in one transaction, and counting what a model has.
#include "indexer_internal.hpp"

#include <primebeaker/core/json.hpp>
#include <primebeaker/registry/records.hpp>

namespace pb::watcher::detail {
namespace {

using nlohmann::json;

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

} // namespace

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
