// SPDX-License-Identifier: MIT
// The pure half of the node runtime: env contract, placement, worker list, argv, verdicts.
#include "../../src/node/support.hpp"
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/node/env.hpp>
#include <primebeaker/node/peers.hpp>
#include <primebeaker/node/replica_plan.hpp>

#include <gtest/gtest.h>

namespace {

using namespace pb::node;

EnvMap rl_env(int rank = 0) {
  return {{"BEAKER_REPLICA_RANK", std::to_string(rank)},
          {"TOTAL_NODES", "2"},
          {"TOTAL_INFER_RANKS", "6"},
          {"GPUS_PER_NODE", "8"},
          {"TRAINER_GPU_COUNT", "4"},
          {"MIXED_INFER_GPU_COUNT", "4"},
          {"CONFIG_PATH", "/weka/c.toml"},
          {"OUTPUT_DIR", "/weka/out"},
          {"WORKING_DIR", "/weka"},
          {"SCRATCH", "/weka"},
          {"LAUNCH_ID", "abc"},
          {"RENDEZVOUS_DIR", "/weka/rdv"},
          {"RENDEZVOUS_TIMEOUT_SECONDS", "1800"},
          {"REGISTRY", "redis://h:6379"},
          {"GATEWAY_PORT", "1212"},
          {"GATEWAY_WORKERS", "8"},
          {"REQUIRED_LITEREGISTRY_SERVICES", R"({"judge":1,"terminal":4})"},
          {"LOCAL_SEARCH_MODEL_PATHS_JSON", R"(["localsearch:bc-rl-v1"])"}};
}

int exit_code_of(const std::function<void()> &f) {
  return pb::test::thrown_error(f).code();
}

std::string message_of(const std::function<void()> &f) {
  return pb::test::thrown_error(f).what();
}

TEST(NodeEnv, ParsesTheRlContract) {
  const auto env = parse_rl_env(rl_env(1));
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.total_infer_ranks, 6);
  EXPECT_EQ(env.required_services.at("terminal"), 4);
  EXPECT_EQ(env.required_services.at("judge"), 1);
  EXPECT_EQ(env.local_search_model_paths, std::vector<std::string>{"localsearch:bc-rl-v1"});
  EXPECT_FALSE(env.setup_command);
  EXPECT_DOUBLE_EQ(env.tuning.poll_seconds, 0.5);
}

TEST(NodeEnv, MissingVariablesAreNamedWithExit2) {
  auto env = rl_env();
  env.erase("REGISTRY");
  EXPECT_EQ(exit_code_of([&] { parse_rl_env(env); }), 2);
  EXPECT_EQ(message_of([&] { parse_rl_env(env); }),
            "missing required environment variable: REGISTRY");
  env.erase("BEAKER_REPLICA_RANK");
  env["GATEWAY_PORT"] = "";
  EXPECT_EQ(message_of([&] { parse_rl_env(env); }),
            "missing required environment variables: REGISTRY, GATEWAY_PORT, BEAKER_REPLICA_RANK");
}

TEST(NodeEnv, BadValuesExit2) {
  auto env = rl_env(2);
  EXPECT_NE(message_of([&] { parse_rl_env(env); }).find("invalid node rank 2"), std::string::npos);
  env = rl_env();
  env["GATEWAY_PORT"] = "70000";
  EXPECT_EQ(exit_code_of([&] { parse_rl_env(env); }), 2);
  env = rl_env();
  env["REQUIRED_LITEREGISTRY_SERVICES"] = R"({"terminal":true})";
  EXPECT_EQ(exit_code_of([&] { parse_rl_env(env); }), 2);
  env["REQUIRED_LITEREGISTRY_SERVICES"] = R"({"terminal":0})";
  EXPECT_EQ(exit_code_of([&] { parse_rl_env(env); }), 2);
  env = rl_env();
  env["LOCAL_SEARCH_MODEL_PATHS_JSON"] = R"([""])";
  EXPECT_EQ(exit_code_of([&] { parse_rl_env(env); }), 2);
  env = rl_env();
  env["PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID"] = "01ABC";
  EXPECT_EQ(message_of([&] { parse_rl_env(env); }).rfind("missing BEAKER_TOKEN", 0), 0U);
  env["BEAKER_TOKEN"] = "t";
  EXPECT_EQ(parse_rl_env(env).managed_service_experiment_id, "01ABC");
}

TEST(NodeEnv, SftNeedsOnlyItsOwnVariables) {
  EnvMap env = {{"BEAKER_REPLICA_RANK", "2"},
                {"TOTAL_NODES", "3"},
                {"GPUS_PER_NODE", "8"},
                {"CONFIG_PATH", "/c"},
                {"OUTPUT_DIR", "/o"},
                {"WORKING_DIR", "/w"},
                {"SCRATCH", "/s"},
                {"LAUNCH_ID", "id"},
                {"RENDEZVOUS_DIR", "/r"},
                {"RENDEZVOUS_TIMEOUT_SECONDS", "60"}};
  EXPECT_EQ(parse_sft_env(env).rank, 2);
  env.erase("SCRATCH");
  EXPECT_EQ(message_of([&] { parse_sft_env(env); }),
            "missing required environment variable: SCRATCH");
}

TEST(NodePlacement, RolesBySlot) {
  auto p = place_rl(parse_rl_env(rl_env(0)));
  EXPECT_EQ(p.role, Role::mixed);
  EXPECT_EQ(p.train_gpus, 4);
  EXPECT_EQ(p.inference.start, 4);
  EXPECT_EQ(p.inference.count, 4);
  p = place_rl(parse_rl_env(rl_env(1)));
  EXPECT_EQ(p.role, Role::inference);
  EXPECT_EQ(p.inference.start, 0);
  EXPECT_EQ(p.inference.count, 8);
  auto env = rl_env(0);
  env["TRAINER_GPU_COUNT"] = "8";
  env["MIXED_INFER_GPU_COUNT"] = "0";
  p = place_rl(parse_rl_env(env));
  EXPECT_EQ(p.role, Role::trainer);
  EXPECT_EQ(p.inference.count, 0);
  env["MIXED_INFER_GPU_COUNT"] = "2";
  EXPECT_NE(message_of([&] { place_rl(parse_rl_env(env)); }).find("GPU partition exceeds node"),
            std::string::npos);
}

TEST(NodePlacement, TpBlocksAndWorkers) {
  EXPECT_EQ(tp_blocks({4, 4}, 2), (std::vector<std::string>{"4,5", "6,7"}));
  EXPECT_EQ(tp_blocks({0, 3}, 1), (std::vector<std::string>{"0", "1", "2"}));
  const auto workers = global_workers({{"10.0.0.1", {4, 4}}, {"10.0.0.2", {0, 8}}}, 8100, 2, 6);
  ASSERT_EQ(workers.size(), 6U);
  EXPECT_EQ(workers[0].url, "http://10.0.0.1:8100");
  EXPECT_EQ(workers[1].url, "http://10.0.0.1:8101");
  EXPECT_EQ(workers[2].url, "http://10.0.0.2:8100");
  EXPECT_EQ(workers[5].admin_url, "http://10.0.0.2:8103/v1");
  EXPECT_NE(message_of([] {
              global_workers({{"a", {4, 4}}, {"b", {0, 8}}}, 8100, 2, 5);
            }).find("inference rank count mismatch"),
            std::string::npos);
  EXPECT_EQ(exit_code_of([] { global_workers({{"a", {0, 3}}}, 8100, 2, 1); }), 2);
  EXPECT_EQ(layout_text({4, 4}), "4 4");
  EXPECT_EQ(parse_layout("0 8\n")->count, 8);
  EXPECT_FALSE(parse_layout("x 8"));
}

// The process of the plan named `name` (Start, Run, Probe, or the inference servers' template).
ProcessSpec process_named(const ReplicaPlan &plan, const std::string &name) {
  for (const auto &s : plan.steps) {
    if (const auto *start = std::get_if<step::Start>(&s); start && start->process.name == name) {
      return start->process;
    }
    if (const auto *run = std::get_if<step::Run>(&s); run && run->process.name == name) {
      return run->process;
    }
    if (const auto *probe = std::get_if<step::Probe>(&s); probe && probe->process.name == name) {
      return probe->process;
    }
    if (const auto *servers = std::get_if<step::StartInferenceServers>(&s);
        servers && servers->each.name == name) {
      return servers->each;
    }
  }
  ADD_FAILURE() << "no process " << name;
  return {};
}

PlanInputs inputs_for(const EnvMap &env) {
  PlanInputs inputs;
  inputs.env = env;
  inputs.self = "/pb";
  inputs.address = "10.0.0.1";
  return inputs;
}

TEST(NodeArgv, ChildrenAsLaunchMdSays) {
  const auto env = parse_rl_env(rl_env());
  const auto plan = plan_rl(env, inputs_for(rl_env()));
  // What the replica learned by then (docs/node.md "The plan").
  const EnvMap facts = {{"runtime.ROUTER_PORT", "8000"},
                        {"runtime.ROUTER_POLICY", "round_robin"},
                        {"runtime.BACKEND_PORT", "8100"},
                        {"runtime.TRAINER_RANKS_FILTER", "0"},
                        {"runtime.USE_ZMQ_TRANSPORT", "1"},
                        {"runtime.USE_NCCL_BROADCAST", "1"},
                        {"host.0", "10.0.0.1"},
                        {"workers", "http://a:8100 http://b:8100"},
                        {"admin_urls", "http://a:8100/v1 http://b:8100/v1"},
                        {"router_url", "http://a:8000/v1"},
                        {"attempt_dir", "/r"},
                        {"port", "8101"}};
  EXPECT_EQ(resolve_argv(process_named(plan, "vllm-router"), facts),
            (pb::proc::Argv{"vllm-router",
                            "--policy",
                            "round_robin",
                            "--host",
                            "0.0.0.0",
                            "--port",
                            "8000",
                            "--request-id-headers",
                            "x-session-id",
                            "--prometheus-port",
                            "29000",
                            "--worker-startup-timeout-secs",
                            "4200",
                            "--worker-urls",
                            "http://a:8100",
                            "http://b:8100"}));
  EXPECT_EQ(resolve_argv(process_named(plan, "inference server ${k}"), facts),
            (pb::proc::Argv{"inference",
                            "@",
                            "/weka/out/configs/inference.toml",
                            "--server.host",
                            "0.0.0.0",
                            "--server.port",
                            "8101",
                            "--parallel.dp",
                            "1",
                            "--data-parallel-size-local",
                            "1",
                            "--api-server-count",
                            "1"}));
  const auto trainer = process_named(plan, "trainer");
  EXPECT_EQ(resolve_argv(trainer, facts),
            (pb::proc::Argv{"torchrun",
                            "--role=trainer",
                            "--standalone",
                            "--nnodes=1",
                            "--nproc-per-node=4",
                            "--node-rank=0",
                            "--log-dir=/weka/out/logs/trainer/torchrun",
                            "--tee=3",
                            "--redirects=3",
                            "--local-ranks-filter=0",
                            "-m",
                            "prime_rl.trainer.rl.train",
                            "@",
                            "/weka/out/configs/trainer.toml",
                            "--rollout_transport.host",
                            "10.0.0.1"}));
  EXPECT_EQ(trainer.gpus, "0,1,2,3");
  EXPECT_EQ(trainer.component_env, "trainer");
  EXPECT_EQ(resolve_argv(process_named(plan, "orchestrator"), facts),
            (pb::proc::Argv{"orchestrator",
                            "@",
                            "/weka/out/configs/orchestrator.toml",
                            "--model.client.base-url",
                            "http://a:8000/v1",
                            "--model.client.admin-base-url",
                            "http://a:8100/v1",
                            "http://b:8100/v1",
                            "--weight_broadcast.host",
                            "10.0.0.1",
                            "--rollout_transport.host",
                            "10.0.0.1"}));
  EXPECT_EQ(resolve_argv(process_named(plan, "gateway"), facts),
            (pb::proc::Argv{"python3",
                            "-m",
                            "literegistry.gateway",
                            "--registry",
                            "redis://h:6379",
                            "--port",
                            "1212",
                            "--workers",
                            "8",
                            "--timeout",
                            "800",
                            "--judge-timeout",
                            "800"}));
  EXPECT_EQ(resolve_argv(process_named(plan, "required-service barrier"), facts),
            (pb::proc::Argv{"/pb",
                            "registry",
                            "wait-services",
                            "--registry",
                            "redis://h:6379",
                            "--require",
                            "judge=1",
                            "--require",
                            "terminal=4",
                            "--timeout",
                            "1800",
                            "--stop-file",
                            "/r/shutdown.requested"}));
  EXPECT_EQ(resolve_argv(process_named(plan, "gateway probe"), facts),
            (pb::proc::Argv{"/pb",
                            "registry",
                            "probe-gateway",
                            "--url",
                            "http://127.0.0.1:1212",
                            "--model-path",
                            "localsearch:bc-rl-v1",
                            "--required-path",
                            "/judge",
                            "--timeout",
                            "70"}));
  // Without ZMQ or NCCL the conditional arguments are left out.
  EnvMap plain = facts;
  plain["runtime.USE_ZMQ_TRANSPORT"] = "0";
  plain["runtime.USE_NCCL_BROADCAST"] = "0";
  EXPECT_EQ(resolve_argv(trainer, plain).back(), "/weka/out/configs/trainer.toml");
  // A fact used before the step that binds it is an internal error, not a silent empty word.
  EXPECT_EQ(exit_code_of([&] { resolve_argv(trainer, {}); }), 1);
}

TEST(NodeArgv, SftTorchrun) {
  EnvMap e = {{"BEAKER_REPLICA_RANK", "1"},
              {"TOTAL_NODES", "3"},
              {"GPUS_PER_NODE", "8"},
              {"CONFIG_PATH", "/c"},
              {"OUTPUT_DIR", "/o"},
              {"WORKING_DIR", "/w"},
              {"SCRATCH", "/s"},
              {"LAUNCH_ID", "L1"},
              {"RENDEZVOUS_DIR", "/r"},
              {"RENDEZVOUS_TIMEOUT_SECONDS", "60"}};
  const auto env = parse_sft_env(e);
  const auto plan = plan_sft(env, inputs_for(e));
  EXPECT_EQ(resolve_argv(process_named(plan, "torchrun"),
                         {{"host.0", "10.1.1.1"}, {"runtime.TRAINER_RANKS_FILTER", "0,1"}}),
            (pb::proc::Argv{"torchrun",
                            "--role=trainer",
                            "--nnodes=3",
                            "--nproc-per-node=8",
                            "--node-rank=1",
                            "--rdzv-endpoint=10.1.1.1:29500",
                            "--rdzv-id=primebeaker_L1",
                            "--log-dir=/o/logs/trainer/torchrun",
                            "--tee=3",
                            "--redirects=3",
                            "--local-ranks-filter=0,1",
                            "-m",
                            "prime_rl.trainer.sft.train",
                            "@",
                            "/o/configs/sft.toml"}));
  EXPECT_EQ(sft_paths(env).local_tmp, "/tmp/primebeaker-sft-L1-1");
  EXPECT_EQ(plan.local_tmp, "/tmp/primebeaker-sft-L1-1");
}

TEST(NodePlan, SubstitutesFactsAndOffsets) {
  const EnvMap facts = {{"a", "8000"}, {"list", "x y"}};
  EXPECT_EQ(substitute("p=${a} q=${a+21000}", facts), "p=8000 q=29000");
  EXPECT_EQ(substitute("no placeholders", facts), "no placeholders");
  ProcessSpec p;
  p.argv = {"cmd", "${list...}", "--n=${a}"};
  EXPECT_EQ(resolve_argv(p, facts), (pb::proc::Argv{"cmd", "x", "y", "--n=8000"}));
}

// A registry URI's password never reaches the printed plan.
TEST(NodePlan, PrintedPlanHidesTheRegistryPassword) {
  EnvMap e = rl_env();
  e["REGISTRY"] = "redis://:s3cret@h:6379";
  const auto plan = plan_rl(parse_rl_env(e), inputs_for(e));
  EXPECT_EQ(plan_text(plan).find("s3cret"), std::string::npos);
  EXPECT_EQ(plan_json(plan).find("s3cret"), std::string::npos);
  EXPECT_NE(plan_text(plan).find("wait-redis"), std::string::npos);
}

TEST(NodeWatcher, Verdicts) {
  Observation seen;
  EXPECT_FALSE(watcher_verdict(seen));
  seen.statuses[2] = {0, "inference"};
  EXPECT_EQ(watcher_verdict(seen), 91);
  // A disaggregated deployment's prefill and decode replicas are inference replicas too.
  for (const char *role : {"prefill", "decode"}) {
    Observation pd;
    pd.statuses[1] = {0, role};
    EXPECT_EQ(watcher_verdict(pd), 91) << role;
  }
  seen.statuses[0] = {0, "trainer"};
  EXPECT_EQ(watcher_verdict(seen), 0);
  seen.statuses[1] = {143, "inference"};
  EXPECT_EQ(watcher_verdict(seen), 90);
  seen.shutdown_requested = true;
  EXPECT_EQ(watcher_verdict(seen), 92);
  seen.complete = true;
  EXPECT_EQ(watcher_verdict(seen), 0);
  // SFT: peers that finished are not a verdict; failures and shutdowns are.
  Observation sft;
  sft.statuses[1] = {0, "sft"};
  EXPECT_FALSE(watcher_verdict(sft, true));
  sft.statuses[2] = {1, "sft"};
  EXPECT_EQ(watcher_verdict(sft, true), 90);
  EXPECT_EQ(parse_status(status_text(90, "mixed"))->code, 90);
  EXPECT_EQ(parse_status("0 inference\n")->role, "inference");
  EXPECT_FALSE(parse_status("garbage"));
}

TEST(NodeMisc, PrefixAndEnvFiles) {
  EXPECT_EQ(strip_rank_prefix("[default0]:loss 1.0"), "loss 1.0");
  EXPECT_EQ(strip_rank_prefix("[rank12]: x"), " x");
  EXPECT_EQ(strip_rank_prefix("[0]:x"), "[0]:x");
  EXPECT_EQ(strip_rank_prefix("plain"), "plain");
  EXPECT_EQ(env_file_text({{"A_1", "x y"}, {"B", ""}}, "t.env"), "export A_1='x y'\nexport B=''\n");
  EXPECT_EQ(exit_code_of([] { env_file_text({{"bad-name", "1"}}, "t.env"); }), 3);
  const auto defaults = cache_defaults({{"HF_HOME", "/hf"}}, "/s", "/tmp/l");
  EXPECT_EQ(defaults.at("XDG_CACHE_HOME"), "/s/.cache");
  EXPECT_EQ(defaults.count("HF_HOME"), 0U);
  EXPECT_EQ(defaults.at("TORCHINDUCTOR_CACHE_DIR"), "/s/.cache/torch/inductor");
  EXPECT_EQ(defaults.at("TMPDIR"), "/tmp/l");
}

} // namespace
