// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace pb::primerl {
namespace {

toml::Document parse(const std::string &text) {
  return toml::Document::parse(text, "t.toml");
}

std::string error_of(const std::function<void()> &action) {
  try {
    action();
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 3);
    return error.what();
  }
  return "<no error>";
}

const char *const k_multi = R"(output_dir = "out"
[deployment]
type = "multi_node"
gpus_per_node = 8
num_train_nodes = 1
num_infer_nodes = 2
[trainer.model]
cp = 2
dp_replicate = 2
[inference]
api_server_count = 6
[inference.parallel]
tp = 2
dp = 6
[wandb]
name = "n"
project = "p"
)";

TEST(Generation, DetectsEachGenerationAndNamesTheKey) {
  EXPECT_EQ(detect_generation(parse("[resume]\n")).generation, Generation::v0_9);
  EXPECT_EQ(detect_generation(parse("[monitors.wandb]\n")).generation, Generation::v0_9);
  EXPECT_EQ(detect_generation(parse("clean = true\n[deployment]\n")).generation, Generation::v0_9);
  EXPECT_EQ(detect_generation(parse("clean = true\n")).generation, Generation::undetermined);
  // Environment sources are read by both generations: they show none.
  EXPECT_EQ(detect_generation(parse("[[orchestrator.train.source]]\nname = 'a'\n")).generation,
            Generation::undetermined);
  const auto v08 = detect_generation(parse("[[orchestrator.train.source]]\n[wandb]\n"));
  EXPECT_EQ(v08.generation, Generation::v0_8);
  EXPECT_EQ(v08.evidence, "[wandb] at t.toml:2:1");
  EXPECT_EQ(detect_generation(parse("[ckpt]\nresume_step = 3\n")).generation, Generation::v0_8);
  EXPECT_EQ(detect_generation(parse("[orchestrator.concurrency]\n")).generation, Generation::v0_9);
  EXPECT_EQ(detect_generation(parse("[inference.vllm]\n")).generation, Generation::v0_9);
  EXPECT_EQ(detect_generation(parse("[data]\n[deployment]\nnum_train_gpus = 1\n")).generation,
            Generation::v0_9);
  EXPECT_EQ(detect_generation(parse("[data]\n[deployment]\nnum_gpus = 1\n")).generation,
            Generation::v0_8);
  EXPECT_EQ(detect_generation(parse("[[orchestrator.eval.env]]\n")).generation,
            Generation::v0_6_to_v0_7);
  EXPECT_EQ(detect_generation(parse("[deployment]\n[[orchestrator.env]]\n")).generation,
            Generation::v0_5);
  EXPECT_EQ(detect_generation(parse("[[orchestrator.env]]\n")).generation,
            Generation::v0_2_to_v0_4);
  EXPECT_EQ(detect_generation(parse("trainer_gpu_ids = [1]\n")).generation,
            Generation::v0_2_to_v0_4);
  EXPECT_EQ(detect_generation(parse("[data]\n[deployment]\n")).generation,
            Generation::undetermined);
}

TEST(Generation, CorpusFilesAreDetectedAsTheirFolderSays) {
  const auto dir = test::shared_dir() / "corpus" / "prime-rl";
  const std::vector<std::pair<std::string, Generation>> expected = {
      {"main-559b4477-examples-basic-wordle-rl.toml", Generation::v0_9},
      {"v0.8.0-examples-advanced-glm-5.2-swe.toml", Generation::v0_8},
      {"v0.7.0-examples-intellect-3.1-rl.toml", Generation::v0_6_to_v0_7},
      {"v0.6.0-examples-multinode-rl.toml", Generation::v0_6_to_v0_7},
      {"v0.5.0-examples-multinode-rl.toml", Generation::v0_5},
      {"v0.4.0-examples-wordle-rl.toml", Generation::v0_2_to_v0_4},
  };
  for (const auto &[file, generation] : expected) {
    EXPECT_EQ(detect_generation(toml::Document::load(dir / file)).generation, generation) << file;
  }
  EXPECT_NO_THROW(require_supported_generation(
      toml::Document::load(dir / "v0.8.0-examples-basic-reverse-text-rl.toml")));
}

TEST(Deployment, Type) {
  EXPECT_EQ(read_deployment_type(parse("[deployment]\ntype = 'multi_node'\n")),
            DeploymentType::multi_node);
  EXPECT_EQ(error_of([] { read_deployment_type(parse("x = 1\n")); }),
            "t.toml: training TOML needs deployment.type (\"single_node\" or \"multi_node\")");
  EXPECT_EQ(error_of([] { read_deployment_type(parse("[deployment]\ntype = 'slurm'\n")); }),
            "t.toml:2:8: unsupported deployment.type 'slurm' (expected single_node or multi_node)");
}

TEST(MultiNodeRl, MixedNodeAccountingOfTheSpecFixture) {
  const auto rl = read_multi_node_rl(parse(k_multi));
  EXPECT_EQ(rl.trainer_gpus, 4);
  EXPECT_EQ(rl.mixed_infer_gpus, 4);
  EXPECT_EQ(rl.total_infer_gpus, 12);
  EXPECT_EQ(rl.total_infer_ranks, 6);
  EXPECT_EQ(rl.total_nodes, 2);
  EXPECT_EQ(rl.output_dir.value, "out");
}

TEST(MultiNodeRl, WholeTrainerNodeAddsAReplica) {
  std::string text = k_multi;
  text.replace(text.find("cp = 2"), 6, "cp = 4");
  text.replace(text.find("tp = 2"), 6, "tp = 1");
  text.replace(text.find("dp = 6"), 6, "dp = 16");
  text.replace(text.find("api_server_count = 6"), 20, "api_server_count = 16");
  const auto rl = read_multi_node_rl(parse(text));
  EXPECT_EQ(rl.mixed_infer_gpus, 0);
  EXPECT_EQ(rl.total_infer_ranks, 16);
  EXPECT_EQ(rl.total_nodes, 3);
}

TEST(MultiNodeRl, ErrorsNameKeyAndPosition) {
  std::string text = k_multi;
  text.replace(text.find("dp = 6"), 6, "dp = 5");
  EXPECT_EQ(error_of([&] { read_multi_node_rl(parse(text)); }),
            "t.toml:14:6: inference.parallel.dp (5) and inference.api_server_count (6) must both "
            "equal the external-LB rank count (12 inference GPUs / tp 2 = 6)");
  text = k_multi;
  text.replace(text.find("cp = 2"), 6, "cp = true");
  // cp read as its suggestion (1) changes the rank count, so dp is named too.
  EXPECT_EQ(error_of([&] { read_multi_node_rl(parse(text)); }),
            "t.toml: 2 problems (all of them: fix them, then retry once)");
  const auto cp_doc = parse(text);
  Problems cp_problems(cp_doc);
  (void)read_multi_node_rl(cp_doc, cp_problems);
  EXPECT_EQ(cp_problems.lines().front(),
            "t.toml:8:6: trainer.model.cp must be a positive integer, got true (bool)");
  // Everything at once: each problem a line, then the keys that fix them.
  const auto doc = parse("[deployment]\ntype = 'multi_node'\n");
  Problems found(doc);
  (void)read_multi_node_rl(doc, found);
  // output_dir and [wandb] are Prime-RL's to default: recorded, not asked for.
  EXPECT_EQ(found.defaults(),
            (std::vector<std::string>{
                "output_dir = \"outputs\" (Prime-RL's default)",
                "no [wandb]: no W&B run (Prime-RL's default); the experiment is named 't' (--name "
                "to choose)"}));
  EXPECT_EQ(found.lines(),
            (std::vector<std::string>{
                "t.toml:1:1: deployment.num_train_nodes is required for multi-node RL",
                "t.toml:1:1: deployment.num_infer_nodes is required for multi-node RL",
                "t.toml: inference.parallel.dp (1) and inference.api_server_count (1) must both "
                "equal the external-LB rank count (7 inference GPUs / tp 1 = 7)"}));
  EXPECT_EQ(found.snippet(),
            (std::vector<std::string>{"# under [deployment] (t.toml:1:1):",
                                      "num_train_nodes = 1",
                                      "num_infer_nodes = 1",
                                      "[inference]",
                                      "api_server_count = 7",
                                      "[inference.parallel]",
                                      "dp = 7"}));
  const Error error = found.to_error();
  EXPECT_EQ(error.code(), 3);
  EXPECT_EQ(std::string(error.what()),
            "t.toml: 3 problems (all of them: fix them, then retry once)");
  EXPECT_EQ(error.context().size(), 3u + 1u + found.snippet().size());
}

TEST(SingleNode, SftAndRlReadTheirKeys) {
  const auto sft =
      read_single_node_sft(toml::Document::load(test::source_dir() / "examples/sft/sft.toml"));
  EXPECT_EQ(sft.num_gpus, 2);
  EXPECT_EQ(sft.data_name.value, "examples/sft/data");
  EXPECT_TRUE(sft.wandb.offline);
  const auto rl =
      read_single_node_rl(toml::Document::load(test::source_dir() / "examples/rl/rl.toml"));
  EXPECT_EQ(rl.gpu_count(), 2);
  EXPECT_EQ(rl.wandb.name, "primebeaker-example-rl");
  try {
    read_single_node_rl(parse("[deployment]\ntype = 'multi_node'\n[wandb]\n"));
    ADD_FAILURE() << "expected pb::Error";
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 3);
    ASSERT_FALSE(error.context().empty());
    EXPECT_EQ(error.context().front(), "t.toml:2:8: deployment.type must be 'single_node' here");
  }
}

} // namespace
} // namespace pb::primerl
