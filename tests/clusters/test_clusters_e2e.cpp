// SPDX-License-Identifier: MIT
// `primebeaker clusters` and `--cluster auto` against a fake beaker with three clusters of
// 8-GPU nodes (docs/clusters.md): ai2/mars is full with 30 jobs queued, ai2/saturn has 6 whole
// nodes free and 2 queued, ai2/venus 2 nodes free and none queued.
#include "launch_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace pb::test {
namespace {

using nlohmann::json;

// `beaker cluster get NAME --format json` for `nodes` 8-GPU nodes, the first `free` of them
// idle, the rest full; int64 counts as strings and zeros left out, as Beaker's JSON has them.
std::string cluster_answer(const std::string &name, int nodes, int free, int queued) {
  json occupancies = json::array();
  for (int i = 0; i < nodes; ++i) {
    json slots = {{"total", "8"}};
    if (i < free) {
      slots["available"] = "8";
    } else {
      slots["occupied"] = "8";
      slots["assigned"] = "8";
    }
    json node = {{"nodeId", name.substr(4) + "-node-" + std::to_string(i)}, {"slotCounts", slots}};
    if (i >= free) {
      node["runningJobsCount"] = 1;
    }
    occupancies.push_back(node);
  }
  json answer = {{"id", "01FAKE" + name.substr(4)},
                 {"name", name.substr(4)},
                 {"fullName", name},
                 {"nodeCount", nodes},
                 {"nodeShape", {{"gpuCount", 8}, {"gpuType", "GPU_TYPE_NVIDIA_H100"}}},
                 {"clusterOccupancy",
                  {{"runningJobsCount", nodes - free},
                   {"slotCounts",
                    {{"total", std::to_string(nodes * 8)},
                     {"available", std::to_string(free * 8)},
                     {"occupied", std::to_string((nodes - free) * 8)}}},
                   {"nodeOccupancies", occupancies}}}};
  if (queued > 0) {
    answer["clusterJobQueueSize"] = std::to_string(queued);
  }
  return json::array({answer}).dump(2) + "\n";
}

class Clusters : public LaunchFixture {
protected:
  Clusters() { world(/*saturn_free=*/6); }

  void world(int saturn_free) {
    m_beaker.clear();
    m_beaker.on({"cluster", "list", "ai2"},
                R"([{"name": "mars", "fullName": "ai2/mars"},
                    {"name": "saturn", "fullName": "ai2/saturn"},
                    {"name": "venus", "fullName": "ai2/venus"}])");
    m_beaker.on({"cluster", "get", "ai2/mars"}, cluster_answer("ai2/mars", 4, 0, 30));
    m_beaker.on({"cluster", "get", "ai2/saturn"}, cluster_answer("ai2/saturn", 8, saturn_free, 2));
    m_beaker.on({"cluster", "get", "ai2/venus"}, cluster_answer("ai2/venus", 4, 2, 0));
    beaker_creates();
  }

  RunResult launch(std::vector<std::string> args) {
    const bool with_mount = args.front() != "clusters";
    return run(std::move(args), with_mount, {{"PRIMEBEAKER_CLUSTERS", "ai2/*"}});
  }

  // The cluster constraint of a preview's spec.
  static json constraint(const RunResult &result) {
    return json::parse(result.out).at("spec").at("tasks").at(0).at("constraints").at("cluster");
  }

  static const std::vector<std::string> &four_nodes() {
    static const std::vector<std::string> args = {
        "rl",
        "preview",
        "--toml",
        "examples/search-agent-webterminal/multinode-rl.toml",
        "--registry",
        "redis://registry:6379",
        "--cluster",
        "auto"};
    return args;
  }
};

TEST_F(Clusters, JsonShowsFreeGpusNodesAndQueuesWithOneCallPerCluster) {
  const auto result = launch({"clusters", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json rows = json::parse(result.out);
  ASSERT_EQ(rows.size(), 3u) << result.out;
  EXPECT_EQ(rows[0]["cluster"], "ai2/mars");
  EXPECT_EQ(rows[1]["cluster"], "ai2/saturn");
  EXPECT_EQ(rows[2]["cluster"], "ai2/venus");
  std::vector<int> free_gpus, total, free_nodes, queued;
  for (const auto &row : rows) {
    free_gpus.push_back(row["free_gpus"]);
    total.push_back(row["total_gpus"]);
    free_nodes.push_back(row["free_nodes"]);
    queued.push_back(row["queued_jobs"]);
    EXPECT_EQ(row["gpu_type"], "GPU_TYPE_NVIDIA_H100");
  }
  EXPECT_EQ(free_gpus, (std::vector<int>{0, 48, 16}));
  EXPECT_EQ(total, (std::vector<int>{32, 64, 32}));
  EXPECT_EQ(free_nodes, (std::vector<int>{0, 6, 2}));
  EXPECT_EQ(queued, (std::vector<int>{30, 2, 0}));
  // The glob took one `cluster list`; each cluster one `cluster get`.
  EXPECT_EQ(m_beaker.calls_matching({"cluster", "list"}).size(), 1u);
  for (const std::string name : {"ai2/mars", "ai2/saturn", "ai2/venus"}) {
    EXPECT_EQ(m_beaker.calls_matching({"cluster", "get", name}).size(), 1u) << name;
  }
  EXPECT_EQ(m_beaker.calls().size(), 4u);
}

TEST_F(Clusters, TableNamesEachClusterWithItsRoom) {
  const auto result = launch({"clusters", "--gpus", "8"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("NODES WITH 8 FREE"), std::string::npos) << result.out;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 4u) << result.out;
  EXPECT_NE(lines[2].find("ai2/saturn"), std::string::npos);
  EXPECT_NE(lines[2].find("6 of 8"), std::string::npos) << lines[2];
}

TEST_F(Clusters, BadGpusNamesTheFlag) {
  const auto result = launch({"clusters", "--gpus", "0"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--gpus"), std::string::npos) << result.err;
  EXPECT_TRUE(m_beaker.calls().empty());
}

TEST_F(Clusters, AutoSendsAFourNodeRunWhereFourWholeNodesAreFree) {
  const auto result = launch(four_nodes());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(constraint(result), json::array({"ai2/saturn"}));
  const json choice = json::parse(result.out).at("cluster_auto");
  EXPECT_EQ(choice["chosen"], "ai2/saturn");
  EXPECT_EQ(choice["fits_now"], true);
  EXPECT_EQ(choice["need"], (json{{"nodes", 4}, {"gpus_per_node", 8}}));
  EXPECT_EQ(choice["snapshot"]["clusters"].size(), 3u);
}

TEST_F(Clusters, AutoSendsAOneNodeRunToTheShortestQueueWhereItFits) {
  const auto result =
      launch({"rl", "preview", "--toml", "examples/rl/rl.toml", "--cluster", "auto"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(constraint(result), json::array({"ai2/venus"}));
}

TEST_F(Clusters, ConfigAutoChoosesWithoutTheFlag) {
  write("primebeaker.toml", "clusters = \"auto\"\n");
  const auto result = run({"rl", "preview", "--toml", "examples/rl/rl.toml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(constraint(result), json::array({"ai2/venus"}));
  // No clusters configured beside "auto": every cluster of ai2.
  EXPECT_EQ(m_beaker.calls_matching({"cluster", "list", "ai2"}).size(), 1u);
}

TEST_F(Clusters, FlagAutoRanksTheConfiguredClustersOnly) {
  write("primebeaker.toml", "clusters = [\"ai2/mars\", \"ai2/saturn\"]\n");
  const auto result = run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--cluster", "auto"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(constraint(result), json::array({"ai2/saturn"}));
  EXPECT_TRUE(m_beaker.calls_matching({"cluster", "list"}).empty()); // no glob, no list
  EXPECT_TRUE(m_beaker.calls_matching({"cluster", "get", "ai2/venus"}).empty());
}

TEST_F(Clusters, CardShowsTheRankingAndTheBeakerCalls) {
  auto args = four_nodes();
  args.emplace_back("--card");
  const auto result = launch(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string &card = result.out;
  EXPECT_NE(card.find("beaker     ai2/oe-agents (built-in), priority high (built-in) on "
                      "ai2/saturn"),
            std::string::npos)
      << card;
  EXPECT_NE(card.find("cluster    auto: ai2/saturn: 4 nodes x 8 GPUs fits now"), std::string::npos)
      << card;
  EXPECT_NE(card.find("1. ai2/saturn  fits now: 6 nodes with 8 GPUs free, 4 needed; 2 jobs "
                      "queued"),
            std::string::npos)
      << card;
  EXPECT_NE(card.find("2. ai2/venus   does not fit now: 2 nodes with 8 GPUs free, 4 needed; 0 "
                      "jobs queued"),
            std::string::npos)
      << card;
  EXPECT_NE(card.find("3. ai2/mars    does not fit now"), std::string::npos) << card;
  EXPECT_NE(card.find("this preview called beaker 4 times for it (beaker cluster list ai2; "
                      "beaker cluster get ai2/mars;"),
            std::string::npos)
      << card;
}

TEST_F(Clusters, NothingFitsNowQueuesWhereTheQueueIsShortestOrRefusesWithRequireFree) {
  world(/*saturn_free=*/3);
  const auto queued = launch(four_nodes());
  ASSERT_EQ(queued.exit_code, 0) << queued.err;
  EXPECT_EQ(constraint(queued), json::array({"ai2/venus"})); // 0 queued, 4 nodes of 8 GPUs
  const json choice = json::parse(queued.out).at("cluster_auto");
  EXPECT_EQ(choice["fits_now"], false);
  EXPECT_NE(choice["reason"].get<std::string>().find("fits on no cluster now"), std::string::npos)
      << choice["reason"];

  auto strict = four_nodes();
  strict.emplace_back("--require-free");
  const auto refused = launch(strict);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err,
            "primebeaker: error: --cluster auto --require-free: 4 x 8 GPUs fits on no cluster "
            "now (the shortest queue is ai2/venus's)\n");
}

TEST_F(Clusters, RequireFreeWithoutAutoAndGlobsWithoutAutoAreRefused) {
  const auto free = launch({"rl", "preview", "--toml", "examples/rl/rl.toml", "--require-free"});
  EXPECT_EQ(free.exit_code, 2);
  EXPECT_EQ(free.err, "primebeaker: error: --require-free applies to --cluster auto only\n");
  const auto glob =
      launch({"rl", "preview", "--toml", "examples/rl/rl.toml", "--cluster", "ai2/s*"});
  EXPECT_EQ(glob.exit_code, 2);
  EXPECT_NE(glob.err.find("--cluster ai2/s*: Beaker takes no globs"), std::string::npos)
      << glob.err;
  EXPECT_TRUE(m_beaker.calls().empty()); // neither looked at a cluster
}

TEST_F(Clusters, AClusterBeakerWillNotDescribeIsShownAndNeverChosen) {
  m_beaker.clear();
  m_beaker.on({"cluster", "get", "ai2/mars"}, cluster_answer("ai2/mars", 4, 0, 30));
  m_beaker.on({"cluster", "get", "ai2/venus"}, "", 1, "Error: cluster ai2/venus not found\n");
  const auto listed =
      run({"clusters", "--json"}, false, {{"PRIMEBEAKER_CLUSTERS", "ai2/mars,ai2/venus"}});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const json rows = json::parse(listed.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[1]["error"].get<std::string>().find("not found"), std::string::npos) << rows[1];
  EXPECT_EQ(m_beaker.calls_matching({"cluster", "get", "ai2/venus"}).size(), 1u); // not retried

  const auto placed = run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--cluster", "auto"},
                          true,
                          {{"PRIMEBEAKER_CLUSTERS", "ai2/mars,ai2/venus"}});
  ASSERT_EQ(placed.exit_code, 0) << placed.err;
  EXPECT_EQ(constraint(placed), json::array({"ai2/mars"})); // full, but the only one known
}

TEST_F(Clusters, PreviewWithoutAutoCallsNoBeaker) {
  const auto result =
      launch({"rl", "preview", "--toml", "examples/rl/rl.toml", "--cluster", "ai2/jupiter"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(constraint(result), json::array({"ai2/jupiter"}));
  EXPECT_FALSE(json::parse(result.out).contains("cluster_auto"));
  EXPECT_TRUE(m_beaker.calls().empty());
}

TEST_F(Clusters, SubmitReceiptRecordsTheSnapshot) {
  const auto result =
      launch({"sft", "submit", "--toml", "examples/sft/sft.toml", "--cluster", "auto"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json receipt = json::parse(result.out);
  const json choice = receipt.at("cluster_auto");
  EXPECT_EQ(choice["chosen"], "ai2/venus");
  EXPECT_FALSE(choice["snapshot"]["taken_at"].get<std::string>().empty());
  EXPECT_EQ(choice["snapshot"]["clusters"][1]["free_gpus"], 48);
  EXPECT_EQ(choice["snapshot"]["calls"].size(), 4u);
  const auto created = m_beaker.calls_matching({"experiment", "create"});
  ASSERT_EQ(created.size(), 1u);
}

} // namespace
} // namespace pb::test
