// SPDX-License-Identifier: MIT
// Golden previews of the real binary for the four spec shapes; preview never touches disk or
// beaker.
#include "launch_fixture.hpp"

using nlohmann::json;

namespace pb::test {
namespace {

class Preview : public LaunchFixture {
protected:
  // Runs a preview, checks it succeeded silently, changed nothing and never ran beaker, and
  // returns the parsed output after matching the golden file.
  json preview(const std::vector<std::string> &args, const std::string &golden) {
    const std::string before = tree_digest(m_tmp.path());
    const auto result = run(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err, "");
    EXPECT_EQ(tree_digest(m_tmp.path()), before) << "preview changed the file tree";
    EXPECT_TRUE(m_beaker.calls().empty()) << "preview ran beaker";
    expect_golden(golden, normalized(result.out));
    return json::parse(result.out);
  }
};

json env_value(const json &task, const std::string &name) {
  for (const auto &entry : task["envVars"]) {
    if (entry["name"] == name) {
      return entry.contains("value") ? entry["value"] : json{{"secret", entry["secret"]}};
    }
  }
  return nullptr;
}

TEST_F(Preview, SingleNodeSft) {
  const auto out = preview({"sft",
                            "preview",
                            "--toml",
                            "examples/sft/sft.toml",
                            "--image",
                            "beaker://account/runtime",
                            "--prime-rl",
                            "v0.7.1.dev83",
                            "--wandb-run-id",
                            "sft-run-id"},
                           "sft-single-node.json");
  const auto &task = out["spec"]["tasks"][0];
  EXPECT_EQ(task["name"], "sft");
  EXPECT_EQ(task["image"], json({{"beaker", "account/runtime"}}));
  EXPECT_EQ(task["command"], json({staged_program(), "node", "single", "sft"}));
  EXPECT_EQ(task["resources"]["gpuCount"], 2);
  EXPECT_EQ(task["context"]["autoResume"], true);
  EXPECT_FALSE(task.contains("replicas"));
  EXPECT_EQ(env_value(task, "WANDB_RUN_ID"), "sft-run-id");
  EXPECT_EQ(env_value(task, "CONFIG_PATH"), at("examples/sft/sft.toml"));
  EXPECT_EQ(out["wandb_run"]["url"], nullptr); // offline
  EXPECT_FALSE(out.contains("launch_id"));
}

TEST_F(Preview, SingleNodeRl) {
  const auto out = preview({"rl",
                            "preview",
                            "--toml",
                            "examples/rl/rl.toml",
                            "--image",
                            "ghcr.io/me/rl:1",
                            "--prime-rl",
                            "v0.7.1.dev83",
                            "--registry",
                            "redis://registry:6379",
                            "--env",
                            "FEATURE=true",
                            "--secret",
                            "CUSTOM=custom-secret",
                            "--wandb-entity",
                            "my team"},
                           "rl-single-node.json");
  const auto &task = out["spec"]["tasks"][0];
  EXPECT_EQ(task["name"], "rl");
  EXPECT_EQ(task["image"], json({{"docker", "ghcr.io/me/rl:1"}}));
  EXPECT_EQ(task["resources"]["gpuCount"], 2);
  EXPECT_EQ(env_value(task, "REGISTRY"), "redis://registry:6379");
  EXPECT_EQ(env_value(task, "FEATURE"), "true");
  EXPECT_EQ(env_value(task, "CUSTOM"), json({{"secret", "custom-secret"}}));
  EXPECT_EQ(env_value(task, "WANDB_SHARED_RUN_ID"), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(env_value(task, "WANDB_ENTITY"), "my team");
  EXPECT_FALSE(std::filesystem::exists(out["spec_path"].get<std::string>()));
}

TEST_F(Preview, MultiNodeSft) {
  const auto out = preview({"sft",
                            "preview",
                            "--toml",
                            "data/multinode-sft.toml",
                            "--budget",
                            "ai2/oe-adapt",
                            "--setup-command",
                            "echo ready"},
                           "sft-multi-node.json");
  const auto &task = out["spec"]["tasks"][0];
  EXPECT_EQ(task["name"], "prime-sft-multinode");
  EXPECT_EQ(task["replicas"], 3);
  EXPECT_EQ(task["synchronizedStartTimeout"], "4h");
  EXPECT_EQ(task["resources"]["gpuCount"], 8);
  EXPECT_EQ(task["command"], json({staged_program(), "node", "sft"}));
  EXPECT_EQ(env_value(task, "TOTAL_NODES"), "3");
  EXPECT_EQ(env_value(task, "PRIMEBEAKER_SETUP_COMMAND"), "echo ready");
  EXPECT_EQ(out["spec"]["budget"], "ai2/oe-adapt");
  EXPECT_EQ(out["wandb_run"]["url"],
            "https://wandb.ai/team%2Fwith%20slash/primebeaker-examples/runs/"
            "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(out["launch_id"], "0123456789abcdef0123456789abcdef");
}

TEST_F(Preview, MultiNodeRlHeterogeneous) {
  const auto out = preview({"rl",
                            "preview",
                            "--toml",
                            "examples/multinode-rl/rl.toml",
                            "--registry",
                            "redis://registry:6379",
                            "--required-service",
                            "terminal=4",
                            "--required-service",
                            "judge=1",
                            "--cluster",
                            "ai2/jupiter",
                            "--cluster",
                            "ai2/ceres",
                            "--priority",
                            "urgent",
                            "--min-runtime-hours",
                            "2",
                            "--wandb-run-id",
                            "shared-run"},
                           "rl-multi-node.json");
  const auto &task = out["spec"]["tasks"][0];
  EXPECT_EQ(task["name"], "prime-rl-multinode");
  EXPECT_EQ(task["replicas"], 2);
  EXPECT_EQ(task["leaderSelection"], true);
  EXPECT_EQ(task["hostNetworking"], true);
  EXPECT_EQ(task["propagateFailure"], true);
  EXPECT_EQ(task["propagatePreemption"], true);
  EXPECT_EQ(task["resources"], json({{"gpuCount", 8}}));
  EXPECT_EQ(task["context"],
            json({{"priority", "urgent"}, {"minRuntime", "2h"}, {"autoResume", false}}));
  EXPECT_EQ(task["constraints"]["cluster"], json({"ai2/jupiter", "ai2/ceres"}));
  EXPECT_EQ(env_value(task, "TRAINER_GPU_COUNT"), "4");
  EXPECT_EQ(env_value(task, "MIXED_INFER_GPU_COUNT"), "4");
  EXPECT_EQ(env_value(task, "TOTAL_INFER_RANKS"), "6");
  EXPECT_EQ(env_value(task, "WANDB_SHARED_RUN_ID"), "shared-run");
  EXPECT_EQ(env_value(task, "REQUIRED_LITEREGISTRY_SERVICES"), R"({"judge":1,"terminal":4})");
  EXPECT_EQ(env_value(task, "LOCAL_SEARCH_MODEL_PATHS_JSON"), R"(["localsearch:example-index"])");
  EXPECT_EQ(env_value(task, "RENDEZVOUS_DIR"),
            at("primebeaker/rendezvous/primebeaker-example-multinode-rl-"
               "0123456789abcdef0123456789abcdef"));
  EXPECT_EQ(out["spec_path"],
            at("primebeaker/beaker_experiments/"
               "primebeaker-example-multinode-rl-"
               "0123456789abcdef0123456789abcdef.json"));
  EXPECT_EQ(out["wandb_run"]["url"],
            "https://wandb.ai/my-team/primebeaker-examples/runs/shared-run");
  // Values sorted by name, then secrets sorted by name.
  std::vector<std::string> values;
  std::vector<std::string> secrets;
  for (const auto &entry : task["envVars"]) {
    (entry.contains("secret") ? secrets : values).push_back(entry["name"]);
  }
  EXPECT_TRUE(std::is_sorted(values.begin(), values.end()));
  EXPECT_EQ(secrets, (std::vector<std::string>{"HF_TOKEN", "WANDB_API_KEY"}));
  EXPECT_EQ(task["envVars"].back(), json({{"name", "WANDB_API_KEY"}, {"secret", "WANDB_API_KEY"}}));
}

TEST_F(Preview, SnakeCaseAliasesJsonListsAndEqualsForm) {
  const auto kebab = run({"rl",
                          "preview",
                          "--toml",
                          "examples/multinode-rl/rl.toml",
                          "--registry=redis://r:1",
                          "--cluster",
                          "a/b",
                          "--cluster",
                          "c/d",
                          "--required-service",
                          "terminal=2",
                          "--min-runtime-hours=3",
                          "--gateway-port",
                          "2000"});
  const auto snake = run({"rl",
                          "preview",
                          "--toml=examples/multinode-rl/rl.toml",
                          "--registry",
                          "redis://r:1",
                          R"(--cluster=["a/b","c/d"])",
                          R"(--required_service=["terminal=2"])",
                          "--min_runtime_hours",
                          "3",
                          "--gateway_port=2000"});
  ASSERT_EQ(kebab.exit_code, 0) << kebab.err;
  ASSERT_EQ(snake.exit_code, 0) << snake.err;
  EXPECT_EQ(kebab.out, snake.out);
  const auto out = json::parse(kebab.out);
  EXPECT_EQ(out["spec"]["tasks"][0]["constraints"]["cluster"], json({"a/b", "c/d"}));
  EXPECT_EQ(env_value(out["spec"]["tasks"][0], "GATEWAY_PORT"), "2000");
}

TEST_F(Preview, WriteSpecWritesExactlyTheSpecAtomically) {
  const auto result =
      run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--write-spec", "--env", "A=1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  const std::string spec_path = out["spec_path"];
  ASSERT_TRUE(std::filesystem::exists(spec_path));
  const std::string written = read_file(spec_path);
  EXPECT_EQ(json::parse(written), out["spec"]);
  EXPECT_EQ(written.back(), '\n');
  EXPECT_TRUE(m_beaker.calls().empty());
  // Nothing else appeared: only the spec file under primebeaker/.
  size_t files = 0;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(mount() / "primebeaker")) {
    files += entry.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(files, 1u);
  // --no-write-spec (and its snake spelling) turns it back off.
  std::filesystem::remove(spec_path);
  const auto off =
      run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--write-spec", "--no_write_spec"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_FALSE(std::filesystem::exists(spec_path));
}

TEST_F(Preview, RandomLaunchIdWithoutPin) {
  RunOptions options;
  options.cwd = mount();
  std::vector<std::string> args = {
      "rl", "preview", "--toml", "examples/multinode-rl/rl.toml", "--registry", "redis://r:1"};
  for (const auto &flag : mount_flags()) {
    args.push_back(flag);
  }
  const auto first = json::parse(run_primebeaker(args, options).out);
  const auto second = json::parse(run_primebeaker(args, options).out);
  const std::string id = first["launch_id"];
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(id, second["launch_id"]);
  EXPECT_EQ(first["wandb_run"]["run_id"], id);
}

} // namespace
} // namespace pb::test
