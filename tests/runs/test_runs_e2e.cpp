// SPDX-License-Identifier: MIT
// The real binary against a fake `beaker` that plays scripted experiment lifecycles and log
// streams (pb::test::FakeBeaker): follow's prefixes and exit codes, Ctrl-C leaving the run
// running, stop of a joint run, status, logs and list.
#include "fixtures.hpp"
#include "test_support.hpp"

#include <primebeaker/core/subprocess.hpp>
#include <primebeaker/registry/records.hpp>
#include <primebeaker/registry/registry.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <csignal>
#include <thread>

namespace {

using namespace pb::test::runs;
using pb::OrderedJson;
using pb::test::FakeAnswer;
using pb::test::RunResult;

struct Harness {
  pb::test::TempDir tmp;
  pb::test::FakeBin bin{tmp.path()};
  pb::test::FakeBeaker beaker{bin};

  RunResult run(const std::vector<std::string> &args,
                std::optional<std::string> stdin_data = std::nullopt) {
    pb::test::RunOptions options;
    options.path_prepend = {bin.bin()};
    options.stdin_data = std::move(stdin_data);
    options.cwd = tmp.path();
    return pb::test::run_primebeaker(args, options);
  }
  std::size_t stops() const { return beaker.calls_matching({"experiment", "stop"}).size(); }
};

FakeAnswer said(std::string out) {
  return FakeAnswer{std::move(out), 0, {}};
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return lines;
}

TEST(RunsFollow, FourReplicasInterleavedUntilSucceeded) {
  Harness h;
  // pending -> scheduled -> running -> running -> finished: trainer exits 0 and the inference
  // replicas are canceled because their sibling completed.
  std::vector<OrderedJson> done_jobs;
  done_jobs.push_back(job(job_id(0), 0, status_exited(0, 30)));
  for (int rank = 1; rank < 4; ++rank) {
    done_jobs.push_back(
        job(job_id(rank), rank, status_canceled(0, "sibling task completed", 31, 143)));
  }
  h.beaker.on_sequence({"experiment", "get", k_experiment},
                       {said(printed(four(status_pending()))),
                        said(printed(four(status_scheduled()))),
                        said(printed(four(status_running()))),
                        said(printed(four(status_running()))),
                        said(printed(experiment(done_jobs)))});
  for (int rank = 0; rank < 4; ++rank) {
    const std::string r = std::to_string(rank);
    const std::string first = "r" + r + " step 1\nr" + r + " step 2\n";
    const std::string second = first + "r" + r + " step 3\nr" + r + " step 4 part";
    const std::string third = second + "ial\nr" + r + " done";
    h.beaker.on_sequence({"job", "logs", job_id(rank)}, {said(first), said(second), said(third)});
  }
  const auto result = h.run({"follow", k_experiment, "--poll-interval", "0.01"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> expected;
  const char *labels[] = {"trainer:0", "inference:1", "inference:2", "inference:3"};
  for (const auto &[from, to] : {std::pair{1, 2}, std::pair{3, 3}}) {
    for (int rank = 0; rank < 4; ++rank) {
      for (int step = from; step <= to; ++step) {
        expected.push_back(fmt::format("[{}] r{} step {}", labels[rank], rank, step));
      }
    }
  }
  for (int rank = 0; rank < 4; ++rank) {
    expected.push_back(fmt::format("[{}] r{} step 4 partial", labels[rank], rank));
    expected.push_back(fmt::format("[{}] r{} done", labels[rank], rank));
  }
  EXPECT_EQ(lines_of(result.out), expected) << result.out;
  EXPECT_NE(result.err.find("[inference:3] canceled: sibling task completed\n"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("succeeded"), std::string::npos) << result.err;
  EXPECT_EQ(h.beaker.calls_matching({"job", "logs"}).size(), 12u);
  EXPECT_EQ(h.stops(), 0u);
}

struct OutcomeCase {
  const char *name;
  OrderedJson final_experiment;
  int exit_code;
  const char *says;
};

TEST(RunsFollow, EveryOutcomeHasItsExitCode) {
  std::vector<OutcomeCase> cases;
  cases.push_back(
      {"failed",
       experiment({job(job_id(0), 0, status_exited(90, 21)),
                   job(job_id(1), 1, status_canceled(0, "sibling task failed", 22, 143)),
                   job(job_id(2), 2, status_exited(1, 20)),
                   job(job_id(3), 3, status_canceled(0, "sibling task failed", 22, 143))}),
       10,
       "failed: inference:2 exit code 1"});
  cases.push_back(
      {"preempted",
       experiment({job(job_id(0), 0, status_preempted(30)),
                   job(job_id(1), 1, status_canceled(0, "sibling task preempted", 31, 143))}),
       11,
       "preempted: trainer:0"});
  cases.push_back(
      {"canceled", four(status_canceled(4, "stopped by jdoe", 30, 143)), 12, "canceled"});
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    Harness h;
    h.beaker.on({"experiment", "get", k_experiment}, printed(c.final_experiment));
    h.beaker.on({"job", "logs"}, "working\n");
    const auto result = h.run({"follow", k_experiment, "--poll-interval=0.01"});
    EXPECT_EQ(result.exit_code, c.exit_code) << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
    EXPECT_EQ(h.stops(), 0u);
  }
}

TEST(RunsFollow, TimeoutLeavesTheRunRunning) {
  Harness h;
  h.beaker.on({"experiment", "get", k_experiment}, printed(four(status_running())));
  h.beaker.on({"job", "logs"}, "working\n");
  const auto result = h.run({"follow", k_experiment, "--timeout", "1", "--poll-interval", "0.2"});
  EXPECT_EQ(result.exit_code, 13) << result.err;
  EXPECT_NE(result.err.find("--timeout reached (4 running); experiment " +
                            std::string(k_experiment) + " keeps running"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(h.stops(), 0u);
}

TEST(RunsFollow, ReplicaFilterAndSince) {
  Harness h;
  h.beaker.on({"experiment", "get", k_experiment}, printed(four(status_exited(0, 30))));
  h.beaker.on({"job", "logs", job_id(2)},
              "2026-08-10T10:01:00Z old\n  old continuation\n2026-08-10T10:06:00Z new\n  new "
              "continuation\n");
  const auto result =
      h.run({"follow", k_experiment, "--replica", "2", "--since", "2026-08-10T10:05:00Z"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "[inference:2] 2026-08-10T10:06:00Z new\n[inference:2]   new continuation\n");
  EXPECT_EQ(h.beaker.calls_matching({"job", "logs"}).size(), 1u);

  const auto bad = h.run({"follow", k_experiment, "--replica", "7"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--replica 7"), std::string::npos) << bad.err;
}

TEST(RunsFollow, CtrlCStopsFollowingAndLeavesTheRunRunning) {
  Harness h;
  h.beaker.on({"experiment", "get", k_experiment}, printed(four(status_running())));
  h.beaker.on({"job", "logs"}, "working\n");
  pb::proc::SpawnSpec spec;
  spec.argv = {pb::test::binary_path().string(), "follow", k_experiment, "--poll-interval", "0.05"};
  spec.env = {{"PATH", h.bin.bin().string() + ":/usr/bin:/bin"},
              {"HOME", h.tmp.path().string()},
              {"LANG", "C.UTF-8"},
              {"NO_COLOR", "1"}};
  spec.out = pb::proc::Output::truncate_to(h.tmp / "out.txt");
  spec.err = pb::proc::Output::truncate_to(h.tmp / "err.txt");
  auto child = pb::proc::Child::spawn(spec);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const auto logs_calls = [&]() -> std::size_t {
    try {
      return h.beaker.calls_matching({"job", "logs"}).size();
    } catch (const std::exception &) {
      return 0; // a call being recorded right now: look again
    }
  };
  while (logs_calls() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(logs_calls(), 4u);
  ::kill(child.pid(), SIGINT);
  const auto status = child.wait();
  const std::string err = pb::test::read_file(h.tmp / "err.txt");
  EXPECT_EQ(status.code(), 130) << err;
  EXPECT_NE(
      err.find("stopped following; experiment " + std::string(k_experiment) + " keeps running"),
      std::string::npos)
      << err;
  EXPECT_NE(err.find("primebeaker stop " + std::string(k_experiment)), std::string::npos);
  EXPECT_EQ(h.stops(), 0u);
  // Each replica's line was printed once, however many polls ran.
  EXPECT_EQ(pb::test::read_file(h.tmp / "out.txt"),
            "[trainer:0] working\n[inference:1] working\n[inference:2] working\n[inference:3] "
            "working\n");
}

TEST(RunsStop, JointRunFromReceiptStopsBothAfterAsking) {
  Harness h;
  h.beaker.on({"experiment", "get", k_experiment}, printed(four(status_running())));
  h.beaker.on({"experiment", "stop"}, "");
  const OrderedJson receipt = {
      {"service_experiment_id", k_service},
      {"service", {{"experiment_name", "search-services"}}},
      {"rl",
       {{"experiment_name", "search"},
        {"launch_id", "abc"},
        {"spec_path", "/weka/primebeaker/beaker_experiments/search-abc.json"},
        {"stdout", std::string("Experiment ") + k_experiment + " submitted. See progress at x\n"},
        {"wandb_run", {{"url", nullptr}}}}}};
  pb::test::write_file(h.tmp / "run.json", receipt.dump(2));

  const auto declined = h.run({"stop", "run.json"}, "n\n");
  EXPECT_EQ(declined.exit_code, 1);
  EXPECT_NE(
      declined.err.find("and the service stack it owns, experiment " + std::string(k_service)),
      std::string::npos)
      << declined.err;
  EXPECT_NE(declined.err.find("nothing stopped"), std::string::npos);
  EXPECT_EQ(h.stops(), 0u);
  EXPECT_EQ(h.run({"stop", "run.json"}).exit_code, 1); // no answer at all: nothing stopped
  EXPECT_EQ(h.stops(), 0u);

  const auto accepted = h.run({"stop", "run.json"}, "y\n");
  ASSERT_EQ(accepted.exit_code, 0) << accepted.err;
  const auto stops = h.beaker.calls_matching({"experiment", "stop"});
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0].argv.back(), k_experiment);
  EXPECT_EQ(stops[1].argv.back(), k_service);
  const auto out = nlohmann::json::parse(accepted.out);
  EXPECT_EQ(out["stopped"], true);
  EXPECT_EQ(out["service_stopped"], true);
}

TEST(RunsStop, JointRunByIdFindsTheServiceInTheSpecAndYesSkipsTheQuestion) {
  Harness h;
  h.beaker.on(
      {"experiment", "get", k_experiment},
      printed(four(status_running(), {{"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", k_service}})));
  h.beaker.on({"experiment", "stop"}, "");
  const auto result = h.run({"stop", k_experiment, "--yes"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto stops = h.beaker.calls_matching({"experiment", "stop"});
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[1].argv.back(), k_service);

  Harness keep;
  keep.beaker.on(
      {"experiment", "get", k_experiment},
      printed(four(status_running(), {{"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", k_service}})));
  keep.beaker.on({"experiment", "stop"}, "");
  ASSERT_EQ(keep.run({"stop", k_experiment, "-y", "--keep-services"}).exit_code, 0);
  EXPECT_EQ(keep.stops(), 1u);
}

// Prime-RL v0.9 (docs/launch.md "Prime-RL v0.9"): inference replicas come first, and the
// checkpoints are in the run directory the spec names (the TOML names no run).
TEST(RunsStatus, PrimeRlV09RolesAndRunDirectory) {
  Harness h;
  const auto work = h.tmp / "work";
  pb::test::write_file(work / "rl.toml",
                       "output_dir = \"out\"\n[monitors.wandb]\nproject = \"p\"\n[orchestrator]\n"
                       "[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 1\n"
                       "num_infer_nodes = 1\ngpus_per_node = 2\n[inference.vllm]\n");
  const auto step = work / "out/run9/checkpoints/step_3";
  pb::test::write_file(step / "trainer/.metadata", "m");
  pb::test::write_file(step / "trainer/__0_0.distcp", "shard");
  pb::test::write_file(step / "trainer/__1_0.distcp", "shard");
  pb::test::write_file(step / "orchestrator/progress.pt", "p");
  h.beaker.on({"experiment", "get", k_experiment},
              printed(experiment({job(job_id(0),
                                      0,
                                      status_running(),
                                      "T",
                                      {{"CONFIG_PATH", (work / "rl.toml").string()},
                                       {"OUTPUT_DIR", "out"},
                                       {"WORKING_DIR", work.string()},
                                       {"PRIME_RL_GENERATION", "v0.9"},
                                       {"PRIME_RL_RUN_DIR", "run9"},
                                       {"NUM_INFER_NODES", "1"},
                                       {"WANDB_RUN_ID", "abc"}}),
                                  job(job_id(1), 1, status_running(), "T")})));
  const auto result = h.run({"status", k_experiment, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["replicas"][0]["role"], "inference");
  EXPECT_EQ(json["replicas"][1]["role"], "trainer");
  EXPECT_EQ(json["checkpoint"]["newest_complete_step"], 3) << json["checkpoint"].dump();
}

TEST(RunsStatus, ReplicasRegistryCheckpointAndWandb) {
  Harness h;
  const auto work = h.tmp / "work";
  pb::test::write_file(
      work / "rl.toml",
      "output_dir = \"out\"\n"
      "[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 1\nnum_infer_nodes = 2\n"
      "[trainer.model]\ncp = 2\ndp_replicate = 2\n[inference]\napi_server_count = 12\n"
      "[inference.parallel]\ndp = 12\n[wandb]\nproject = \"p\"\nname = \"search\"\nentity = "
      "\"team\"\n");
  for (const std::string step : {"step_10", "step_20"}) {
    pb::test::write_file(work / "out/checkpoints" / step / "trainer/.metadata", "m");
    for (int rank = 0; rank < 4; ++rank) {
      pb::test::write_file(work / "out/checkpoints" / step / "trainer" /
                               ("__" + std::to_string(rank) + "_0.distcp"),
                           "shard");
    }
  }
  pb::test::write_file(work / "out/run_default/checkpoints/step_10/orchestrator/progress.pt", "p");
  // step_20 has no progress.pt yet: not complete.
  // The run's attempt ledger (docs/recovery.md): started at t=1000, preempted, resumed from 10
  // with 4 steps and 30 s lost after 60 s down, then an error restart refused.
  const auto ledger = work / "out/primebeaker_recovery/ledger/abc";
  pb::test::write_file(ledger / "1.json",
                       R"({"attempt": 1, "cause": "first_start", "started_unix": 1000})");
  pb::test::write_file(ledger / "2.json",
                       R"({"attempt": 2, "cause": "preemption", "started_unix": 1500, )"
                       R"("resume_step": 10, "steps_lost": 4, "time_lost_seconds": 30, )"
                       R"("downtime_seconds": 60})");
  pb::test::write_file(ledger / "2.end.json",
                       R"({"attempt": 2, "ended_unix": 2000, "exit_code": 7, "root_code": 7})");
  pb::test::write_file(ledger / "3.json",
                       R"({"attempt": 3, "cause": "error", "started_unix": 2100, )"
                       R"("refused": "restart after an error (exit code 7) refused"})");
  pb::test::write_file(ledger / "3.end.json",
                       R"({"attempt": 3, "ended_unix": 2100, "exit_code": 1, "root_code": 1})");
  const auto registry_dir = h.tmp / "registry";
  std::filesystem::create_directories(registry_dir);
  auto store = pb::registry::open_registry(registry_dir.string());
  const double now = pb::registry::epoch_seconds(std::chrono::system_clock::now());
  store->put_server(pb::registry::make_server_record(
      "t1", "h1", 8000, "http://h1:8000", now, {{"model_path", "terminal"}}));
  store->put_server(pb::registry::make_server_record(
      "stale", "h2", 8000, "http://h2:8000", now - 3600, {{"model_path", "terminal"}}));

  h.beaker.on({"experiment", "get", k_experiment},
              printed(experiment({job(job_id(0),
                                      0,
                                      status_running(),
                                      "T",
                                      {{"CONFIG_PATH", (work / "rl.toml").string()},
                                       {"OUTPUT_DIR", "out"},
                                       {"WORKING_DIR", work.string()},
                                       {"REGISTRY", registry_dir.string()},
                                       {"REQUIRED_LITEREGISTRY_SERVICES", R"({"terminal":2})"},
                                       {"WANDB_RUN_ID", "abc"}}),
                                  job(job_id(1), 1, status_scheduled(), "T")})));
  const auto result = h.run({"status", k_experiment, "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["experiment_id"], k_experiment);
  EXPECT_EQ(json["outcome"], "running");
  EXPECT_EQ(json["summary"], "1 running, 1 scheduled");
  ASSERT_EQ(json["replicas"].size(), 2u);
  EXPECT_EQ(json["replicas"][0]["role"], "trainer");
  EXPECT_EQ(json["replicas"][0]["node"], "node-0");
  EXPECT_EQ(json["replicas"][0]["state"], "running");
  EXPECT_TRUE(json["replicas"][0]["exit_code"].is_null());
  EXPECT_EQ(json["replicas"][1]["role"], "inference");
  EXPECT_EQ(json["replicas"][1]["state"], "scheduled");
  EXPECT_TRUE(json["replicas"][1]["started"].is_null()); // Go zero time is unset
  EXPECT_EQ(json["registry"]["ready"], false);
  EXPECT_EQ(json["registry"]["services"]["terminal"]["live"], 1);
  EXPECT_EQ(json["registry"]["services"]["terminal"]["required"], 2);
  EXPECT_EQ(json["checkpoint"]["newest_complete_step"], 10);
  EXPECT_EQ(json["recovery"]["attempts"], 3);
  EXPECT_EQ(json["recovery"]["preemptions_recovered"], 1);
  EXPECT_EQ(json["recovery"]["refused"], 1);
  EXPECT_EQ(json["recovery"]["steps_lost_per_preemption"], nlohmann::json::array({4}));
  EXPECT_EQ(json["recovery"]["last_resume_step"], 10);
  EXPECT_EQ(json["recovery"]["total_seconds"], 1100);
  EXPECT_EQ(json["recovery"]["useful_seconds"], 1010);
  EXPECT_EQ(json["recovery"]["last_refusal"], "restart after an error (exit code 7) refused");
  EXPECT_EQ(json["recovery"]["beaker_restarts"], 0);
  EXPECT_EQ(json["wandb_url"], "https://wandb.ai/team/p/runs/abc");
  EXPECT_EQ(json["url"], std::string("https://beaker.org/ex/") + k_experiment);

  const auto table = h.run({"status", k_experiment});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("registry    not ready: terminal 1/2"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("checkpoint  step 10 (newest complete"), std::string::npos);
  EXPECT_NE(table.out.find("recovery    3 attempts: 1 preemption recovered, 0 restarts on errors, "
                           "0 resubmissions; steps lost per preemption: 4; useful 16m50s of "
                           "18m20s; last resumed from step 10; last start refused: restart after "
                           "an error (exit code 7) refused\n"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("trainer    0     running"), std::string::npos) << table.out;
}

TEST(RunsStatus, UnknownExperimentIsAToolFailure) {
  Harness h;
  h.beaker.on({"experiment", "get"}, "", 1, "experiment \"nope\" not found");
  const auto result = h.run({"status", "jdoe/nope"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("not found"), std::string::npos) << result.err;
  EXPECT_EQ(h.run({"status", "missing-receipt.json"}).exit_code, 3);
}

TEST(RunsLogs, TailAndReplica) {
  Harness h;
  h.beaker.on({"experiment", "get", k_experiment},
              printed(experiment({job(job_id(0), 0, status_running()),
                                  job(job_id(1), 1, status_running()),
                                  job(job_id(2), 2, status_pending())})));
  h.beaker.on({"job", "logs", job_id(0)}, "a\nb\nc\n");
  h.beaker.on({"job", "logs", job_id(1)}, "x\ny\nz");
  const auto one = h.run({"logs", k_experiment, "--replica", "1", "--tail", "2"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "y\nz\n");
  const auto all = h.run({"logs", k_experiment, "--tail=1"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "[trainer:0] c\n[inference:1] z\n");
  EXPECT_NE(all.err.find("[inference:2] pending: no logs yet"), std::string::npos) << all.err;
}

TEST(RunsList, OnlyThisToolsLaunchesAndMine) {
  Harness h;
  auto mine = four(status_running());
  auto theirs =
      experiment({job(job_id(0), 0, status_exited(1, 9))}, "01JZ8M3Q4T5V6W7X8Y9Z0THEIR", "alice");
  theirs["created"] = stamp(5);
  auto foreign = experiment({job(job_id(0), 0, status_running(), "T", {}, {"python", "x.py"})},
                            "01JZ8M3Q4T5V6W7X8Y9Z0FOREI",
                            "jdoe",
                            "hand-made");
  // Listed without its jobs: read in full with `experiment get`.
  const std::string bare_id = "01JZ8M3Q4T5V6W7X8Y9Z0ABARE";
  auto bare_full = experiment({job(job_id(0), 0, status_running())}, bare_id);
  bare_full["created"] = stamp(3);
  auto bare = bare_full;
  bare.erase("jobs");
  OrderedJson all = OrderedJson::array({mine, theirs, foreign, bare});
  h.beaker.on({"workspace", "experiments", "ai2/team"}, all.dump());
  h.beaker.on({"experiment", "get", bare_id}, printed(bare_full));
  h.beaker.on({"account", "whoami"}, R"([{"id": "01HA", "name": "jdoe"}])");
  const auto every = h.run({"list", "--workspace", "ai2/team", "--json"});
  ASSERT_EQ(every.exit_code, 0) << every.err;
  const auto rows = nlohmann::json::parse(every.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["experiment_id"], "01JZ8M3Q4T5V6W7X8Y9Z0THEIR"); // newest first
  EXPECT_EQ(rows[0]["outcome"], "failed");
  EXPECT_EQ(rows[1]["experiment_id"], bare_id);
  EXPECT_EQ(rows[1]["summary"], "1 running");
  EXPECT_EQ(rows[2]["summary"], "4 running");
  EXPECT_TRUE(h.beaker.calls_matching({"account", "whoami"}).empty());

  const auto only_mine = h.run({"list", "-w", "ai2/team", "--mine", "--json"});
  ASSERT_EQ(only_mine.exit_code, 0) << only_mine.err;
  const auto mine_rows = nlohmann::json::parse(only_mine.out);
  ASSERT_EQ(mine_rows.size(), 2u);
  EXPECT_EQ(mine_rows[1]["experiment_id"], k_experiment);
}

TEST(RunsResolve, ABareNameIsYours) {
  Harness h;
  h.beaker.on({"account", "whoami"}, R"([{"name": "jdoe"}])");
  h.beaker.on({"experiment", "get", "jdoe/search"}, printed(four(status_exited(0, 30))));
  h.beaker.on({"job", "logs"}, "fine\n");
  const auto result = h.run({"follow", "search"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(lines_of(result.out).size(), 4u);
}

} // namespace
