// SPDX-License-Identifier: MIT
// Everything a replica would refuse is refused by the plan, with the flag or the TOML key
// (line:column) named (docs/contract.md): registry URIs through the replica's parser,
// unsupported inference deployments, and GPU / replica arithmetic at its limits. Also: what a
// plan renders is exactly what the replica reads back.
#include "launch_fixture.hpp"
#include "multinode_rl_config.hpp"

#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace pb::test {
namespace {

launch::LaunchPlan plan(const std::string &toml_text, const launch::LaunchOptions &options) {
  const auto document = toml::Document::parse(toml_text, "/weka/rl.toml");
  launch::LaunchInputs inputs;
  inputs.program = launch::Program::rl;
  inputs.document = &document;
  inputs.config_path = "/weka/rl.toml";
  inputs.cwd = "/weka";
  inputs.launch_id = "id1";
  return launch::make_plan(options, inputs);
}

launch::LaunchOptions with_registry(const std::string &registry) {
  launch::LaunchOptions options;
  options.registry = registry;
  return options;
}

TEST(ReplicaRefusals, RegistryUrisTheReplicaCannotOpen) {
  for (const auto &[uri, message] : std::vector<std::pair<std::string, std::string>>{
           {"rediss://h:6379", "--registry: cannot connect to rediss://h:6379: rediss://"},
           {"head+rediss://h:6379", "(Redis over TLS) is not supported"},
           {"http://x", "--registry: invalid registry URI http://x"},
           {"redis://h:notaport", "--registry: invalid registry URI redis://h:notaport"},
           {"sqlite:///:memory:", "--registry: invalid registry URI sqlite:///:memory:"}}) {
    EXPECT_PB_ERROR(plan(k_multinode_rl, with_registry(uri)), 2, message);
  }
  // The replica parses relative paths and ~ in its WORKING_DIR with its HOME.
  EXPECT_NO_THROW(plan(k_multinode_rl, with_registry("~/registry")));
  EXPECT_NO_THROW(plan(k_multinode_rl, with_registry("head+redis://head:6379")));
}

TEST(ReplicaRefusals, SingleNodeRlChecksTheSyntaxButAllowsTls) {
  const std::string single = R"(output_dir = "/weka/out"
[deployment]
type = "single_node"
num_train_gpus = 1
num_infer_gpus = 1
gpus_per_node = 2
[wandb]
project = "p"
name = "run"
[trainer]
[orchestrator]
)";
  EXPECT_PB_ERROR(plan(single, with_registry("http://x")), 2, "--registry: invalid registry URI");
  const auto tls = plan(single, with_registry("rediss://h:6379"));
  EXPECT_NE(tls.spec_text.find("rediss://h:6379"), std::string::npos);
}

TEST(ReplicaRefusals, UnsupportedInferenceDeploymentsNameTheKey) {
  EXPECT_PB_ERROR(
      plan(std::string(k_multinode_rl) + "[inference.deployment]\ntype = \"prefill_only\"\n",
           with_registry("redis://r:1")),
      3,
      "/weka/rl.toml:17:8: inference.deployment.type 'prefill_only' is not one Prime-RL v0.8.0 "
      "knows");
  EXPECT_PB_ERROR(plan(std::string(k_multinode_rl) + "[inference.deployment]\ntype = 3\n",
                       with_registry("redis://r:1")),
                  3,
                  "inference.deployment.type must be a string");
  // Disaggregated and expert-parallel inference take Prime-RL's placement.
  for (const auto &shape :
       {replace_once(k_multinode_rl, "num_infer_nodes = 1", "num_infer_nodes = 2") +
            "[inference.deployment]\ntype = \"disaggregated\"\n",
        replace_once(
            k_multinode_rl, "[inference]\n", "[inference]\nenable_expert_parallel = true\n")}) {
    const auto placed = plan(shape, with_registry("redis://r:1"));
    EXPECT_NE(placed.spec_text.find("\"PRIME_RL_PLACEMENT\""), std::string::npos) << shape;
  }
  EXPECT_NO_THROW(
      plan(std::string(k_multinode_rl) + "[inference.deployment]\ntype = \"multi_node\"\n",
           with_registry("redis://r:1")));
}

TEST(ReplicaRefusals, GpuArithmeticCannotOverflow) {
  const auto options = with_registry("redis://r:1");
  // 2^62: formerly TRAINER_GPU_COUNT=0 and TOTAL_NODES=1 (signed overflow under UBSan).
  EXPECT_PB_ERROR(plan(replace_once(k_multinode_rl,
                                    "dp_replicate = 8\n",
                                    "dp_replicate = 8\ncp = 4611686018427387904\n"),
                       options),
                  3,
                  "/weka/rl.toml:8:6: trainer.model.cp must be a positive integer at most 1024");
  // 2^63-1: formerly "-8 inference GPUs" blamed on inference.parallel.dp.
  EXPECT_PB_ERROR(plan(replace_once(k_multinode_rl,
                                    "num_infer_nodes = 1",
                                    "num_infer_nodes = 9223372036854775807"),
                       options),
                  3,
                  "/weka/rl.toml:5:19: deployment.num_infer_nodes must be a positive integer at "
                  "most 99999");
  EXPECT_PB_ERROR(plan(replace_once(k_multinode_rl,
                                    "type = \"multi_node\"\n",
                                    "type = \"multi_node\"\ngpus_per_node = 2048\n"),
                       options),
                  3,
                  "deployment.gpus_per_node must be a positive integer at most 1024");
  EXPECT_PB_ERROR(plan(replace_once(k_multinode_rl,
                                    "[inference.parallel]\n",
                                    "[inference.parallel]\ntp = 4096\n"),
                       options),
                  3,
                  "inference.parallel.tp must be a positive integer at most 1024");
  // More inference ranks than a replica accepts: 2000 nodes x 1024 GPUs / tp 1.
  auto many = replace_once(k_multinode_rl, "num_infer_nodes = 1", "num_infer_nodes = 2000");
  many = replace_once(
      many, "type = \"multi_node\"\n", "type = \"multi_node\"\ngpus_per_node = 1024\n");
  EXPECT_PB_ERROR(plan(many, options), 3, "inference ranks (2047992 inference GPUs / tp 1) exceed");
  // Prime-RL's placement reads (and the image's pieces peek) the same keys: 2^62 overflows none
  // of their products (UBSan), and each is refused at its key.
  const std::string ep =
      replace_once(k_multinode_rl, "[inference]\n", "[inference]\nenable_expert_parallel = true\n");
  EXPECT_PB_ERROR(plan(replace_once(replace_once(ep, "num_infer_nodes = 1", "num_infer_nodes = 2"),
                                    "dp = 8\n",
                                    "dp = 4611686018427387904\n"),
                       options),
                  3,
                  "expert parallelism across 2 inference nodes needs inference.parallel.dp x tp");
  EXPECT_PB_ERROR(plan(replace_once(ep,
                                    "type = \"multi_node\"\n",
                                    "type = \"multi_node\"\ngpus_per_node = 4611686018427387904\n"),
                       options),
                  3,
                  "deployment.gpus_per_node must be a positive integer at most 1024");
}

TEST(ReplicaRefusals, FlagsOutsideTheContract) {
  auto options = with_registry("redis://r:1");
  options.gateway_workers = contract::k_max_gateway_workers + 1;
  EXPECT_PB_ERROR(plan(k_multinode_rl, options), 2, "--gateway-workers must be at most 100000");
  options = with_registry("redis://r:1");
  options.rendezvous_timeout_seconds = 10'000'000'000;
  EXPECT_PB_ERROR(plan(k_multinode_rl, options), 2, "--rendezvous-timeout-seconds must be at most");
  options = with_registry("redis://r:1");
  options.required_services = {"judge=1000001"};
  EXPECT_PB_ERROR(plan(k_multinode_rl, options), 2, "--required-service counts must be at most");
}

TEST(ReplicaRefusals, WhatThePlanRendersTheReplicaReads) {
  auto options = with_registry("redis://user:secret@r:1/2");
  options.required_services = {"terminal=4", "judge=1"};
  options.setup_command = "echo 'hi'";
  const auto rendered = plan(k_multinode_rl, options);
  contract::EnvMap env;
  for (const auto &var : rendered.spec["tasks"][0]["envVars"]) {
    if (var.contains("value")) {
      env[var["name"].get<std::string>()] = var["value"].get<std::string>();
    }
  }
  const auto replica = contract::ReplicaEnv::from_env(contract::Kind::multi_rl, env);
  EXPECT_EQ(replica.registry->location.redis.password, "secret");
  EXPECT_EQ(replica.required_services, (contract::RequiredServices{{"judge", 1}, {"terminal", 4}}));
  EXPECT_EQ(replica.total_nodes, 2);
  EXPECT_EQ(replica.trainer_gpu_count, 8);
  EXPECT_EQ(replica.setup_command, "echo 'hi'");
  for (const auto &[name, value] : replica.to_env()) {
    EXPECT_EQ(env.at(name), value) << name;
  }
}

} // namespace
} // namespace pb::test
