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

namespace {

std::int64_t as_int(const OrderedJson &value) {
  return value.is_number() ? value.get<std::int64_t>() : 0;
}

// One training run of the list: the models sharing an output directory.
struct RunGroup {
  std::vector<const OrderedJson *> models; // every model of the directory
  std::int64_t checkpoint_count = 0;       // models that match the query
  OrderedJson last_indexed_at;             // newest indexed_at among those
  std::int64_t own_evaluations = 0;
  bool is_rl = false;
  std::int64_t evaluation_count = 0;
  std::int64_t wandb_count = 0;
  std::set<std::int64_t> datasets;
};

bool json_less(const OrderedJson &a, const OrderedJson &b) {
  if (a.is_null() || b.is_null()) {
    return a.is_null() && !b.is_null();
  }
  return a < b;
}

} // namespace

OrderedJson list_models(Database &db, const std::string &query, std::int64_t limit) {
  // Grouped by output directory: one entry per training run, represented by a checkpoint with
  // evaluations first, then the highest step, then the newest row. A handful of flat queries
  // grouped here, because per-run subqueries rescan `models` (Python PrimeBeaker's schema has no
  // index on output_dir, and the schema must stay Python PrimeBeaker's).
  const std::string pattern = "%" + query + "%";
  const auto models = db.rows("SELECT id, model_path, output_dir, checkpoint_step, indexed_at, "
                              "(model_path LIKE ?1 OR output_dir LIKE ?1) AS matched FROM models",
                              {pattern});
  std::map<std::int64_t, std::int64_t> evaluations_of; // model id -> evaluations
  for (const auto &row : db.rows("SELECT model_id, count(*) AS n FROM evaluations GROUP BY "
                                 "model_id")) {
    evaluations_of[as_int(row["model_id"])] = as_int(row["n"]);
  }
  std::map<std::int64_t, const OrderedJson *> model_by_id;
  std::multimap<std::string, std::int64_t> models_by_path;
  std::map<std::string, RunGroup> groups;
  for (const auto &model : models) {
    const std::int64_t id = as_int(model["id"]);
    model_by_id[id] = &model;
    if (model["model_path"].is_string()) {
      models_by_path.emplace(model["model_path"].get<std::string>(), id);
    }
    RunGroup &group = groups[model["output_dir"].get<std::string>()];
    group.models.push_back(&model);
    if (as_int(model["matched"]) != 0) {
      ++group.checkpoint_count;
      group.own_evaluations += evaluations_of.count(id) ? evaluations_of[id] : 0;
      if (json_less(group.last_indexed_at, model["indexed_at"])) {
        group.last_indexed_at = model["indexed_at"];
      }
    }
  }
  auto group_of = [&](std::int64_t model_id) -> RunGroup * {
    const auto found = model_by_id.find(model_id);
    return found == model_by_id.end() ? nullptr
                                      : &groups[(*found->second)["output_dir"].get<std::string>()];
  };
  // Training runs: which models are RL, their SFT lineage, W&B runs and datasets.
  std::map<std::int64_t, std::int64_t> run_model; // training run id -> model id
  std::set<std::int64_t> rl_models;
  std::vector<std::pair<std::int64_t, std::string>> sft_lineage; // model id, checkpoint path
  for (const auto &run :
       db.rows("SELECT id, model_id, stage, checkpoint_path FROM training_runs")) {
    const std::int64_t model_id = as_int(run["model_id"]);
    run_model[as_int(run["id"])] = model_id;
    const std::string stage = run["stage"].is_string() ? run["stage"].get<std::string>() : "";
    if (stage == "rl") {
      rl_models.insert(model_id);
      if (RunGroup *group = group_of(model_id)) {
        group->is_rl = true;
      }
    } else if (stage == "sft" && run["checkpoint_path"].is_string()) {
      sft_lineage.emplace_back(model_id, run["checkpoint_path"].get<std::string>());
    }
  }
  // An RL run also counts the evaluations of the SFT checkpoints it started from (each once).
  std::map<RunGroup *, std::set<std::int64_t>> predecessor_models;
  for (const auto &[model_id, checkpoint_path] : sft_lineage) {
    RunGroup *group = group_of(model_id);
    if (group == nullptr || !rl_models.count(model_id)) {
      continue;
    }
    const auto [first, last] = models_by_path.equal_range(checkpoint_path);
    for (auto it = first; it != last; ++it) {
      predecessor_models[group].insert(it->second);
    }
  }
  for (const auto &row : db.rows("SELECT training_run_id, count(*) AS n FROM wandb_runs "
                                 "GROUP BY training_run_id")) {
    const auto run = run_model.find(as_int(row["training_run_id"]));
    if (run != run_model.end()) {
      if (RunGroup *group = group_of(run->second)) {
        group->wandb_count += as_int(row["n"]);
      }
    }
  }
  for (const auto &row : db.rows("SELECT DISTINCT training_run_id, dataset_id FROM "
                                 "training_run_datasets")) {
    const auto run = run_model.find(as_int(row["training_run_id"]));
    if (run != run_model.end()) {
      if (RunGroup *group = group_of(run->second)) {
        group->datasets.insert(as_int(row["dataset_id"]));
      }
    }
  }

  std::vector<std::pair<const std::string *, RunGroup *>> listed;
  for (auto &[output_dir, group] : groups) {
    if (group.checkpoint_count == 0) {
      continue;
    }
    group.evaluation_count = group.own_evaluations;
    if (group.is_rl) {
      for (const std::int64_t model_id : predecessor_models[&group]) {
        group.evaluation_count += evaluations_of.count(model_id) ? evaluations_of[model_id] : 0;
      }
    }
    listed.emplace_back(&output_dir, &group);
  }
  std::sort(listed.begin(), listed.end(), [](const auto &a, const auto &b) {
    const RunGroup &x = *a.second;
    const RunGroup &y = *b.second;
    if ((x.evaluation_count > 0) != (y.evaluation_count > 0)) {
      return x.evaluation_count > 0;
    }
    if (x.evaluation_count != y.evaluation_count) {
      return x.evaluation_count > y.evaluation_count;
    }
    if (x.last_indexed_at != y.last_indexed_at) {
      return json_less(y.last_indexed_at, x.last_indexed_at);
    }
    return *a.first < *b.first;
  });
  if (limit >= 0 && static_cast<std::int64_t>(listed.size()) > limit) {
    listed.resize(static_cast<size_t>(limit));
  }

  OrderedJson rows = OrderedJson::array();
  for (const auto &[output_dir, group] : listed) {
    const OrderedJson *rep =
        *std::min_element(group->models.begin(),
                          group->models.end(),
                          [&](const OrderedJson *a, const OrderedJson *b) {
                            const bool a_evaluated = evaluations_of.count(as_int((*a)["id"])) > 0;
                            const bool b_evaluated = evaluations_of.count(as_int((*b)["id"])) > 0;
                            if (a_evaluated != b_evaluated) {
                              return a_evaluated;
                            }
                            if ((*a)["checkpoint_step"] != (*b)["checkpoint_step"]) {
                              return json_less((*b)["checkpoint_step"], (*a)["checkpoint_step"]);
                            }
                            return as_int((*a)["id"]) > as_int((*b)["id"]);
                          });
    OrderedJson row = OrderedJson::object();
    row["id"] = (*rep)["id"];
    row["model_path"] = (*rep)["model_path"];
    row["output_dir"] = *output_dir;
    row["checkpoint_step"] = (*rep)["checkpoint_step"];
    row["indexed_at"] = group->last_indexed_at;
    row["checkpoint_count"] = group->checkpoint_count;
    row["evaluation_count"] = group->evaluation_count;
    row["stage"] = group->is_rl ? "rl" : "sft";
    row["wandb_count"] = group->wandb_count;
    row["dataset_count"] = static_cast<std::int64_t>(group->datasets.size());
    row["name"] = base_name(*output_dir);
    row["has_evaluations"] = group->evaluation_count > 0;
    rows.push_back(std::move(row));
  }
  const size_t count = rows.size();
  OrderedJson out = OrderedJson::object();
  out["models"] = std::move(rows);
  out["count"] = count;
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
