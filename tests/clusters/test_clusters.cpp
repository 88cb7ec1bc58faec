// SPDX-License-Identifier: MIT
// The cluster parser on a recorded-shape answer (tests/clusters/fixtures), globs, and the
// ranking behind `--cluster auto` (docs/clusters.md).
#include "test_support.hpp"

#include <primebeaker/clusters/clusters.hpp>
#include <primebeaker/core/error.hpp>

#include <gtest/gtest.h>

namespace pb::clusters {
namespace {

OrderedJson fixture(const std::string &name) {
  return OrderedJson::parse(
      test::read_file(test::source_dir() / "tests" / "clusters" / "fixtures" / name));
}

TEST(ClusterParser, ReadsTheFixtureCountsShapeAndNodes) {
  const Cluster cluster = parse_cluster(fixture("cluster-get-jupiter.json"), "ai2/jupiter");
  EXPECT_EQ(cluster.name, "ai2/jupiter");
  EXPECT_EQ(cluster.node_count, 4);
  EXPECT_EQ(cluster.queued_jobs, 12); // written as a string, as protobuf JSON writes int64
  EXPECT_EQ(cluster.node_gpus, 8);
  EXPECT_EQ(cluster.gpu_type, "GPU_TYPE_NVIDIA_H100");
  ASSERT_TRUE(cluster.has_occupancy);
  EXPECT_EQ(cluster.running_jobs, 5);
  EXPECT_EQ(cluster.slots.total, 32);
  EXPECT_EQ(cluster.slots.available, 11);
  EXPECT_EQ(cluster.slots.occupied, 13);
  EXPECT_EQ(cluster.slots.assigned, 13);
  EXPECT_EQ(cluster.slots.cordoned, 8);
  ASSERT_EQ(cluster.nodes.size(), 4u);
  EXPECT_EQ(cluster.nodes[1].node_id, "01HFAKENODE000000000000002");
  EXPECT_EQ(cluster.nodes[1].running_jobs, 2);
  EXPECT_EQ(cluster.nodes[1].slots.available, 3);
  // Zero values are left out of the answer: read as 0.
  EXPECT_EQ(cluster.nodes[2].slots.available, 0);
  EXPECT_EQ(cluster.nodes[3].running_jobs, 0);
  EXPECT_EQ(cluster.nodes[3].slots.cordoned, 8);
  EXPECT_EQ(cluster.free_gpus(), 11);
  EXPECT_EQ(cluster.free_nodes(), 1);  // whole 8-GPU nodes
  EXPECT_EQ(cluster.free_nodes(2), 2); // nodes with 2 GPUs free
}

TEST(ClusterParser, AnArrayAnswerIsItsFirstCluster) {
  OrderedJson answer = OrderedJson::array();
  answer.push_back(fixture("cluster-get-jupiter.json"));
  EXPECT_EQ(parse_cluster(answer, "ai2/jupiter").slots.available, 11);
}

TEST(ClusterParser, WithoutOccupancyNothingIsFree) {
  const Cluster cluster =
      parse_cluster(OrderedJson::parse(R"({"nodeCount": 2, "nodeShape": {"gpuCount": 8}})"), "a/b");
  EXPECT_FALSE(cluster.has_occupancy);
  EXPECT_EQ(cluster.free_gpus(), 0);
  EXPECT_EQ(cluster.free_nodes(), 0);
  EXPECT_EQ(row_json(cluster, 0)["error"], "beaker gave no occupancy for it");
}

TEST(ClusterParser, AWrongTypeNamesTheFieldAndIsBeakersFault) {
  const Error error = test::thrown_error(
      [] { parse_cluster(OrderedJson::parse(R"({"clusterJobQueueSize": "many"})"), "ai2/x"); });
  EXPECT_EQ(error.code(), 4);
  EXPECT_NE(std::string(error.what()).find("clusterJobQueueSize"), std::string::npos)
      << error.what();
}

TEST(ClusterParser, ListNamesEachClusterAccountSlashName) {
  EXPECT_EQ(parse_cluster_names(fixture("cluster-list-ai2.json"), "ai2"),
            (std::vector<std::string>{"ai2/jupiter", "ai2/ceres", "ai2/phobos"}));
}

TEST(ClusterParser, RowCarriesTheDocumentedKeys) {
  const OrderedJson row =
      row_json(parse_cluster(fixture("cluster-get-jupiter.json"), "ai2/jupiter"), 0);
  EXPECT_EQ(row["cluster"], "ai2/jupiter");
  EXPECT_EQ(row["free_gpus"], 11);
  EXPECT_EQ(row["total_gpus"], 32);
  EXPECT_EQ(row["cordoned_gpus"], 8);
  EXPECT_EQ(row["free_nodes"], 1);
  EXPECT_EQ(row["queued_jobs"], 12);
  EXPECT_EQ(row["gpu_type"], "GPU_TYPE_NVIDIA_H100");
  EXPECT_FALSE(row.contains("error"));
}

TEST(ClusterPatterns, GlobsMatchKnownNamesAndNamesStayAsWritten) {
  EXPECT_EQ(
      expand_patterns({"ai2/j*", "ai2/holmes", "ai2/j*"}, {"ai2/jupiter", "ai2/juno", "ai2/ceres"}),
      (std::vector<std::string>{"ai2/holmes", "ai2/juno", "ai2/jupiter"}));
  EXPECT_EQ(patterns_of({"auto"}), (std::vector<std::string>{"ai2/*"}));
  EXPECT_EQ(patterns_of({"auto", "ai2/a"}), (std::vector<std::string>{"ai2/a"}));
}

// A cluster of `nodes` 8-GPU nodes, `free` of them entirely free, the rest full.
Cluster world(const std::string &name, int nodes, int free, int queued) {
  Cluster c;
  c.name = name;
  c.node_count = nodes;
  c.node_gpus = 8;
  c.queued_jobs = queued;
  c.has_occupancy = true;
  c.slots.total = nodes * 8;
  c.slots.available = free * 8;
  for (int i = 0; i < nodes; ++i) {
    NodeOccupancy node;
    node.node_id = name + "-" + std::to_string(i);
    node.slots.total = 8;
    node.slots.available = i < free ? 8 : 0;
    c.nodes.push_back(node);
  }
  return c;
}

Snapshot three_clusters() {
  Snapshot s;
  s.clusters = {
      world("ai2/full", 4, 0, 30), world("ai2/roomy", 8, 6, 2), world("ai2/quiet", 4, 2, 0)};
  return s;
}

TEST(ClusterRanking, FourNodesGoWhereFourWholeNodesAreFree) {
  const Placement p = rank(three_clusters(), {4, 8});
  EXPECT_EQ(p.chosen, "ai2/roomy");
  EXPECT_TRUE(p.fits_now);
  ASSERT_EQ(p.ranking.size(), 3u);
  EXPECT_EQ(p.ranking[0].cluster, "ai2/roomy");
  // Neither of the others fits now: the shorter queue ranks first.
  EXPECT_EQ(p.ranking[1].cluster, "ai2/quiet");
  EXPECT_FALSE(p.ranking[1].fits_now);
  EXPECT_EQ(p.ranking[2].cluster, "ai2/full");
}

TEST(ClusterRanking, OneNodePrefersTheShortestQueueWhereItFits) {
  const Placement p = rank(three_clusters(), {1, 2});
  EXPECT_EQ(p.chosen, "ai2/quiet");
  EXPECT_TRUE(p.fits_now);
  EXPECT_EQ(p.ranking[1].cluster, "ai2/roomy");
  EXPECT_EQ(p.ranking[2].cluster, "ai2/full"); // full: ruled out though it can host
  EXPECT_FALSE(p.ranking[2].fits_now);
}

TEST(ClusterRanking, EqualQueuesPreferMoreFreeGpus) {
  Snapshot s;
  s.clusters = {world("ai2/a", 4, 1, 3), world("ai2/b", 4, 3, 3)};
  EXPECT_EQ(rank(s, {1, 8}).chosen, "ai2/b");
}

TEST(ClusterRanking, NothingFitsNowChoosesByQueueAndSaysSo) {
  const Placement p = rank(three_clusters(), {7, 8});
  EXPECT_FALSE(p.fits_now);
  EXPECT_EQ(p.chosen, "ai2/roomy"); // the only one with 7 nodes at all
  EXPECT_NE(p.reason.find("fits on no cluster now"), std::string::npos) << p.reason;
  Snapshot busier = three_clusters();
  busier.clusters[1] = world("ai2/roomy", 8, 2, 2);
  const Placement q = rank(busier, {3, 8});
  EXPECT_FALSE(q.fits_now);
  EXPECT_EQ(q.chosen, "ai2/quiet"); // 0 queued beats roomy's 2 and full's 30
  EXPECT_EQ(q.ranking[2].cluster, "ai2/full");
}

TEST(ClusterRanking, ClustersWhoseNodesAreTooSmallAreNeverChosen) {
  Snapshot s;
  Cluster small = world("ai2/small", 4, 4, 0);
  small.node_gpus = 4;
  Cluster broken;
  broken.name = "ai2/broken";
  broken.error = "beaker cluster get ai2/broken failed (exit 1): not found";
  s.clusters = {small, broken};
  const Placement p = rank(s, {1, 8});
  EXPECT_EQ(p.chosen, "");
  EXPECT_NE(p.reason.find("no cluster"), std::string::npos) << p.reason;
  EXPECT_NE(p.ranking[0].why.find("its nodes have 4 GPUs"), std::string::npos);
  EXPECT_EQ(p.ranking[1].why,
            "beaker could not describe it: beaker cluster get ai2/broken failed (exit 1): not "
            "found");
}

TEST(ClusterRanking, AClusterWithoutOccupancyIsNeverChosen) {
  Snapshot s;
  Cluster unknown = world("ai2/unknown", 4, 4, 0);
  unknown.has_occupancy = false;
  s.clusters = {unknown};
  const Placement p = rank(s, {1, 8});
  EXPECT_EQ(p.chosen, "");
  EXPECT_EQ(p.reason,
            "no cluster looked at can host 1 node x 8 GPUs (ai2/unknown: beaker gave no "
            "occupancy for it)");
}

TEST(ClusterRanking, TheReceiptJsonRecordsTheSnapshot) {
  Snapshot s = three_clusters();
  s.taken_at = "2025-01-01T00:00:00Z";
  const OrderedJson json = to_json(rank(s, {4, 8}));
  EXPECT_EQ(json["chosen"], "ai2/roomy");
  EXPECT_EQ(json["snapshot"]["taken_at"], "2025-01-01T00:00:00Z");
  ASSERT_EQ(json["snapshot"]["clusters"].size(), 3u);
  EXPECT_EQ(json["snapshot"]["clusters"][1]["free_gpus"], 48);
  EXPECT_EQ(json["ranking"][0]["why"],
            "fits now: 6 nodes with 8 GPUs free, 4 needed; 2 jobs queued");
}

} // namespace
} // namespace pb::clusters
