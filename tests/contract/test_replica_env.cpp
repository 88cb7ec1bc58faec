// SPDX-License-Identifier: MIT
// The replica contract: from_env(to_env(x)) == x for every kind over generated settings, and
// every value a replica refuses refused by to_env too (so a launch can never render it).
#include "test_support.hpp"

#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/limits.hpp>

#include <gtest/gtest.h>

#include <random>

namespace pb::test {
namespace {

using contract::Kind;
using contract::ReplicaEnv;

class Generator {
public:
  explicit Generator(unsigned seed) : m_random(seed) {}

  std::int64_t integer(std::int64_t min, std::int64_t max) {
    // Bias towards the edges, where off-by-one and overflow bugs live.
    switch (pick(4)) {
    case 0:
      return min;
    case 1:
      return max;
    default:
      return std::uniform_int_distribution<std::int64_t>(min, max)(m_random);
    }
  }

  // Text with the characters that break naive encoders: quotes, backslashes, '=', ',', spaces,
  // newlines and non-ASCII.
  std::string text(bool allow_empty = true) {
    static const std::vector<std::string> pieces = {
        "a", "Z", "0", "_", "-", "/", " ", "=", ",", "\"", "\\", "'", "$HOME", "\n", "é", "[", "}"};
    std::string out;
    const int length = static_cast<int>(integer(allow_empty ? 0 : 1, 12));
    for (int i = 0; i < length; ++i) {
      out += pieces[pick(pieces.size())];
    }
    return out;
  }

  std::string path() { return "/weka/" + text(false); }

  std::string registry() {
    static const std::vector<std::string> uris = {"redis://r:6379",
                                                  "redis://user:p%40ss@10.0.0.1:7000/3",
                                                  "head+redis://head:6379",
                                                  "file:///weka/registry",
                                                  "sqlite:///weka/reg.db",
                                                  "/weka/plain-registry",
                                                  "relative/registry"};
    return uris[pick(uris.size())];
  }

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(m_random); }
  bool coin() { return pick(2) == 0; }

private:
  std::mt19937_64 m_random;
};

ReplicaEnv generate(Generator &g, Kind kind) {
  ReplicaEnv x;
  x.kind = kind;
  x.home = g.path();
  x.working_dir = g.path();
  x.scratch = g.path();
  x.config_path = g.path() + ".toml";
  x.output_dir = g.path();
  x.wandb_run_id = g.text(false);
  if (g.coin()) {
    x.setup_command = g.text();
  }
  const registry::ParseContext context{x.working_dir, x.home};
  if (!contract::is_multi_node(kind)) {
    x.experiment_name = g.text(false);
    x.num_gpus = g.integer(1, primerl::k_max_gpus_per_node);
    if (kind == Kind::single_rl) {
      x.wandb_shared_run_id = g.text(false);
      if (g.coin()) {
        x.wandb_entity = g.text(false);
      }
      if (g.coin()) {
        x.registry = contract::parse_registry(g.registry(), context, "--registry");
      }
    }
    return x;
  }
  x.wandb_shared_run_id = g.text(false);
  x.launch_id = g.text(false);
  x.rendezvous_dir = g.path();
  x.rendezvous_timeout_seconds = g.integer(1, contract::k_max_rendezvous_timeout_seconds);
  x.total_nodes = g.integer(1, primerl::k_max_nodes);
  x.gpus_per_node = g.integer(1, primerl::k_max_gpus_per_node);
  if (kind == Kind::multi_rl) {
    x.registry = contract::parse_registry(g.registry(), context, "--registry");
    x.total_infer_ranks = g.integer(1, primerl::k_max_infer_ranks);
    x.trainer_gpu_count = g.integer(1, primerl::k_max_gpus_per_node);
    x.mixed_infer_gpu_count = g.integer(0, primerl::k_max_gpus_per_node);
    x.gateway_port = g.integer(1, 65535);
    x.gateway_workers = g.integer(1, contract::k_max_gateway_workers);
    for (int i = static_cast<int>(g.integer(0, 3)); i > 0; --i) {
      x.required_services[g.text(false)] = g.integer(1, contract::k_max_service_count);
    }
    for (int i = static_cast<int>(g.integer(0, 3)); i > 0; --i) {
      x.local_search_model_paths.push_back(g.text(false));
    }
  }
  return x;
}

TEST(ReplicaEnv, RoundTripsEveryKind) {
  Generator g(20261203);
  for (const Kind kind : {Kind::single_sft, Kind::single_rl, Kind::multi_sft, Kind::multi_rl}) {
    for (int i = 0; i < 60; ++i) {
      const ReplicaEnv x = generate(g, kind);
      const auto env = x.to_env();
      const ReplicaEnv back = ReplicaEnv::from_env(kind, env);
      ASSERT_EQ(back, x) << "kind " << static_cast<int>(kind) << ", case " << i;
      EXPECT_EQ(back.to_env(), env);
      for (const auto &[name, value] : env) {
        EXPECT_TRUE(contract::is_launcher_owned(name, kind)) << name;
      }
    }
  }
}

// Prime-RL v0.9 (docs/contract.md "Generations"): the generation and its placement round-trip,
// the v0.8.0 layout names are neither written nor required, and the counts must add up.
TEST(ReplicaEnv, PrimeRlV09RoundTripsWithItsOwnNames) {
  Generator g(20261205);
  for (const Kind kind : {Kind::single_sft, Kind::single_rl, Kind::multi_sft, Kind::multi_rl}) {
    for (int i = 0; i < 40; ++i) {
      ReplicaEnv x = generate(g, kind);
      x.generation = primerl::Generation::v0_9;
      x.run_dir_name = "run-" + std::to_string(i);
      x.run_name = g.coin() ? std::string() : x.run_dir_name;
      if (contract::is_multi_node(kind)) {
        x.total_infer_ranks = x.trainer_gpu_count = x.mixed_infer_gpu_count = 0;
        x.gateway_port = x.gateway_workers = 0;
        x.required_services.clear();
        x.local_search_model_paths.clear();
        x.num_infer_nodes = kind == Kind::multi_rl ? g.integer(0, x.total_nodes - 1) : 0;
        x.num_train_nodes = x.total_nodes - x.num_infer_nodes;
        if (kind == Kind::multi_rl) {
          x.inference_tp = g.integer(1, primerl::k_max_gpus_per_node);
          x.orchestrator_replica = g.integer(0, x.total_nodes - 1);
          x.env_servers = {"train/" + g.text(false)};
          if (g.coin()) {
            x.registry.reset(); // optional in v0.9
          }
          x.router = g.coin() ? primerl::Router::llm_d : primerl::Router::vllm_router;
          x.kv_offload = static_cast<primerl::KvOffload>(g.integer(0, 2));
        }
      }
      const auto env = x.to_env();
      EXPECT_EQ(env.at("PRIME_RL_GENERATION"), "v0.9");
      EXPECT_EQ(env.count("TOTAL_INFER_RANKS"), 0u);
      EXPECT_EQ(env.count("GATEWAY_PORT"), 0u);
      const ReplicaEnv back = ReplicaEnv::from_env(kind, env);
      ASSERT_EQ(back, x) << "kind " << static_cast<int>(kind) << ", case " << i;
      for (const auto &[name, value] : env) {
        EXPECT_TRUE(contract::is_launcher_owned(name, kind)) << name;
      }
    }
  }
  EXPECT_PB_ERROR(contract::generation_of({{"PRIME_RL_GENERATION", "v1.0"}}),
                  2,
                  "invalid PRIME_RL_GENERATION: 'v1.0'");
  EXPECT_EQ(contract::generation_of({}), primerl::Generation::v0_8);
  auto env = [] {
    Generator seeded(3);
    ReplicaEnv x = generate(seeded, Kind::multi_rl);
    x.generation = primerl::Generation::v0_9;
    x.run_dir_name = "run";
    x.total_nodes = 3;
    x.num_infer_nodes = 1;
    x.num_train_nodes = 2;
    x.registry.reset();
    return x.to_env();
  }();
  env["NUM_TRAIN_NODES"] = "3";
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env),
                  2,
                  "TOTAL_NODES (3) must be NUM_INFER_NODES + NUM_TRAIN_NODES (1 + 3)");
  env["NUM_TRAIN_NODES"] = "2";
  env["INFERENCE_ROUTER"] = "sglang-router";
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env),
                  2,
                  "invalid INFERENCE_ROUTER: 'sglang-router' (this primebeaker places \"llm-d\")");
  env["INFERENCE_ROUTER"] = "llm-d";
  env["KV_CACHE_OFFLOAD"] = "lmcache";
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env),
                  2,
                  "invalid KV_CACHE_OFFLOAD: 'lmcache' (native or mooncake)");
  env["KV_CACHE_OFFLOAD"] = "mooncake";
  const auto served = ReplicaEnv::from_env(Kind::multi_rl, env);
  EXPECT_EQ(served.router, primerl::Router::llm_d);
  EXPECT_EQ(served.kv_offload, primerl::KvOffload::mooncake);
  env.erase("INFERENCE_ROUTER");
  env.erase("KV_CACHE_OFFLOAD");
  env["PRIME_RL_RUN_DIR"] = "../elsewhere";
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env),
                  2,
                  "invalid PRIME_RL_RUN_DIR: '../elsewhere' (one directory name under OUTPUT_DIR)");
  env.erase("ENV_SERVERS_JSON");
  env.erase("PRIME_RL_RUN_DIR");
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env),
                  2,
                  "missing required environment variables: PRIME_RL_RUN_DIR, ENV_SERVERS_JSON");
}

TEST(ReplicaEnv, LauncherOwnedNamesDependOnTheKind) {
  EXPECT_TRUE(contract::is_launcher_owned("REQUIRED_LITEREGISTRY_SERVICES", Kind::multi_rl));
  EXPECT_TRUE(contract::is_launcher_owned("PRIMEBEAKER_SETUP_COMMAND", Kind::multi_rl));
  EXPECT_FALSE(contract::is_launcher_owned("EXPERIMENT_NAME", Kind::multi_rl));
  EXPECT_TRUE(contract::is_launcher_owned("EXPERIMENT_NAME", Kind::single_sft));
  EXPECT_FALSE(contract::is_launcher_owned("REGISTRY", Kind::single_sft));
  EXPECT_FALSE(contract::is_launcher_owned("BEAKER_TOKEN", Kind::multi_rl));
}

TEST(ReplicaEnv, RequiredNamesAreListedTogether) {
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::single_rl, {{"CONFIG_PATH", "/c"}}),
                  2,
                  "missing required environment variables: OUTPUT_DIR, WORKING_DIR, SCRATCH");
  EXPECT_PB_ERROR(
      ReplicaEnv::from_env(Kind::single_sft,
                           {{"CONFIG_PATH", "/c"}, {"OUTPUT_DIR", "/o"}, {"SCRATCH", "/s"}}),
      2,
      "missing required environment variable: WORKING_DIR");
}

ReplicaEnv multi_rl() {
  Generator g(7);
  return generate(g, Kind::multi_rl);
}

TEST(ReplicaEnv, OutOfContractValuesAreRefusedOnBothSides) {
  auto x = multi_rl();
  x.total_nodes = primerl::k_max_nodes + 1;
  EXPECT_PB_ERROR(x.to_env(), 2, "invalid TOTAL_NODES='100001'");
  x = multi_rl();
  x.trainer_gpu_count = 0;
  EXPECT_PB_ERROR(x.to_env(), 2, "TRAINER_GPU_COUNT");
  x = multi_rl();
  x.required_services["judge"] = contract::k_max_service_count + 1;
  EXPECT_PB_ERROR(x.to_env(), 2, "'judge' needs a positive integer count");

  auto env = multi_rl().to_env();
  env["GPUS_PER_NODE"] = "9223372036854775808";
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env), 2, "invalid GPUS_PER_NODE=");
  env = multi_rl().to_env();
  env["REQUIRED_LITEREGISTRY_SERVICES"] = R"({"terminal":true})";
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env), 2, "'terminal' needs a positive");
  env["REQUIRED_LITEREGISTRY_SERVICES"] = "[1]";
  EXPECT_PB_ERROR(ReplicaEnv::from_env(Kind::multi_rl, env), 2, "expected a JSON object");
}

TEST(ReplicaEnv, RegistryUrisGoThroughTheReplicasParser) {
  const registry::ParseContext context{"/weka", "/home/u"};
  for (const auto &[uri, message] : std::vector<std::pair<std::string, std::string>>{
           {"rediss://h:6379", "rediss:// (Redis over TLS) is not supported"},
           {"head+rediss://h:6379", "rediss:// (Redis over TLS) is not supported"},
           {"http://x", "--registry: invalid registry URI http://x"},
           {"redis://h:notaport", "--registry: invalid registry URI redis://h:notaport"},
           {"sqlite:///:memory:", "in-memory SQLite database cannot be shared"}}) {
    EXPECT_PB_ERROR(contract::parse_registry(uri, context, "--registry"), 2, message);
  }
  const auto parsed = contract::parse_registry("~/reg", context, "--registry");
  EXPECT_EQ(parsed.location.path, "/home/u/reg");
  EXPECT_EQ(parsed.text, "~/reg");
}

TEST(ReplicaEnv, ResumeReadsOlderStringCounts) {
  EXPECT_EQ(contract::decode_required_services(R"({"judge":"2"})", true),
            (contract::RequiredServices{{"judge", 2}}));
  EXPECT_PB_ERROR(contract::decode_required_services(R"({"judge":"2"})"), 2, "'judge'");
  EXPECT_PB_ERROR(contract::decode_required_services(R"({"judge":"two"})", true), 2, "'judge'");
}

} // namespace
} // namespace pb::test
