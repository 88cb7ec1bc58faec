// SPDX-License-Identifier: MIT
// GPU-hours, queue time, preemption's loss and cost (docs/runs.md "GPU-hours and cost"), the
// price keys (docs/config.md "Prices"), and a queued run's place from a sample `beaker job list
// --cluster` answer (docs/runs.md "Queue position"): the pure arithmetic with a fixed `now`.
#include "fixtures.hpp"
#include "test_support.hpp"

#include <primebeaker/config/config.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/runs/queue.hpp>
#include <primebeaker/runs/usage.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using namespace pb::runs;
using namespace pb::test::runs;
using pb::OrderedJson;
namespace ledger = pb::recovery::ledger;

TimePoint at(const std::string &text) {
  return *parse_time_text(text);
}

// A job status with every time given (empty: Go's zero time).
OrderedJson status_at(const std::string &created,
                      const std::string &started,
                      const std::string &exited,
                      int canceled_code = 0) {
  OrderedJson s = {{"created", created},
                   {"scheduled", started.empty() ? k_zero : created},
                   {"started", started.empty() ? k_zero : started},
                   {"exited", exited.empty() ? k_zero : exited},
                   {"finalized", exited.empty() ? k_zero : exited},
                   {"canceled", k_zero},
                   {"canceledCode", canceled_code}};
  if (canceled_code != 0) {
    s["canceled"] = exited;
  }
  if (!exited.empty()) {
    s["exitCode"] = 0;
  }
  return s;
}

// An experiment whose rank-0 spec asks for `gpus` per replica on ai2/jupiter.
OrderedJson with_gpus(std::vector<OrderedJson> jobs, int gpus, const std::string &id) {
  for (auto &one : jobs) {
    if (one["execution"]["replicaRank"] == 0) {
      one["execution"]["spec"]["resources"] = {{"gpuCount", gpus}};
    }
  }
  auto e = experiment(std::move(jobs), id);
  return e;
}

TEST(RunsUsage, GpuHoursAreEachJobsGpusTimesItsRunTimeAndGrowWhileRunning) {
  // Two replicas of 8 GPUs: rank 0 ran 10:00-10:30, rank 1 10:00-10:15, then a second job of
  // rank 1 (a Beaker retry) from 10:20 still running at 10:50.
  std::vector<OrderedJson> jobs;
  jobs.push_back(job(
      "J0", 0, status_at("2026-08-10T09:50:00Z", "2026-08-10T10:00:00Z", "2026-08-10T10:30:00Z")));
  jobs.push_back(
      job("J1",
          1,
          status_at("2026-08-10T09:50:00Z", "2026-08-10T10:00:00Z", "2026-08-10T10:15:00Z", 1)));
  jobs.push_back(job("J1b", 1, status_at("2026-08-10T10:16:00Z", "2026-08-10T10:20:00Z", "")));
  const RunView run = parse_run(with_gpus(jobs, 8, "E1"));
  ASSERT_EQ(run.replicas.size(), 2u);
  EXPECT_EQ(run.replicas[1].gpus, 8); // rank 1 takes the task's gpuCount from rank 0's spec
  ASSERT_EQ(run.replicas[1].jobs.size(), 2u);

  const auto usage = experiment_usage(run, at("2026-08-10T10:50:00Z"));
  EXPECT_EQ(usage.gpus, 16);
  // 8 x 0.5 + 8 x 0.25 + 8 x 0.5 (10:20 -> now)
  EXPECT_NEAR(usage.gpu_hours, 10.0, 1e-9);
  EXPECT_TRUE(usage.open);
  EXPECT_NEAR(usage.gpu_hours_by_cluster.at("ai2/jupiter"), 10.0, 1e-9);
  // Wave 1: both waited 10 minutes (counted once); wave 2: rank 1's retry waited 4 minutes.
  EXPECT_NEAR(usage.queue_hours, 14.0 / 60, 1e-9);
  // Ten minutes later the running job has 8 more GPU-hours... of 10 minutes.
  EXPECT_NEAR(experiment_usage(run, at("2026-08-10T11:00:00Z")).gpu_hours, 10.0 + 8.0 / 6, 1e-9);
}

TEST(RunsUsage, AQueuedRunHasNoGpuHoursAndItsWaitGrows) {
  const RunView run = parse_run(with_gpus({job("J0", 0, status_at("2026-08-10T10:00:00Z", "", "")),
                                           job("J1", 1, status_at("2026-08-10T10:00:00Z", "", ""))},
                                          8,
                                          "E1"));
  const auto usage = experiment_usage(run, at("2026-08-10T10:30:00Z"));
  EXPECT_EQ(usage.gpu_hours, 0);
  EXPECT_NEAR(usage.queue_hours, 0.5, 1e-9);
  EXPECT_TRUE(usage.open);
}

TEST(RunsUsage, ATypePriceBeatsAClusterPriceAndNoPriceIsNoGuess) {
  const Prices prices = {{"H100", 3.0}, {"ai2/jupiter", 2.5}};
  EXPECT_EQ(price_for(prices, "ai2/jupiter", "H100")->key, "price.H100");
  EXPECT_EQ(price_for(prices, "ai2/jupiter", "")->usd_per_gpu_hour, 2.5);
  EXPECT_EQ(price_for(prices, "ai2/jupiter", "A100")->key, "price.ai2/jupiter");
  EXPECT_FALSE(price_for(prices, "ai2/saturn", "A100").has_value());
  EXPECT_FALSE(price_for({}, "ai2/jupiter", "H100").has_value());
}

// The known chain of the end-to-end test: a source preempted after 18 minutes on 2 x 8 GPUs, its
// child run for an hour; the child's start records 15 minutes lost of the source's attempt.
struct KnownChain {
  RunView source = parse_run(with_gpus(
      {job("S0",
           0,
           status_at("2026-08-10T10:00:00Z", "2026-08-10T10:02:00Z", "2026-08-10T10:20:00Z", 1)),
       job("S1",
           1,
           status_at("2026-08-10T10:00:00Z", "2026-08-10T10:02:00Z", "2026-08-10T10:20:00Z", 1))},
      8,
      "SOURCE"));
  RunView child = parse_run(with_gpus(
      {job("C0",
           0,
           status_at("2026-08-10T11:00:00Z", "2026-08-10T11:10:00Z", "2026-08-10T12:10:00Z")),
       job("C1",
           1,
           status_at("2026-08-10T11:00:00Z", "2026-08-10T11:10:00Z", "2026-08-10T12:10:00Z"))},
      8,
      "CHILD"));
  ledger::Ledger history;
  KnownChain() {
    ledger::Attempt first;
    first.start.attempt = 1;
    first.start.cause = std::string(ledger::k_first_start);
    first.start.experiment_id = "SOURCE";
    ledger::Attempt second;
    second.start.attempt = 2;
    second.start.cause = std::string(ledger::k_preemption);
    second.start.experiment_id = "CHILD";
    second.start.time_lost_seconds = 900;
    history.attempts = {first, second};
  }
};

TEST(RunsUsage, AChainSumsItsExperimentsAndPricesTheLossFromTheLedger) {
  KnownChain k;
  const auto now = at("2026-08-10T13:00:00Z");
  const auto usage =
      chain_usage({&k.source, &k.child}, &k.history, {{"ai2/jupiter", 2.5}}, {}, now);
  EXPECT_NEAR(usage.gpu_hours, 16 * 0.3 + 16 * 1.0, 1e-9);    // 20.8
  EXPECT_NEAR(usage.queue_hours, 2.0 / 60 + 10.0 / 60, 1e-9); // 0.2
  ASSERT_TRUE(usage.lost_gpu_hours.has_value());
  EXPECT_NEAR(*usage.lost_gpu_hours, 16 * 0.25, 1e-9); // 4
  EXPECT_EQ(usage.preemptions_counted, 1);
  ASSERT_TRUE(usage.cost_usd.has_value());
  EXPECT_NEAR(*usage.cost_usd, 20.8 * 2.5, 1e-9);
  EXPECT_NEAR(*usage.lost_cost_usd, 4 * 2.5, 1e-9);
  EXPECT_EQ(usage.prices_used, std::vector<std::string>{"price.ai2/jupiter"});
  EXPECT_FALSE(usage.open);

  OrderedJson row = OrderedJson::object();
  add_usage_json(row, usage);
  EXPECT_EQ(row["gpu_hours"], 20.8);
  EXPECT_EQ(row["lost_gpu_hours"], 4.0);
  EXPECT_EQ(row["queue_hours"], 0.2);
  EXPECT_EQ(row["cost_usd"], 52.0);
  EXPECT_EQ(usage_line(usage),
            "20.80 GPU-hours (4.00 lost to preemption), queued 12m00s, $52.00 "
            "(price.ai2/jupiter)");

  // The GPU type known for the cluster: its price applies.
  const auto typed = chain_usage({&k.source, &k.child},
                                 &k.history,
                                 {{"H100", 3.0}, {"ai2/jupiter", 2.5}},
                                 {{"ai2/jupiter", "H100"}},
                                 now);
  EXPECT_NEAR(*typed.cost_usd, 20.8 * 3.0, 1e-9);
  EXPECT_EQ(typed.prices_used, std::vector<std::string>{"price.H100"});
}

TEST(RunsUsage, NoPriceNoLedgerAndARefusedStartAreSaidNotGuessed) {
  KnownChain k;
  const auto now = at("2026-08-10T13:00:00Z");
  // A price for another cluster only: no cost, and the line says which cluster lacks one.
  const auto other = chain_usage({&k.source, &k.child}, &k.history, {{"ai2/saturn", 1.0}}, {}, now);
  EXPECT_FALSE(other.cost_usd.has_value());
  EXPECT_EQ(other.unpriced, "ai2/jupiter");
  EXPECT_NE(usage_line(other).find("cost unknown: no price for ai2/jupiter"), std::string::npos);
  // No prices at all: no cost, and nothing said about it.
  const auto none = chain_usage({&k.source, &k.child}, &k.history, {}, {}, now);
  EXPECT_FALSE(none.cost_usd.has_value());
  EXPECT_EQ(usage_line(none).find("cost"), std::string::npos);
  OrderedJson row = OrderedJson::object();
  add_usage_json(row, none);
  EXPECT_TRUE(row["cost_usd"].is_null());
  // No ledger readable here: the loss is unknown (null), not zero.
  const auto blind = chain_usage({&k.source, &k.child}, nullptr, {}, {}, now);
  EXPECT_FALSE(blind.lost_gpu_hours.has_value());
  EXPECT_NEAR(blind.gpu_hours, 20.8, 1e-9);
  // A refused start trained nothing and measured nothing.
  k.history.attempts[1].start.refused = "restart refused";
  EXPECT_EQ(*chain_usage({&k.source, &k.child}, &k.history, {}, {}, now).lost_gpu_hours, 0.0);
}

TEST(RunsUsage, PriceKeysAreReadFromTheConfigAsNumbersPerName) {
  pb::config::Sources sources;
  sources.files.user = "/home/jdoe/.config/primebeaker/config.toml";
  sources.user_text = "workspace = \"ai2/mine\"\n[price]\nH100 = 3\n\"ai2/jupiter\" = 2.5\n"
                      "A100 = \"1.25\"\n";
  const auto settings = pb::config::Settings::resolve(sources);
  const auto &pattern = pb::config::key_info("price.*");
  EXPECT_EQ(&pb::config::key_info("price.ai2/jupiter"), &pattern);
  std::map<std::string, std::string> seen;
  for (const auto *setting : settings.matching(pattern)) {
    seen[std::string(setting->key_name())] = setting->text();
  }
  EXPECT_EQ(seen,
            (std::map<std::string, std::string>{
                {"price.A100", "1.25"}, {"price.H100", "3"}, {"price.ai2/jupiter", "2.5"}}));
  EXPECT_EQ(settings.text("price.H100"), "3");
  EXPECT_EQ(settings.text("workspace"), "ai2/mine");

  sources.user_text = "[price]\nH100 = \"cheap\"\n";
  EXPECT_PB_ERROR(pb::config::Settings::resolve(sources), 3, "a price is $ per GPU-hour");
  sources.user_text = "[price]\nH100 = -1\n";
  EXPECT_PB_ERROR(pb::config::Settings::resolve(sources), 3, "got '-1'");
  sources.user_text = "[prices]\nH100 = 1\n";
  EXPECT_PB_ERROR(pb::config::Settings::resolve(sources), 3, "unknown config key 'prices'");
}

// ---- Queue position ----

OrderedJson sample_job_list() {
  return OrderedJson::parse(
      pb::test::read_file(pb::test::source_dir() / "tests/runs/data/job_list_cluster.json"));
}

TEST(RunsQueue, TheSampleListingIsParsed) {
  const auto jobs = parse_cluster_jobs(sample_job_list());
  ASSERT_EQ(jobs.size(), 9u);
  EXPECT_EQ(jobs[0].id, "01JOBRUNNINGA0000000000000A");
  EXPECT_FALSE(jobs[0].unscheduled); // running
  EXPECT_TRUE(jobs[1].unscheduled);
  EXPECT_EQ(jobs[1].experiment_id, "01EXPERIMENTB0000000000000");
  EXPECT_EQ(jobs[1].priority, "high");
  EXPECT_EQ(jobs[1].message, "waiting for resources");
  EXPECT_EQ(jobs[3].priority, "normal");
  EXPECT_TRUE(jobs[4].experiment_id.empty()); // a session
  EXPECT_FALSE(jobs[8].unscheduled);          // canceled before it started
  // Other shapes: {"data": [...]}; anything else is no job.
  OrderedJson wrapped = {{"data", sample_job_list()}};
  EXPECT_EQ(parse_cluster_jobs(wrapped).size(), 9u);
  EXPECT_TRUE(parse_cluster_jobs(OrderedJson("nothing")).empty());
}

TEST(RunsQueue, ThePositionCountsEachWaitingExperimentOnceAtTheRunsPriority) {
  const RunView run = parse_run(four(status_pending()));
  ASSERT_TRUE(is_queued(run));
  EXPECT_EQ(requested_clusters(run), std::vector<std::string>{"ai2/jupiter"});
  const auto queue = queue_position(
      run, "ai2/jupiter", parse_cluster_jobs(sample_job_list()), at("2026-08-10T10:12:04.250Z"));
  ASSERT_TRUE(queue.has_value());
  // Ahead: experiment B (two jobs, once) and the session; behind: E; not counted: the running
  // job, the normal-priority C, the canceled F.
  EXPECT_EQ(queue->position, 3u);
  EXPECT_EQ(queue->of, 4u);
  EXPECT_EQ(queue->priority, "high");
  EXPECT_EQ(queue->waited_seconds, 12 * 60 + 4);
  EXPECT_EQ(queue->message, "waiting for 4 nodes with 8 free GPUs"); // from the listing
  EXPECT_EQ(queue_line(*queue),
            "waiting 12m04s: 3rd of 4 at priority high on ai2/jupiter; beaker: waiting for 4 "
            "nodes with 8 free GPUs");
  const auto json = queue_json(*queue);
  EXPECT_EQ(json["position"], 3);
  EXPECT_EQ(json["waited_seconds"], 724);

  // A run that has started is not queued.
  EXPECT_FALSE(queue_position(parse_run(four(status_running())),
                              "ai2/jupiter",
                              parse_cluster_jobs(sample_job_list()),
                              at("2026-08-10T10:12:04Z"))
                   .has_value());
}

TEST(RunsQueue, TheClustersAskedForComeFromTheSpecsConstraints) {
  auto e = four(status_pending());
  e["jobs"][0]["execution"]["spec"]["constraints"] = {{"cluster", {"ai2/saturn", "ai2/ceres"}}};
  EXPECT_EQ(requested_clusters(parse_run(e)),
            (std::vector<std::string>{"ai2/saturn", "ai2/ceres"}));
}

} // namespace
