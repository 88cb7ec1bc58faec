// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/layout.hpp>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using namespace pb::checkpoints;
using pb::test::thrown_error;
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
  // No [deployment] is Prime-RL's single-node default, as for a launch: read, not refused for
  // deployment.type; what that launch needs ([orchestrator]) is still named.
  EXPECT_EQ(error_of("x = 1\n").find("deployment.type"), std::string::npos);
  EXPECT_NE(error_of("x = 1\n").find("orchestrator"), std::string::npos);
  EXPECT_EQ(ranks_of("[orchestrator]\n"), 1);
  EXPECT_EQ(ranks_of("[deployment]\nnum_train_gpus = 2\nnum_infer_gpus = 1\n[orchestrator]\n"), 2);
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
  EXPECT_TRUE(
      is_v0_9(Document::load(corpus / "prime-rl/main-559b4477-examples-basic-wordle-rl.toml")));
  EXPECT_FALSE(
      is_v0_9(Document::load(corpus / "prime-rl/v0.8.0-examples-basic-reverse-text-rl.toml")));
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
}

// A v0.9 multi-node TOML as Prime-RL 559b4477 reads it (deployment keys unchanged, [run]).
std::string v0_9_multi_node(const std::string &extra = "") {
  return "output_dir = \"/weka/out\"\n" + extra +
         "[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 2\nnum_infer_nodes = 1\n"
         "[monitors.wandb]\nproject = \"p\"\n[orchestrator]\n[inference.vllm]\n";
}

TEST(CheckpointTopology, V09RanksFollowPrimeRlsDeployment) {
  // One torchrun rank per GPU of every trainer node (multi_node_rl.sbatch.j2).
  EXPECT_EQ(ranks_of(v0_9_multi_node("[resume]\n")), 16);
  EXPECT_EQ(ranks_of("clean = true\n[deployment]\ntype = \"multi_node\"\nnum_train_nodes = 3\n"
                     "gpus_per_node = 4\n"),
            12);
  // single_node: num_train_gpus, default 1; the deployment itself defaults to single_node.
  EXPECT_EQ(ranks_of("[run]\nname = \"r\"\n[deployment]\nnum_train_gpus = 3\n"), 3);
  EXPECT_EQ(ranks_of("[run]\nname = \"r\"\n"), 1);
  // RL requires num_train_nodes; SFT (no [orchestrator]) defaults it to 2, as Prime-RL does.
  const auto missing =
      error_of("[run]\nname = \"r\"\n[orchestrator]\n[deployment]\ntype = \"multi_node\"\n");
  EXPECT_EQ(ranks_of("[run]\nname = \"r\"\n[deployment]\ntype = \"multi_node\"\n"), 16);
  EXPECT_NE(missing.find("deployment.num_train_nodes"), std::string::npos) << missing;
  const auto zero = error_of("[run]\n[deployment]\nnum_train_gpus = 0\n");
  EXPECT_EQ(zero.rfind("t.toml:3:", 0), 0U) << zero;
  // The corpus: 2 trainer nodes of 8 GPUs; the CI resume config runs one trainer GPU.
  const fs::path corpus = pb::test::shared_dir() / "corpus" / "prime-rl";
  EXPECT_EQ(expected_trainer_ranks(
                Document::load(corpus / "main-559b4477-examples-advanced-qwen3-30b-a3b-swe.toml")),
            16);
  EXPECT_EQ(expected_trainer_ranks(Document::load(
                corpus / "main-559b4477-configs-ci-integration-reverse-text-resume.toml")),
            1);
}

TEST(CheckpointTopology, V09SourceIsTheRunDirectory) {
  // run.dir wins over run.name; both owners share <run>/checkpoints.
  auto source = source_from_toml(
      Document::parse(v0_9_multi_node("[run]\nname = \"shown\"\ndir = \"kept\"\n"), "t.toml"),
      "/w");
  EXPECT_EQ(source.layout, Layout::v0_9);
  EXPECT_EQ(source.output_dir, "/weka/out");
  EXPECT_EQ(source.trainer_root, "/weka/out/kept/checkpoints");
  EXPECT_EQ(source.orchestrator_root, "/weka/out/kept/checkpoints");
  EXPECT_EQ(source.expected_ranks, 16);
  // ckpt.output_dir moves the trainer's root only; output_dir defaults to "outputs".
  source = source_from_toml(Document::parse("[run]\nname = \"r\"\n[ckpt]\noutput_dir = "
                                            "\"fast\"\n[deployment]\nnum_train_gpus = 2\n",
                                            "t.toml"),
                            "/w");
  EXPECT_EQ(source.output_dir, "/w/outputs");
  EXPECT_EQ(source.trainer_root, "/w/fast/checkpoints");
  EXPECT_EQ(source.orchestrator_root, "/w/outputs/r/checkpoints");
  // Without run.dir / run.name the launch named it: the caller passes the name, else exit 3.
  const auto unnamed = Document::parse(v0_9_multi_node("[resume]\n"), "t.toml");
  EXPECT_EQ(source_from_toml(unnamed, "/w", "my-exp").trainer_root, "/weka/out/my-exp/checkpoints");
  const auto error = pb::test::thrown_error([&] { source_from_toml(unnamed, "/w"); });
  EXPECT_EQ(error.code(), 3);
  EXPECT_NE(std::string(error.what()).find("without run.dir or run.name"), std::string::npos)
      << error.what();
  // The layout carries what the other modules read.
  const auto layout = layout_from_toml(unnamed, "/w", "my-exp");
  EXPECT_EQ(layout.run_dir, "/weka/out/my-exp");
  EXPECT_EQ(layout.broadcasts, "/weka/out/my-exp/broadcasts");
  EXPECT_EQ(layout.step_dirs,
            (std::vector<fs::path>{"/weka/out/my-exp/rollouts", "/weka/out/my-exp/broadcasts"}));
  EXPECT_EQ(layout.wandb_dirs, std::vector<fs::path>{"/weka/out/my-exp/wandb"});
  EXPECT_EQ(layout.config_dir, "/weka/out/my-exp/configs");
}

TEST(CheckpointTopology, V08LayoutIsUnchanged) {
  const auto layout = layout_from_toml(Document::parse(multi_node("2", "2", 4), "t.toml"), "/w");
  EXPECT_EQ(layout.run_dir, "/weka/out");
  EXPECT_EQ(layout.orchestrator_checkpoints, "/weka/out/run_default/checkpoints");
  EXPECT_EQ(layout.step_dirs,
            (std::vector<fs::path>{"/weka/out/rollouts",
                                   "/weka/out/run_default/rollouts",
                                   "/weka/out/run_default/broadcasts"}));
  EXPECT_EQ(layout.wandb_dirs,
            (std::vector<fs::path>{"/weka/out/wandb", "/weka/out/run_default/wandb"}));
  EXPECT_TRUE(layout.config_dir.empty());
}

TEST(CheckpointTopology, RunDirNameAndResumeKeys) {
  namespace primerl = pb::primerl;
  EXPECT_EQ(primerl::run_dir_name(Document::parse("[run]\nname = \"n\"\n", "t.toml"), "f"), "n");
  EXPECT_EQ(primerl::run_dir_name(Document::parse("[run]\n", "t.toml"), "f"), "f");
  EXPECT_EQ(thrown_error([] {
              primerl::run_dir_name(Document::parse("[run]\ndir = 3\n", "t.toml"), "");
            }).code(),
            3);
  // A run directory must be one plain path component.
  EXPECT_EQ(thrown_error([] {
              primerl::run_layout(primerl::Generation::v0_9, "/o", "../x", std::nullopt);
            }).code(),
            3);
  EXPECT_EQ(primerl::resume_keys(primerl::Generation::v0_9).step, "resume.step");
  EXPECT_EQ(primerl::resume_keys(primerl::Generation::v0_9).clean, "clean");
  EXPECT_EQ(primerl::resume_keys(primerl::Generation::v0_8).step, "ckpt.resume_step");
  EXPECT_EQ(primerl::resume_keys(primerl::Generation::v0_8).clean, "clean_output_dir");
}

} // namespace
