// SPDX-License-Identifier: MIT
// Plan snapshots (docs/node.md "The plan"): every replica of the example topologies, from the
// environment `rl|sft preview` renders for them, printed by `node rl|sft|single --dry-run`, against
// tests/node/golden/ (PB_UPDATE_GOLDEN=1 rewrites them). A dry-run changes nothing on disk.
#include "test_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <regex>

namespace {

namespace fs = std::filesystem;
using pb::test::read_file;
using pb::test::write_file;

void expect_golden(const std::string &name, const std::string &actual) {
  const auto path = pb::test::source_dir() / "tests" / "node" / "golden" / name;
  const char *update = std::getenv("PB_UPDATE_GOLDEN");
  if ((update != nullptr && std::string(update) == "1") || !fs::exists(path)) {
    write_file(path, actual);
    if (update == nullptr) {
      ADD_FAILURE() << "golden file " << path << " was missing; wrote it";
    }
    return;
  }
  EXPECT_EQ(read_file(path), actual)
      << "golden " << name << " differs (PB_UPDATE_GOLDEN=1 rewrites it)";
}

class PlanSnapshot : public ::testing::Test {
protected:
  PlanSnapshot() {
    fs::copy(pb::test::source_dir() / "examples", m_root / "examples", fs::copy_options::recursive);
  }

  std::string normalized(std::string text) const {
    for (const auto &[from, to] :
         {std::pair<std::string, std::string>{pb::test::binary_path().string(), "<PRIMEBEAKER>"},
          {m_root.path().string(), "<TMP>"}}) {
      for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos)) {
        text.replace(pos, from.size(), to);
      }
    }
    return text;
  }

  // The envVars `<program> preview` renders for the example (values only: secrets are names).
  std::map<std::string, std::string>
  rendered_env(const std::string &program,
               const std::string &toml,
               const std::string &prime_rl = "",
               const std::vector<std::string> &extra = {}) const {
    pb::test::RunOptions options;
    options.cwd = m_root.path();
    options.env = {{"PRIMEBEAKER_LAUNCH_ID", "0123456789abcdef0123456789abcdef"}};
    std::vector<std::string> args = {program,
                                     "preview",
                                     "--toml",
                                     (m_root / toml).string(),
                                     "--mount-path",
                                     m_root.path().string(),
                                     "--working-dir",
                                     m_root.path().string(),
                                     "--scratch-dir",
                                     (m_root / "scratch").string(),
                                     "--home-dir",
                                     m_root.path().string(),
                                     "--wandb-run-id",
                                     "run1",
                                     "--no-stage",
                                     "--image",
                                     "beaker://team/image",
                                     "--prime-rl",
                                     "v0.7.1.dev83"};
    // The image holds the Prime-RL the TOML is written for (docs/launch.md).
    const bool v0_9 = toml.rfind("v09/", 0) == 0;
    if (v0_9) {
      args.back() = "v0.9";
    }
    if (!prime_rl.empty()) {
      args.back() = prime_rl;
    }
    if (program == "rl") {
      args.insert(args.end(), {"--registry", "redis://registry:6379"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    const auto preview = pb::test::run_primebeaker(args, options);
    EXPECT_EQ(preview.exit_code, 0) << preview.err;
    std::map<std::string, std::string> env;
    const auto rendered = nlohmann::json::parse(preview.out);
    for (const auto &var : rendered["spec"]["tasks"][0]["envVars"]) {
      if (var.contains("value")) {
        env[var["name"].get<std::string>()] = var["value"].get<std::string>();
      }
    }
    EXPECT_TRUE(env.count("CONFIG_PATH")) << preview.out.substr(0, 2000) << preview.err;
    return env;
  }

  // `args` (node ... --dry-run) for one replica of that env.
  std::string dry_run(const std::vector<std::string> &args,
                      std::map<std::string, std::string> env,
                      int rank) const {
    pb::test::RunOptions options;
    options.cwd = m_root.path();
    env["BEAKER_REPLICA_RANK"] = std::to_string(rank);
    env["PRIMEBEAKER_NODE_HOST"] = "10.0.0." + std::to_string(rank + 1);
    // The machine's network hints are read, not planned: pin them so snapshots do not depend
    // on the machine the tests run on.
    env["NCCL_IB_HCA"] = "mlx5_0";
    env["GLOO_SOCKET_IFNAME"] = "eth0";
    options.env = env;
    const auto r = pb::test::run_primebeaker(args, options);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return normalized(r.out);
  }

  // Every replica's plan, one after the other.
  std::string all_replicas(const std::string &command,
                           const std::string &toml,
                           const std::string &prime_rl = "") {
    const auto env = rendered_env(command, toml, prime_rl);
    const int replicas = std::stoi(env.at("TOTAL_NODES"));
    std::string out;
    for (int rank = 0; rank < replicas; ++rank) {
      out += "=== replica " + std::to_string(rank) + "\n" +
             dry_run({"node", command, "--dry-run"}, env, rank);
    }
    return out;
  }

  pb::test::TempDir m_root;
};

TEST_F(PlanSnapshot, ExampleTopologiesEveryReplica) {
  const std::string before = pb::test::tree_digest(m_root.path());
  expect_golden("multinode-rl.txt", all_replicas("rl", "examples/multinode-rl/rl.toml"));
  expect_golden("podman-terminal-multinode-rl.txt",
                all_replicas("rl", "examples/podman-terminal/multinode-rl.toml"));
  expect_golden("search-agent-webterminal-multinode-rl.txt",
                all_replicas("rl", "examples/search-agent-webterminal/multinode-rl.toml"));
  const auto env = rendered_env("rl", "examples/multinode-rl/rl.toml");
  expect_golden("multinode-rl.rank1.json", dry_run({"node", "rl", "--dry-run", "--json"}, env, 1));
  // No side effects: not a directory, not a rendezvous file.
  EXPECT_EQ(pb::test::tree_digest(m_root.path()), before);
  EXPECT_FALSE(fs::exists(m_root / "scratch"));
}

TEST_F(PlanSnapshot, SingleNodeExamples) {
  const std::string before = pb::test::tree_digest(m_root.path());
  for (const std::string program : {"rl", "sft"}) {
    const auto env = rendered_env(program, "examples/" + program + "/" + program + ".toml");
    pb::test::RunOptions options;
    options.cwd = m_root.path();
    options.env = env;
    const auto text = pb::test::run_primebeaker({"node", "single", program, "--dry-run"}, options);
    EXPECT_EQ(text.exit_code, 0) << text.err;
    const auto json =
        pb::test::run_primebeaker({"node", "single", program, "--dry-run", "--json"}, options);
    EXPECT_EQ(json.exit_code, 0) << json.err;
    EXPECT_TRUE(nlohmann::json::parse(json.out).is_object());
    expect_golden("single-" + program + ".txt", normalized(text.out));
  }
  EXPECT_EQ(pb::test::tree_digest(m_root.path()), before);
}

// A multi-node SFT topology (no example ships one): 2 nodes of 4 GPUs.
TEST_F(PlanSnapshot, MultiNodeSft) {
  const std::map<std::string, std::string> env = {
      {"TOTAL_NODES", "2"},
      {"GPUS_PER_NODE", "4"},
      {"CONFIG_PATH", (m_root / "examples/sft/sft.toml").string()},
      {"OUTPUT_DIR", "outputs/sft"},
      {"WORKING_DIR", m_root.path().string()},
      {"SCRATCH", (m_root / "scratch").string()},
      {"LAUNCH_ID", "0123456789abcdef0123456789abcdef"},
      {"RENDEZVOUS_DIR", (m_root / "scratch/rdv").string()},
      {"RENDEZVOUS_TIMEOUT_SECONDS", "1800"},
      {"PRIMEBEAKER_SETUP_COMMAND", "pip install -e . && echo 'ready'"}};
  std::string out;
  for (int rank = 0; rank < 2; ++rank) {
    out += "=== replica " + std::to_string(rank) + "\n" +
           dry_run({"node", "sft", "--dry-run"}, env, rank);
  }
  expect_golden("multinode-sft.txt", out);
  EXPECT_FALSE(fs::exists(m_root / "scratch"));
}

// Prime-RL v0.9 (docs/node.md "Prime-RL v0.9"): the corpus's multi-node TOML, named, placed as
// Prime-RL's multi_node_rl.sbatch.j2 places it: inference replicas 0-1 (vllm-router on 0),
// trainer replicas 2-3 (torchrun rendezvous on replica 2 port 29500), orchestrator and both env
// servers on replica 2.
TEST_F(PlanSnapshot, PrimeRlV09MultiNodeRlEveryReplica) {
  const auto corpus = pb::test::shared_dir() / "corpus" / "prime-rl" /
                      "main-559b4477-examples-advanced-qwen3-30b-a3b-swe.toml";
  write_file(m_root / "v09/swe.toml", read_file(corpus) + "\n[run]\nname = \"swe\"\n");
  const std::string before = pb::test::tree_digest(m_root.path());
  const std::string all = all_replicas("rl", "v09/swe.toml");
  expect_golden("v0.9-swe-multinode-rl.txt", all);
  EXPECT_EQ(pb::test::tree_digest(m_root.path()), before);

  const auto env = rendered_env("rl", "v09/swe.toml");
  const auto rank = [&](int n) { return dry_run({"node", "rl", "--dry-run"}, env, n); };
  const std::string r0 = rank(0), r1 = rank(1), r2 = rank(2), r3 = rank(3);
  EXPECT_NE(r0.find("vllm-router"), std::string::npos);
  EXPECT_EQ(r1.find("vllm-router --policy"), std::string::npos);
  for (const auto *text : {&r0, &r1}) {
    EXPECT_NE(text->find("inference @ outputs/swe/configs/inference.json"), std::string::npos)
        << *text;
    EXPECT_EQ(text->find("torchrun"), std::string::npos);
  }
  EXPECT_NE(r2.find("--node-rank=0"), std::string::npos) << r2;
  EXPECT_NE(r3.find("--node-rank=1"), std::string::npos) << r3;
  for (const auto *text : {&r2, &r3}) {
    EXPECT_NE(text->find("--rdzv-endpoint=${host.2}:29500"), std::string::npos) << *text;
    EXPECT_NE(text->find("--nnodes=2"), std::string::npos);
  }
  EXPECT_NE(r2.find("orchestrator @ outputs/swe/configs/orchestrator.json"), std::string::npos);
  EXPECT_NE(r2.find("env-server @ outputs/swe/configs/envs/train/swe.json"), std::string::npos);
  EXPECT_NE(r2.find("env-server @ outputs/swe/configs/envs/eval/swe-bench-verified.json"),
            std::string::npos);
  EXPECT_EQ(r3.find("orchestrator @"), std::string::npos);
  EXPECT_EQ(r0.find("orchestrator @"), std::string::npos);

  // orchestrator_on_inference: the orchestrator moves to the last inference replica.
  std::string text = read_file(corpus);
  text.replace(text.find("num_infer_nodes = 2"),
               std::string("num_infer_nodes = 2").size(),
               "num_infer_nodes = 2\norchestrator_on_inference = true");
  write_file(m_root / "v09/swe.toml", text + "\n[run]\nname = \"swe\"\n");
  const auto moved = rendered_env("rl", "v09/swe.toml");
  EXPECT_EQ(moved.at("ORCHESTRATOR_REPLICA"), "1");
  EXPECT_NE(dry_run({"node", "rl", "--dry-run"}, moved, 1).find("orchestrator @"),
            std::string::npos);
  EXPECT_EQ(dry_run({"node", "rl", "--dry-run"}, moved, 2).find("orchestrator @"),
            std::string::npos);
}

// Prime-RL v0.9 SFT on two nodes: one torchrun per node over Prime-RL's resolved sft.json.
TEST_F(PlanSnapshot, PrimeRlV09MultiNodeSft) {
  write_file(m_root / "v09/sft.toml",
             "[run]\nname = \"sft9\"\n\n[deployment]\ntype = \"multi_node\"\n"
             "num_train_nodes = 2\n\n[model]\nname = \"Qwen/Qwen3-0.6B\"\n");
  const auto env = rendered_env("sft", "v09/sft.toml");
  EXPECT_EQ(env.at("PRIME_RL_GENERATION"), "v0.9");
  std::string out;
  for (int rank = 0; rank < 2; ++rank) {
    out += "=== replica " + std::to_string(rank) + "\n" +
           dry_run({"node", "sft", "--dry-run"}, env, rank);
  }
  expect_golden("v0.9-multinode-sft.txt", out);
  EXPECT_NE(out.find("prime_rl.trainer.sft.train @ outputs/sft9/configs/sft.json"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("PRL_RUN_ID=run1"), std::string::npos) << out;
}

// ---- Prime-RL's own placement of every shape it ships (docs/node.md "Prime-RL's placement") ----
// Each fact asserted below is a line of Prime-RL's multi_node_rl.sbatch.j2 at the TOML's release:
// inference nodes first (vllm-router on the first), one torchrun per trainer node with
// --nnodes/--node-rank and the rendezvous on the first trainer host port 29500, orchestrator and
// env servers on the first trainer node with that host for the weight broadcast.

fs::path prime_rl_example(const std::string &release, const std::string &path) {
  return pb::test::shared_dir() / "corpus" / "prime-rl-repo" / release / "examples" / path;
}

// The plans of every replica of one example, split per replica.
struct Replicas {
  std::map<std::string, std::string> env;
  std::vector<std::string> plans;
  bool has(int rank, const std::string &text) const {
    return plans.at(rank).find(text) != std::string::npos;
  }
};

class PrimeRlPlacement : public PlanSnapshot {
protected:
  Replicas place(const std::string &release,
                 const std::string &example,
                 const std::string &prime_rl,
                 const std::string &golden,
                 const std::function<std::string(std::string)> &edit = {},
                 const std::vector<std::string> &extra = {}) {
    const std::string name = "placed/" + release + "/" + example;
    const std::string text = read_file(prime_rl_example(release, example));
    write_file(m_root / name, edit ? edit(text) : text);
    Replicas r;
    r.env = rendered_env("rl", name, prime_rl, extra);
    const int replicas = std::stoi(r.env.at("TOTAL_NODES"));
    std::string all;
    for (int rank = 0; rank < replicas; ++rank) {
      r.plans.push_back(dry_run({"node", "rl", "--dry-run"}, r.env, rank));
      all += "=== replica " + std::to_string(rank) + "\n" + r.plans.back();
    }
    if (!golden.empty()) {
      expect_golden(golden, all);
    }
    return r;
  }
};

// Prime-RL v0.8.0 with several trainer nodes: qwen3-30b-a3b/math, 2 inference + 2 trainer nodes.
TEST_F(PrimeRlPlacement, V080SeveralTrainerNodes) {
  const auto r = place("v0.8.0",
                       "advanced/qwen3-30b-a3b/math.toml",
                       "v0.8.0",
                       "v0.8.0-qwen3-30b-a3b-math-multinode-rl.txt");
  const std::string out = r.env.at("OUTPUT_DIR");
  EXPECT_EQ(r.env.at("PRIME_RL_PLACEMENT"), "prime-rl");
  EXPECT_EQ(r.env.at("TOTAL_NODES"), "4");
  EXPECT_EQ(r.env.at("NUM_INFER_NODES"), "2");
  EXPECT_EQ(r.env.at("NUM_TRAIN_NODES"), "2");
  EXPECT_EQ(r.env.at("ORCHESTRATOR_REPLICA"), "2");
  EXPECT_EQ(r.env.count("GATEWAY_PORT"), 0u); // no LiteRegistry gateway in Prime-RL's placement
  // Inference: replicas 0-1, the router on 0 only, v0.8.0's engine flags over its TOML configs.
  EXPECT_TRUE(r.has(0, "vllm-router --policy"));
  EXPECT_FALSE(r.has(1, "vllm-router --policy"));
  for (int rank : {0, 1}) {
    EXPECT_TRUE(r.has(rank, "inference @ " + out + "/configs/inference.toml")) << r.plans[rank];
    EXPECT_TRUE(r.has(rank, "--parallel.dp 1 --data-parallel-size-local 1 --api-server-count 1"))
        << r.plans[rank];
    EXPECT_FALSE(r.has(rank, "torchrun"));
    EXPECT_FALSE(r.has(rank, "orchestrator @"));
  }
  // Trainer: one torchrun per node, node ranks 0 and 1, rendezvous on the first trainer host.
  for (int rank : {2, 3}) {
    EXPECT_TRUE(r.has(rank, "--nnodes=2")) << r.plans[rank];
    EXPECT_TRUE(r.has(rank, "--nproc-per-node=8"));
    EXPECT_TRUE(r.has(rank, fmt::format("--node-rank={}", rank - 2)));
    EXPECT_TRUE(r.has(rank, "--rdzv-endpoint=${host.2}:29500"));
    EXPECT_TRUE(r.has(rank, "prime_rl.trainer.rl.train @ " + out + "/configs/trainer.toml"));
    EXPECT_TRUE(r.has(rank, "MASTER_ADDR=${host.2}"));
    EXPECT_TRUE(r.has(rank, "WANDB_SHARED_MODE=1"));
    // v0.8.0's ZMQ transport binds on trainer rank 0: the trainer addresses that host.
    EXPECT_TRUE(r.has(rank, "--rollout_transport.host ${host.2}"));
  }
  // Orchestrator and both env servers on the first trainer node, addressing it.
  EXPECT_TRUE(r.has(2, "orchestrator @ " + out + "/configs/orchestrator.toml"));
  EXPECT_TRUE(r.has(2, "--weight_broadcast.host ${host.2}"));
  EXPECT_TRUE(r.has(2, "env-server @ " + out + "/configs/envs/train/math.toml"));
  EXPECT_TRUE(r.has(2, "env-server @ " + out + "/configs/envs/eval/aime2025.toml"));
  EXPECT_FALSE(r.has(3, "orchestrator @"));
  // The config helper resolves it the Prime-RL way, on replica 0 only.
  EXPECT_TRUE(r.has(0, "\"kind\":\"rl_prime_rl\"")) << r.plans[0];
}

// intellect-3.1/rl: 12 inference nodes, then 4 trainer nodes.
TEST_F(PrimeRlPlacement, V080Intellect31) {
  const auto r = place("v0.8.0",
                       "advanced/intellect-3.1/rl.toml",
                       "v0.8.0",
                       "v0.8.0-intellect-3.1-multinode-rl.txt");
  const std::string out = r.env.at("OUTPUT_DIR");
  ASSERT_EQ(r.plans.size(), 16u);
  EXPECT_TRUE(r.has(0, "vllm-router --policy"));
  for (int rank = 0; rank < 12; ++rank) {
    EXPECT_TRUE(r.has(rank, "inference @ " + out + "/configs/inference.toml")) << rank;
    EXPECT_FALSE(r.has(rank, "torchrun")) << rank;
  }
  for (int rank = 12; rank < 16; ++rank) {
    EXPECT_TRUE(r.has(rank, "--nnodes=4")) << rank;
    EXPECT_TRUE(r.has(rank, fmt::format("--node-rank={}", rank - 12))) << rank;
    EXPECT_TRUE(r.has(rank, "--rdzv-endpoint=${host.12}:29500")) << rank;
  }
  EXPECT_TRUE(r.has(12, "orchestrator @"));
  for (int rank = 13; rank < 16; ++rank) {
    EXPECT_FALSE(r.has(rank, "orchestrator @")) << rank;
  }
}

// tool.toml (1 + 1, tp 4, trainer cp 2): the mixed layout could not share the trainer node with
// tp-4 engines; Prime-RL gives the trainer its whole node and runs two tp-4 engines on the other.
TEST_F(PrimeRlPlacement, V080ToolTomlTrainerTakesItsWholeNode) {
  const auto r = place("v0.8.0",
                       "advanced/qwen3-30b-a3b/tool.toml",
                       "v0.8.0",
                       "v0.8.0-qwen3-30b-a3b-tool-multinode-rl.txt");
  const std::string out = r.env.at("OUTPUT_DIR");
  EXPECT_EQ(r.env.at("PRIME_RL_PLACEMENT"), "prime-rl");
  EXPECT_EQ(r.env.at("INFERENCE_TP"), "4");
  ASSERT_EQ(r.plans.size(), 2u);
  EXPECT_TRUE(r.has(0, "inference @ " + out + "/configs/inference.toml"));
  EXPECT_TRUE(r.has(0, "list the inference workers of the 2 nodes")) << r.plans[0];
  EXPECT_TRUE(r.has(0, "expect 2)")) << r.plans[0]; // two tp-4 engines, none on the trainer
  EXPECT_TRUE(r.has(1, "--nnodes=1"));
  EXPECT_TRUE(r.has(1, "--nproc-per-node=8"));
  EXPECT_TRUE(r.has(1, "orchestrator @"));
}

// main nemotron-3-super/swe: expert parallelism with tp 8, so each replica's DP group is one
// engine: the plain engine, the flag in its config (group DP 1).
TEST_F(PrimeRlPlacement, V09ExpertParallelInsideOneEngine) {
  const auto r = place("main-559b4477",
                       "advanced/nemotron-3-super/swe.toml",
                       "v0.9",
                       "v0.9-nemotron-3-super-swe-multinode-rl.txt",
                       [](std::string text) { return text + "\n[run]\nname = \"nemotron\"\n"; });
  EXPECT_EQ(r.env.count("INFERENCE_ENABLE_EXPERT_PARALLEL"), 0u);
  ASSERT_EQ(r.plans.size(), 8u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(r.has(rank, "--vllm.data-parallel-size 1 --vllm.data-parallel-size-local 1"))
        << r.plans[rank];
    EXPECT_FALSE(r.has(rank, "data_parallel_rank"));
  }
  for (int rank = 4; rank < 8; ++rank) {
    EXPECT_TRUE(r.has(rank, "--rdzv-endpoint=${host.4}:29500")) << rank;
  }
}

// Expert parallelism across nodes (group DP > 1): one engine per DP rank of the replica's group,
// each given its global rank and the group head's address, as Prime-RL's template does.
// main glm-5.2/swe: 2 inference replicas of 4 prefill + 4 decode nodes (tp 1: 8 engines a node,
// instances of 32 DP ranks), then 16 trainer nodes. The golden holds the replicas whose roles
// differ: the first prefill node (and the PD router), a prefill node inside its instance, the
// first and a later decode node, the second replica's first prefill node, the first and the last
// trainer node.
TEST_F(PrimeRlPlacement, V09DisaggregatedGlm52) {
  const auto r =
      place("main-559b4477", "advanced/glm-5.2/swe.toml", "v0.9", "", [](std::string text) {
        return text + "\n[run]\nname = \"glm\"\n";
      });
  ASSERT_EQ(r.plans.size(), 32u);
  EXPECT_EQ(r.env.at("INFERENCE_DEPLOYMENT"), "disaggregated");
  EXPECT_EQ(r.env.at("NODES_PER_INFER_REPLICA"), "8");
  EXPECT_EQ(r.env.at("NODES_PER_PREFILL_REPLICA"), "4");
  EXPECT_EQ(r.env.at("NODES_PER_DECODE_REPLICA"), "4");
  std::string golden;
  for (int rank : {0, 1, 4, 5, 8, 16, 31}) {
    golden += "=== replica " + std::to_string(rank) + "\n" + r.plans[rank];
  }
  expect_golden("v0.9-glm-5.2-swe-disaggregated-rl.txt", golden);
  // Roles: each replica's first 4 nodes prefill, the next 4 decode.
  for (int rank = 0; rank < 16; ++rank) {
    const bool prefill = rank % 8 < 4;
    EXPECT_TRUE(r.has(rank, prefill ? "role=prefill" : "role=decode")) << rank;
    EXPECT_TRUE(r.has(rank,
                      prefill ? "${port} = ${runtime.PREFILL_PORT} + ${k}"
                              : "${port} = ${runtime.DECODE_PORT} + ${k}"))
        << rank;
    EXPECT_TRUE(r.has(rank, "--vllm.data-parallel-size 32")) << rank; // 4 nodes x 8 engines
    EXPECT_TRUE(r.has(rank, "VLLM_NIXL_SIDE_CHANNEL_PORT='${k+5600}'")) << r.plans[rank];
    // The instance head and this node's first rank in it.
    const int head = rank / 4 * 4;
    const int start = rank % 4 * 8;
    EXPECT_TRUE(
        r.has(rank,
              fmt::format("\"data_parallel_address\": \"${{host.{}}}\", "
                          "\"data_parallel_rank\": {}",
                          head,
                          start == 0 ? std::string("${k}") : fmt::format("${{k+{}}}", start))))
        << rank;
    EXPECT_TRUE(r.has(rank,
                      prefill ? "\"all2all_backend\": \"deepep_high_throughput\""
                              : "\"all2all_backend\": \"deepep_low_latency\", "
                                "\"compilation_config\": {\"cudagraph_mode\": "
                                "\"FULL_DECODE_ONLY\"}"))
        << rank;
  }
  // One router, on inference node 0, in PD mode: replica 0's prefill engines, its decode ones,
  // then replica 1's, as Prime-RL's template lists them.
  EXPECT_TRUE(r.has(0,
                    "--vllm-pd-disaggregation --prefill http://${host.0}:${runtime.PREFILL_PORT} "
                    "--prefill http://${host.0}:${runtime.PREFILL_PORT+1}"));
  EXPECT_TRUE(r.has(0,
                    "--prefill http://${host.3}:${runtime.PREFILL_PORT+7} --decode "
                    "http://${host.4}:${runtime.DECODE_PORT} "));
  EXPECT_TRUE(r.has(0,
                    "--decode http://${host.7}:${runtime.DECODE_PORT+7} --prefill "
                    "http://${host.8}:${runtime.PREFILL_PORT} "));
  for (int rank = 1; rank < 32; ++rank) {
    EXPECT_FALSE(r.has(rank, "vllm-router --policy")) << rank;
  }
  // No worker binding: the endpoints are known from the plan alone.
  EXPECT_FALSE(r.has(0, "list the inference workers"));
  // Trainer: 16 nodes from replica 16, orchestrator there with every engine's admin URL.
  for (int rank = 16; rank < 32; ++rank) {
    EXPECT_TRUE(r.has(rank, "--nnodes=16 --nproc-per-node=8")) << rank;
    EXPECT_TRUE(r.has(rank, "--rdzv-endpoint=${host.16}:29500")) << rank;
  }
  EXPECT_TRUE(
      r.has(16, "--model.client.admin-base-url http://${host.0}:${runtime.PREFILL_PORT}/v1"));
  EXPECT_TRUE(r.has(16, "http://${host.15}:${runtime.DECODE_PORT+7}/v1\n"));
  EXPECT_TRUE(r.has(16, "ports: 29500 ${runtime.WEIGHT_BROADCAST_PORT}"));
}

// glm-5.2/swe-llmd: the same disaggregated shape (4 prefill instances of 2 nodes, one decode
// instance of 8) behind llm-d's router, with Mooncake's KV store on every inference node, on an
// image that holds both (Prime-RL's _launch_router.sh.j2, llmd/*.j2 and _mooncake_store.sh.j2).
// The golden holds the first prefill node (router, Mooncake master), another prefill node, the
// first and last decode nodes (pd-sidecar) and the first trainer node.
TEST_F(PrimeRlPlacement, LlmdRouterAndMooncakeStoreGlm52) {
  const std::vector<std::string> image = {"--image-holds",
                                          "vllm-router,deepep,nixl,llm-d,mooncake"};
  const auto r = place(
      "main-559b4477",
      "advanced/glm-5.2/swe-llmd.toml",
      "v0.8.1.dev67",
      "",
      [](std::string text) {
        // Its output dir is a placeholder ("FILL IN") outside the test's mount.
        return std::regex_replace(
            text, std::regex("output_dir = \"/shared/outputs[^\"]*\""), "output_dir = \"outputs\"");
      },
      image);
  ASSERT_EQ(r.plans.size(), 32u);
  EXPECT_EQ(r.env.at("INFERENCE_ROUTER"), "llm-d");
  EXPECT_EQ(r.env.at("KV_CACHE_OFFLOAD"), "mooncake");
  std::string golden;
  for (int rank : {0, 2, 8, 15, 16}) {
    golden += "=== replica " + std::to_string(rank) + "\n" + r.plans[rank];
  }
  expect_golden("v0.9-glm-5.2-swe-llmd-rl.txt", golden);
  const std::string llmd = r.env.at("OUTPUT_DIR") + "/glm5-llmd/logs/inference/llmd/";
  // The router: llm-d's picker and Envoy on inference node 0 only, never vllm-router.
  EXPECT_TRUE(r.has(0, "require on PATH: epp envoy mooncake_master mooncake_client")) << r.plans[0];
  EXPECT_TRUE(r.has(0,
                    "epp --pool-name prime-rl --pool-namespace beaker --config-file " + llmd +
                        "epp.yaml --grpc-port 9002 --grpc-health-port 9013"));
  EXPECT_TRUE(r.has(0, "envoy -c " + llmd + "envoy.yaml"));
  EXPECT_TRUE(r.has(0, "write " + llmd + "epp.yaml:\n       | ${runtime.LLMD_EPP_CONFIG}\n"));
  EXPECT_TRUE(r.has(0, "port_value: ${runtime.ROUTER_PORT}"));
  for (int rank = 1; rank < 32; ++rank) {
    EXPECT_FALSE(r.has(rank, "epp --pool-name")) << rank;
    EXPECT_FALSE(r.has(rank, "vllm-router")) << rank;
  }
  EXPECT_FALSE(r.has(0, "vllm-router"));
  // Endpoints: the 8 prefill nodes' engines on the prefill port, then the 8 decode nodes'
  // through their sidecars, at each node's address.
  EXPECT_TRUE(r.has(0,
                    "  - name: prefill-0-rank-0\n"
                    "       |     address: ${host.0}\n"
                    "       |     port: \"${runtime.PREFILL_PORT}\"\n"));
  EXPECT_TRUE(r.has(0,
                    "  - name: prefill-7-rank-7\n"
                    "       |     address: ${host.7}\n"
                    "       |     port: \"${runtime.PREFILL_PORT+7}\"\n"));
  EXPECT_TRUE(r.has(0,
                    "  - name: decode-0-rank-0\n"
                    "       |     address: ${host.8}\n"
                    "       |     port: \"${runtime.DECODE_SIDECAR_PORT}\"\n"));
  EXPECT_TRUE(r.has(0,
                    "  - name: decode-7-rank-7\n"
                    "       |     address: ${host.15}\n"
                    "       |     port: \"${runtime.DECODE_SIDECAR_PORT+7}\"\n"));
  // pd-sidecar on every decode node (8-15), none on prefill nodes; before the engines.
  for (int rank = 0; rank < 16; ++rank) {
    const bool decode = rank >= 8;
    EXPECT_EQ(r.has(rank,
                    "pd-sidecar --port ${runtime.DECODE_SIDECAR_PORT} --vllm-port "
                    "${runtime.DECODE_PORT} --kv-connector nixlv2"),
              decode)
        << rank;
    if (decode) {
      EXPECT_LT(r.plans[rank].find("pd-sidecar --port"), r.plans[rank].find("inference @")) << rank;
      EXPECT_TRUE(r.has(rank, "--data-parallel-size 8")) << rank;
    }
    // Mooncake on every inference node: the client joins node 0's master after its ports open,
    // and the engines start after the client's own port and the config are there.
    EXPECT_TRUE(r.has(rank, "wait for Mooncake's master on ${host.0}:50051 (timeout 120 s)"))
        << r.plans[rank];
    EXPECT_TRUE(r.has(rank, "wait for Mooncake's metadata server on ${host.0}:8080")) << rank;
    const std::string address = "10.0.0." + std::to_string(rank + 1);
    EXPECT_TRUE(r.has(rank,
                      "mooncake_client -host=" + address +
                          " -port=50052 -master_server_address=${host.0}:50051 "
                          "-metadata_server=http://${host.0}:8080/metadata -protocol=rdma "
                          "-global_segment_size=${runtime.MOONCAKE_SEGMENT_BYTES}"))
        << rank;
    EXPECT_TRUE(r.has(rank, "wait for this node's Mooncake client on " + address + ":50052"))
        << rank;
    EXPECT_LT(r.plans[rank].find(":50052 (timeout"), r.plans[rank].find("inference @")) << rank;
    EXPECT_TRUE(r.has(rank,
                      fmt::format("MOONCAKE_CONFIG_PATH={}/glm5-llmd/mooncake/node_{}/"
                                  "config.json",
                                  r.env.at("OUTPUT_DIR"),
                                  rank)))
        << rank;
    EXPECT_TRUE(r.has(rank, "the locked-memory limit to unlimited")) << rank;
    EXPECT_EQ(r.has(rank, "mooncake_master -rpc_port=50051"), rank == 0) << rank;
  }
  // The trainer side is unchanged by the router: no Mooncake, no llm-d.
  for (int rank = 16; rank < 32; ++rank) {
    EXPECT_FALSE(r.has(rank, "mooncake")) << rank;
    EXPECT_FALSE(r.has(rank, "locked-memory")) << rank;
  }
  // llm-d's endpoints are IPv4 addresses: an inference node publishing a host name is refused.
  auto named = r.env;
  named["BEAKER_REPLICA_RANK"] = "3";
  named["PRIMEBEAKER_NODE_HOST"] = "node-3.cluster";
  pb::test::RunOptions options;
  options.cwd = m_root.path();
  options.env = named;
  const auto refused = pb::test::run_primebeaker({"node", "rl", "--dry-run"}, options);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("llm-d's endpoints need each inference node's IPv4 address, and "
                             "this node publishes 'node-3.cluster'"),
            std::string::npos)
      << refused.err;
  // The orchestrator reaches the engines through Envoy on Prime-RL's router port.
  EXPECT_TRUE(r.has(16, "--model.client.base-url http://${host.0}:${runtime.ROUTER_PORT}/v1"));

  // v0.8.0's file: the same placement, in Prime-RL's placement of a v0.8.0 TOML.
  const auto v08 = place(
      "v0.8.0",
      "advanced/glm-5.2/swe-llmd.toml",
      "v0.8.0",
      "",
      [](std::string text) {
        // Its output dir is a placeholder ("FILL IN") outside the test's mount.
        return std::regex_replace(
            text, std::regex("output_dir = \"/shared/outputs[^\"]*\""), "output_dir = \"outputs\"");
      },
      image);
  EXPECT_EQ(v08.env.at("PRIME_RL_PLACEMENT"), "prime-rl");
  EXPECT_TRUE(v08.has(0, "envoy -c")) << v08.plans[0];
  EXPECT_TRUE(v08.has(9, "pd-sidecar --port")) << v08.plans[9];
  EXPECT_TRUE(v08.has(3, "mooncake_client -host=10.0.0.4")) << v08.plans[3];
}

TEST_F(PrimeRlPlacement, ExpertParallelAcrossNodesRunsOneEnginePerDpRank) {
  const auto replace = [](std::string text, const std::string &from, const std::string &to) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
  };
  // v0.8.0: 2 inference nodes of tp-4 engines form one group of 4 DP ranks.
  const auto v08 =
      place("v0.8.0", "advanced/qwen3-30b-a3b/math.toml", "v0.8.0", "", [&](auto text) {
        return replace(
            text,
            "[inference.parallel]\ntp = 8",
            "[inference]\nenable_expert_parallel = true\n\n[inference.parallel]\ntp = 4\n"
            "dp = 4");
      });
  EXPECT_EQ(v08.env.at("INFERENCE_ENABLE_EXPERT_PARALLEL"), "1");
  EXPECT_EQ(v08.env.at("NODES_PER_INFER_REPLICA"), "2");
  for (int rank : {0, 1}) {
    EXPECT_TRUE(v08.has(rank,
                        "--parallel.dp 4 --data-parallel-size-local 1 --api-server-count 1 "
                        "--data-parallel-rpc-port ${runtime.INFERENCE_DP_RPC_PORT}"))
        << v08.plans[rank];
    EXPECT_TRUE(v08.has(rank, "\"data_parallel_address\": \"${host.0}\"")) << v08.plans[rank];
  }
  // Global DP rank = rank in the replica x engines per node + the engine's index.
  EXPECT_TRUE(v08.has(0, "\"data_parallel_rank\": ${k}}")) << v08.plans[0];
  EXPECT_TRUE(v08.has(1, "\"data_parallel_rank\": ${k+2}}")) << v08.plans[1];

  // v0.9 spells the group size as vLLM keys and passes the rank through a file of overrides.
  const auto v09 =
      place("main-559b4477", "advanced/qwen3-30b-a3b/swe.toml", "v0.9", "", [&](auto text) {
        return replace(text,
                       "tensor_parallel_size = 8",
                       "tensor_parallel_size = 4\nenable_expert_parallel = true") +
               "\n[run]\nname = \"ep\"\n";
      });
  EXPECT_EQ(v09.env.at("INFERENCE_ENABLE_EXPERT_PARALLEL"), "1");
  EXPECT_TRUE(v09.has(1, "--vllm.data-parallel-size 4 --vllm.data-parallel-size-local 1"))
      << v09.plans[1];
  EXPECT_TRUE(v09.has(1, "--vllm @ ")) << v09.plans[1];
  EXPECT_TRUE(v09.has(1,
                      "vllm-overrides.json = {\"data_parallel_address\": \"${host.0}\", "
                      "\"data_parallel_rank\": ${k+2}}"))
      << v09.plans[1];
}

TEST_F(PlanSnapshot, DryRunRefusesABadContractLikeTheRuntime) {
  pb::test::RunOptions options;
  options.env = {{"BEAKER_REPLICA_RANK", "0"}};
  const auto r = pb::test::run_primebeaker({"node", "sft", "--dry-run"}, options);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing required environment variable"), std::string::npos) << r.err;
}

} // namespace
