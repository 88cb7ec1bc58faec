// SPDX-License-Identifier: MIT
// The real binary against a fake `beaker`: GPU-hours, lost GPU-hours, queue time and cost of a
// known chain in `status`, `list` and `cost` (docs/runs.md "GPU-hours and cost"), a queued run's
// place in `status` and `follow` (docs/runs.md "Queue position"), and a sweep's `stop`.
#include "fixtures.hpp"
#include "test_support.hpp"

#include <primebeaker/recovery/ledger.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace {

namespace fs = std::filesystem;
namespace ledger = pb::recovery::ledger;
using namespace pb::test::runs;
using pb::OrderedJson;

constexpr const char *k_source = "01JZ8M3Q4T5V6W7X8Y9Z0SRCE1";
constexpr const char *k_child = "01JZ8M3Q4T5V6W7X8Y9Z0CHLD1";
constexpr const char *k_other = "01JZ8M3Q4T5V6W7X8Y9Z0OTHR1";
constexpr const char *k_run_id = "usage-run";

// A 26-character experiment id per variant.
std::string fmt_id(int i) {
  std::string id = "01SWEEPVARIANT000000000000";
  id[id.size() - 2] = static_cast<char>('A' + i / 10);
  id[id.size() - 1] = static_cast<char>('0' + i % 10);
  return id;
}

// A finished (or preempted) job status with every time given.
OrderedJson ran(const std::string &created,
                const std::string &started,
                const std::string &exited,
                bool preempted) {
  OrderedJson s = {{"created", created},
                   {"scheduled", started},
                   {"started", started},
                   {"exited", exited},
                   {"finalized", exited},
                   {"canceled", preempted ? exited : k_zero},
                   {"canceledCode", preempted ? 1 : 0},
                   {"exitCode", 0}};
  return s;
}

// `replicas` replicas of `gpus` GPUs each, all in `status`, on ai2/jupiter.
OrderedJson run_of(const std::string &id,
                   const std::string &created,
                   const OrderedJson &status,
                   int replicas,
                   int gpus,
                   const std::vector<std::pair<std::string, std::string>> &env) {
  std::vector<OrderedJson> jobs;
  for (int rank = 0; rank < replicas; ++rank) {
    auto one = job(id.substr(0, 22) + "JOB" + std::to_string(rank),
                   rank,
                   status,
                   id.substr(0, 20) + "TASK01",
                   env);
    one["execution"]["experiment"] = id;
    if (rank == 0) {
      one["execution"]["spec"]["resources"] = {{"gpuCount", gpus}};
    }
    jobs.push_back(std::move(one));
  }
  auto e = experiment(std::move(jobs), id);
  e["created"] = created;
  return e;
}

struct UsageHarness {
  pb::test::TempDir tmp;
  pb::test::FakeBin bin{tmp.path()};
  pb::test::FakeBeaker beaker{bin};
  fs::path out = tmp.path() / "weka/out";
  fs::path ledger_dir = ledger::directory(out, k_run_id);
  fs::path config = tmp.path() / "xdg/primebeaker/config.toml";
  OrderedJson source, child, other;

  // The chain of docs/runs.md's example: the source ran 18 minutes on 2 x 8 GPUs after 2 minutes
  // in the queue and was preempted; its child waited 10 minutes and ran an hour; the child's
  // start recorded 15 minutes of the source's attempt lost past its last complete checkpoint.
  UsageHarness() {
    const std::vector<std::pair<std::string, std::string>> env = {{"OUTPUT_DIR", out.string()},
                                                                  {"WANDB_RUN_ID", k_run_id}};
    source =
        run_of(k_source,
               "2026-08-10T10:00:00Z",
               ran("2026-08-10T10:00:00Z", "2026-08-10T10:02:00Z", "2026-08-10T10:20:00Z", true),
               2,
               8,
               env);
    child =
        run_of(k_child,
               "2026-08-10T11:00:00Z",
               ran("2026-08-10T11:00:00Z", "2026-08-10T11:10:00Z", "2026-08-10T12:10:00Z", false),
               2,
               8,
               env);
    // An unrelated run with no ledger: 1 x 4 GPUs for 30 minutes.
    other =
        run_of(k_other,
               "2026-08-10T10:00:00Z",
               ran("2026-08-10T10:00:00Z", "2026-08-10T10:02:00Z", "2026-08-10T10:32:00Z", false),
               1,
               4,
               {});
    ledger::Start first;
    first.run_id = k_run_id;
    first.experiment_id = k_source;
    first.cause = std::string(ledger::k_first_start);
    first.started_unix = 1000;
    ledger::append_start(ledger_dir, first);
    ledger::Claim claim;
    claim.source_experiment = k_source;
    claim.cause = "preemption";
    claim.number = 1;
    claim.by = "controller 01CONTROLLER";
    claim.claimed_unix = 2000;
    claim.attempt_id = "abcdef12-recover1";
    claim.child_name = "search-recover1-abcdef12";
    EXPECT_TRUE(ledger::write_claim(ledger_dir, claim));
    ledger::ChildStart from;
    from.resume_step = 20;
    EXPECT_TRUE(ledger::write_claim_child(ledger_dir, k_source, k_child, 2001, from));
    ledger::Start second = first;
    second.experiment_id = k_child;
    second.cause = std::string(ledger::k_preemption);
    second.started_unix = 4000;
    second.resume_step = 20;
    second.preemptions_recovered = 1;
    second.time_lost_seconds = 900;
    ledger::append_start(ledger_dir, second);
    beaker.on({"experiment", "get", k_source}, printed(source));
    beaker.on({"experiment", "get", k_child}, printed(child));
    beaker.on({"experiment", "get", k_other}, printed(other));
    price("[price]\n\"ai2/jupiter\" = 2.5\n");
  }

  void price(const std::string &text) { pb::test::write_file(config, text); }

  pb::test::RunResult run(const std::vector<std::string> &args) {
    pb::test::RunOptions options;
    options.path_prepend = {bin.bin()};
    options.cwd = tmp.path();
    options.env["XDG_CONFIG_HOME"] = (tmp.path() / "xdg").string();
    return pb::test::run_primebeaker(args, options);
  }
};

TEST(RunsUsageE2E, StatusCarriesTheWholeChainsGpuHoursLossQueueAndCost) {
  UsageHarness h;
  const auto shown = h.run({"status", k_source, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto view = nlohmann::json::parse(shown.out);
  EXPECT_EQ(view["experiment_id"], k_child); // the chain's newest
  // 16 GPUs x 18 min + 16 GPUs x 60 min; 15 min of 16 GPUs lost; 2 + 10 min queued; $2.50/GPU-h.
  EXPECT_EQ(view["gpu_hours"], 20.8);
  EXPECT_EQ(view["lost_gpu_hours"], 4.0);
  EXPECT_EQ(view["queue_hours"], 0.2);
  EXPECT_EQ(view["cost_usd"], 52.0);
  EXPECT_EQ(view["usage"]["experiments"].size(), 2u);
  EXPECT_EQ(view["usage"]["lost_cost_usd"], 10.0);
  EXPECT_TRUE(view["queue"].is_null()); // not queued

  const auto table = h.run({"status", k_child});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("usage       20.80 GPU-hours (4.00 lost to preemption), queued "
                           "12m00s, $52.00 (price.ai2/jupiter)\n"),
            std::string::npos)
      << table.out;

  // A GPU-type price applies once `beaker cluster get` names the type; no price, no cost.
  h.price("[price]\nH100 = 3\n\"ai2/jupiter\" = 2.5\n");
  h.beaker.on({"cluster", "get", "ai2/jupiter"},
              R"([{"fullName": "ai2/jupiter", "nodeShape": {"gpuCount": 8, "gpuType": "H100"}}])");
  auto typed = nlohmann::json::parse(h.run({"status", k_child, "--json"}).out);
  EXPECT_EQ(typed["cost_usd"], 62.4);
  EXPECT_EQ(typed["usage"]["prices"], nlohmann::json::array({"price.H100"}));
  h.price("");
  const auto unpriced = h.run({"status", k_child, "--json"});
  ASSERT_EQ(unpriced.exit_code, 0) << unpriced.err;
  EXPECT_TRUE(nlohmann::json::parse(unpriced.out)["cost_usd"].is_null());
  EXPECT_EQ(nlohmann::json::parse(unpriced.out)["gpu_hours"], 20.8);
}

// `config set|get|list|unset` of price keys, a cluster's quoted in the file (docs/config.md
// "Prices").
TEST(RunsUsageE2E, PriceKeysAreSetReadAndRefusedByName) {
  UsageHarness h;
  h.price("");
  EXPECT_EQ(h.run({"config", "set", "price.H100", "4.5"}).exit_code, 0);
  const auto set = h.run({"config", "set", "price.ai2/jupiter", "3"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(pb::test::read_file(h.config).find("\"ai2/jupiter\" = 3"), std::string::npos)
      << pb::test::read_file(h.config);
  EXPECT_EQ(h.run({"config", "get", "price.ai2/jupiter"}).out, "3\n");
  EXPECT_EQ(h.run({"config", "get", "price.H100"}).out, "4.5\n");
  const auto listed = h.run({"config", "list"});
  EXPECT_NE(listed.out.find("price.H100=4.5\n"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("price.ai2/jupiter=3\n"), std::string::npos) << listed.out;
  const auto refused = h.run({"config", "set", "price.H100", "cheap"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("a price is $ per GPU-hour"), std::string::npos) << refused.err;
  EXPECT_EQ(h.run({"config", "unset", "price.ai2/jupiter"}).exit_code, 0);
  EXPECT_EQ(h.run({"config", "get", "price.ai2/jupiter"}).exit_code, 1);
  // What status prices with: H100 once `beaker cluster get` names the type.
  h.beaker.on({"cluster", "get", "ai2/jupiter"},
              R"([{"fullName": "ai2/jupiter", "nodeShape": {"gpuType": "H100"}}])");
  EXPECT_EQ(nlohmann::json::parse(h.run({"status", k_child, "--json"}).out)["cost_usd"],
            93.6); // 20.8 x 4.5
}

TEST(RunsUsageE2E, ListAndCostSumPerRunAndInAll) {
  UsageHarness h;
  h.beaker.on({"workspace", "experiments", "ai2/oe-agents"},
              OrderedJson::array({h.child, h.other, h.source}).dump());
  const auto listed = h.run({"list", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto rows = nlohmann::json::parse(listed.out);
  ASSERT_EQ(rows.size(), 2u) << listed.out;
  EXPECT_EQ(rows[0]["current_experiment_id"], k_child);
  EXPECT_EQ(rows[0]["gpu_hours"], 20.8);
  EXPECT_EQ(rows[0]["lost_gpu_hours"], 4.0);
  EXPECT_EQ(rows[0]["cost_usd"], 52.0);
  EXPECT_EQ(rows[1]["experiment_id"], k_other);
  EXPECT_EQ(rows[1]["gpu_hours"], 2.0);
  EXPECT_TRUE(rows[1]["lost_gpu_hours"].is_null()); // no ledger: unknown, not zero
  // Every experiment of the chain was in the listing: none is read again.
  EXPECT_TRUE(h.beaker.calls_matching({"experiment", "get"}).empty());
  const auto table = h.run({"list"});
  EXPECT_NE(table.out.find("GPU-H"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("20.8 $52"), std::string::npos) << table.out;

  const auto cost = h.run({"cost", "--json"});
  ASSERT_EQ(cost.exit_code, 0) << cost.err;
  const auto sums = nlohmann::json::parse(cost.out);
  ASSERT_EQ(sums["runs"].size(), 2u);
  EXPECT_EQ(sums["total"]["runs"], 2);
  EXPECT_EQ(sums["total"]["gpu_hours"], 22.8);
  EXPECT_EQ(sums["total"]["lost_gpu_hours"], 4.0);
  EXPECT_EQ(sums["total"]["cost_usd"], 57.0); // 20.8 x 2.5 + 2 x 2.5
  EXPECT_EQ(sums["total"]["runs_without_ledger"], 1);

  // --since: a run counts when an experiment of its chain was created since then (the whole
  // chain is summed).
  const auto recent =
      nlohmann::json::parse(h.run({"cost", "--since", "2026-08-10T10:30:00Z", "--json"}).out);
  ASSERT_EQ(recent["runs"].size(), 1u);
  EXPECT_EQ(recent["runs"][0]["original_experiment_id"], k_source);
  EXPECT_EQ(recent["total"]["gpu_hours"], 20.8);

  // A sweep: its variants' runs summed.
  const fs::path receipt = h.tmp.path() / "sweep.json";
  pb::test::write_file(
      receipt,
      OrderedJson{{"sweep", "lr"},
                  {"variants", {{{"experiment_id", k_source}}, {{"experiment_id", k_other}}}}}
          .dump());
  const auto swept = h.run({"cost", "--sweep", receipt.string(), "--json"});
  ASSERT_EQ(swept.exit_code, 0) << swept.err;
  EXPECT_EQ(nlohmann::json::parse(swept.out)["total"]["gpu_hours"], 22.8);
  const auto human = h.run({"cost", "--sweep", receipt.string()});
  EXPECT_NE(human.out.find("total (2 runs)"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("$57.00"), std::string::npos) << human.out;

  // Without a price: the total is not guessed.
  h.price("");
  const auto free = nlohmann::json::parse(h.run({"cost", "--json"}).out);
  EXPECT_TRUE(free["total"]["cost_usd"].is_null());
  EXPECT_EQ(free["total"]["unpriced_runs"], 2);

  const auto bad = h.run({"cost", "--since", "last week"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--since"), std::string::npos) << bad.err;
}

TEST(RunsQueueE2E, StatusAndFollowSayWhereAQueuedRunStands) {
  UsageHarness h;
  h.beaker.on({"experiment", "get", k_experiment}, printed(four(status_pending())));
  h.beaker.on(
      {"job", "list", "--cluster", "ai2/jupiter"},
      pb::test::read_file(pb::test::source_dir() / "tests/runs/data/job_list_cluster.json"));
  const auto shown = h.run({"status", k_experiment, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto view = nlohmann::json::parse(shown.out);
  EXPECT_EQ(view["queue"]["position"], 3);
  EXPECT_EQ(view["queue"]["of"], 4);
  EXPECT_EQ(view["queue"]["cluster"], "ai2/jupiter");
  EXPECT_EQ(view["queue"]["message"], "waiting for 4 nodes with 8 free GPUs");
  EXPECT_EQ(view["gpu_hours"], 0.0);

  const auto table = h.run({"status", k_experiment});
  EXPECT_NE(table.out.find("3rd of 4 at priority high on ai2/jupiter; beaker: waiting for 4 "
                           "nodes with 8 free GPUs\n"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("queue       waiting "), std::string::npos) << table.out;

  const auto followed =
      h.run({"follow", k_experiment, "--poll-interval", "0.01", "--timeout", "1"});
  EXPECT_EQ(followed.exit_code, 13) << followed.err;
  const std::string said = "3rd of 4 at priority high on ai2/jupiter";
  const auto first = followed.err.find(said);
  EXPECT_NE(first, std::string::npos) << followed.err;
  // Asked once a minute at most, said once while it does not change.
  EXPECT_EQ(followed.err.find(said, first + 1), std::string::npos) << followed.err;
  EXPECT_EQ(h.beaker.calls_matching({"job", "list"}).size(), 3u); // status x2, follow x1
}

// `stop` of a sweep reads and stops its variants 8 at a time (docs/sweep.md "Concurrency"):
// against a `beaker` whose stops take 0.3 s, the stops of 12 variants overlap, never more than 8
// at once; a variant that cannot be read is reported and every other one is still stopped.
TEST(RunsStopSweep, VariantsAreStoppedConcurrentlyAtMostEightAtATime) {
  pb::test::TempDir tmp;
  const auto log = tmp.path() / "stops.log";
  const auto slow = tmp.path() / "slow-beaker";
  pb::test::write_file(
      slow,
      "#!/bin/bash\n"
      "case \"$1 $2\" in\n"
      "  'experiment get')\n"
      "    if [ \"$3\" = 01BADBADBADBADBADBADBADBAD ]; then echo 'Error: not found' >&2; exit 1; "
      "fi\n"
      "    echo \"[{\\\"id\\\": \\\"$3\\\", \\\"name\\\": \\\"v\\\", \\\"author\\\": "
      "{\\\"name\\\": "
      "\\\"jdoe\\\"}, \\\"jobs\\\": [{\\\"id\\\": \\\"J$3\\\", \\\"status\\\": {\\\"created\\\": "
      "\\\"2026-08-10T10:00:00Z\\\", \\\"started\\\": \\\"2026-08-10T10:01:00Z\\\"}, "
      "\\\"execution\\\": {\\\"task\\\": \\\"T\\\", \\\"replicaRank\\\": 0, \\\"spec\\\": "
      "{}}}]}]\" ;;\n"
      "  'experiment stop')\n"
      "    echo \"start $(date +%s%N)\" >> " +
          log.string() +
          "\n"
          "    sleep 0.3\n"
          "    echo \"end $(date +%s%N)\" >> " +
          log.string() +
          "\n"
          "    ;;\n"
          "  *) exit 1 ;;\n"
          "esac\n");
  std::filesystem::permissions(slow, std::filesystem::perms::owner_all);
  OrderedJson variants = OrderedJson::array();
  for (int i = 0; i < 12; ++i) {
    variants.push_back({{"experiment_id", fmt_id(i)}});
  }
  variants.push_back({{"experiment_id", "01BADBADBADBADBADBADBADBAD"}});
  const auto receipt = tmp.path() / "sweep.json";
  pb::test::write_file(receipt, OrderedJson{{"sweep", "s"}, {"variants", variants}}.dump());
  pb::test::RunOptions options;
  options.cwd = tmp.path();
  options.env["PRIMEBEAKER_BEAKER"] = slow.string();
  const auto result = pb::test::run_primebeaker({"stop", receipt.string(), "--yes"}, options);
  EXPECT_EQ(result.exit_code, 4) << result.err; // the unreadable variant is named
  EXPECT_NE(result.err.find("could not read 01BADBADBADBADBADBADBADBAD"), std::string::npos)
      << result.err;
  const auto out = nlohmann::json::parse(result.out);
  ASSERT_EQ(out["variants"].size(), 13u);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(out["variants"][i]["experiment_id"], fmt_id(i)); // in the receipt's order
    EXPECT_EQ(out["variants"][i]["stopped"], true);
    EXPECT_NE(result.err.find("primebeaker: stopped " + fmt_id(i) + " (the training run)\n"),
              std::string::npos)
        << result.err;
  }
  std::vector<std::pair<long long, int>> events;
  std::istringstream lines(pb::test::read_file(log));
  for (std::string word, time; lines >> word >> time;) {
    events.emplace_back(std::stoll(time), word == "start" ? 1 : -1);
  }
  ASSERT_EQ(events.size(), 24u);
  std::sort(events.begin(), events.end());
  int running = 0, most = 0;
  for (const auto &[time, step] : events) {
    running += step;
    most = std::max(most, running);
  }
  EXPECT_GE(most, 2) << "no two stops overlapped";
  EXPECT_LE(most, 8);
}

} // namespace
