// SPDX-License-Identifier: MIT
// Plan snapshots (docs/node.md "The plan"): every replica of the example topologies, from the
// environment `rl|sft preview` renders for them, printed by `node rl|sft|single --dry-run`, against
// tests/node/golden/ (PB_UPDATE_GOLDEN=1 rewrites them). A dry-run changes nothing on disk.
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
  std::map<std::string, std::string> rendered_env(const std::string &program,
                                                  const std::string &toml) const {
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
    if (program == "rl") {
      args.insert(args.end(), {"--registry", "redis://registry:6379"});
    }
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
  std::string all_replicas(const std::string &command, const std::string &toml) {
    const auto env = rendered_env(command, toml);
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

TEST_F(PlanSnapshot, DryRunRefusesABadContractLikeTheRuntime) {
  pb::test::RunOptions options;
  options.env = {{"BEAKER_REPLICA_RANK", "0"}};
  const auto r = pb::test::run_primebeaker({"node", "sft", "--dry-run"}, options);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing required environment variable"), std::string::npos) << r.err;
}

} // namespace
