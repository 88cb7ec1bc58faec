// SPDX-License-Identifier: MIT
// `follow --recover` (docs/recovery.md "Multi-node recovery"): the real binary against a fake
// `beaker` on PATH playing a preempted multi-node experiment, a checkpoint tree and an attempt
// ledger on disk; the real `rl resume` runs as follow's child. Then the pure half (budget,
// verdict, ledger slot, backoff) and the loop with a scripted runner and a fake clock.
#include "fixtures.hpp"
#include "test_support.hpp"

#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/runs/recover.hpp>
#include <primebeaker/runs/runs.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <deque>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace {

namespace fs = std::filesystem;
namespace ledger = pb::recovery::ledger;
using namespace pb::test::runs;
using pb::OrderedJson;
using pb::test::FakeAnswer;

constexpr const char *k_source = "01JZ8M3Q4T5V6W7X8Y9Z0SRCE1";
constexpr const char *k_child = "01JZ8M3Q4T5V6W7X8Y9Z0CHLD1";
constexpr const char *k_run_id = "wandb-run";

std::string toml_text(const fs::path &out) {
  return pb::test::multi_node_rl_toml(out);
}

// A multi-node RL experiment in the shape `beaker experiment get` prints: two replicas of one
// task, rank 0 with the whole spec (what `rl resume` inherits), both in `status`.
OrderedJson topology(const std::string &id,
                     const fs::path &weka,
                     const OrderedJson &status,
                     const std::string &max_recoveries) {
  const std::string w = weka.string();
  OrderedJson env = OrderedJson::array();
  for (const auto &[name, value] : std::vector<std::pair<std::string, std::string>>{
           {"CONFIG_PATH", w + "/configs/rl.toml"},
           {"HOME", w},
           {"LAUNCH_ID", "launch-" + id},
           {"OUTPUT_DIR", w + "/out"},
           {"PRIMEBEAKER_MAX_RECOVERIES", max_recoveries},
           {"PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS", "0"},
           {"REGISTRY", "redis://registry:6379"},
           {"SCRATCH", w + "/scratch"},
           {"WANDB_RUN_ID", k_run_id},
           {"WANDB_SHARED_RUN_ID", k_run_id},
           {"WORKING_DIR", w}}) {
    if (!value.empty()) {
      env.push_back({{"name", name}, {"value", value}});
    }
  }
  env.push_back({{"name", "WANDB_API_KEY"}, {"secret", "WANDB_SECRET"}});
  OrderedJson spec = {
      {"name", "prime-rl-multinode"},
      {"image", {{"beaker", "jdoe/prime-rl-v0.8.0"}}},
      {"command", {"primebeaker", "node", "rl"}},
      {"envVars", env},
      {"datasets", {{{"mountPath", w}, {"source", {{"weka", "oe-adapt-default"}}}}}},
      {"result", {{"path", "/tmp/beaker-result"}}},
      {"resources", {{"gpuCount", 8}}},
      {"context", {{"priority", "urgent"}, {"autoResume", false}}},
      {"constraints", {{"cluster", {"ai2/jupiter"}}}},
      {"hostNetworking", true},
      {"replicas", 2},
      {"leaderSelection", true},
      {"propagateFailure", true},
      {"propagatePreemption", true}};
  OrderedJson jobs = OrderedJson::array();
  for (int rank = 0; rank < 2; ++rank) {
    OrderedJson execution = {{"task", id.substr(0, 20) + "TASK01"},
                             {"experiment", id},
                             {"replicaRank", rank},
                             {"spec",
                              rank == 0 ? spec
                                        : OrderedJson{{"name", "prime-rl-multinode"},
                                                      {"image", spec["image"]},
                                                      {"replicas", 2}}}};
    jobs.push_back({{"id", id.substr(0, 22) + "JOB" + std::to_string(rank)},
                    {"kind", "execution"},
                    {"name", "prime-rl-multinode-replica-" + std::to_string(rank)},
                    {"node", "node-" + std::to_string(rank)},
                    {"status", status},
                    {"execution", execution}});
  }
  return {{"id", id},
          {"name", "jdoe/search"},
          {"fullName", "jdoe/search"},
          {"description", "PrimeBeaker multi-node RL search"},
          {"author", {{"id", "01HA"}, {"name", "jdoe"}}},
          {"created", stamp(0)},
          {"workspaceRef", {{"fullName", "ai2/oe-agents"}}},
          {"jobs", jobs}};
}

std::string job_of(const std::string &experiment, int rank) {
  return experiment.substr(0, 22) + "JOB" + std::to_string(rank);
}

struct RecoverHarness {
  pb::test::TempDir tmp;
  pb::test::FakeBin bin{tmp.path()};
  pb::test::FakeBeaker beaker{bin};
  fs::path weka = tmp.path() / "weka";
  fs::path ledger_dir = weka / "out/primebeaker_recovery/ledger" / k_run_id;

  RecoverHarness() {
    pb::test::write_file(weka / "configs/rl.toml", toml_text(weka / "out"));
    for (const std::string step : {"step_10", "step_20"}) {
      pb::test::write_file(weka / "out/checkpoints" / step / "trainer/.metadata", "meta");
      for (int rank = 0; rank < 4; ++rank) {
        pb::test::write_file(weka / "out/checkpoints" / step / "trainer" /
                                 ("__" + std::to_string(rank) + "_0.distcp"),
                             "shard");
      }
      pb::test::write_file(weka / "out/run_default/checkpoints" / step / "orchestrator/progress.pt",
                           "progress");
    }
    // The source's replica 0 recorded its first start, as the node runtime does.
    pb::test::write_file(ledger_dir / "1.json",
                         nlohmann::json{{"attempt", 1},
                                        {"record", "start"},
                                        {"cause", "first_start"},
                                        {"started_unix", 1000},
                                        {"experiment_id", k_source},
                                        {"launch_id", std::string("launch-") + k_source},
                                        {"run_id", k_run_id},
                                        {"max_recoveries", 1}}
                             .dump());
    // `rl resume` stages this build under the scratch dir: link the test process's one stage.
    const auto stage = pb::test::run_primebeaker(
        {"stage", "--dry-run", "--scratch-dir", (weka / "scratch").string()});
    EXPECT_EQ(stage.exit_code, 0) << stage.err;
    pb::test::provide_stage(nlohmann::json::parse(stage.out).at("program").get<std::string>());
  }

  // What `rl resume` asks besides the source: its jobs, the secrets, the image, the create.
  void answer_resume(const OrderedJson &source) {
    beaker.on({"job", "get"}, source["jobs"].dump());
    beaker.on({"secret", "list"}, R"([{"name": "WANDB_SECRET"}])");
    beaker.on({"image", "get", "jdoe/prime-rl-v0.8.0"},
              R"([{"id": "01IMAGE", "fullName": "jdoe/prime-rl-v0.8.0",
                   "workspaceRef": {"fullName": "ai2/oe-agents"},
                   "committed": "2026-08-01T10:00:00Z"}])");
    FakeAnswer created{std::string("Experiment ") + k_child +
                       " submitted. See progress at https://beaker.org/ex/" + k_child + "\n"};
    created.keep_last_argument = true;
    beaker.on_sequence({"experiment", "create"}, {created});
  }

  pb::test::RunResult run(const std::vector<std::string> &args) {
    pb::test::RunOptions options;
    options.path_prepend = {bin.bin()};
    options.cwd = tmp.path();
    options.timeout_seconds = 300;
    return pb::test::run_primebeaker(args, options);
  }
};

FakeAnswer said(std::string out) {
  return FakeAnswer{std::move(out), 0, {}};
}

TEST(RunsFollowRecover, ResubmitsOnceRecordsItFollowsTheChildAndStopsAtTheBudget) {
  RecoverHarness h;
  const auto source = topology(k_source, h.weka, status_preempted(20), "1");
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on_sequence({"experiment", "get", k_child},
                       {said(printed(topology(k_child, h.weka, status_running(), "1"))),
                        said(printed(topology(k_child, h.weka, status_preempted(40), "1")))});
  for (int rank = 0; rank < 2; ++rank) {
    h.beaker.on({"job", "logs", job_of(k_source, rank)}, fmt::format("source {}\n", rank));
    h.beaker.on({"job", "logs", job_of(k_child, rank)}, fmt::format("child {}\n", rank));
  }
  h.answer_resume(source);

  const auto result =
      h.run({"follow", k_source, "--recover", "--recover-backoff", "0", "--poll-interval", "0.01"});
  EXPECT_EQ(result.exit_code, 11) << result.err; // the child ended preempted too
  // One resubmission: `rl resume` of the source, by argv, submitted once.
  ASSERT_EQ(h.beaker.calls_matching({"experiment", "create"}).size(), 1u) << result.err;
  EXPECT_NE(result.err.find(std::string(k_source) + " resubmitted as " + k_child +
                            " from step 20 (recovery 1 of --max-recoveries 1; " +
                            (h.ledger_dir / "1.recover.json").string() + "); following it"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find(std::string("following ") + k_child), std::string::npos) << result.err;
  // Then the budget: one line, no second resubmission.
  EXPECT_NE(result.err.find(std::string("primebeaker: not resubmitting ") + k_child +
                            " (preempted): the recovery budget is spent (1 of --max-recoveries 1 "
                            "used); resume by hand: primebeaker rl resume " +
                            k_child + "\n"),
            std::string::npos)
      << result.err;
  // The logs of both experiments, in order.
  EXPECT_NE(result.out.find("[trainer:0] source 0\n"), std::string::npos) << result.out;
  EXPECT_LT(result.out.find("source 1"), result.out.find("[trainer:0] child 0\n")) << result.out;
  EXPECT_NE(result.out.find("[inference:1] child 1\n"), std::string::npos) << result.out;
  // The child experiment resumes from step 20 (the resume TOML pins it).
  const auto spec = nlohmann::json::parse(h.beaker.kept_files().at(0));
  std::string config_path;
  for (const auto &var : spec["tasks"][0]["envVars"]) {
    if (var["name"] == "CONFIG_PATH") {
      config_path = var["value"];
    }
    if (var["name"] == "PRIMEBEAKER_MAX_RECOVERIES") {
      EXPECT_EQ(var["value"], "1"); // the budget follows the run
    }
  }
  EXPECT_NE(pb::test::read_file(config_path).find("resume_step = 20"), std::string::npos);

  // The ledger's record, written once, read back through the runtime's parser.
  const auto history = ledger::read(h.ledger_dir);
  ASSERT_EQ(history.attempts.size(), 1u);
  ASSERT_TRUE(history.attempts[0].recover.has_value());
  const auto &record = *history.attempts[0].recover;
  EXPECT_EQ(record.attempt, 1);
  EXPECT_EQ(record.cause, "preemption");
  EXPECT_EQ(record.source_experiment, k_source);
  EXPECT_EQ(record.child_experiment, k_child);
  EXPECT_TRUE(record.error.empty());
  const auto raw = nlohmann::json::parse(pb::test::read_file(h.ledger_dir / "1.recover.json"));
  EXPECT_EQ(raw["by"], "follow --recover");
  // Nothing was ever stopped.
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "stop"}).empty());
}

// A chain of two recoveries of a run once resumed by hand (an attempt id that is not hex):
// each child is named after the run, "search-recover<k>-<hex8>", never after the experiment it
// recovers, so suffixes do not stack.
TEST(RunsFollowRecover, AChainOfTwoRecoveriesNamesEachChildAfterTheRun) {
  constexpr const char *k_grandchild = "01JZ8M3Q4T5V6W7X8Y9Z0CHLD2";
  RecoverHarness h;
  auto source = topology(k_source, h.weka, status_preempted(20), "2");
  source["name"] = source["fullName"] = "jdoe/search-resume-step10-handmade";
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on({"experiment", "get", k_child},
              printed(topology(k_child, h.weka, status_exited(0, 50), "2")));
  h.beaker.on({"job", "logs"}, "");
  h.answer_resume(source);
  const auto first =
      h.run({"follow", k_source, "--recover", "--recover-backoff=0", "--poll-interval", "0.01"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto history = ledger::read(h.ledger_dir);
  ASSERT_EQ(history.claims.size(), 1u) << first.err;
  const std::string first_name = history.claims[0].child_name;
  EXPECT_TRUE(std::regex_match(first_name, std::regex("search-recover1-[0-9a-f]{8}")))
      << first_name;
  ASSERT_EQ(h.beaker.calls_matching({"experiment", "create"}).size(), 1u);
  EXPECT_EQ(h.beaker.calls_matching({"experiment", "create"})[0].argv[4], first_name);

  // The child, named so, is preempted in turn and recovered again.
  h.beaker.clear();
  auto child = topology(k_child, h.weka, status_preempted(40), "2");
  child["name"] = child["fullName"] = "jdoe/" + first_name;
  h.beaker.on({"experiment", "get", k_child}, printed(child));
  h.beaker.on({"experiment", "get", k_grandchild},
              printed(topology(k_grandchild, h.weka, status_exited(0, 60), "2")));
  h.beaker.on({"job", "logs"}, "");
  // Rules answer in the order they were added: this create comes before answer_resume's.
  h.beaker.on({"experiment", "create"},
              std::string("Experiment ") + k_grandchild + " submitted.\n");
  h.answer_resume(child);
  const auto second =
      h.run({"follow", k_child, "--recover", "--recover-backoff=0", "--poll-interval", "0.01"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  history = ledger::read(h.ledger_dir);
  ASSERT_EQ(history.claims.size(), 2u) << second.err;
  const std::string second_name = history.claims[1].child_name;
  EXPECT_TRUE(std::regex_match(second_name, std::regex("search-recover2-[0-9a-f]{8}")))
      << second_name;
  const auto creates = h.beaker.calls_matching({"experiment", "create"});
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[1].argv[4], second_name);
}

TEST(RunsFollowRecover, TheChildSucceedingEndsTheFollowWithZero) {
  RecoverHarness h;
  const auto source = topology(k_source, h.weka, status_preempted(20), "3");
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on_sequence({"experiment", "get", k_child},
                       {said(printed(topology(k_child, h.weka, status_running(), "3"))),
                        said(printed(topology(k_child, h.weka, status_exited(0, 50), "3")))});
  h.beaker.on({"job", "logs"}, "");
  h.answer_resume(source);
  const auto result =
      h.run({"follow", k_source, "--recover", "--recover-backoff=0", "--poll-interval", "0.01"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(h.beaker.calls_matching({"experiment", "create"}).size(), 1u);
  EXPECT_NE(result.err.find("(recovery 1 of --max-recoveries 3;"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(std::string("experiment ") + k_child + " succeeded"), std::string::npos)
      << result.err;
}

TEST(RunsFollowRecover, BudgetZeroNeverResubmits) {
  RecoverHarness h;
  const auto source = topology(k_source, h.weka, status_preempted(20), "0");
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on({"job", "logs"}, "");
  const auto before = pb::test::tree_digest(h.weka / "out");
  const auto result = h.run({"follow", k_source, "--recover", "--poll-interval", "0.01"});
  EXPECT_EQ(result.exit_code, 11) << result.err;
  EXPECT_NE(result.err.find(std::string("primebeaker: not resubmitting ") + k_source +
                            " (preempted): automatic recovery is off (--max-recoveries 0); "
                            "resume by hand: primebeaker rl resume " +
                            k_source),
            std::string::npos)
      << result.err;
  // No `rl resume` ran: it would have read the secrets and written under the output dir.
  EXPECT_TRUE(h.beaker.calls_matching({"secret", "list"}).empty());
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "create"}).empty());
  EXPECT_EQ(pb::test::tree_digest(h.weka / "out"), before);
}

TEST(RunsFollowRecover, WithoutRecoverAPreemptedRunIsOnlyReported) {
  RecoverHarness h;
  h.beaker.on({"experiment", "get", k_source},
              printed(topology(k_source, h.weka, status_preempted(20), "3")));
  h.beaker.on({"job", "logs"}, "");
  const auto result = h.run({"follow", k_source, "--poll-interval", "0.01"});
  EXPECT_EQ(result.exit_code, 11) << result.err;
  EXPECT_EQ(result.err.find("resubmit"), std::string::npos) << result.err;
  EXPECT_EQ(h.run({"follow", k_source, "--recover-backoff", "-1"}).exit_code, 2);
}

TEST(RunsFollowRecover, SubmitRecoverNamesWhoRecovers) {
  RecoverHarness h;
  const auto result = h.run({"rl",
                             "submit",
                             "--toml",
                             (h.weka / "configs/rl.toml").string(),
                             "--registry",
                             "redis://registry:6379",
                             "--recover",
                             "always"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--recover must be controller, terminal or off, got 'always'"),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(h.beaker.calls().empty());
}

TEST(RunsFollowRecover, RlResumeRefusingIsReportedWithTheCommandToRunByHand) {
  RecoverHarness h;
  const auto source = topology(k_source, h.weka, status_preempted(20), "3");
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on({"job", "logs"}, "");
  h.beaker.on({"job", "get"}, source["jobs"].dump());
  h.beaker.on({"secret", "list"}, "[]"); // WANDB_SECRET is missing: a refusal (exit 1)
  h.beaker.on({"image", "get"}, "", 1, "image not found\n");
  const auto result =
      h.run({"follow", k_source, "--recover", "--recover-backoff=0", "--poll-interval", "0.01"});
  // A missing secret fails again on every retry: tried once, one line, its own exit code.
  EXPECT_EQ(result.exit_code, 14) << result.err;
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "create"}).empty());
  EXPECT_EQ(result.err.find("(try 2 of 3)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("missing secrets: WANDB_SECRET"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(std::string("primebeaker: not resubmitting ") + k_source +
                            " (preempted): `rl resume` refused for a reason no retry mends; "
                            "resume by hand: primebeaker rl resume " +
                            k_source + "\n"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(fs::exists(h.ledger_dir / "1.recover.json"));
}

TEST(RunsFollowRecover, ASourceStillActiveIsTriedAgainThenGivenUp) {
  RecoverHarness h;
  const auto source = topology(k_source, h.weka, status_preempted(20), "3");
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on({"job", "logs"}, "");
  // Beaker has not finalized the preempted jobs: `rl resume` refuses with 75, which passes later.
  OrderedJson active = source["jobs"];
  for (auto &job : active) {
    job["status"] = status_running();
  }
  h.beaker.on({"job", "get"}, active.dump());
  h.beaker.on({"secret", "list"}, R"([{"name": "WANDB_SECRET"}])");
  h.beaker.on({"image", "get", "jdoe/prime-rl-v0.8.0"},
              R"([{"id": "01IMAGE", "fullName": "jdoe/prime-rl-v0.8.0",
                   "workspaceRef": {"fullName": "ai2/oe-agents"},
                   "committed": "2026-08-01T10:00:00Z"}])");
  h.beaker.on({"account", "whoami"}, R"([{"name": "jdoe"}])");
  h.beaker.on({"experiment", "get", "*"}, "", 1, "experiment not found\n");
  const auto result =
      h.run({"follow", k_source, "--recover", "--recover-backoff=0", "--poll-interval", "0.01"});
  EXPECT_EQ(result.exit_code, 11) << result.err; // the outcome's code: nothing certain failed
  EXPECT_NE(result.err.find("(try 3 of 3)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("exit code 75: refusing to resume while the source topology is "
                            "active"),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "create"}).empty());
  // Before each later try it looked for the experiment its claim names: none was created.
  int lookups = 0;
  for (const auto &call : h.beaker.calls_matching({"experiment", "get"})) {
    lookups += call.argv.size() > 3 && call.argv[3].rfind("jdoe/search-recover1-", 0) == 0;
  }
  EXPECT_EQ(lookups, 2);
  // The claim: generation 1, its exact name, no child.
  const auto history = ledger::read(h.ledger_dir);
  ASSERT_EQ(history.claims.size(), 1u);
  EXPECT_EQ(history.claims[0].source_experiment, k_source);
  EXPECT_EQ(history.claims[0].cause, "preemption");
  EXPECT_TRUE(history.claims[0].child_name.rfind("search-recover1-", 0) == 0)
      << history.claims[0].child_name;
  EXPECT_TRUE(history.claims[0].child_experiment.empty());
}

TEST(RunsList, ShowsEachRunsRecoveriesFromItsLedger) {
  RecoverHarness h;
  pb::test::write_file(h.ledger_dir / "2.json",
                       R"({"attempt": 2, "cause": "preemption", "started_unix": 2000})");
  pb::test::write_file(h.ledger_dir / "3.json",
                       R"({"attempt": 3, "cause": "resubmission", "started_unix": 3000})");
  auto other = topology(k_child, h.weka, status_running(), "3");
  other["created"] = stamp(9);
  // A run whose output dir is not on this machine: no count rather than a wrong zero.
  for (auto &var : other["jobs"][0]["execution"]["spec"]["envVars"]) {
    if (var["name"] == "OUTPUT_DIR") {
      var["value"] = "/nonexistent/out";
    }
  }
  const OrderedJson all =
      OrderedJson::array({topology(k_source, h.weka, status_running(), "3"), other});
  h.beaker.on({"workspace", "experiments", "ai2/oe-agents"}, all.dump());
  const auto json = h.run({"list", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto rows = nlohmann::json::parse(json.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["experiment_id"], k_source);
  EXPECT_EQ(rows[1]["recoveries"], 1);
  EXPECT_EQ(rows[1]["recovery"]["attempts"], 3);
  EXPECT_EQ(rows[1]["recovery"]["preemptions_recovered"], 1);
  EXPECT_EQ(rows[1]["recovery"]["resubmissions"], 1);
  EXPECT_EQ(rows[1]["recovery"]["ledger"], h.ledger_dir.string());
  EXPECT_EQ(rows[1]["restarts"], 0);
  EXPECT_TRUE(rows[0]["recoveries"].is_null());
  EXPECT_NE(rows[0]["recovery"]["error"].get<std::string>().find("not visible here"),
            std::string::npos);
  // Only `workspace experiments`: no checkpoint listing, no further beaker call.
  EXPECT_EQ(h.beaker.calls().size(), 1u);

  const auto table = h.run({"list"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("RECOVERIES"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("  1           -             2 running"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("  -           -             2 running"), std::string::npos)
      << table.out;
}

// ---- The pure half ----

pb::runs::RunView run_with(pb::runs::Outcome outcome,
                           std::map<std::string, std::string> env,
                           std::vector<std::string> command = {"primebeaker", "node", "rl"}) {
  pb::runs::RunView run;
  run.id = k_source;
  run.outcome = outcome;
  run.env = std::move(env);
  run.command = std::move(command);
  return run;
}

ledger::Ledger history_of(std::vector<std::pair<std::string, std::string>> files) {
  return ledger::ledger_from_files(files);
}

TEST(RunsRecoverPure, BudgetFromTheExperimentThenTheLedgerThenTheDefault) {
  using pb::runs::recovery_budget;
  const auto history = history_of(
      {{"1.json",
        R"({"attempt": 1, "started_unix": 1, "cause": "first_start", "max_recoveries": 4, "max_restarts_on_errors": 2})"}});
  auto run = run_with(pb::runs::Outcome::preempted, {{"PRIMEBEAKER_MAX_RECOVERIES", "7"}});
  auto budget = recovery_budget(run, history);
  EXPECT_EQ(budget.max_recoveries, 7);
  EXPECT_EQ(budget.max_restarts_on_errors, 2);
  EXPECT_EQ(budget.from, "experiment");
  run.env.clear();
  budget = recovery_budget(run, history);
  EXPECT_EQ(budget.max_recoveries, 4);
  EXPECT_EQ(budget.from, "ledger");
  budget = recovery_budget(run, ledger::Ledger{});
  EXPECT_EQ(budget.max_recoveries, 10);
  EXPECT_EQ(budget.max_restarts_on_errors, 0);
  EXPECT_EQ(budget.from, "default");
}

TEST(RunsRecoverPure, UsedCountsAsTheRuntimeDoesPlusAPendingResubmission) {
  const auto history = history_of({
      {"1.json", R"({"attempt": 1, "started_unix": 1, "cause": "first_start"})"},
      {"2.json", R"({"attempt": 2, "started_unix": 2, "cause": "preemption"})"},
      {"3.json",
       R"({"attempt": 3, "started_unix": 3, "cause": "preemption", "refused": "past the budget"})"},
      {"4.json", R"({"attempt": 4, "started_unix": 4, "cause": "error"})"},
      {"5.json",
       R"({"attempt": 5, "started_unix": 5, "cause": "resubmission", "experiment_id": "E5"})"},
      {"5.recover.json",
       R"({"attempt": 5, "requested_unix": 6, "cause": "preemption", "source_experiment": "E5", "child_experiment": "E6"})"},
  });
  const auto used = pb::runs::recoveries_used(history);
  EXPECT_EQ(used.preemptions, 2); // attempt 2 and the pending resubmission of attempt 5
  EXPECT_EQ(used.errors, 1);
  EXPECT_EQ(pb::runs::already_resubmitted(history, "E5"), "E6");
  EXPECT_EQ(pb::runs::already_resubmitted(history, "E6"), "");
  EXPECT_FALSE(pb::runs::recover_slot(history, "E5")); // taken
}

TEST(RunsRecoverPure, SlotIsTheLastAttemptOfThisExperiment) {
  const auto history = history_of(
      {{"1.json",
        R"({"attempt": 1, "started_unix": 1, "cause": "first_start", "experiment_id": "A"})"},
       {"2.json",
        R"({"attempt": 2, "started_unix": 2, "cause": "preemption", "experiment_id": "B"})"}});
  EXPECT_EQ(pb::runs::recover_slot(history, "B"), 2);
  EXPECT_FALSE(pb::runs::recover_slot(history, "C")); // C never started
  EXPECT_FALSE(pb::runs::recover_slot(ledger::Ledger{}, "A"));
}

TEST(RunsRecoverPure, Verdicts) {
  using pb::runs::Outcome;
  pb::runs::RecoveryBudget budget;
  budget.max_recoveries = 2;
  budget.max_restarts_on_errors = 1;
  auto v = judge_recovery(run_with(Outcome::preempted, {}), budget, {1, 0});
  EXPECT_TRUE(v.resubmit);
  EXPECT_EQ(v.number, 2);
  EXPECT_EQ(v.cause, "preemption");
  v = judge_recovery(run_with(Outcome::preempted, {}), budget, {2, 0});
  EXPECT_FALSE(v.resubmit);
  EXPECT_EQ(v.refusal, "the recovery budget is spent (2 of --max-recoveries 2 used)");
  auto failed = run_with(Outcome::failed, {});
  pb::runs::Replica trainer;
  trainer.exit_code = 7;
  failed.replicas.push_back(trainer);
  failed.deciding_replica = 0;
  v = judge_recovery(failed, budget, {5, 0});
  EXPECT_TRUE(v.resubmit);
  EXPECT_EQ(v.cause, "error");
  EXPECT_EQ(v.exit_code, 7);
  EXPECT_EQ(v.flag, "--max-restarts-on-errors");
  budget.max_restarts_on_errors = 0;
  EXPECT_EQ(judge_recovery(failed, budget, {}).refusal,
            "restarts after errors are off (--max-restarts-on-errors 0)");
  EXPECT_TRUE(judge_recovery(run_with(Outcome::canceled, {}), budget, {}).cause.empty());
  EXPECT_TRUE(judge_recovery(run_with(Outcome::succeeded, {}), budget, {}).cause.empty());
  v = judge_recovery(
      run_with(Outcome::preempted, {}, {"primebeaker", "node", "single", "rl"}), budget, {});
  EXPECT_FALSE(v.resubmit);
  EXPECT_NE(v.refusal.find("not a multi-node RL run"), std::string::npos);
  EXPECT_TRUE(
      judge_recovery(run_with(Outcome::preempted, {}, {"/scratch/bin/x/primebeaker", "node", "rl"}),
                     budget,
                     {})
          .resubmit);
}

TEST(RunsRecoverPure, BackoffDoublesAndIsCapped) {
  pb::runs::RecoverOptions options;
  options.backoff = std::chrono::seconds(60);
  options.max_backoff = std::chrono::minutes(15);
  using std::chrono::milliseconds;
  EXPECT_EQ(pb::runs::recovery_wait(options, 0), milliseconds(60000));
  EXPECT_EQ(pb::runs::recovery_wait(options, 1), milliseconds(120000));
  EXPECT_EQ(pb::runs::recovery_wait(options, 3), milliseconds(480000));
  EXPECT_EQ(pb::runs::recovery_wait(options, 4), milliseconds(900000));
  EXPECT_EQ(pb::runs::recovery_wait(options, 40), milliseconds(900000));
  options.backoff = std::chrono::milliseconds(0);
  EXPECT_EQ(pb::runs::recovery_wait(options, 5), milliseconds(0));
}

TEST(RunsRecoverPure, ResumeReceipt) {
  const auto receipt = pb::runs::parse_resume_receipt(
      R"({"resume": {"attempt_id": "a1", "checkpoint": {"step": 20}}, "child_experiment_id": "C", "stdout": ""})");
  EXPECT_EQ(receipt.child_experiment_id, "C");
  EXPECT_EQ(receipt.step, 20);
  EXPECT_EQ(receipt.attempt_id, "a1");
  EXPECT_PB_ERROR(pb::runs::parse_resume_receipt(R"({"child_experiment_id": null})"),
                  pb::ExitCode::failure,
                  "names no child experiment");
  EXPECT_PB_ERROR(pb::runs::parse_resume_receipt("oops"), pb::ExitCode::failure, "no JSON");
}

// ---- The loop, with a scripted runner and a fake clock: backoff waits and the child's start ----

class FakeClock final : public pb::Clock {
public:
  std::chrono::system_clock::time_point t = *pb::runs::parse_time_text("2026-08-10T10:00:00Z");
  std::chrono::system_clock::time_point now() override { return t; }
};

// Answers by the call's words; `rl resume` calls (argv[0] "pb-self") go to `resume`.
class LoopRunner final : public pb::proc::Runner {
public:
  std::map<std::string, std::deque<std::string>> experiments; // id -> printed answers
  std::function<pb::proc::Result(const pb::proc::Argv &)> resume;
  std::vector<pb::proc::Argv> ran;
  pb::proc::Result run(const pb::proc::Command &command) override {
    ran.push_back(command.argv);
    pb::proc::Result result;
    result.exit_code = 0;
    const auto &a = command.argv;
    if (a[0] == "pb-self") {
      return resume(a);
    }
    if (a[1] == "account" && a[2] == "whoami") {
      result.out = R"([{"name": "jdoe"}])";
      return result;
    }
    if (a[1] == "experiment" && a[2] == "get") {
      if (experiments.count(a[3]) == 0) { // a claim's name looked up: never created here
        result.exit_code = 1;
        result.err = "experiment " + a[3] + " not found\n";
        return result;
      }
      auto &queue = experiments.at(a[3]);
      result.out = queue.front();
      if (queue.size() > 1) {
        queue.pop_front();
      }
    }
    return result; // job logs: empty
  }
};

TEST(RunsRecoverLoop, BacksOffDoublesRecordsAndCountsTheChildsStart) {
  pb::test::TempDir tmp;
  const fs::path out = tmp / "out";
  const fs::path dir = ledger::directory(out, k_run_id);
  fs::create_directories(dir);
  pb::test::write_file(
      dir / "1.json",
      nlohmann::json{
          {"attempt", 1}, {"started_unix", 1}, {"cause", "first_start"}, {"experiment_id", "E1"}}
          .dump());
  const auto view = [&](const std::string &id, const OrderedJson &status) {
    return printed(experiment({job(id + "J0",
                                   0,
                                   status,
                                   "T",
                                   {{"OUTPUT_DIR", out.string()},
                                    {"WANDB_RUN_ID", k_run_id},
                                    {"PRIMEBEAKER_MAX_RECOVERIES", "5"}})},
                              id));
  };
  LoopRunner runner;
  runner.experiments["E1"] = {view("E1", status_preempted(10))};
  runner.experiments["E2"] = {view("E2", status_running()), view("E2", status_preempted(20))};
  runner.experiments["E3"] = {view("E3", status_exited(0, 30))};
  int resumes = 0;
  runner.resume = [&](const pb::proc::Argv &argv) {
    ++resumes;
    pb::proc::Result result;
    EXPECT_EQ(argv[1], "rl");
    EXPECT_EQ(argv[2], "resume");
    EXPECT_EQ(argv[3], "--from-experiment");
    EXPECT_EQ(argv[5], "--attempt-id");
    EXPECT_TRUE(argv[6].ends_with("-recover" + std::to_string(resumes))) << argv[6];
    if (resumes == 2) {
      // The first try of the second recovery is refused (the source is not finalized yet).
      static bool refused = false;
      if (!refused) {
        refused = true;
        result.exit_code = 75; // passes later
        result.err = "primebeaker: error: source experiment is still active\n  job J0\n";
        --resumes;
        return result;
      }
    }
    const std::string child = resumes == 1 ? "E2" : "E3";
    result.exit_code = 0;
    result.out = nlohmann::json{
        {"resume", {{"checkpoint", {{"step", 10 * resumes}}}}},
        {"child_experiment_id",
         child}}.dump();
    if (resumes == 1) {
      // E2's replica 0 starts before it is preempted: the runtime counts the recovery.
      pb::test::write_file(
          dir / "2.json",
          nlohmann::json{
              {"attempt", 2}, {"started_unix", 2}, {"cause", "preemption"}, {"experiment_id", "E2"}}
              .dump());
    }
    return result;
  };
  FakeClock clock;
  std::vector<std::chrono::milliseconds> waits;
  pb::runs::Timing timing;
  timing.clock = &clock;
  timing.sleep = [&](std::chrono::milliseconds d) {
    clock.t += d;
    if (d >= std::chrono::seconds(10)) {
      waits.push_back(d); // the backoff waits, not the polls
    }
    return true;
  };
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  pb::runs::FollowOptions options;
  options.poll_interval = std::chrono::seconds(1);
  options.recover.enabled = true;
  options.recover.backoff = std::chrono::seconds(30);
  options.recover.program = {"pb-self"};
  std::ostringstream logs, err;
  EXPECT_EQ(pb::runs::follow_run("E1", options, beaker, logs, err), 0) << err.str();
  EXPECT_EQ(resumes, 2);
  // 30 s before the first, 60 s before the second, 120 s before its retry.
  EXPECT_EQ(waits,
            (std::vector<std::chrono::milliseconds>{
                std::chrono::seconds(30), std::chrono::seconds(60), std::chrono::seconds(120)}));
  const auto history = ledger::read(dir);
  ASSERT_EQ(history.attempts.size(), 2u);
  EXPECT_EQ(history.attempts[0].recover->child_experiment, "E2");
  EXPECT_EQ(history.attempts[1].recover->child_experiment, "E3");
  EXPECT_EQ(history.attempts[1].recover->source_experiment, "E2");
  // Recovery 2: the child's start (attempt 2, a preemption) counted, not counted twice.
  EXPECT_NE(err.str().find("E2 preempted: recovery 2 of --max-recoveries 5 in 1m00s"),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("source experiment is still active; job J0"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("E2 resubmitted as E3 from step 20"), std::string::npos) << err.str();
}

TEST(RunsRecoverLoop, AnotherFollowerAlreadyResubmittedItSoItIsFollowedNotResubmitted) {
  pb::test::TempDir tmp;
  const fs::path out = tmp / "out";
  const fs::path dir = ledger::directory(out, k_run_id);
  pb::test::write_file(
      dir / "1.json",
      nlohmann::json{
          {"attempt", 1}, {"started_unix", 1}, {"cause", "first_start"}, {"experiment_id", "E1"}}
          .dump());
  pb::test::write_file(dir / "1.recover.json",
                       nlohmann::json{{"attempt", 1},
                                      {"requested_unix", 2},
                                      {"cause", "preemption"},
                                      {"source_experiment", "E1"},
                                      {"child_experiment", "E9"}}
                           .dump());
  const auto view = [&](const std::string &id, const OrderedJson &status) {
    return printed(experiment(
        {job(
            id + "J0", 0, status, "T", {{"OUTPUT_DIR", out.string()}, {"WANDB_RUN_ID", k_run_id}})},
        id));
  };
  LoopRunner runner;
  runner.experiments["E1"] = {view("E1", status_preempted(10))};
  runner.experiments["E9"] = {view("E9", status_exited(0, 30))};
  runner.resume = [](const pb::proc::Argv &) -> pb::proc::Result {
    ADD_FAILURE() << "rl resume must not run";
    return {};
  };
  FakeClock clock;
  pb::runs::Timing timing;
  timing.clock = &clock;
  timing.sleep = [&](std::chrono::milliseconds d) {
    clock.t += d;
    return true;
  };
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  pb::runs::FollowOptions options;
  options.recover.enabled = true;
  options.recover.program = {"pb-self"};
  std::ostringstream logs, err;
  EXPECT_EQ(pb::runs::follow_run("E1", options, beaker, logs, err), 0) << err.str();
  EXPECT_NE(err.str().find("E1 was already resubmitted as E9"), std::string::npos) << err.str();
}

} // namespace

namespace {

TEST(RunsRecoverLoop, CtrlCDuringASuccessfulResubmissionRecordsItAndSaysHowToFollowTheChild) {
  pb::test::TempDir tmp;
  const fs::path out = tmp / "out";
  const fs::path dir = ledger::directory(out, k_run_id);
  pb::test::write_file(
      dir / "1.json",
      nlohmann::json{{"attempt", 1}, {"started_unix", 1}, {"cause", "first_start"}}.dump());
  LoopRunner runner;
  runner.experiments["E1"] = {
      printed(experiment({job("E1J0",
                              0,
                              status_preempted(10),
                              "T",
                              {{"OUTPUT_DIR", out.string()}, {"WANDB_RUN_ID", k_run_id}})},
                         "E1"))};
  int signal = 0;
  runner.resume = [&](const pb::proc::Argv &) {
    signal = SIGINT; // Ctrl-C reached us while `rl resume` was submitting
    pb::proc::Result result;
    result.exit_code = 0;
    result.out = R"({"child_experiment_id": "E2"})";
    return result;
  };
  FakeClock clock;
  pb::runs::Timing timing;
  timing.clock = &clock;
  timing.sleep = [&](std::chrono::milliseconds d) {
    clock.t += d;
    return true;
  };
  timing.interrupted = [&] { return signal; };
  pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
  pb::runs::FollowOptions options;
  options.recover.enabled = true;
  options.recover.program = {"pb-self"};
  std::ostringstream logs, err;
  EXPECT_EQ(pb::runs::follow_run("E1", options, beaker, logs, err), 130) << err.str();
  EXPECT_NE(err.str().find("follow again: primebeaker follow E2"), std::string::npos) << err.str();
  const auto history = ledger::read(dir);
  ASSERT_EQ(history.attempts.size(), 1u);
  ASSERT_TRUE(history.attempts[0].recover.has_value());
  EXPECT_EQ(history.attempts[0].recover->child_experiment, "E2");
}

} // namespace

namespace {

// A controller following preempted E1 (budget 3) whose `rl resume` answers with `resume`; the
// child E2 succeeds. follow() runs it to its end on a fake clock.
struct ControllerScene {
  pb::test::TempDir tmp;
  fs::path out = tmp / "out";
  fs::path dir = ledger::directory(out, k_run_id);
  LoopRunner runner;
  FakeClock clock;
  pb::runs::Timing timing;
  pb::runs::FollowOptions options;
  std::ostringstream logs, err;

  explicit ControllerScene(std::function<pb::proc::Result(const pb::proc::Argv &)> resume) {
    pb::test::write_file(
        dir / "1.json",
        nlohmann::json{
            {"attempt", 1}, {"started_unix", 1}, {"cause", "first_start"}, {"experiment_id", "E1"}}
            .dump());
    runner.experiments["E1"] = {view("E1", status_preempted(10))};
    runner.experiments["E2"] = {view("E2", status_exited(0, 30))};
    runner.resume = std::move(resume);
    timing.clock = &clock;
    timing.sleep = [this](std::chrono::milliseconds d) {
      clock.t += d;
      return true;
    };
    options.poll_interval = std::chrono::seconds(1);
    options.recover.enabled = true;
    options.recover.controller = true;
    options.recover.program = {"pb-self"};
  }

  std::string view(const std::string &id, const OrderedJson &status) const {
    return printed(experiment({job(id + "J0",
                                   0,
                                   status,
                                   "T",
                                   {{"OUTPUT_DIR", out.string()},
                                    {"WANDB_RUN_ID", k_run_id},
                                    {"PRIMEBEAKER_MAX_RECOVERIES", "3"}})},
                              id));
  }

  int follow() {
    pb::beaker::Client beaker(runner, "beaker", timing, pb::beaker::RetryPolicy::for_reads());
    return pb::runs::follow_run("E1", options, beaker, logs, err);
  }
};

pb::proc::Result receipt_of_e2() {
  pb::proc::Result result;
  result.exit_code = 0;
  result.out = nlohmann::json{
      {"resume", {{"checkpoint", {{"step", 10}}}}},
      {"child_experiment_id",
       "E2"}}.dump();
  return result;
}

// A controller, which nobody watches, does not end when `rl resume` keeps failing in a way that
// passes (beaker down): it tries again later, takes its own claim over, and resubmits once.
TEST(RunsRecoverLoop, AControllerKeepsTryingWhenRlResumeFailsForNow) {
  int tries = 0;
  std::set<std::string> child_names;
  ControllerScene scene([&](const pb::proc::Argv &argv) {
    ++tries;
    const auto name = std::find(argv.begin(), argv.end(), "--child-name");
    EXPECT_NE(name, argv.end());
    child_names.insert(*(name + 1));
    if (tries <= 4) { // more than one round of tries
      pb::proc::Result result;
      result.exit_code = 4;
      result.err = "primebeaker: error: beaker: 503 Service Unavailable\n";
      return result;
    }
    return receipt_of_e2();
  });
  scene.options.recover.backoff = std::chrono::seconds(10);
  const auto &err = scene.err;
  EXPECT_EQ(scene.follow(), 0) << err.str();
  EXPECT_EQ(tries, 5) << err.str();
  EXPECT_EQ(child_names.size(), 1u); // every try under the claim's one name
  EXPECT_NE(err.str().find("E1: `rl resume` failed for now; trying again in 1m20s"),
            std::string::npos)
      << err.str();
  const auto history = ledger::read(scene.dir);
  ASSERT_EQ(history.claims.size(), 1u);
  EXPECT_EQ(history.claims[0].child_experiment, "E2");
  EXPECT_GE(history.claims[0].generation, 2); // its own claim taken over after the pause
  const auto status = ledger::read_controller_status(scene.dir);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->state, "ended");
}

// An `rl resume` killed by a signal (out of memory) or printing no receipt may or may not have
// submitted: the controller pauses and takes its claim over (which finds a child by its name),
// instead of ending the run's recovery.
TEST(RunsRecoverLoop, AControllerTakesItsClaimOverWhenRlResumeDiesOrPrintsNoReceipt) {
  for (const bool killed : {true, false}) {
    int tries = 0;
    ControllerScene scene([&](const pb::proc::Argv &) {
      if (++tries > 1) {
        return receipt_of_e2();
      }
      pb::proc::Result result;
      result.exit_code = 0;
      if (killed) {
        result.signal = 9;
      } else {
        result.out = "not a receipt";
      }
      return result;
    });
    const auto &err = scene.err;
    EXPECT_EQ(scene.follow(), 0) << err.str();
    EXPECT_EQ(tries, 2) << err.str();
    const auto history = ledger::read(scene.dir);
    ASSERT_EQ(history.claims.size(), 1u);
    EXPECT_EQ(history.claims[0].child_experiment, "E2") << err.str();
    EXPECT_NE(err.str().find("trying again in"), std::string::npos) << err.str();
  }
}

// Two claimants of one claim: the first's lease ran out while its `rl resume` was still
// submitting, so this one's create of the claim's name meets the first one's experiment. That
// experiment is the resubmission (the chaos harness, seed 7 under ASan): taken, not given up.
TEST(RunsRecoverLoop, ATakeoverWhoseCreateMeetsTheEarlierClaimantsChildTakesThatChild) {
  int tries = 0;
  ControllerScene *scene_ptr = nullptr;
  ControllerScene scene([&](const pb::proc::Argv &argv) {
    ++tries;
    const auto name = std::find(argv.begin(), argv.end(), "--child-name");
    EXPECT_NE(name, argv.end());
    // The earlier claimant's create lands just before ours.
    scene_ptr->runner.experiments["jdoe/" + *(name + 1)] = {
        scene_ptr->view("E2", status_exited(0, 30))};
    pb::proc::Result result;
    result.exit_code = pb::beaker::k_exit_already_exists;
    result.err = "primebeaker: error: beaker could not create experiment " + *(name + 1) +
                 " (exit code 1): experiment name is already in use\n";
    return result;
  });
  scene_ptr = &scene;
  const auto &err = scene.err;
  EXPECT_EQ(scene.follow(), 0) << err.str();
  EXPECT_EQ(tries, 1) << err.str();
  EXPECT_NE(err.str().find("was created meanwhile by an earlier claimant; taking it"),
            std::string::npos)
      << err.str();
  EXPECT_EQ(err.str().find("no retry mends"), std::string::npos) << err.str();
  const auto history = ledger::read(scene.dir);
  ASSERT_EQ(history.claims.size(), 1u);
  EXPECT_EQ(history.claims[0].child_experiment, "E2");
}

// ---- The recovery controller under chaos (bench/recovery/chaos.py, docs/recovery.md) ----

// A few seeds of the harness: the real `rl submit` against a fake beaker world that preempts
// the run at random; the controller started from the spec submit created, killed and restarted,
// terminal followers beside it. The 100-seed figures are bench/recovery/README.md's.
TEST(RecoveryController, EveryPreemptionWithinTheBudgetIsResubmittedExactlyOnce) {
  pb::proc::Command command;
  command.argv = {"python3",
                  (pb::test::source_dir() / "bench/recovery/chaos.py").string(),
                  "--binary",
                  pb::test::binary_path().string(),
                  "--seeds",
                  "2",
                  "--first-seed",
                  "7"};
  command.env_set["CHAOS_PER_SEED"] = "1";
  command.timeout = std::chrono::seconds(900);
  pb::proc::SystemRunner runner;
  const auto result = runner.run(command);
  EXPECT_TRUE(result.ok()) << result.out << result.err;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["problems"].size(), 0u) << summary.dump(2);
  EXPECT_GT(summary["preemptions_injected"].get<int>(), 0);
  EXPECT_EQ(summary["recovered"], summary["within_budget"]);
  EXPECT_EQ(summary["duplicate_resubmissions"], 0);
  EXPECT_EQ(summary["controller_ended_by_itself"], 2);
  for (const auto &seed : summary["per_seed"]) {
    EXPECT_GE(seed["controller_starts"].get<int>(), 1) << seed.dump();
    EXPECT_EQ(seed["controller_exit"], 0) << seed.dump();
  }
}

// The same for a Prime-RL v0.9 run (no registry; its run directory): submit, preempt, recover,
// each new experiment resuming from the newest complete step.
TEST(RecoveryController, AV09RunIsRecoveredEndToEnd) {
  pb::proc::Command command;
  command.argv = {"python3",
                  (pb::test::source_dir() / "bench/recovery/chaos.py").string(),
                  "--binary",
                  pb::test::binary_path().string(),
                  "--seeds",
                  "2",
                  "--first-seed",
                  "3",
                  "--generation",
                  "v0.9"};
  command.timeout = std::chrono::seconds(900);
  pb::proc::SystemRunner runner;
  const auto result = runner.run(command);
  EXPECT_TRUE(result.ok()) << result.out << result.err;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["problems"].size(), 0u) << summary.dump(2);
  EXPECT_GT(summary["recovered"].get<int>(), 0) << summary.dump(2);
  EXPECT_EQ(summary["recovered"], summary["within_budget"]);
  EXPECT_EQ(summary["duplicate_resubmissions"], 0);
}

} // namespace

namespace {

// `stop` stops the run and its controller; `status` says who recovers it and what it last did.
TEST(RecoveryController, StopStopsTheRunAndItsControllerAndStatusShowsIt) {
  RecoverHarness h;
  auto run = topology(k_source, h.weka, status_running(), "3");
  auto &env = run["jobs"][0]["execution"]["spec"]["envVars"];
  env.push_back({{"name", "PRIMEBEAKER_RECOVER"}, {"value", "controller"}});
  env.push_back({{"name", "PRIMEBEAKER_CONTROLLER_NAME"}, {"value", "search-recovery"}});
  h.beaker.on({"experiment", "get", k_source}, printed(run));
  OrderedJson controller = topology(k_child, h.weka, status_running(), "3");
  controller["name"] = "search-recovery";
  h.beaker.on({"experiment", "get", "jdoe/search-recovery"}, printed(controller));
  h.beaker.on({"experiment", "stop"}, "");
  // What the controller last wrote in the ledger.
  ledger::ControllerStatus status;
  status.controller_experiment = k_child;
  status.following = k_source;
  status.state = "following";
  status.last_action = std::string("following ") + k_source;
  status.updated_unix = 1786000000;
  status.restarts = 2;
  ledger::write_controller_status(h.ledger_dir, status);

  const auto shown = h.run({"status", k_source});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find(std::string("recovered by search-recovery: following ") + k_source),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("restarted 2x"), std::string::npos) << shown.out;
  const auto json = h.run({"status", k_source, "--json"});
  const auto view = nlohmann::json::parse(json.out)["recovery"]["controller"];
  EXPECT_EQ(view["mode"], "controller");
  EXPECT_EQ(view["state"], "following");

  h.beaker.on({"experiment", "get", k_child}, printed(controller));
  const auto stopped = h.run({"stop", k_source, "--yes"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  const auto stops = h.beaker.calls_matching({"experiment", "stop"});
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0].argv.back(), k_source);
  EXPECT_EQ(stops[1].argv.back(), k_child); // the controller, by the id its status records
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "get", "jdoe/search-recovery"}).empty());
  const auto receipt = nlohmann::json::parse(stopped.out);
  EXPECT_EQ(receipt["controller_experiment_id"], k_child);
  EXPECT_EQ(receipt["controller_stopped"], true);
  // One line per experiment stopped.
  EXPECT_NE(
      stopped.err.find(std::string("primebeaker: stopped ") + k_source + " (the training run)\n"),
      std::string::npos)
      << stopped.err;
  EXPECT_NE(stopped.err.find(std::string("primebeaker: stopped ") + k_child +
                             " (its recovery controller)\n"),
            std::string::npos)
      << stopped.err;
}

// ---- One chain, one truth (docs/runs.md "One chain") ----

// A claim and its child as a recovering actor records them.
void record_recovery(const fs::path &dir,
                     const std::string &source,
                     const std::string &child,
                     std::int64_t number,
                     double when,
                     std::optional<std::int64_t> step) {
  ledger::Claim claim;
  claim.source_experiment = source;
  claim.cause = "preemption";
  claim.number = number;
  claim.by = "controller 01CONTROLLER";
  claim.claimed_unix = when;
  claim.attempt_id = "abcdef12-recover" + std::to_string(number);
  claim.child_name = "search-recover" + std::to_string(number) + "-abcdef12";
  ASSERT_TRUE(ledger::write_claim(dir, claim));
  ledger::ChildStart from;
  from.resume_step = step;
  from.from_start = !step;
  ASSERT_TRUE(ledger::write_claim_child(dir, source, child, when + 1, from));
}

// A controller that took a claim over after `rl resume` died before its receipt records the child
// without knowing where it starts (`"from": null`): that record is read, not set aside.
TEST(RunsChain, AChildWhoseStartIsUnknownIsStillRead) {
  RecoverHarness h;
  ledger::Claim claim;
  claim.source_experiment = k_source;
  claim.cause = "preemption";
  claim.number = 1;
  claim.by = "controller 01CONTROLLER";
  claim.claimed_unix = 1000;
  claim.attempt_id = "abcdef12-recover1";
  claim.child_name = "search-recover1-abcdef12";
  ASSERT_TRUE(ledger::write_claim(h.ledger_dir, claim));
  ASSERT_TRUE(ledger::write_claim_child(h.ledger_dir, k_source, k_child, 1001, {}));
  const auto raw = nlohmann::json::parse(
      pb::test::read_file(h.ledger_dir / "claims" / (std::string(k_source) + ".child.json")));
  ASSERT_TRUE(raw["from"].is_null());
  const auto history = ledger::read(h.ledger_dir);
  EXPECT_TRUE(history.unreadable.empty()) << history.unreadable.front();
  const auto *read = history.claim_of(k_source);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->child_experiment, k_child);
  EXPECT_FALSE(read->child_resume_step.has_value());
  EXPECT_FALSE(read->child_from_start);
}

// After two recoveries, the receipt (which names the first experiment), an id and the list all
// show the newest experiment and count both recoveries; stop stops the newest and the controller
// by the ids the receipt and the ledger hold.
TEST(RunsChain, StatusListAndStopFollowTheWholeChain) {
  constexpr const char *k_newest = "01JZ8M3Q4T5V6W7X8Y9Z0CHLD2";
  constexpr const char *k_controller = "01JZ8M3Q4T5V6W7X8Y9Z0CTRL1";
  RecoverHarness h;
  record_recovery(h.ledger_dir, k_source, k_child, 1, 1000, std::nullopt);
  record_recovery(h.ledger_dir, k_child, k_newest, 2, 2000, 20);
  auto with_controller = [&](OrderedJson run) {
    auto &env = run["jobs"][0]["execution"]["spec"]["envVars"];
    env.push_back({{"name", "PRIMEBEAKER_RECOVER"}, {"value", "controller"}});
    env.push_back({{"name", "PRIMEBEAKER_CONTROLLER_NAME"}, {"value", "search-recovery"}});
    return run;
  };
  auto source = with_controller(topology(k_source, h.weka, status_preempted(20), "10"));
  auto child = with_controller(topology(k_child, h.weka, status_preempted(40), "10"));
  auto newest = with_controller(topology(k_newest, h.weka, status_running(), "10"));
  newest["created"] = stamp(45);
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on({"experiment", "get", k_child}, printed(child));
  h.beaker.on({"experiment", "get", k_newest}, printed(newest));
  const fs::path receipt = h.tmp.path() / "receipt.json";
  pb::test::write_file(
      receipt,
      OrderedJson{{"experiment_name", "search"},
                  {"experiment_id", k_source},
                  {"recovery",
                   {{"controller",
                     {{"experiment_name", "search-recovery"}, {"experiment_id", k_controller}}}}}}
          .dump());

  for (const std::string &run : {receipt.string(), std::string(k_source), std::string(k_child)}) {
    const auto shown = h.run({"status", run, "--json"});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    const auto view = nlohmann::json::parse(shown.out);
    EXPECT_EQ(view["experiment_id"], k_newest) << run;
    EXPECT_EQ(view["current_experiment_id"], k_newest);
    EXPECT_EQ(view["recoveries"], 2);
    EXPECT_EQ(view["chain"]["original_experiment_id"], k_source);
    ASSERT_EQ(view["chain"]["experiments"].size(), 3u);
    EXPECT_EQ(view["chain"]["experiments"][1]["from"], "start");
    EXPECT_EQ(view["chain"]["experiments"][2]["from"], "step 20");
    EXPECT_EQ(view["chain"]["max_recoveries"], 10);
  }
  const auto table = h.run({"status", receipt.string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(std::string("chain       ") + k_source + " (from start) -> " + k_child +
                           " (from start) -> " + k_newest +
                           " (from step 20); 2 of 10 recoveries used"),
            std::string::npos)
      << table.out;

  // list: one row for the run, its newest experiment, two recoveries.
  h.beaker.on({"workspace", "experiments", "ai2/oe-agents"},
              OrderedJson::array({newest, child, source}).dump());
  const auto listed = h.run({"list", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto rows = nlohmann::json::parse(listed.out);
  ASSERT_EQ(rows.size(), 1u) << listed.out;
  EXPECT_EQ(rows[0]["current_experiment_id"], k_newest);
  EXPECT_EQ(rows[0]["original_experiment_id"], k_source);
  EXPECT_EQ(rows[0]["recoveries"], 2);
  const auto list_table = h.run({"list"});
  EXPECT_NE(list_table.out.find(k_newest), std::string::npos) << list_table.out;
  EXPECT_EQ(list_table.out.find(k_source), std::string::npos) << list_table.out;

  // stop of the receipt: the newest experiment and the controller, each by its id; the
  // controller's stop fails, the training run's stop is still reported, exit 4.
  OrderedJson controller = topology(k_controller, h.weka, status_running(), "10");
  h.beaker.on({"experiment", "get", k_controller}, printed(controller));
  h.beaker.on({"experiment", "stop", k_newest}, "");
  h.beaker.on({"experiment", "stop", k_controller}, "", 1, "Error: forbidden\n");
  const auto stopped = h.run({"stop", receipt.string(), "--yes"});
  EXPECT_EQ(stopped.exit_code, 4) << stopped.err;
  const auto stops = h.beaker.calls_matching({"experiment", "stop"});
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0].argv.back(), k_newest);
  EXPECT_EQ(stops[1].argv.back(), k_controller);
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "get", "jdoe/search-recovery"}).empty());
  EXPECT_NE(
      stopped.err.find(std::string("primebeaker: stopped ") + k_newest + " (the training run)\n"),
      std::string::npos)
      << stopped.err;
  EXPECT_NE(stopped.err.find(std::string("primebeaker: could not stop ") + k_controller +
                             " (its recovery controller): "),
            std::string::npos)
      << stopped.err;
  EXPECT_EQ(nlohmann::json::parse(stopped.out)["stopped"], true);
}

// A run preempted before its first complete checkpoint is resubmitted once, from the start, in
// the same output dir with the same W&B run id; the ledger says "from the start".
TEST(RunsFollowRecover, APreemptionBeforeTheFirstCheckpointIsResubmittedFromTheStart) {
  RecoverHarness h;
  fs::remove_all(h.weka / "out/checkpoints");
  fs::remove_all(h.weka / "out/run_default");
  const auto source = topology(k_source, h.weka, status_preempted(5), "3");
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on({"experiment", "get", k_child},
              printed(topology(k_child, h.weka, status_exited(0, 50), "3")));
  h.beaker.on({"job", "logs"}, "");
  h.answer_resume(source);
  const auto result =
      h.run({"follow", k_source, "--recover", "--recover-backoff=0", "--poll-interval", "0.01"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_EQ(h.beaker.calls_matching({"experiment", "create"}).size(), 1u) << result.err;
  EXPECT_NE(result.err.find(std::string(k_source) + " resubmitted as " + k_child +
                            " from the start (it had no complete checkpoint) (recovery 1 of "
                            "--max-recoveries 3"),
            std::string::npos)
      << result.err;
  const auto spec = nlohmann::json::parse(h.beaker.kept_files().at(0));
  std::string config_path;
  for (const auto &var : spec["tasks"][0]["envVars"]) {
    if (var["name"] == "CONFIG_PATH") {
      config_path = var["value"];
    }
    if (var["name"] == "OUTPUT_DIR") {
      EXPECT_EQ(var["value"], (h.weka / "out").string()); // the same output dir
    }
    if (var["name"] == "WANDB_RUN_ID") {
      EXPECT_EQ(var["value"], k_run_id); // the same W&B run
    }
    if (var["name"] == "PRIMEBEAKER_RESUME_STEP") {
      EXPECT_EQ(var["value"], "start");
    }
  }
  const std::string resumed = pb::test::read_file(config_path);
  EXPECT_EQ(resumed.find("resume_step"), std::string::npos) << resumed;
  EXPECT_NE(resumed.find("clean_output_dir = false"), std::string::npos) << resumed;
  const auto history = ledger::read(h.ledger_dir);
  ASSERT_EQ(history.claims.size(), 1u);
  EXPECT_EQ(history.claims[0].child_experiment, k_child);
  EXPECT_TRUE(history.claims[0].child_from_start);
  EXPECT_EQ(history.claims[0].number, 1); // counted against --max-recoveries
  const auto raw = nlohmann::json::parse(
      pb::test::read_file(h.ledger_dir / "claims" / (std::string(k_source) + ".child.json")));
  EXPECT_EQ(raw["from"], "start");
  EXPECT_TRUE(raw["resume_step"].is_null());
  // By hand, the same run is refused with the flag that relaunches it.
  const auto by_hand = h.run({"rl", "resume", k_source, "--dry-run"});
  EXPECT_NE(by_hand.exit_code, 0);
  EXPECT_NE(by_hand.err.find("--from-start-if-none"), std::string::npos) << by_hand.err;
}

// --timeout holds while recovery waits: a 60 s backoff does not keep `follow` past it.
TEST(RunsFollowRecover, TimeoutHoldsWhileRecoveryWaits) {
  RecoverHarness h;
  const auto source = topology(k_source, h.weka, status_preempted(20), "3");
  h.beaker.on({"experiment", "get", k_source}, printed(source));
  h.beaker.on({"job", "logs"}, "");
  const auto started = std::chrono::steady_clock::now();
  const auto result = h.run({"follow",
                             k_source,
                             "--recover",
                             "--recover-backoff",
                             "60",
                             "--poll-interval",
                             "0.01",
                             "--timeout",
                             "2"});
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(result.exit_code, 13) << result.err;
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_NE(result.err.find("--timeout reached while recovering it"), std::string::npos)
      << result.err;
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "create"}).empty());
}

} // namespace

namespace {

// Notifications under chaos (docs/notify.md): the run launched with --notify to a local HTTP
// sink, its controller killed right after the first post and restarted, terminal followers
// beside it; the sink gets one post per transition: one `preempted` and one `resubmitted`
// naming both experiments per recovery, never two (bench/recovery/chaos.py --notify-sink).
TEST(RecoveryController, TheWebhookIsToldOfEachTransitionOnce) {
  pb::proc::Command command;
  command.argv = {"python3",
                  (pb::test::source_dir() / "bench/recovery/chaos.py").string(),
                  "--binary",
                  pb::test::binary_path().string(),
                  "--seeds",
                  "1",
                  "--first-seed",
                  "2",
                  "--notify-sink",
                  "record"};
  command.env_set["CHAOS_PER_SEED"] = "1";
  command.timeout = std::chrono::seconds(900);
  pb::proc::SystemRunner runner;
  const auto result = runner.run(command);
  EXPECT_TRUE(result.ok()) << result.out << result.err;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["problems"].size(), 0u) << summary.dump(2);
  const auto &seed = summary["per_seed"][0];
  EXPECT_GE(seed["controller_kills"].get<int>(), 1) << seed.dump();
  EXPECT_GE(seed["controller_starts"].get<int>(), 2) << seed.dump();
  std::map<std::string, int> count;
  std::string first;
  std::string child;
  std::string previous;
  for (const auto &post : seed["posts"]) {
    ++count[post["event"].get<std::string>()];
    if (post["event"] == "preempted" && first.empty()) {
      first = post["experiment_id"];
    }
    if (post["event"] == "resubmitted" && child.empty()) {
      child = post["experiment_id"];
      previous = post["previous_experiment_id"];
    }
  }
  EXPECT_EQ(count["preempted"], seed["injected"].get<int>()) << seed.dump();
  EXPECT_EQ(count["resubmitted"], seed["recovered"].get<int>()) << seed.dump();
  ASSERT_GE(count["resubmitted"], 1) << seed.dump();
  EXPECT_EQ(previous, first);
  EXPECT_NE(child, first);
}

} // namespace
