// SPDX-License-Identifier: MIT
// Prime-RL v0.9 launches (docs/launch.md "Prime-RL v0.9"), through the binary: the corpus's three
// TOMLs of that generation preview (or name every key the launch needs in one run) and render
// the topology they ask for, with Prime-RL's own placement.
#include "launch_fixture.hpp"

#include <fmt/format.h>

using nlohmann::json;

namespace pb::test {
namespace {

std::filesystem::path corpus(const std::string &name) {
  return shared_dir() / "corpus" / "prime-rl" / ("main-559b4477-" + name + ".toml");
}

// The corpus lives outside any mount, so "/" is the mount.
RunResult preview(const std::string &program,
                  const std::filesystem::path &toml,
                  std::vector<std::string> extra = {}) {
  RunOptions options;
  options.cwd = std::filesystem::temp_directory_path();
  options.env = {{"PRIMEBEAKER_LAUNCH_ID", "v09"}};
  std::vector<std::string> args = {
      program, "preview", "--toml", toml.string(), "--mount-path", "/"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_primebeaker(args, options);
}

std::map<std::string, std::string> env_of(const json &out) {
  std::map<std::string, std::string> env;
  for (const auto &e : out["spec"]["tasks"][0]["envVars"]) {
    if (e.contains("value")) {
      env[e["name"].get<std::string>()] = e["value"].get<std::string>();
    }
  }
  return env;
}

TEST(PrimeRlV09, WordlePreviewsAsOneEightGpuNode) {
  const auto result = preview("rl", corpus("examples-basic-wordle-rl"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  const auto &task = out["spec"]["tasks"][0];
  EXPECT_EQ(out["experiment_name"], "wordle"); // monitors.wandb.name
  EXPECT_EQ(task["name"], "rl");
  EXPECT_FALSE(task.contains("replicas"));
  EXPECT_EQ(task["resources"]["gpuCount"], 8); // num_train_gpus 2 + num_infer_gpus 6
  const auto env = env_of(out);
  EXPECT_EQ(env.at("PRIME_RL_GENERATION"), "v0.9");
  EXPECT_EQ(env.at("PRIME_RL_RUN_DIR"), "wordle");
  EXPECT_EQ(env.at("PRIME_RL_RUN_NAME"), "wordle"); // the TOML has no [run]: the launch names it
  EXPECT_EQ(out["wandb_run"]["project"], "wordle");
}

// Prime-RL names an unnamed run at random, which no resume could find: the launch names it after
// its file (stable), passes that as run.name, and says so on the card (issue 36).
TEST(PrimeRlV09, UnnamedRunsTakeTheNameTheirFileGivesAndSaySo) {
  for (const auto *name :
       {"configs-ci-integration-reverse-text-resume", "examples-advanced-qwen3-30b-a3b-swe"}) {
    const std::string expected = fmt::format("prime-rl-main-559b4477-{}", name);
    const auto result = preview("rl", corpus(name));
    ASSERT_EQ(result.exit_code, 0) << name << result.err;
    const auto out = json::parse(result.out);
    EXPECT_EQ(out["experiment_name"], expected);
    EXPECT_EQ(env_of(out).at("PRIME_RL_RUN_NAME"), expected);
    EXPECT_EQ(env_of(out).at("PRIME_RL_RUN_DIR"), expected);
    EXPECT_EQ(preview("rl", corpus(name)).out, result.out) << "the name is stable";
    const auto card = preview("rl", corpus(name), {"--card"});
    EXPECT_NE(card.out.find(fmt::format("  defaulted  run.name: none, so the launch names the run "
                                        "'{}'",
                                        expected)),
              std::string::npos)
        << card.out;
  }
}

TEST(PrimeRlV09, ReverseTextResumePreviewsAsTwoGpusWithItsName) {
  const auto result =
      preview("rl", corpus("configs-ci-integration-reverse-text-resume"), {"--name", "rt"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  EXPECT_EQ(out["spec"]["tasks"][0]["resources"]["gpuCount"], 2); // deployment defaults 1 + 1
  EXPECT_EQ(env_of(out).at("PRIME_RL_RUN_DIR"), "rt");
  EXPECT_TRUE(out["wandb_run"].is_null()); // no [monitors.wandb]: no W&B run, Prime-RL's default
}

TEST(PrimeRlV09, SweRendersInferenceFirstThenTrainerNodes) {
  // Multi-node v0.9 needs no --registry: nothing of LiteRegistry runs in Prime-RL's wiring.
  const auto result =
      preview("rl", corpus("examples-advanced-qwen3-30b-a3b-swe"), {"--name", "swe-qwen"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  const auto &task = out["spec"]["tasks"][0];
  EXPECT_EQ(task["name"], "prime-rl-multinode");
  EXPECT_EQ(task["replicas"], 4);
  EXPECT_EQ(task["resources"]["gpuCount"], 8);
  EXPECT_EQ(task["context"]["autoResume"], false);
  EXPECT_EQ(task["command"].back(), "rl");
  const auto env = env_of(out);
  EXPECT_EQ(env.at("NUM_INFER_NODES"), "2");
  EXPECT_EQ(env.at("NUM_TRAIN_NODES"), "2");
  EXPECT_EQ(env.at("TOTAL_NODES"), "4");
  EXPECT_EQ(env.at("INFERENCE_TP"), "8");
  EXPECT_EQ(env.at("ORCHESTRATOR_REPLICA"), "2");
  EXPECT_EQ(env.at("ENV_SERVERS_JSON"), R"(["train/swe", "eval/swe-bench-verified"])");
  EXPECT_EQ(env.count("REGISTRY"), 0u);
  EXPECT_EQ(env.count("GATEWAY_PORT"), 0u);

  const auto card = preview(
      "rl", corpus("examples-advanced-qwen3-30b-a3b-swe"), {"--name", "swe-qwen", "--card"});
  ASSERT_EQ(card.exit_code, 0) << card.err;
  for (const auto *line :
       {"  inference  2 engines on 16 GPUs (tp 8), behind vllm-router on replica 0\n",
        "  trainer    16 ranks on replicas 2-3 (torchrun, rendezvous on replica 2 port 29500)\n",
        "  replica 0  GPUs 0-7 inference: 1 engine on backend ports +0..0, vllm-router on the "
        "router port\n",
        "  replica 3  GPUs 0-7 trainer (global ranks 8-15)\n",
        "             orchestrator (ZMQ rollouts on 5555 and 5556), 2 env servers (train/swe, "
        "eval/swe-bench-verified)\n",
        "  ports      NCCL weight broadcast 29501 on replica 2, vLLM DP RPC 13345\n"}) {
    EXPECT_NE(card.out.find(line), std::string::npos) << line << "\n" << card.out;
  }
}

TEST(PrimeRlV09, PlacementKeysAreReadAsPrimeRlReadsThem) {
  TempDir dir;
  const auto write = [&](const std::string &extra) {
    std::string text = read_file(corpus("examples-advanced-qwen3-30b-a3b-swe"));
    text.replace(text.find("num_infer_nodes = 2"), 19, extra);
    write_file(dir.path() / "swe.toml", text + "\n[run]\nname = \"swe\"\n");
    return dir.path() / "swe.toml";
  };
  auto result = preview("rl", write("num_infer_nodes = 3\norchestrator_on_inference = true"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto env = env_of(json::parse(result.out));
  EXPECT_EQ(env.at("TOTAL_NODES"), "5");
  EXPECT_EQ(env.at("ORCHESTRATOR_REPLICA"), "2"); // the last inference node
  // Unset: one inference node (Prime-RL's auto_setup_infer_nodes for a single-node inference).
  result = preview("rl", write(""));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  env = env_of(json::parse(result.out));
  EXPECT_EQ(env.at("NUM_INFER_NODES"), "1");
  EXPECT_EQ(env.at("TOTAL_NODES"), "3");
  // Expert parallelism is placed (docs/launch.md "Placements"): with tp 8 on 8 GPUs and one
  // node per inference replica each engine is its own group, so nothing more is passed; with
  // tp 4 on two nodes the replica's four engines form one DP group.
  std::string ep = read_file(corpus("examples-advanced-qwen3-30b-a3b-swe"));
  ep.replace(ep.find("tensor_parallel_size = 8"),
             24,
             "tensor_parallel_size = 8\nenable_expert_parallel = true");
  std::string one_node = ep;
  one_node.replace(
      one_node.find("num_infer_nodes = 2"), 19, "num_infer_nodes = 1\nnum_infer_replicas = 2");
  write_file(dir.path() / "ep.toml", one_node + "\n[run]\nname = \"swe\"\n");
  result = preview("rl", dir.path() / "ep.toml");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(env_of(json::parse(result.out)).count("INFERENCE_ENABLE_EXPERT_PARALLEL"), 0u);
  ep.replace(ep.find("tensor_parallel_size = 8"), 24, "tensor_parallel_size = 4");
  write_file(dir.path() / "ep.toml", ep + "\n[run]\nname = \"swe\"\n");
  result = preview("rl", dir.path() / "ep.toml");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  env = env_of(json::parse(result.out));
  EXPECT_EQ(env.at("INFERENCE_ENABLE_EXPERT_PARALLEL"), "1");
  EXPECT_EQ(env.at("NODES_PER_INFER_REPLICA"), "2");
  // llm-d's router in front of plain engines: placed (epp + Envoy on inference node 0), and
  // what Prime-RL refuses behind it is refused at its key.
  const std::string swe = read_file(corpus("examples-advanced-qwen3-30b-a3b-swe"));
  write_file(dir.path() / "llmd.toml",
             swe + "\n[run]\nname = \"swe\"\n\n[inference.router]\ntype = \"llm-d\"\n");
  const std::vector<std::string> llmd_image = {
      "--image", "beaker://team/llmd", "--prime-rl", "v0.8.1.dev67", "--image-holds", "llm-d"};
  result = preview("rl", dir.path() / "llmd.toml", llmd_image);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  env = env_of(json::parse(result.out));
  EXPECT_EQ(env.at("INFERENCE_ROUTER"), "llm-d");
  EXPECT_EQ(env.count("KV_CACHE_OFFLOAD"), 0u);
  std::string routed = swe;
  routed.replace(
      routed.find("[inference.vllm]"), 16, "[inference.vllm]\nenable_return_routed_experts = true");
  write_file(dir.path() / "llmd.toml",
             routed + "\n[run]\nname = \"swe\"\n\n[inference.router]\ntype = \"llm-d\"\n");
  result = preview("rl", dir.path() / "llmd.toml", llmd_image);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("inference.vllm.enable_return_routed_experts does not work behind "
                            "the llm-d router"),
            std::string::npos)
      << result.err;
  // On one node there is nothing for llm-d to route between: refused at its key.
  write_file(dir.path() / "single.toml",
             "[run]\nname = \"one\"\n\n[inference.router]\ntype = \"llm-d\"\n");
  result = preview("rl", dir.path() / "single.toml", llmd_image);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("single.toml:5:8: inference.router.type = \"llm-d\" needs a "
                            "multi-node deployment"),
            std::string::npos)
      << result.err;
  // TP that does not divide a node is one line at its key.
  std::string text = read_file(corpus("examples-advanced-qwen3-30b-a3b-swe"));
  text.replace(text.find("tensor_parallel_size = 8"), 24, "tensor_parallel_size = 3");
  write_file(dir.path() / "tp.toml", text + "\n[run]\nname = \"swe\"\n");
  result = preview("rl", dir.path() / "tp.toml");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("tp.toml:79:24: deployment.gpus_per_node (8) must be a multiple of "
                            "inference.vllm.tensor_parallel_size (3)"),
            std::string::npos)
      << result.err;
}

// The card of a disaggregated run (docs/launch.md "Placements"): each replica's role, its
// instance and ports, the router, the TOML's weight-broadcast port, what the hosts must provide.
TEST(PrimeRlV09, TheCardShowsEachDisaggregatedRole) {
  TempDir dir;
  write_file(dir.path() / "glm.toml",
             read_file(shared_dir() / "corpus" / "prime-rl-repo" / "main-559b4477" / "examples" /
                       "advanced" / "glm-5.2" / "swe.toml") +
                 "\n[run]\nname = \"glm\"\n");
  const auto result = preview("rl", dir.path() / "glm.toml", {"--card"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const char *line :
       {"  replica 0  GPUs 0-7 prefill: 8 engines on PREFILL_PORT ports +0..7 (instance of 4 nodes "
        "rooted on replica 0, NIXL side channels 5600+), vllm-router (prefill/decode) on the "
        "router port\n",
        "  replica 5  GPUs 0-7 decode: 8 engines on DECODE_PORT ports +0..7 (instance of 4 nodes "
        "rooted on replica 4, NIXL side channels 5600+)\n",
        "  replica 8  GPUs 0-7 prefill: 8 engines on PREFILL_PORT ports +0..7 (instance of 4 nodes "
        "rooted on replica 8, NIXL side channels 5600+)\n",
        "  ports      NCCL weight broadcast 29502 on replica 16, vLLM DP RPC 13345\n",
        "  hosts      DeepEP across nodes needs the hosts' IBGDA driver options (NVSHMEM)",
        "  image      ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67 holds NIXL's pip wheel"}) {
    EXPECT_NE(result.out.find(line), std::string::npos) << line << "\n" << result.out;
  }
}

// A bundled environment's arguments in a v0.9 taskset are checked at preview, as v0.8.0's
// legacy ones are (docs/environments.md).
TEST(PrimeRlV09, BundledTasksetArgumentsAreCheckedAtPreview) {
  TempDir dir;
  const std::string source = "\n[[orchestrator.eval.source]]\nname = \"lbl\"\n\n"
                             "[orchestrator.eval.source.env.taskset]\n"
                             "id = \"primebeaker-jtc-label\"\n"
                             "args = { dataset = \"data.jsonl\", bogus = 3 }\n";
  write_file(dir.path() / "w.toml", read_file(corpus("examples-basic-wordle-rl")) + source);
  const auto result = preview("rl", dir.path() / "w.toml");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("w.toml:48:42: orchestrator.eval.source[0].env.taskset.args.bogus: "
                            "label has no argument 'bogus'"),
            std::string::npos)
      << result.err;
}

TEST(PrimeRlV09, OlderAndUnknownGenerationsKeepTheirOneLine) {
  const auto result =
      preview("rl", shared_dir() / "corpus" / "prime-rl" / "v0.7.0-examples-intellect-3.1-rl.toml");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
  EXPECT_NE(result.err.find("this is a Prime-RL v0.6-v0.7 config"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("primebeaker launches the v0.8.0 and v0.9 generations"),
            std::string::npos)
      << result.err;
}

} // namespace
} // namespace pb::test
