// SPDX-License-Identifier: MIT
#include "api.hpp"

#include "indexer.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/value.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace pb::watcher::detail {
namespace {

std::string base_name(const std::string &path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string stage_of(Database &db, std::int64_t model_id) {
  return db.scalar_int("SELECT count(*) FROM training_runs WHERE model_id = ? AND stage = 'rl'",
                       {model_id}) > 0
             ? "rl"
             : "sft";
}

std::vector<OrderedJson> evaluations_of(Database &db, std::int64_t model_id) {
  auto evaluations = db.rows("SELECT id, config_path, workflow, run_dir, status, error "
                             "FROM evaluations WHERE model_id = ? ORDER BY config_path",
                             {model_id});
  for (auto &evaluation : evaluations) {
    evaluation["benchmarks"] =
        db.rows("SELECT dataset, runs, mean_accuracy, stdev_accuracy, min_accuracy, max_accuracy "
                "FROM evaluation_benchmarks WHERE evaluation_id = ? ORDER BY dataset",
                {evaluation["id"].get<std::int64_t>()});
  }
  return evaluations;
}

// Every evaluation of the run's checkpoints and, for RL, of the SFT checkpoints it started from.
OrderedJson run_evaluations(Database &db, const std::string &output_dir, const std::string &stage) {
  std::vector<OrderedJson> out;
  std::set<std::int64_t> seen;
  auto append = [&](const OrderedJson &checkpoint, const std::string &tag) {
    for (auto &evaluation : evaluations_of(db, checkpoint["id"].get<std::int64_t>())) {
      if (!seen.insert(evaluation["id"].get<std::int64_t>()).second) {
        continue;
      }
      evaluation["model_id"] = checkpoint["id"];
      evaluation["model_path"] = checkpoint["model_path"];
      evaluation["checkpoint_step"] = checkpoint["checkpoint_step"];
      evaluation["stage"] = tag;
      out.push_back(std::move(evaluation));
    }
  };
  for (const auto &checkpoint :
       db.rows("SELECT id, model_path, checkpoint_step FROM models WHERE output_dir = ? "
               "ORDER BY checkpoint_step DESC, id DESC",
               {output_dir})) {
    append(checkpoint, stage);
  }
  if (stage == "rl") {
    for (const auto &checkpoint : db.rows(
             "SELECT DISTINCT sft_model.id, sft_model.model_path, sft_model.checkpoint_step "
             "FROM models rl_model JOIN training_runs lineage ON lineage.model_id = rl_model.id "
             "AND lineage.stage = 'sft' JOIN models sft_model ON sft_model.model_path = "
             "lineage.checkpoint_path WHERE rl_model.output_dir = ? "
             "ORDER BY sft_model.checkpoint_step DESC, sft_model.id DESC",
             {output_dir})) {
      append(checkpoint, "sft");
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const OrderedJson &a, const OrderedJson &b) {
    auto key = [](const OrderedJson &item) {
      const auto step = item["checkpoint_step"].is_null()
                            ? std::int64_t{-1}
                            : item["checkpoint_step"].get<std::int64_t>();
      return std::make_tuple(
          item["stage"] == "rl" ? 0 : 1, -step, item["config_path"].get<std::string>());
    };
    return key(a) < key(b);
  });
  return OrderedJson(out);
}

OrderedJson datasets_of(Database &db, std::int64_t model_id) {
  const auto rows = db.rows(
      "SELECT tr.stage, trd.role, trd.configured_path, d.id AS dataset_id, d.dataset_name, "
      "d.manifest_path, d.config_uid, d.kind, d.train_path, d.validation_path, d.hf_dataset_path, "
      "ds.source_name, ds.source_path, ds.weight, ds.train_quota, ds.validation_quota "
      "FROM training_runs tr JOIN training_run_datasets trd ON trd.training_run_id = tr.id "
      "JOIN datasets d ON d.id = trd.dataset_id LEFT JOIN dataset_sources ds ON ds.dataset_id = "
      "d.id WHERE tr.model_id = ? ORDER BY CASE tr.stage WHEN 'rl' THEN 0 ELSE 1 END, "
      "d.dataset_name, trd.role, ds.source_name",
      {model_id});
  std::vector<OrderedJson> items;
  std::map<std::pair<std::string, std::int64_t>, size_t> index;
  for (const auto &row : rows) {
    const auto key =
        std::make_pair(row["stage"].get<std::string>(), row["dataset_id"].get<std::int64_t>());
    auto found = index.find(key);
    if (found == index.end()) {
      OrderedJson item = OrderedJson::object();
      item["stage"] = row["stage"];
      item["role"] = row["stage"];
      item["configured_path"] = row["configured_path"];
      item["configured_paths"] = OrderedJson::array();
      for (const char *column : {"dataset_id",
                                 "dataset_name",
                                 "manifest_path",
                                 "config_uid",
                                 "kind",
                                 "train_path",
                                 "validation_path",
                                 "hf_dataset_path"}) {
        item[column] = row[column];
      }
      item["sources"] = OrderedJson::array();
      found = index.emplace(key, items.size()).first;
      items.push_back(std::move(item));
    }
    OrderedJson &item = items[found->second];
    auto &paths = item["configured_paths"];
    if (std::find(paths.begin(), paths.end(), row["configured_path"]) == paths.end()) {
      paths.push_back(row["configured_path"]);
    }
    if (row["source_name"].is_string()) {
      auto &sources = item["sources"];
      const bool known = std::any_of(sources.begin(), sources.end(), [&](const OrderedJson &s) {
        return s["source_name"] == row["source_name"];
      });
      if (!known) {
        OrderedJson source = OrderedJson::object();
        for (const char *column :
             {"source_name", "source_path", "weight", "train_quota", "validation_quota"}) {
          source[column] = row[column];
        }
        sources.push_back(std::move(source));
      }
    }
  }
  return OrderedJson(items);
}

} // namespace

OrderedJson training_hyperparameters(const std::optional<std::string> &raw_toml) {
  OrderedJson out = OrderedJson::object();
  if (!raw_toml || raw_toml->empty()) {
    return out;
  }
  std::optional<toml::Document> document;
  try {
    document = toml::Document::parse(*raw_toml, "stored TOML");
  } catch (const Error &) {
    return out;
  }
  using Path = std::vector<std::string>;
  const std::vector<std::pair<const char *, std::vector<Path>>> fields = {
      {"learning_rate", {{"trainer", "optim", "lr"}, {"optim", "lr"}}},
      {"min_learning_rate", {{"scheduler", "min_lr"}}},
      {"weight_decay", {{"trainer", "optim", "weight_decay"}, {"optim", "weight_decay"}}},
      {"beta1", {{"trainer", "optim", "betas1"}, {"optim", "betas1"}}},
      {"beta2", {{"trainer", "optim", "betas2"}, {"optim", "betas2"}}},
      {"max_steps", {{"max_steps"}}},
      {"sequence_length",
       {{"orchestrator", "seq_len"},
        {"data", "seq_len"},
        {"model", "seq_len"},
        {"trainer", "model", "seq_len"}}},
      {"batch_size", {{"orchestrator", "batch_size"}, {"data", "batch_size"}}},
      {"micro_batch_size", {{"data", "micro_batch_size"}}},
      {"group_size", {{"orchestrator", "group_size"}}},
      {"kl_tau", {{"trainer", "loss", "kl_tau"}}},
      {"warmup_steps", {{"scheduler", "warmup_steps"}}},
      {"scheduler", {{"scheduler", "type"}}},
      {"oversampling_factor", {{"orchestrator", "oversampling_factor"}}},
  };
  for (const auto &[name, paths] : fields) {
    for (const auto &path : paths) {
      if (const toml::Value *value = document->root().find_path(path)) {
        out[name] = OrderedJson(toml_to_json(*value));
        break;
      }
    }
  }
  return out;
}

OrderedJson list_models(Database &db, const std::string &query, std::int64_t limit) {
  const std::string pattern = "%" + query + "%";
  // Grouped by output directory: one entry per training run, represented by a checkpoint with
  // evaluations first, then the highest step, then the newest row.
  auto rows = db.rows(R"(
    WITH matched AS (
      SELECT * FROM models WHERE model_path LIKE ?1 OR output_dir LIKE ?1
    ),
    runs AS (
      SELECT m.output_dir,
             count(DISTINCT m.id) AS checkpoint_count,
             max(m.indexed_at) AS last_indexed_at,
             (SELECT count(*) FROM evaluations e JOIN matched em ON em.id = e.model_id
               WHERE em.output_dir = m.output_dir) AS own_evaluations,
             EXISTS (SELECT 1 FROM models sm JOIN training_runs st ON st.model_id = sm.id
                      WHERE sm.output_dir = m.output_dir AND st.stage = 'rl') AS is_rl
      FROM matched m GROUP BY m.output_dir
    ),
    counted AS (
      SELECT runs.*,
             own_evaluations + CASE WHEN is_rl THEN (
               SELECT count(DISTINCT le.id)
               FROM models lm
               JOIN training_runs lineage ON lineage.model_id = lm.id AND lineage.stage = 'sft'
               JOIN models sft ON sft.model_path = lineage.checkpoint_path
               JOIN evaluations le ON le.model_id = sft.id
               WHERE lm.output_dir = runs.output_dir
                 AND EXISTS (SELECT 1 FROM training_runs r WHERE r.model_id = lm.id
                              AND r.stage = 'rl')) ELSE 0 END AS evaluation_count
      FROM runs
    )
    SELECT rep.id, rep.model_path, rep.output_dir, rep.checkpoint_step,
           counted.last_indexed_at AS indexed_at, counted.checkpoint_count,
           counted.evaluation_count,
           CASE WHEN counted.is_rl THEN 'rl' ELSE 'sft' END AS stage,
           (SELECT count(*) FROM wandb_runs w JOIN training_runs tr ON tr.id = w.training_run_id
              JOIN models wm ON wm.id = tr.model_id WHERE wm.output_dir = counted.output_dir)
             AS wandb_count,
           (SELECT count(DISTINCT trd.dataset_id) FROM training_run_datasets trd
              JOIN training_runs tr ON tr.id = trd.training_run_id
              JOIN models dm ON dm.id = tr.model_id WHERE dm.output_dir = counted.output_dir)
             AS dataset_count
    FROM counted
    JOIN models rep ON rep.id = (
      SELECT c.id FROM models c WHERE c.output_dir = counted.output_dir
      ORDER BY EXISTS (SELECT 1 FROM evaluations ce WHERE ce.model_id = c.id) DESC,
               c.checkpoint_step DESC, c.id DESC LIMIT 1)
    ORDER BY (counted.evaluation_count > 0) DESC, counted.evaluation_count DESC,
             counted.last_indexed_at DESC, counted.output_dir
    LIMIT ?2)",
                      {pattern, limit});
  for (auto &row : rows) {
    row["name"] = base_name(row["output_dir"].get<std::string>());
    row["has_evaluations"] = row["evaluation_count"].get<std::int64_t>() > 0;
  }
  OrderedJson out = OrderedJson::object();
  out["models"] = rows;
  out["count"] = rows.size();
  out["query"] = query;
  return out;
}

std::optional<OrderedJson> model_detail(Database &db, std::int64_t model_id) {
  auto model = db.row("SELECT * FROM models WHERE id = ?", {model_id});
  if (!model) {
    return std::nullopt;
  }
  const std::string output_dir = (*model)["output_dir"].get<std::string>();
  const std::string stage = stage_of(db, model_id);
  (*model)["name"] = base_name(output_dir);
  (*model)["stage"] = stage;
  OrderedJson out = OrderedJson::object();
  out["model"] = *model;
  out["checkpoints"] =
      db.rows("SELECT m.id, m.model_path, m.checkpoint_step, m.indexed_at, count(e.id) AS "
              "evaluation_count FROM models m LEFT JOIN evaluations e ON e.model_id = m.id "
              "WHERE m.output_dir = ? GROUP BY m.id ORDER BY m.checkpoint_step DESC, m.id DESC",
              {output_dir});
  auto runs = db.rows("SELECT * FROM training_runs WHERE model_id = ? "
                      "ORDER BY CASE stage WHEN 'rl' THEN 0 ELSE 1 END",
                      {model_id});
  for (auto &run : runs) {
    const auto raw = run["raw_config_toml"];
    run["hyperparameters"] = training_hyperparameters(
        raw.is_string() ? std::optional<std::string>(raw.get<std::string>()) : std::nullopt);
    run["wandb_runs"] = db.rows("SELECT run_id, project, entity, name, url, offline, "
                                "launch_spec_path, local_run_path FROM wandb_runs "
                                "WHERE training_run_id = ? ORDER BY run_id",
                                {run["id"].get<std::int64_t>()});
  }
  out["training_runs"] = runs;
  out["datasets"] = datasets_of(db, model_id);
  out["evaluations"] = run_evaluations(db, output_dir, stage);
  return out;
}

} // namespace pb::watcher::detail
