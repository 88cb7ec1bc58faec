// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using namespace pb::checkpoints;
using pb::toml::Document;

int ranks_of(const std::string &text) {
  return expected_trainer_ranks(Document::parse(text, "t.toml"));
}

std::string error_of(const std::string &text) {
  try {
    ranks_of(text);
  } catch (const pb::Error &e) {
    EXPECT_EQ(e.code(), 3);
    return e.what();
  }
  return "no error";
}

TEST(CheckpointTopology, MultiNodeRanksAreCpTimesDpReplicate) {
  // The reference's worked example (resume-run-services.md §1.4): 4 shards per step.
  EXPECT_EQ(
      ranks_of("[deployment]\ntype = \"multi_node\"\n[trainer.model]\ncp = 2\ndp_replicate = 2\n"),
      4);
  EXPECT_EQ(ranks_of("[deployment]\ntype = \"multi_node\"\n[trainer.model]\ndp_replicate = 8\n"),
            8);
  EXPECT_EQ(ranks_of("deployment.type = \"multi_node\"\ntrainer.model = { cp = 3 }\n"), 3);
  EXPECT_EQ(ranks_of("[deployment]\ntype = \"multi_node\"\n"), 1);
}

TEST(CheckpointTopology, SingleNodeRanksAreTrainGpus) {
  EXPECT_EQ(ranks_of("[deployment]\nnum_train_gpus = 3\nnum_infer_gpus = 5\n"), 3);
  EXPECT_EQ(ranks_of("[deployment]\ntype = \"single_node\"\n"), 1);
  EXPECT_EQ(ranks_of("output_dir = \"x\"\n"), 1);
}

TEST(CheckpointTopology, BadFactorsNameFileLineColumn) {
  EXPECT_EQ(error_of("[deployment]\ntype = \"multi_node\"\n[trainer.model]\ncp = 0\n"),
            "t.toml:4:6: trainer.model.cp must be a positive integer, got 0");
  EXPECT_EQ(error_of("[deployment]\ntype = \"multi_node\"\n[trainer.model]\ndp_replicate = true\n"),
            "t.toml:4:16: trainer.model.dp_replicate must be a positive integer, not a bool");
  EXPECT_EQ(error_of("[deployment]\ntype = \"multi_node\"\n[trainer.model]\ncp = 2.0\n"),
            "t.toml:4:6: trainer.model.cp must be a positive integer, not a float");
  EXPECT_EQ(
      error_of("[deployment]\ntype = \"cluster\"\n"),
      "t.toml:2:8: deployment.type must be \"single_node\" or \"multi_node\", got \"cluster\"");
  EXPECT_EQ(error_of("[deployment]\ntype = 3\n"), "t.toml:2:8: deployment.type must be a string");
}

TEST(CheckpointTopology, CorpusExamples) {
  const fs::path corpus = pb::test::shared_dir() / "corpus";
  EXPECT_EQ(
      expected_trainer_ranks(Document::load(
          corpus / "primebeaker-examples/examples-search-agent-webterminal-multinode-rl.toml")),
      8);
  EXPECT_EQ(expected_trainer_ranks(
                Document::load(corpus / "primebeaker-examples/examples-rl-config.toml")),
            1);
  const auto source = source_from_toml(
      Document::load(corpus /
                     "primebeaker-examples/examples-search-agent-webterminal-multinode-rl.toml"),
      "/cwd");
  EXPECT_EQ(source.layout, Layout::v0_8_0);
  EXPECT_EQ(source.output_dir,
            "/weka/gfaria/primebeaker/outputs/search-agent-webterminal-qwen35-4b");
  EXPECT_EQ(source.trainer_root, source.output_dir / "checkpoints");
  EXPECT_EQ(source.orchestrator_root, source.output_dir / "run_default/checkpoints");
  EXPECT_TRUE(is_post_v0_8_0(
      Document::load(corpus / "prime-rl/main-559b4477-examples-basic-wordle-rl.toml")));
  EXPECT_FALSE(is_post_v0_8_0(
      Document::load(corpus / "prime-rl/v0.8.0-examples-basic-reverse-text-rl.toml")));
}

TEST(CheckpointTopology, SourceFromToml) {
  auto source = source_from_toml(Document::parse("output_dir = \"runs/a/\"\n", "t.toml"), "/work");
  EXPECT_EQ(source.output_dir, "/work/runs/a");
  EXPECT_EQ(source.expected_ranks, 1);
  source = source_from_toml(Document::parse("x = 1\n", "t.toml"), "/work");
  EXPECT_EQ(source.output_dir, "/work/outputs"); // Prime-RL's default
  source = source_from_toml(
      Document::parse("output_dir = \"/o\"\n[ckpt]\noutput_dir = \"/fast\"\n", "t.toml"), "/w");
  EXPECT_EQ(source.trainer_root, "/fast/checkpoints");
  EXPECT_EQ(source.orchestrator_root, "/o/run_default/checkpoints");
  source = source_from_toml(
      Document::parse("output_dir = \"/o\"\n[run]\nname = \"r1\"\n[resume]\n", "t.toml"), "/w");
  EXPECT_EQ(source.layout, Layout::post_v0_8_0);
  EXPECT_EQ(source.trainer_root, "/o/r1/checkpoints");
  EXPECT_EQ(source.orchestrator_root, "/o/r1/checkpoints");
  EXPECT_THROW(source_from_toml(Document::parse("output_dir = 3\n", "t.toml"), "/w"), pb::Error);
  EXPECT_THROW(source_from_toml(Document::parse("output_dir = \"/o\"\n[resume]\n", "t.toml"), "/w"),
               pb::Error);
}

} // namespace
