// SPDX-License-Identifier: MIT
// End-to-end tests of `primebeaker watcher` on a generated provenance tree (docs/watcher.md).
#include "provenance_tree.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/sqlite.hpp>
#include <primebeaker/watcher/watcher.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <set>

namespace pb::test {

using registry::sqlite;
namespace {

using nlohmann::json;
namespace stdfs = std::filesystem;

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

json run_json(const std::vector<std::string> &args, int expected_exit = 0) {
  const auto result = run_primebeaker(args);
  EXPECT_EQ(result.exit_code, expected_exit) << result.err;
  if (result.exit_code != 0) {
    return json{{"stderr", result.err}};
  }
  return json::parse(result.out);
}

std::vector<std::vector<std::string>> query(const stdfs::path &db, const std::string &sql) {
  sqlite3 *handle = nullptr;
  EXPECT_EQ(sqlite().open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt *stmt = nullptr;
  EXPECT_EQ(sqlite().prepare_v2(handle, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite().errmsg(handle);
  std::vector<std::vector<std::string>> rows;
  while (sqlite().step(stmt) == SQLITE_ROW) {
    std::vector<std::string> row;
    for (int i = 0; i < sqlite().column_count(stmt); ++i) {
      const auto *text = sqlite().column_text(stmt, i);
      row.emplace_back(text ? reinterpret_cast<const char *>(text) : "NULL");
    }
    rows.push_back(row);
  }
  sqlite().finalize(stmt);
  sqlite().close(handle);
  return rows;
}

std::vector<std::string> column(const std::vector<std::vector<std::string>> &rows, size_t i = 0) {
  std::vector<std::string> out;
  for (const auto &row : rows) {
    out.push_back(row.at(i));
  }
  return out;
}

class WatcherTree : public ::testing::Test {
protected:
  ProvenanceTree tree;
  // Through the real binary.
  json index(const std::string &model, std::vector<std::string> extra = {}, int exit = 0) {
    return run_json(concat(concat({"watcher", "index", model}, tree.discovery_args()), extra),
                    exit);
  }
  // In process (the same code the command runs; fast enough for many cases).
  watcher::Settings settings() const {
    watcher::Settings settings;
    settings.database = tree.database();
    settings.repo_root = tree.repo();
    settings.roots.train_config_roots = {tree.path("examples/configs/train"),
                                         tree.path("archive/train")};
    settings.roots.eval_config_roots = {tree.path("evals")};
    settings.roots.launch_spec_roots = {tree.path("beaker_experiments")};
    settings.roots.manifest_roots = {tree.path("data")};
    return settings;
  }
  json index_here(const std::string &model,
                  std::optional<std::string> rl_config = std::nullopt,
                  std::vector<std::filesystem::path> manifests = {}) {
    watcher::IndexOptions options;
    options.model = model;
    if (rl_config) {
      options.rl_config = *rl_config;
    }
    auto where = settings();
    where.roots.manifests = std::move(manifests);
    return json::parse(watcher::index_model(where, options).dump());
  }
};

TEST_F(WatcherTree, SchemaVersionOneTablesColumnsIndexesViewsAndPragmas) {
  index_here("outputs/rl_a/weights/step_20");
  const auto db = tree.database();
  EXPECT_EQ(column(query(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")),
            (std::vector<std::string>{"dataset_sources",
                                      "datasets",
                                      "evaluation_benchmarks",
                                      "evaluations",
                                      "models",
                                      "schema_metadata",
                                      "training_run_datasets",
                                      "training_runs",
                                      "wandb_runs"}));
  EXPECT_EQ(column(query(db,
                         "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE "
                         "'idx_%' ORDER BY name")),
            (std::vector<std::string>{"idx_eval_model",
                                      "idx_source_dataset",
                                      "idx_training_runs_model",
                                      "idx_wandb_training"}));
  EXPECT_EQ(column(query(db, "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")),
            (std::vector<std::string>{
                "dataset_mix", "evaluation_results", "model_provenance", "model_wandb_runs"}));
  const std::map<std::string, std::string> columns = {
      {"models", "id model_path output_dir checkpoint_step indexed_at"},
      {"training_runs",
       "id model_id stage checkpoint_path output_dir config_path config_sha256 raw_config_toml"},
      {"wandb_runs",
       "id training_run_id run_id project entity name url offline launch_spec_path "
       "local_run_path raw_launch_json"},
      {"datasets",
       "id identity_key dataset_name manifest_path config_uid kind train_path "
       "validation_path hf_dataset_path raw_manifest_json"},
      {"training_run_datasets", "training_run_id dataset_id role configured_path"},
      {"dataset_sources",
       "id dataset_id source_name source_path weight train_quota "
       "validation_quota raw_source_json"},
      {"evaluations",
       "id model_id config_path workflow run_dir status error raw_config_yaml "
       "outcome_json"},
      {"evaluation_benchmarks",
       "id evaluation_id dataset runs mean_accuracy stdev_accuracy "
       "min_accuracy max_accuracy"},
      {"model_provenance",
       "rl_model rl_checkpoint_step rl_config rl_output_dir sft_checkpoint "
       "sft_config sft_output_dir indexed_at"},
      {"model_wandb_runs",
       "rl_model stage run_id project entity name url offline "
       "launch_spec_path local_run_path"},
      {"dataset_mix",
       "rl_model stage role configured_path dataset_name manifest_path config_uid "
       "kind source_name source_path weight train_quota validation_quota"},
      {"evaluation_results",
       "rl_model config_path workflow run_dir status error dataset runs "
       "mean_accuracy stdev_accuracy min_accuracy max_accuracy"},
  };
  for (const auto &[table, expected] : columns) {
    std::string names;
    for (const auto &name :
         column(query(db, "SELECT name FROM pragma_table_info('" + table + "')"))) {
      names += (names.empty() ? "" : " ") + name;
    }
    EXPECT_EQ(names, expected) << table;
  }
  EXPECT_EQ(query(db, "PRAGMA journal_mode")[0][0], "wal");
  EXPECT_EQ(query(db, "SELECT version FROM schema_metadata")[0][0], "1");
  // Cascades are declared: deleting a model removes its graph.
  EXPECT_EQ(query(db, "SELECT \"table\", on_delete FROM pragma_foreign_key_list('training_runs')"),
            (std::vector<std::vector<std::string>>{{"models", "CASCADE"}}));
}

TEST_F(WatcherTree, IndexRecordsTheWholeGraphAndIsIdempotent) {
  const json first = index("outputs/rl_a/weights/step_20");
  EXPECT_EQ(first["model"]["model_path"], tree.path("outputs/rl_a/weights/step_20"));
  EXPECT_EQ(first["model"]["output_dir"], tree.path("outputs/rl_a"));
  EXPECT_EQ(first["model"]["checkpoint_step"], 20);
  EXPECT_EQ(first["database"], tree.database().string());
  // rl + sft; rlrun1 (spec + both local dirs) and rlrun2 (offline) for RL, sft1 for SFT;
  // the RL mix (manifest) plus one unmatched eval path and the SFT mix (same manifest);
  // complete, failed, pending, missing; 2 benchmarks.
  EXPECT_EQ(first["counts"],
            json({{"training_runs", 2},
                  {"wandb_runs", 3},
                  {"datasets", 2},
                  {"dataset_sources", 2},
                  {"evaluations", 4},
                  {"benchmarks", 2}}));
  const json second = index_here("outputs/rl_a/weights/step_20");
  EXPECT_EQ(second["counts"], first["counts"]);
  const auto db = tree.database();
  EXPECT_EQ(query(db, "SELECT count(*) FROM models")[0][0], "1");
  EXPECT_EQ(query(db, "SELECT count(*) FROM datasets")[0][0], "2");

  const auto wandb = query(db,
                           "SELECT stage, run_id, project, entity, url, offline, "
                           "launch_spec_path IS NOT NULL, local_run_path FROM model_wandb_runs "
                           "ORDER BY stage, run_id");
  ASSERT_EQ(wandb.size(), 3u);
  EXPECT_EQ(wandb[0],
            (std::vector<std::string>{"rl",
                                      "rlrun1",
                                      "rl-proj-override",
                                      "team",
                                      "https://wandb.ai/team/rl-proj-override/runs/rlrun1",
                                      "0",
                                      "1",
                                      tree.path("outputs/rl_a/wandb/run-20260102_000000-rlrun1")}));
  EXPECT_EQ(wandb[1][1], "rlrun2");
  EXPECT_EQ(wandb[1][4], "NULL"); // offline: no URL
  EXPECT_EQ(wandb[1][5], "1");
  EXPECT_EQ(wandb[2],
            (std::vector<std::string>{"sft",
                                      "sft1",
                                      "sft-proj",
                                      "team",
                                      "https://wandb.ai/team/sft-proj/runs/sft1",
                                      "0",
                                      "0",
                                      tree.path("outputs/sft_a/wandb/run-20260101_000000-sft1")}));

  const auto provenance =
      query(db, "SELECT rl_config, sft_checkpoint, sft_config FROM model_provenance");
  EXPECT_EQ(provenance[0],
            (std::vector<std::string>{tree.path("examples/configs/train/rl_a.toml"),
                                      tree.path("outputs/sft_a/weights/step_100"),
                                      tree.path("examples/configs/train/sft_a.toml")}));
  const auto mix = query(db,
                         "SELECT stage, role, dataset_name, source_name, source_path, weight, "
                         "train_quota FROM dataset_mix WHERE source_name IS NOT NULL "
                         "ORDER BY stage, source_name");
  ASSERT_EQ(mix.size(), 4u);
  EXPECT_EQ(mix[0],
            (std::vector<std::string>{
                "rl", "rl", "mix-a", "alpha", tree.path("data/src/alpha.parquet"), "0.75", "300"}));
  EXPECT_EQ(mix[3][0], "sft");
  EXPECT_EQ(mix[3][1], "sft"); // role = stage
  const auto sources =
      query(db, "SELECT raw_source_json FROM dataset_sources WHERE source_name = 'beta'");
  EXPECT_EQ(sources[0][0],
            R"({"name":"beta","path":"data/src/beta.parquet","train_quota":100,"weight":0.25})");

  const auto evaluations = query(db,
                                 "SELECT config_path, workflow, status, error FROM evaluations "
                                 "ORDER BY config_path");
  ASSERT_EQ(evaluations.size(), 4u);
  EXPECT_EQ(
      evaluations[0],
      (std::vector<std::string>{tree.path("evals/complete.yaml"), "moss", "complete", "NULL"}));
  EXPECT_EQ(
      evaluations[1],
      (std::vector<std::string>{tree.path("evals/failed.yaml"), "standard", "failed", "NULL"}));
  EXPECT_EQ(
      evaluations[2],
      (std::vector<std::string>{tree.path("evals/missing.yaml"), "moss", "not_started", "NULL"}));
  EXPECT_EQ(evaluations[3],
            (std::vector<std::string>{tree.path("evals/pending.yaml"),
                                      "moss",
                                      "incomplete",
                                      "run directory exists but has no recognized outcome files"}));
  EXPECT_EQ(query(db, "SELECT outcome_json FROM evaluations WHERE status = 'failed'")[0][0],
            R"({"reason":"OOM"})");
  const auto benchmarks =
      query(db,
            "SELECT dataset, runs, mean_accuracy, max_accuracy FROM evaluation_results "
            "WHERE dataset IS NOT NULL ORDER BY dataset");
  EXPECT_EQ(benchmarks,
            (std::vector<std::vector<std::string>>{{"gsm8k", "3", "0.5", "0.6"},
                                                   {"math", "3", "0.25", "0.3"}}));
  // config_sha256 is the SHA-256 of the raw TOML text.
  EXPECT_EQ(
      query(db,
            "SELECT length(config_sha256), raw_config_toml LIKE 'output_dir%' FROM training_runs "
            "WHERE stage = 'rl'")[0],
      (std::vector<std::string>{"64", "1"}));
}

TEST_F(WatcherTree, IndexFindsLegacyArchivesSearchAgentsAndUnconfiguredRuns) {
  index_here("outputs/rl_a/weights/step_10");
  const auto rows = query(tree.database(),
                          "SELECT workflow, status, config_path, error FROM evaluations "
                          "ORDER BY workflow");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"moss",
                                      "unconfigured",
                                      tree.path("evals/unconfigured.yml"),
                                      "evaluation config has no run_dir"}));
  EXPECT_EQ(rows[1],
            (std::vector<std::string>{"moss-archive",
                                      "complete",
                                      tree.path("records/moss-evals/2025-old/launcher.log"),
                                      "NULL"}));
  EXPECT_EQ(rows[2][0], "search-agent");
  EXPECT_EQ(rows[2][1], "complete"); // top-level *.json artifacts
  EXPECT_EQ(query(tree.database(),
                  "SELECT outcome_json FROM evaluations WHERE workflow = 'search-agent'")[0][0],
            R"({"artifacts":{"result.json":{"score":1}}})");
}

TEST_F(WatcherTree, ShowAndStatus) {
  const json missing = run_json({"watcher", "status", "--database", tree.database().string()});
  EXPECT_EQ(missing, json({{"database", tree.database().string()}, {"exists", false}}));
  index_here("outputs/rl_a/weights/step_20");
  const json shown = run_json({"watcher",
                               "show",
                               "outputs/rl_a/weights/step_20",
                               "--repo-root",
                               tree.repo().string(),
                               "--database",
                               tree.database().string()});
  EXPECT_EQ(shown["provenance"]["rl_checkpoint_step"], 20);
  EXPECT_EQ(shown["provenance"]["sft_output_dir"], tree.path("outputs/sft_a"));
  EXPECT_EQ(shown["wandb_runs"].size(), 3u);
  EXPECT_EQ(shown["wandb_runs"][0]["stage"], "rl");
  EXPECT_EQ(shown["evaluations"][0]["dataset"], "gsm8k");
  EXPECT_EQ(shown["counts"]["evaluations"], 4);
  EXPECT_PB_ERROR(watcher::show(tree.database(), tree.repo(), "outputs/nope/step_1"),
                  ExitCode::failure,
                  "model is not indexed: " + tree.path("outputs/nope/step_1"));

  const json status =
      run_json({"watcher", "status", "--database", tree.database().string(), "--json"});
  EXPECT_EQ(status["exists"], true);
  EXPECT_EQ(status["integrity"], "ok");
  EXPECT_EQ(status["schema_version"], 1);
  EXPECT_EQ(status["rl_checkpoints"], 1);
  EXPECT_EQ(status["sft_checkpoints"], 0);
  EXPECT_EQ(status["rl_outputs"], 1);
  EXPECT_EQ(status["training_stages"], 2);
  EXPECT_EQ(status["wandb_attempts"], 3);
  EXPECT_EQ(status["datasets"], 2);
  EXPECT_EQ(status["source_parquets"], 2);
  EXPECT_EQ(status["evaluations"], 4);
  EXPECT_EQ(status["benchmark_outcomes"], 2);
  EXPECT_GT(status["size_bytes"].get<long>(), 0);
}

TEST_F(WatcherTree, EveryAmbiguityIsReportedNotGuessed) {
  // Two different RL TOMLs for one output dir (through the binary: exit 3, paths listed).
  tree.write("examples/configs/train/rl_b1.toml",
             "output_dir = \"outputs/rl_b\"\n[trainer]\n[orchestrator]\nbatch_size = 1\n");
  tree.write("examples/configs/train/rl_b2.toml",
             "output_dir = \"outputs/rl_b\"\n[trainer]\n[orchestrator]\nbatch_size = 2\n");
  tree.mkdir("outputs/rl_b/weights/step_5");
  const json failed = index("outputs/rl_b/weights/step_5", {}, 3);
  EXPECT_NE(failed["stderr"].get<std::string>().find("multiple rl TOMLs have output_dir " +
                                                     tree.path("outputs/rl_b") +
                                                     "; pass --rl-config:"),
            std::string::npos);
  EXPECT_NE(failed["stderr"].get<std::string>().find(
                "\n  " + tree.path("examples/configs/train/rl_b2.toml")),
            std::string::npos);
  // No TOML at all.
  tree.mkdir("outputs/rl_c/weights/step_1");
  EXPECT_PB_ERROR(index_here("outputs/rl_c/weights/step_1"),
                  ExitCode::bad_input,
                  "could not find the rl TOML whose output_dir is " + tree.path("outputs/rl_c") +
                      "; pass --rl-config");
  // An explicit TOML for another output dir.
  EXPECT_PB_ERROR(index_here("outputs/rl_c/weights/step_1", "examples/configs/train/rl_a.toml"),
                  ExitCode::bad_input,
                  "rl TOML " + tree.path("examples/configs/train/rl_a.toml") +
                      " has output_dir 'outputs/rl_a', expected " + tree.path("outputs/rl_c"));
  // The explicit TOML resolves the ambiguity.
  const json chosen =
      index_here("outputs/rl_b/weights/step_5", "examples/configs/train/rl_b2.toml");
  EXPECT_EQ(chosen["model"]["output_dir"], tree.path("outputs/rl_b"));
  // As in the reference, an RL model always has an sft row, empty when there is no predecessor.
  EXPECT_EQ(chosen["counts"]["training_runs"], 2);
  EXPECT_EQ(
      query(tree.database(),
            "SELECT rl_config, sft_config FROM model_provenance WHERE rl_model LIKE '%rl_b%'"),
      (std::vector<std::vector<std::string>>{
          {tree.path("examples/configs/train/rl_b2.toml"), "NULL"}}));
  // Two predecessor checkpoints.
  tree.write(
      "examples/configs/train/rl_d.toml",
      "output_dir = \"outputs/rl_d\"\n[trainer.model]\nname = \"outputs/sft_a/weights/step_100\"\n"
      "[orchestrator.model]\nname = \"outputs/sft_a/weights/step_200\"\n");
  tree.mkdir("outputs/rl_d/weights/step_1");
  EXPECT_PB_ERROR(index_here("outputs/rl_d/weights/step_1"),
                  ExitCode::bad_input,
                  "RL TOML refers to multiple predecessor checkpoints: ['" +
                      tree.path("outputs/sft_a/weights/step_100") + "', '" +
                      tree.path("outputs/sft_a/weights/step_200") + "']");
  // Two manifests with different mixes for one dataset path.
  tree.write("data/second_manifest.json",
             R"({"name": "mix-b", "train_path": "data/mix_0123456789abcdef/train.parquet",
    "sources": [{"name": "gamma", "parquet": "g.parquet"}]})");
  EXPECT_PB_ERROR(
      index_here("outputs/rl_a/weights/step_20"),
      ExitCode::bad_input,
      "multiple data manifests match " + tree.path("data/mix_0123456789abcdef/train.parquet") +
          ": " + tree.path("data/mix_0123456789abcdef/manifest.json") + ", " +
          tree.path("data/second_manifest.json") + "; pass only the intended --manifest");
  // --manifests narrows the choice (through the binary: a comma string of one).
  const json narrowed =
      index("outputs/rl_a/weights/step_20", {"--manifests", "data/second_manifest.json,"});
  EXPECT_EQ(narrowed["counts"]["dataset_sources"], 1) << narrowed.dump();
  // Identical mixes: the manifest sharing the longest prefix with the dataset wins.
  tree.write("data/second_manifest.json",
             test::read_file(tree.repo() / "data/mix_0123456789abcdef/manifest.json"));
  const json same_mix = index_here("outputs/rl_a/weights/step_20");
  EXPECT_EQ(query(tree.database(),
                  "SELECT manifest_path FROM datasets WHERE manifest_path IS NOT NULL")[0][0],
            tree.path("data/mix_0123456789abcdef/manifest.json"));
  EXPECT_EQ(same_mix["counts"]["dataset_sources"], 2);
  // Two SFT TOMLs for an evaluated standalone SFT checkpoint: unresolved in bulk runs.
  tree.write("examples/configs/train/sft_x1.toml",
             "output_dir = \"outputs/sft_x\"\n[data]\nname = \"a\"\n");
  tree.write("examples/configs/train/sft_x2.toml",
             "output_dir = \"outputs/sft_x\"\n[data]\nname = \"b\"\n");
  tree.mkdir("outputs/sft_x/weights/step_3");
  tree.write("evals/sft_x.yaml", "model: outputs/sft_x/weights/step_3\n");
  const json bulk = json::parse(watcher::update(settings(), {}).dump());
  ASSERT_EQ(bulk["unresolved"].size(), 2u) << bulk.dump();
  EXPECT_EQ(bulk["unresolved"][0]["reason"], "multiple RL TOMLs target this output directory");
  EXPECT_EQ(bulk["unresolved"][1]["reason"], "multiple SFT TOMLs target this output directory");
  EXPECT_EQ(bulk["unresolved"][1]["configs"],
            json::array({tree.path("examples/configs/train/sft_x1.toml"),
                         tree.path("examples/configs/train/sft_x2.toml")}));
  // rl_d's predecessor ambiguity is a per-checkpoint failure, not a crash of the whole run.
  EXPECT_EQ(bulk["failure_details"][0]["checkpoint"], tree.path("outputs/rl_d/weights/step_1"));
}

TEST_F(WatcherTree, UpdateIndexesUnambiguousCheckpointsAndReportsTheRest) {
  tree.write("examples/configs/train/rl_b1.toml",
             "output_dir = \"outputs/rl_b\"\n[trainer]\n[orchestrator]\nx = 1\n");
  tree.write("examples/configs/train/rl_b2.toml",
             "output_dir = \"outputs/rl_b\"\n[trainer]\n[orchestrator]\nx = 2\n");
  tree.mkdir("outputs/rl_b/weights/step_5");
  tree.write("examples/configs/train/broken.toml", "output_dir = [\n");
  const auto result =
      run_primebeaker(concat({"watcher", "update", "--details", "-v"}, tree.discovery_args()));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json summary = json::parse(result.out);
  EXPECT_EQ(summary["operation"], "update");
  EXPECT_EQ(summary["rl_outputs_with_configs"], 2);
  EXPECT_EQ(summary["discovered_checkpoints"], 3);
  EXPECT_EQ(summary["indexed_checkpoints"], 2);
  EXPECT_EQ(summary["indexed_sft_checkpoints"], 1); // the evaluated SFT checkpoint
  EXPECT_EQ(summary["skipped_indexed"], 0);
  EXPECT_EQ(summary["unresolved_outputs"], 1);
  EXPECT_EQ(summary["failures"], 0);
  EXPECT_EQ(summary["invalid_configs"], 1);
  EXPECT_EQ(summary["unresolved"][0]["reason"], "multiple RL TOMLs target this output directory");
  EXPECT_EQ(summary["unresolved"][0]["checkpoints"],
            json::array({tree.path("outputs/rl_b/weights/step_5")}));
  EXPECT_EQ(summary["invalid_config_details"][0]["config"],
            tree.path("examples/configs/train/broken.toml"));
  EXPECT_EQ(summary["indexed"],
            json::array({tree.path("outputs/rl_a/weights/step_10"),
                         tree.path("outputs/rl_a/weights/step_20")}));
  EXPECT_EQ(summary["indexed_sft"], json::array({tree.path("outputs/sft_a/weights/step_100")}));
  EXPECT_NE(result.err.find("update: 2/2 checkpoints"), std::string::npos) << result.err;
  // The standalone SFT model has only its sft run.
  EXPECT_EQ(query(tree.database(),
                  "SELECT stage FROM training_runs tr JOIN models m ON m.id = tr.model_id "
                  "WHERE m.model_path LIKE '%sft_a%'"),
            (std::vector<std::vector<std::string>>{{"sft"}}));
  // A second update skips everything already indexed.
  const json again = json::parse(watcher::update(settings(), {}).dump());
  EXPECT_EQ(again["indexed_checkpoints"], 0);
  EXPECT_EQ(again["skipped_indexed"], 3);
  EXPECT_FALSE(again.contains("indexed"));
}

TEST_F(WatcherTree, RebuildRefusesThenSwapsAtomicallyWithABackup) {
  tree.write("examples/configs/train/broken.toml", "output_dir = [\n");
  // Refusal: an invalid config; the target is untouched and no temporary is left behind.
  auto refused = run_primebeaker(concat({"watcher", "rebuild"}, tree.discovery_args()));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("rebuild refused to replace the current database: 0 indexing failures "
                             "and 1 invalid configs"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(stdfs::exists(tree.database()));
  EXPECT_EQ(std::distance(stdfs::directory_iterator(tree.database().parent_path()),
                          stdfs::directory_iterator()),
            0);

  index_here("outputs/rl_a/weights/step_20");
  const auto before = query(tree.database(), "SELECT indexed_at FROM models")[0][0];
  const json rebuilt =
      run_json(concat({"watcher", "rebuild", "--no-require-clean"}, tree.discovery_args()));
  EXPECT_EQ(rebuilt["operation"], "rebuild");
  EXPECT_EQ(rebuilt["integrity"], "ok");
  EXPECT_EQ(rebuilt["indexed_checkpoints"], 2);
  ASSERT_TRUE(rebuilt["backup"].is_string());
  const stdfs::path backup = rebuilt["backup"].get<std::string>();
  EXPECT_EQ(backup.parent_path(), tree.database().parent_path());
  EXPECT_TRUE(backup.filename().string().rfind("watcher.sqlite3.backup-", 0) == 0);
  // The backup holds the old database; the target the new one, in rollback-journal mode.
  EXPECT_EQ(query(backup, "SELECT indexed_at FROM models")[0][0], before);
  EXPECT_EQ(query(tree.database(), "SELECT count(*) FROM models")[0][0], "3");
  EXPECT_EQ(query(tree.database(), "PRAGMA journal_mode")[0][0], "delete");
  std::set<std::string> files;
  for (const auto &entry : stdfs::directory_iterator(tree.database().parent_path())) {
    files.insert(entry.path().filename().string());
  }
  EXPECT_EQ(files, (std::set<std::string>{"watcher.sqlite3", backup.filename().string()}));

  // Refusal: nothing to index.
  auto nothing = settings();
  nothing.roots.train_config_roots = {tree.path("none")};
  nothing.roots.eval_config_roots = {tree.path("none")};
  watcher::RebuildOptions no_backup;
  no_backup.backup = false;
  EXPECT_PB_ERROR(watcher::rebuild(nothing, no_backup),
                  ExitCode::failure,
                  "rebuild refused to install an empty checkpoint database");
  EXPECT_EQ(query(tree.database(), "SELECT count(*) FROM models")[0][0], "3");
}

} // namespace
} // namespace pb::test

namespace pb::test {
namespace {

// A Prime-RL v0.9 run beside the v0.8.0 ones: output_dir / run.name holds checkpoints/step_N
// with trainer/ and orchestrator/, wandb/ and the resolved configs/*.json (559b4477's layout).
void write_v0_9_run(const ProvenanceTree &tree) {
  tree.write("examples/configs/train/rl_v09.toml",
             "output_dir = \"outputs/v09\"\n[run]\nname = \"exp-1\"\n[monitors.wandb]\n"
             "project = \"proj9\"\n[trainer.optim]\nlr = 1e-6\n[orchestrator]\nbatch_size = 8\n"
             "[[orchestrator.train.source]]\nname = \"reverse-text\"\n");
  tree.write("outputs/v09/exp-1/checkpoints/step_10/trainer/.metadata", "m");
  tree.write("outputs/v09/exp-1/checkpoints/step_10/orchestrator/progress.pt", "p");
  // The trainer's side alone: the orchestrator has not saved this step (yet).
  tree.write("outputs/v09/exp-1/checkpoints/step_20/trainer/.metadata", "m");
  tree.mkdir("outputs/v09/exp-1/wandb/run-20260820_101010-abc123");
  // What Prime-RL resolved: the W&B name defaults to run.name; the entity came from elsewhere.
  tree.write("outputs/v09/exp-1/configs/orchestrator.json",
             R"({"monitors": {"wandb": {"project": "proj9", "entity": "ent", "name": "exp-1",
                 "offline": false, "group": null}}})");
}

} // namespace

TEST_F(WatcherTree, V09RunDirectoriesAreIndexedBesideV08Ones) {
  write_v0_9_run(tree);
  const std::string model = tree.path("outputs/v09/exp-1/checkpoints/step_10");
  index_here("outputs/v09/exp-1/checkpoints/step_10");
  EXPECT_EQ(
      query(tree.database(),
            "SELECT output_dir, checkpoint_step FROM models WHERE model_path = '" + model + "'"),
      (std::vector<std::vector<std::string>>{{tree.path("outputs/v09/exp-1"), "10"}}));
  EXPECT_EQ(query(tree.database(),
                  "SELECT tr.config_path, tr.output_dir FROM training_runs tr JOIN models m ON "
                  "m.id = tr.model_id WHERE m.model_path = '" +
                      model + "' AND tr.stage = 'rl'"),
            (std::vector<std::vector<std::string>>{{tree.path("examples/configs/train/rl_v09.toml"),
                                                    tree.path("outputs/v09/exp-1")}}));
  // [monitors.wandb] plus the resolved configs, and the local run under the run directory.
  EXPECT_EQ(query(tree.database(),
                  "SELECT w.run_id, w.project, w.entity, w.name, w.url, w.local_run_path FROM "
                  "wandb_runs w JOIN training_runs tr ON tr.id = w.training_run_id JOIN models m "
                  "ON m.id = tr.model_id WHERE m.model_path = '" +
                      model + "'"),
            (std::vector<std::vector<std::string>>{
                {"abc123",
                 "proj9",
                 "ent",
                 "exp-1",
                 "https://wandb.ai/ent/proj9/runs/abc123",
                 tree.path("outputs/v09/exp-1/wandb/run-20260820_101010-abc123")}}));

  // Bulk: the v0.9 step the orchestrator saved is discovered from checkpoints/, beside the
  // v0.8.0 weights/ steps; the trainer-only one is not a saved checkpoint yet.
  watcher::BulkOptions bulk;
  bulk.details = true;
  const json summary = json::parse(watcher::update(settings(), bulk).dump());
  EXPECT_EQ(summary["failures"], 0) << summary.dump();
  const auto indexed = summary["indexed"];
  const auto skipped = summary["skipped_indexed_paths"];
  EXPECT_NE(std::find(skipped.begin(), skipped.end(), model), skipped.end()) << summary.dump();
  EXPECT_EQ(
      std::find(indexed.begin(), indexed.end(), tree.path("outputs/v09/exp-1/checkpoints/step_20")),
      indexed.end());
  EXPECT_NE(std::find(indexed.begin(), indexed.end(), tree.path("outputs/rl_a/weights/step_20")),
            indexed.end());
}

} // namespace pb::test

namespace pb::test {
namespace {

// The watcher's roots come from the user's places (docs/config.md), never one person's: launch
// specs where submit writes them, then <shared_dir>/primebeaker; without a shared dir, only what
// the environment and the scratch dir say.
TEST(WatcherRoots, LaunchSpecsAreWhereSubmitWritesThem) {
  const watcher::UserPlaces places{"/weka/jdoe", "/weka/scratch"};
  const auto roots = watcher::default_roots("/weka/jdoe/jtc", {}, places);
  ASSERT_EQ(roots.launch_spec_roots.size(), 2u);
  EXPECT_EQ(roots.launch_spec_roots[0], "/weka/scratch/primebeaker/beaker_experiments");
  EXPECT_EQ(roots.launch_spec_roots[1], "/weka/jdoe/primebeaker/beaker_experiments");
  EXPECT_EQ(roots.eval_config_roots.at(0), "/weka/jdoe/primebeaker/examples/configs/eval");
  EXPECT_EQ(roots.train_config_roots.at(0), "/weka/jdoe/jtc/examples/configs/train");

  const auto pinned = watcher::default_roots(
      "/r", {{"PRIMEBEAKER_ROOT", "/srv/pb"}, {"JTC_ROOT", "/srv/jtc"}}, {"", "/weka"});
  EXPECT_EQ(pinned.launch_spec_roots,
            (std::vector<std::filesystem::path>{"/weka/primebeaker/beaker_experiments",
                                                "/srv/pb/beaker_experiments"}));
  EXPECT_EQ(pinned.train_config_roots.at(0), "/srv/jtc/examples/configs/train");

  const auto nobody = watcher::default_roots("/r", {}, {"", "/weka"});
  EXPECT_TRUE(nobody.eval_config_roots.empty());
  EXPECT_EQ(nobody.launch_spec_roots.size(), 1u);
}

} // namespace
} // namespace pb::test
