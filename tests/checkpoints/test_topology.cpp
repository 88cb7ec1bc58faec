// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using namespace pb::checkpoints;
using pb::toml::Document;

// A launchable heterogeneous multi-node RL TOML (1 trainer node + 1 more inference node).
std::string multi_node(const std::string &cp,
                       const std::string &dp_replicate,
                       int trainer_gpus,
                       const std::string &extra = "") {
  const int inference = (8 - trainer_gpus) + 8 * (trainer_gpus < 8 ? 1 : 2);
  return "output_dir = \"/weka/out\"\n" + extra +
         "[deployment]\ntype = \"multi_node\"\ngpus_per_node = 8\nnum_train_nodes = "
         "1\nnum_infer_nodes = 2\n"
         "[trainer.model]\ncp = " +
         cp + "\ndp_replicate = " + dp_replicate +
         "\n"
         "[inference]\napi_server_count = " +
         std::to_string(inference) +
         "\n"
         "[inference.parallel]\ntp = 1\ndp = " +
         std::to_string(inference) +
         "\n"
         "[wandb]\nproject = \"p\"\nname = \"n\"\n[orchestrator]\n";
}

std::string single_node(int train, int infer) {
  return "output_dir = \"/weka/out\"\n[deployment]\ntype = \"single_node\"\ngpus_per_node = " +
         std::to_string(train + infer) + "\nnum_train_gpus = " + std::to_string(train) +
         "\nnum_infer_gpus = " + std::to_string(infer) +
         "\n[wandb]\nproject = \"p\"\nname = \"n\"\n[orchestrator]\n";
}

int ranks_of(const std::string &text) {
  return expected_trainer_ranks(Document::parse(text, "t.toml"));
}

std::string error_of(const std::string &text) {
  const auto error = pb::test::thrown_error([&] { ranks_of(text); });
  EXPECT_EQ(error.code(), 3);
  // What the user sees: the message, then each problem on a context line of its own.
  std::string shown = error.what();
  for (const auto &line : error.context()) {
    shown += "\n" + line;
  }
  return shown;
}

TEST(CheckpointTopology, MultiNodeRanksAreCpTimesDpReplicate) {
  // The Python reference tool's worked example: 4 shards per step.
  EXPECT_EQ(ranks_of(multi_node("2", "2", 4)), 4);
  EXPECT_EQ(ranks_of(multi_node("1", "8", 8)), 8);
  EXPECT_EQ(ranks_of(multi_node("3", "1", 3)), 3);
}

TEST(CheckpointTopology, SingleNodeRanksAreTrainGpus) {
  EXPECT_EQ(ranks_of(single_node(3, 5)), 3);
  EXPECT_EQ(ranks_of(single_node(1, 1)), 1);
}

TEST(CheckpointTopology, BadTomlsNameFileLineColumn) {
  const auto zero = error_of(multi_node("0", "2", 0));
  EXPECT_EQ(zero.rfind("t.toml:", 0), 0U) << zero;
  EXPECT_NE(zero.find("trainer.model.cp"), std::string::npos) << zero;
  const auto boolean = error_of(multi_node("2", "true", 2));
  EXPECT_NE(boolean.find("trainer.model.dp_replicate"), std::string::npos) << boolean;
  EXPECT_NE(error_of("[deployment]\ntype = \"cluster\"\n").find("t.toml:2:8:"), std::string::npos);
  EXPECT_NE(error_of("x = 1\n").find("deployment.type"), std::string::npos);
}

TEST(CheckpointTopology, CorpusExamples) {
  const fs::path corpus = pb::test::shared_dir() / "corpus";
  const auto search = Document::load(
      corpus / "primebeaker-examples/examples-search-agent-webterminal-multinode-rl.toml");
  EXPECT_EQ(expected_trainer_ranks(search), 8);
  EXPECT_EQ(expected_trainer_ranks(
                Document::load(corpus / "primebeaker-examples/examples-rl-config.toml")),
            1);
  const auto source = source_from_toml(search, "/cwd");
  EXPECT_EQ(source.layout, Layout::v0_8_0);
  EXPECT_EQ(source.output_dir,
            "/weka/gfaria/primebeaker/outputs/search-agent-webterminal-qwen35-4b");
  EXPECT_EQ(source.trainer_root, source.output_dir / "checkpoints");
  EXPECT_EQ(source.orchestrator_root, source.output_dir / "run_default/checkpoints");
  EXPECT_EQ(source.expected_ranks, 8);
  EXPECT_TRUE(is_post_v0_8_0(
      Document::load(corpus / "prime-rl/main-559b4477-examples-basic-wordle-rl.toml")));
  EXPECT_FALSE(is_post_v0_8_0(
      Document::load(corpus / "prime-rl/v0.8.0-examples-basic-reverse-text-rl.toml")));
}

TEST(CheckpointTopology, SourceFromToml) {
  std::string text = multi_node("2", "2", 4);
  text.replace(text.find("\"/weka/out\""), 11, "\"runs/a/\"");
  auto source = source_from_toml(Document::parse(text, "t.toml"), "/work");
  EXPECT_EQ(source.output_dir, "/work/runs/a");
  EXPECT_EQ(source.expected_ranks, 4);
  source = source_from_toml(
      Document::parse(multi_node("2", "2", 4, "[ckpt]\noutput_dir = \"/fast\"\n"), "t.toml"), "/w");
  EXPECT_EQ(source.trainer_root, "/fast/checkpoints");
  EXPECT_EQ(source.orchestrator_root, "/weka/out/run_default/checkpoints");
  const auto error = pb::test::thrown_error([] {
    source_from_toml(Document::parse(multi_node("2", "2", 4, "[resume]\n"), "t.toml"), "/w");
  });
  EXPECT_EQ(error.code(), 3);
  const std::string message = error.what();
  EXPECT_NE(message.find("post-v0.8.0 Prime-RL config"), std::string::npos) << message;
  EXPECT_NE(message.find("--output-dir RUN_DIR --ranks N"), std::string::npos) << message;
}

} // namespace
