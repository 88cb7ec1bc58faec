// SPDX-License-Identifier: MIT
// `primebeaker checkpoints list`, end to end through the real binary.
#include "checkpoint_tree.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using pb::test::CheckpointTree;
using pb::test::run_primebeaker;
using pb::test::TempDir;

// step_10 complete, step_20 without progress.pt, step_30 missing rank 1, step_40 orchestrator only.
void build_mixed_tree(CheckpointTree &tree) {
  tree.complete_step("step_10", 2);
  tree.write_shard("step_20", 0);
  tree.write_shard("step_20", 1);
  tree.write_metadata("step_20");
  tree.write_shard("step_30", 0);
  tree.write_metadata("step_30");
  tree.write_progress("step_30");
  tree.write_progress("step_40");
  pb::test::write_file(tree.output_dir() / "checkpoints/README", "not a step");
}

TEST(CheckpointsList, JsonListsEveryStepAndTheSelection) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  build_mixed_tree(tree);
  const std::string before = pb::test::tree_digest(tmp.path());
  const auto result = run_primebeaker(
      {"checkpoints", "list", "--output-dir", (tmp / "out").string(), "--ranks", "2", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(pb::test::tree_digest(tmp.path()), before);
  const std::string out = (tmp / "out").string();
  const auto expected = nlohmann::ordered_json::parse(R"({
    "selected_step": 10,
    "expected_ranks": 2,
    "layout": "v0.8.0",
    "output_dir": ")" + out + R"(",
    "trainer_root": ")" + out + R"(/checkpoints",
    "orchestrator_root": ")" + out + R"(/run_default/checkpoints",
    "trainer_root_exists": true,
    "orchestrator_root_exists": true,
    "steps": [
      {"step": 10, "name": "step_10", "complete": true, "missing": [], "trainer_shards": 2,
       "trainer_metadata": true, "orchestrator_progress": true},
      {"step": 20, "name": "step_20", "complete": false,
       "missing": ["run_default/checkpoints/step_20/orchestrator/progress.pt"], "trainer_shards": 2,
       "trainer_metadata": true, "orchestrator_progress": false},
      {"step": 30, "name": "step_30", "complete": false,
       "missing": ["checkpoints/step_30/trainer/__1_0.distcp"], "trainer_shards": 1,
       "trainer_metadata": true, "orchestrator_progress": true},
      {"step": 40, "name": "step_40", "complete": false,
       "missing": ["checkpoints/step_40/trainer"], "trainer_shards": 0,
       "trainer_metadata": false, "orchestrator_progress": true}
    ],
    "ignored": ["checkpoints/README"],
    "scan": {"stat_calls": 11, "directories_read": 5}
  })");
  EXPECT_EQ(result.out, expected.dump(2) + "\n");
}

TEST(CheckpointsList, TableByDefault) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  build_mixed_tree(tree);
  const auto result = run_primebeaker(
      {"checkpoints", "list", "--output_dir=" + (tmp / "out").string(), "--ranks=2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "Checkpoints in " + (tmp / "out").string() +
                " (Prime-RL v0.8.0 layout), 2 trainer ranks per step\n"
                "STEP  SHARDS       METADATA  PROGRESS  STATUS\n"
                "  10  2/2          yes       yes       complete\n"
                "  20  2/2          yes       no        incomplete\n"
                "      missing: run_default/checkpoints/step_20/orchestrator/progress.pt\n"
                "  30  1/2          yes       yes       incomplete\n"
                "      missing: checkpoints/step_30/trainer/__1_0.distcp\n"
                "  40  0/2          no        yes       incomplete\n"
                "      missing: checkpoints/step_40/trainer\n"
                "Ignored 1 entry that are not step_<N> directories\n"
                "A resume would use step 10.\n");
}

TEST(CheckpointsList, FromTomlAndRelativeOutputDir) {
  TempDir tmp;
  CheckpointTree tree(tmp / "work/out");
  tree.complete_step("step_5", 4);
  tree.complete_step("step_6", 2); // from a smaller world size: extra ranks missing
  pb::test::write_file(
      tmp / "work/rl.toml",
      "output_dir = \"out\"  # relative: resolved against the working directory\n"
      "[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 1\nnum_infer_nodes = 2\n"
      "[trainer.model]\ncp = 2\ndp_replicate = 2\n[inference]\napi_server_count = 12\n"
      "[inference.parallel]\ndp = 12\n[wandb]\nproject = \"p\"\nname = \"n\"\n");
  pb::test::RunOptions options;
  options.cwd = tmp / "work";
  // As previews: relative to the run's --working-dir (here relative to the cwd itself).
  const auto result = run_primebeaker(
      {"checkpoints", "list", "--toml", "rl.toml", "--working-dir", ".", "--json"}, options);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["expected_ranks"], 4);
  EXPECT_EQ(json["selected_step"], 5);
  EXPECT_EQ(json["output_dir"], (tmp / "work/out").string());
  EXPECT_EQ(
      json["steps"][1]["missing"],
      nlohmann::json::parse(
          R"(["checkpoints/step_6/trainer/__2_0.distcp", "checkpoints/step_6/trainer/__3_0.distcp"])"));

  const auto absolute = run_primebeaker({"checkpoints",
                                         "list",
                                         "--toml",
                                         "rl.toml",
                                         "--working_dir",
                                         (tmp / "work").string(),
                                         "--json"},
                                        options);
  ASSERT_EQ(absolute.exit_code, 0) << absolute.err;
  EXPECT_EQ(absolute.out, result.out);
  // Without --working-dir, the previews' default: /weka, whatever the cwd.
  const auto by_default =
      run_primebeaker({"checkpoints", "list", "--toml", "rl.toml", "--json"}, options);
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_EQ(nlohmann::json::parse(by_default.out)["output_dir"], "/weka/out");

  // --output-dir is a path on this machine: relative to the cwd.
  const auto relative = run_primebeaker(
      {"checkpoints", "list", "--output-dir", "out", "--ranks", "4", "--json"}, options);
  ASSERT_EQ(relative.exit_code, 0) << relative.err;
  EXPECT_EQ(nlohmann::json::parse(relative.out)["output_dir"], (tmp / "work/out").string());
}

// Before the first checkpoint: no steps, exit 0, when the output directory has no
// checkpoints/ yet (from --output-dir or --toml, listed whole or --latest), and from --toml
// when the run has not created its output directory yet.
TEST(CheckpointsList, BeforeTheFirstCheckpointListsNoSteps) {
  TempDir tmp;
  fs::create_directories(tmp / "started/logs");
  const std::string out = (tmp / "started").string();
  for (const bool latest : {false, true}) {
    std::vector<std::string> args = {
        "checkpoints", "list", "--output-dir", out, "--ranks", "2", "--json"};
    if (latest) {
      args.emplace_back("--latest");
    }
    const auto json = run_primebeaker(args);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto parsed = nlohmann::json::parse(json.out);
    EXPECT_TRUE(parsed["selected_step"].is_null());
    EXPECT_EQ(parsed["steps"], nlohmann::json::array());
    EXPECT_EQ(parsed["layout"], "v0.8.0");
    EXPECT_EQ(parsed["trainer_root_exists"], false);
    EXPECT_EQ(parsed["orchestrator_root_exists"], false);
    EXPECT_EQ(parsed["trainer_root"], out + "/checkpoints");
  }
  const auto table = run_primebeaker({"checkpoints", "list", "--output-dir", out, "--ranks", "2"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out,
            "Checkpoints in " + out +
                " (Prime-RL v0.8.0 layout), 2 trainer ranks per step\n"
                "No trainer checkpoint root (yet): " +
                out +
                "/checkpoints\n"
                "No orchestrator checkpoint root: " +
                out +
                "/run_default/checkpoints\n"
                "No step directories.\n"
                "No step is complete for both trainer and orchestrator: a resume would refuse.\n");
  pb::test::write_file(
      tmp / "rl.toml",
      "output_dir = \"started\"\n"
      "[deployment]\ntype = \"single_node\"\ngpus_per_node = 2\nnum_train_gpus = 1\n"
      "num_infer_gpus = 1\n[wandb]\nproject = \"p\"\nname = \"n\"\n[orchestrator]\n");
  const auto from_toml = run_primebeaker({"checkpoints",
                                          "list",
                                          "--toml",
                                          (tmp / "rl.toml").string(),
                                          "--working-dir",
                                          tmp.path().string(),
                                          "--json"});
  ASSERT_EQ(from_toml.exit_code, 0) << from_toml.err;
  EXPECT_EQ(nlohmann::json::parse(from_toml.out)["output_dir"], (tmp / "started").string());
  pb::test::write_file(tmp / "later.toml",
                       pb::test::read_file(tmp / "rl.toml")
                           .replace(0,
                                    std::string("output_dir = \"started\"").size(),
                                    "output_dir = \"not-yet-created\""));
  const auto not_started = run_primebeaker({"checkpoints",
                                            "list",
                                            "--toml",
                                            (tmp / "later.toml").string(),
                                            "--working-dir",
                                            tmp.path().string(),
                                            "--json"});
  ASSERT_EQ(not_started.exit_code, 0) << not_started.err;
  EXPECT_TRUE(nlohmann::json::parse(not_started.out)["steps"].empty());
  // A root that exists but cannot be listed is still an error.
  pb::test::write_file(tmp / "file/checkpoints", "not a directory");
  const auto unreadable = run_primebeaker(
      {"checkpoints", "list", "--output-dir", (tmp / "file").string(), "--ranks", "1"});
  EXPECT_EQ(unreadable.exit_code, 1) << unreadable.out;
  EXPECT_NE(unreadable.err.find("cannot read the trainer checkpoint root"), std::string::npos)
      << unreadable.err;
}

// --output-dir names a directory on this machine: one that does not exist is a typo, not a run
// without checkpoints, and is refused naming it; nothing is created.
TEST(CheckpointsList, AMissingOutputDirIsAnErrorNamingIt) {
  TempDir tmp;
  const std::string before = pb::test::tree_digest(tmp.path());
  const std::string missing = (tmp / "no-such-run").string();
  for (const bool json : {false, true}) {
    std::vector<std::string> args = {
        "checkpoints", "list", "--output-dir", missing, "--ranks", "2"};
    if (json) {
      args.emplace_back("--json");
    }
    const auto result = run_primebeaker(args);
    EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, "primebeaker: error: --output-dir " + missing + ": no such directory\n");
  }
  EXPECT_EQ(pb::test::tree_digest(tmp.path()), before);
  // An existing directory without steps keeps its listing and exit 0.
  fs::create_directories(tmp / "empty");
  const auto empty = run_primebeaker(
      {"checkpoints", "list", "--output-dir", (tmp / "empty").string(), "--ranks", "2"});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_NE(empty.out.find("No step directories.\n"), std::string::npos) << empty.out;
}

TEST(CheckpointsList, HelpSaysWhichFlagsGoTogether) {
  const auto help = run_primebeaker({"checkpoints", "list", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const char *text :
       {"required with --output-dir", "--working-dir", "--output-dir DIR --ranks N"}) {
    EXPECT_NE(help.out.find(text), std::string::npos) << text << "\n" << help.out;
  }
}

TEST(CheckpointsList, LatestStopsAtTheStepAResumeWouldUse) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  build_mixed_tree(tree);
  tree.complete_step("step_5", 2); // older than the selected step_10: never read
  fs::remove(tree.progress("step_5"));
  const std::string out = (tmp / "out").string();
  const auto json = run_primebeaker(
      {"checkpoints", "list", "--output-dir", out, "--ranks", "2", "--json", "--latest"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["selected_step"], 10);
  EXPECT_EQ(parsed["scope"], "latest");
  std::vector<int> steps;
  for (const auto &step : parsed["steps"]) {
    steps.push_back(step["step"]);
  }
  EXPECT_EQ(steps, (std::vector<int>{10, 20, 30, 40}));
  EXPECT_EQ(parsed["scan"]["directories_read"], 2 + 3); // the roots; step_40 has no trainer dir

  const auto table =
      run_primebeaker({"checkpoints", "list", "--output-dir", out, "--ranks", "2", "--latest"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.find("step_5"), std::string::npos);
  EXPECT_NE(table.out.find("A resume would use step 10.\n(--latest: steps older than the first "
                           "complete one were not read)\n"),
            std::string::npos)
      << table.out;
}

TEST(CheckpointsList, NothingCompleteIsNullAndSaysSo) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.write_shard("step_1", 0);
  const auto json = run_primebeaker(
      {"checkpoints", "list", "--output-dir", (tmp / "out").string(), "--ranks", "1", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  EXPECT_TRUE(parsed["selected_step"].is_null());
  EXPECT_EQ(parsed["orchestrator_root_exists"], false);
  const auto table = run_primebeaker(
      {"checkpoints", "list", "--output-dir", (tmp / "out").string(), "--ranks", "1"});
  EXPECT_NE(table.out.find("No orchestrator checkpoint root: "), std::string::npos);
  EXPECT_NE(table.out.find(
                "No step is complete for both trainer and orchestrator: a resume would refuse.\n"),
            std::string::npos);
}

TEST(CheckpointsList, ManyMissingShardsAreSummarisedInTheTable) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out");
  tree.write_metadata("step_1");
  tree.write_progress("step_1");
  const auto result = run_primebeaker(
      {"checkpoints", "list", "--output-dir", (tmp / "out").string(), "--ranks", "64"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("      missing: checkpoints/step_1/trainer/__3_0.distcp\n"
                            "      ... and 60 more (see --json)\n"),
            std::string::npos)
      << result.out;
}

// --toml resolves output_dir as a launch does: under the configured working_dir (a flag still
// wins, PRIMEBEAKER_WORKING_DIR beats the file), Prime-RL's default output_dir "outputs", and
// Prime-RL's default single-node deployment when the TOML has no [deployment].
TEST(CheckpointsList, ATomlIsLookedForUnderTheConfiguredWorkingDir) {
  TempDir tmp;
  const std::string mount = tmp.path().string();
  pb::test::write_file(tmp / "xdg/primebeaker/config.toml",
                       "working_dir = \"" + (tmp / "work").string() + "\"\nmount_path = \"" +
                           mount + "\"\nscratch_dir = \"" + mount + "\"\nhome_dir = \"" + mount +
                           "\"\n");
  // No [deployment], no output_dir: the example RL TOML without both, which `rl preview` takes
  // as Prime-RL's defaults (one trainer GPU, its default output_dir).
  std::string text = pb::test::read_file(pb::test::source_dir() / "examples/rl/rl.toml");
  const auto deployment = text.find("[deployment]");
  text.erase(deployment, text.find("[model]") - deployment);
  text.erase(text.find("output_dir = \"outputs/tiny-rl\"\n"),
             std::string("output_dir = \"outputs/tiny-rl\"\n").size());
  pb::test::write_file(tmp / "rl.toml", text);
  pb::test::RunOptions options;
  options.env["XDG_CONFIG_HOME"] = (tmp / "xdg").string();
  const std::string toml = (tmp / "rl.toml").string();
  // Where the launch puts its output: OUTPUT_DIR of the spec, under WORKING_DIR when relative.
  const auto preview = run_primebeaker({"rl", "preview", "--toml", toml}, options);
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  std::string output_dir, working_dir;
  const auto spec = nlohmann::json::parse(preview.out)["spec"];
  for (const auto &entry : spec["tasks"][0]["envVars"]) {
    if (entry["name"] == "OUTPUT_DIR") {
      output_dir = entry["value"].get<std::string>();
    } else if (entry["name"] == "WORKING_DIR") {
      working_dir = entry["value"].get<std::string>();
    }
  }
  EXPECT_EQ(working_dir, (tmp / "work").string());
  ASSERT_FALSE(output_dir.empty()) << preview.out;
  const fs::path launched =
      (output_dir.front() == '/' ? fs::path(output_dir) : fs::path(working_dir) / output_dir)
          .lexically_normal();
  CheckpointTree tree(launched);
  tree.complete_step("step_3", 1);
  const auto result = run_primebeaker({"checkpoints", "list", "--toml", toml, "--json"}, options);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["output_dir"], launched.string());
  EXPECT_EQ(json["expected_ranks"], 1);
  EXPECT_EQ(json["selected_step"], 3);
  const std::string below = launched.lexically_relative(tmp / "work").string();

  // A flag beats the config; the variable beats the file.
  const auto flagged = run_primebeaker(
      {"checkpoints", "list", "--toml", toml, "--working-dir", (tmp / "other").string(), "--json"},
      options);
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_EQ(nlohmann::json::parse(flagged.out)["output_dir"], (tmp / "other" / below).string());
  EXPECT_TRUE(nlohmann::json::parse(flagged.out)["selected_step"].is_null());
  // Nothing there: still exit 0, but said on stderr, naming the working dir's origin.
  EXPECT_NE(flagged.err.find("does not exist"), std::string::npos) << flagged.err;
  auto env_options = options;
  env_options.env["PRIMEBEAKER_WORKING_DIR"] = (tmp / "env").string();
  const auto from_env =
      run_primebeaker({"checkpoints", "list", "--toml", toml, "--json"}, env_options);
  ASSERT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(nlohmann::json::parse(from_env.out)["output_dir"], (tmp / "env" / below).string());
  EXPECT_NE(from_env.err.find("env:PRIMEBEAKER_WORKING_DIR"), std::string::npos) << from_env.err;

  // An --output-dir listing never takes the configured working dir.
  const auto direct = run_primebeaker(
      {"checkpoints", "list", "--output-dir", launched.string(), "--ranks", "1"}, options);
  EXPECT_EQ(direct.exit_code, 0) << direct.err;
}

TEST(CheckpointsList, UsageErrors) {
  TempDir tmp;
  const auto check =
      [](const std::vector<std::string> &args, int code, const std::string &message) {
        const auto result = run_primebeaker(args);
        EXPECT_EQ(result.exit_code, code) << result.err;
        EXPECT_EQ(result.err.rfind("primebeaker: error: " + message, 0), 0U) << result.err;
        EXPECT_EQ(result.out, "");
      };
  check({"checkpoints", "list"},
        2,
        "checkpoints list needs exactly one of --toml FILE or --output-dir DIR");
  check({"checkpoints", "list", "--toml", "a", "--output-dir", "b"},
        2,
        "checkpoints list needs exactly one of --toml FILE or --output-dir DIR");
  check({"checkpoints", "list", "--output-dir", "b"}, 2, "--output-dir needs --ranks N");
  check({"checkpoints", "list", "--output-dir", "b", "--ranks", "0"},
        2,
        "--output-dir needs --ranks N");
  check({"checkpoints", "list", "--toml", "a.toml", "--ranks", "2"},
        2,
        "--ranks goes with --output-dir");
  check({"checkpoints", "list", "--output-dir", "b", "--ranks", "1", "--working-dir", "/w"},
        2,
        "--working-dir goes with --toml");
  pb::test::write_file(tmp / "bad.toml", "[deployment]\ntype = \"cluster\"\n");
  check({"checkpoints", "list", "--toml", (tmp / "bad.toml").string()},
        3,
        (tmp / "bad.toml").string() + ":2:8: ");
}

} // namespace

namespace {

// A v0.9 multi-node TOML (2 trainer nodes x 2 GPUs = 4 ranks), `run` its [run] block.
std::string v0_9_toml(const std::string &output_dir, const std::string &run) {
  return "output_dir = \"" + output_dir + "\"\n" + run +
         "[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 2\nnum_infer_nodes = 1\n"
         "gpus_per_node = 2\n[monitors.wandb]\nproject = \"p\"\n[orchestrator]\n[inference.vllm]\n";
}

} // namespace

TEST(CheckpointsList, V09TomlListsItsRunDirectory) {
  TempDir tmp;
  CheckpointTree tree(tmp / "out", "my-run");
  tree.complete_step("step_10", 4);
  tree.complete_step("step_20", 4);
  tree.write_shard("step_30", 0);
  tree.write_metadata("step_30");
  pb::test::write_file(tmp / "named.toml",
                       v0_9_toml((tmp / "out").string(), "[run]\nname = \"my-run\"\n"));
  const auto result =
      run_primebeaker({"checkpoints", "list", "--toml", (tmp / "named.toml").string(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["layout"], "v0.9");
  EXPECT_EQ(json["expected_ranks"], 4);
  EXPECT_EQ(json["selected_step"], 20);
  EXPECT_EQ(json["output_dir"], (tmp / "out").string());
  EXPECT_EQ(json["trainer_root"], (tmp / "out/my-run/checkpoints").string());
  EXPECT_EQ(json["orchestrator_root"], json["trainer_root"]);
  ASSERT_EQ(json["steps"].size(), 3U);
  EXPECT_EQ(json["steps"][2]["missing"],
            nlohmann::json::parse(R"(["my-run/checkpoints/step_30/trainer/__1_0.distcp",
              "my-run/checkpoints/step_30/trainer/__2_0.distcp",
              "my-run/checkpoints/step_30/trainer/__3_0.distcp",
              "my-run/checkpoints/step_30/orchestrator/progress.pt"])"));
  const auto table =
      run_primebeaker({"checkpoints", "list", "--toml", (tmp / "named.toml").string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.rfind("Checkpoints in " + (tmp / "out").string() +
                                " (Prime-RL v0.9 layout), 4 trainer ranks per step\n",
                            0),
            0U)
      << table.out;

  // No run.dir / run.name: the launch named the run; its only run directory is used.
  pb::test::write_file(tmp / "unnamed.toml", v0_9_toml((tmp / "out").string(), "[resume]\n"));
  const std::string unnamed = (tmp / "unnamed.toml").string();
  const auto only = run_primebeaker({"checkpoints", "list", "--toml", unnamed, "--json"});
  ASSERT_EQ(only.exit_code, 0) << only.err;
  EXPECT_EQ(nlohmann::json::parse(only.out)["selected_step"], 20);
  // Two candidates: one line naming them and the flag; --run picks one.
  CheckpointTree other(tmp / "out", "other-run");
  other.complete_step("step_5", 4);
  fs::create_directories(tmp / "out/primebeaker_recovery/ledger"); // ours, never a candidate
  const auto ambiguous = run_primebeaker({"checkpoints", "list", "--toml", unnamed});
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_EQ(ambiguous.err,
            "primebeaker: error: " + unnamed +
                " sets neither run.dir nor run.name (the launch named the run after its "
                "experiment) and " +
                (tmp / "out").string() +
                " holds 2 run directories (my-run, other-run): pass --run NAME\n");
  const auto picked =
      run_primebeaker({"checkpoints", "list", "--toml", unnamed, "--run", "other-run", "--json"});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  EXPECT_EQ(nlohmann::json::parse(picked.out)["selected_step"], 5);
  // --run may not contradict the TOML, nor go with --output-dir.
  EXPECT_EQ(
      run_primebeaker(
          {"checkpoints", "list", "--toml", (tmp / "named.toml").string(), "--run", "other-run"})
          .exit_code,
      2);
  EXPECT_EQ(run_primebeaker({"checkpoints",
                             "list",
                             "--output-dir",
                             (tmp / "out/my-run").string(),
                             "--ranks",
                             "4",
                             "--run",
                             "x"})
                .exit_code,
            2);
  // --output-dir with the run directory itself reads the same layout.
  const auto by_dir = run_primebeaker(
      {"checkpoints", "list", "--output-dir", (tmp / "out/my-run").string(), "--ranks", "4"});
  ASSERT_EQ(by_dir.exit_code, 0) << by_dir.err;
  EXPECT_NE(by_dir.out.find("(Prime-RL v0.9 layout)"), std::string::npos) << by_dir.out;
  EXPECT_NE(by_dir.out.find("A resume would use step 20."), std::string::npos) << by_dir.out;
}
