// SPDX-License-Identifier: MIT
// The planner: one replica's whole run as a value (docs/node.md "The plan"), for `node rl`,
// `node sft` and `node single`, and the helpers only it uses.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/replica_plan.hpp>
#include <primebeaker/primerl/environments.hpp>
#include <primebeaker/primerl/v0_9.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace pb::node {
namespace {

namespace fs = std::filesystem;

std::string gpu_list(int start, int count) {
  std::vector<std::string> ids;
  for (int g = start; g < start + count; ++g) {
    ids.push_back(std::to_string(g));
  }
  return text::join(ids, ",");
}

bool is_set(const EnvMap &env, const std::string &name) {
  const auto it = env.find(name);
  return it != env.end() && !it->second.empty();
}

// What every child of this replica starts from, on top of the container's environment, and the
// directories the replica creates before anything else (docs/node.md step 1).
void common_start(ReplicaPlan &plan,
                  const CommonEnv &env,
                  const PlanInputs &inputs,
                  std::vector<fs::path> dirs) {
  plan.rank = env.rank;
  plan.total_nodes = env.total_nodes;
  plan.working_dir = env.working_dir;
  plan.rendezvous_dir = env.rendezvous_dir;
  plan.rendezvous_timeout_seconds = env.rendezvous_timeout_seconds;
  plan.tuning = env.tuning;
  plan.env = cache_defaults(inputs.env, env.scratch, plan.local_tmp);
  const auto effective = [&](const std::string &name) -> std::string {
    const auto it = plan.env.find(name);
    return it != plan.env.end() ? it->second : inputs.env.at(name);
  };
  for (const char *name : {"XDG_CACHE_HOME", "HF_HOME", "TORCH_HOME", "TMPDIR"}) {
    dirs.emplace_back(effective(name));
  }
  dirs.push_back(plan.local_tmp);
  dirs.emplace_back("/tmp/beaker-result");
  std::vector<fs::path> unique;
  for (auto &d : dirs) {
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) {
      unique.push_back(std::move(d));
    }
  }
  plan.steps.push_back(step::MakeDirs{std::move(unique)});
  plan.steps.push_back(step::JoinAttempt{env.rendezvous_dir, env.rendezvous_timeout_seconds});
}

// The resume decision of a multi-node replica: replica 0 decides and publishes it.
step::DecideResume
decide_resume(const CommonEnv &env, std::string replica, int trainer_ranks, bool trainer_only) {
  step::DecideResume s;
  s.request = recovery_request(env, std::move(replica), trainer_ranks, trainer_only);
  s.leader = env.rank == 0;
  return s;
}

void setup_step(ReplicaPlan &plan, const CommonEnv &env) {
  if (!env.setup_command) {
    return;
  }
  step::Run run;
  run.process.name = "setup command";
  run.process.argv = {"bash", "-lc", *env.setup_command};
  run.failure = "the setup command failed";
  run.failure_code = static_cast<int>(ExitCode::tool_failed);
  plan.steps.push_back(std::move(run));
}

void network_hints(ReplicaPlan &plan, const PlanInputs &inputs) {
  step::SetEnv hints;
  if (!is_set(inputs.env, "NCCL_IB_HCA") && inputs.infiniband_hcas) {
    hints.env["NCCL_IB_HCA"] = *inputs.infiniband_hcas;
  }
  if (!is_set(inputs.env, "GLOO_SOCKET_IFNAME") && inputs.socket_ifname) {
    hints.env["GLOO_SOCKET_IFNAME"] = *inputs.socket_ifname;
  }
  if (!hints.env.empty()) {
    plan.steps.push_back(std::move(hints));
  }
}

step::ResolveConfig resolve_config(bool leader,
                                   const nlohmann::json &request,
                                   const fs::path &helper_dir,
                                   const fs::path &config_path,
                                   std::vector<std::string> components) {
  step::ResolveConfig s;
  s.leader = leader;
  s.request_json = request.dump();
  s.config_path = config_path;
  s.script = helper_dir / "primebeaker_prime_rl_config.py";
  s.request_path = helper_dir / "config-request.json";
  s.result_path = helper_dir / "config-result.json";
  s.helper.name = "config helper";
  s.helper.argv = {"python3", s.script.string(), s.request_path.string(), s.result_path.string()};
  s.components = std::move(components);
  return s;
}

// Prime-RL v0.9 reads a runtime copy of the TOML: the decided resume point and the launch's
// run.name are written by the same C++ as a single-node start; the helper only resolves it.
step::WriteRuntimeToml v0_9_runtime_toml_step(const CommonEnv &env, const fs::path &path) {
  step::WriteRuntimeToml s;
  s.config_path = env.config_path;
  s.path = path;
  s.generation = env.generation;
  s.run_name = env.run_name;
  return s;
}

// One torchrun of Prime-RL's trainer (RL or SFT), its ranks' output teed to the node's log.
struct Torchrun {
  std::string name = "trainer";
  proc::Argv placement; // --standalone/--nnodes/--nproc-per-node/--node-rank/--rdzv-*
  fs::path logs;        // <run>/logs/trainer
  std::string module;   // prime_rl.trainer.rl.train
  fs::path config;
  fs::path log;
};
step::Start torchrun_step(const Torchrun &t) {
  step::Start start;
  auto &p = start.process;
  p.name = t.name;
  p.argv = {"torchrun", "--role=trainer"};
  p.argv.insert(p.argv.end(), t.placement.begin(), t.placement.end());
  p.argv.insert(p.argv.end(),
                {"--log-dir=" + (t.logs / "torchrun").string(),
                 "--tee=3",
                 "--redirects=3",
                 "--local-ranks-filter=${runtime.TRAINER_RANKS_FILTER}",
                 "-m",
                 t.module,
                 "@",
                 t.config.string()});
  p.component_env = "trainer";
  p.log = {LogSpec::Mode::tee, t.log, true};
  return start;
}

std::string effective_tmpdir(const ReplicaPlan &plan, const PlanInputs &inputs) {
  const auto it = plan.env.find("TMPDIR");
  return it != plan.env.end() ? it->second : inputs.env.at("TMPDIR");
}

// An empty `node rl` plan for `role`; a joint `run launch` stack is stopped by replica 0 on exit
// (docs/run.md).
ReplicaPlan rl_plan(const RlEnv &env, const Paths &paths, std::string role) {
  ReplicaPlan plan;
  plan.command = "node rl";
  plan.role = std::move(role);
  plan.publishes_complete = plan.role != "inference";
  plan.peer_success_ends = true;
  plan.exit_subject = fmt::format("Prime-RL node {} ({})", env.rank, plan.role);
  plan.local_tmp = paths.local_tmp;
  plan.managed_service_experiment_id = env.managed_service_experiment_id;
  if (env.managed_service_experiment_id && env.rank == 0) {
    plan.on_exit = {"beaker", "experiment", "stop", *env.managed_service_experiment_id};
  }
  return plan;
}

// vllm-router in front of every inference worker (${workers}), on Prime-RL's router port.
step::Start router_step(const Paths &paths) {
  step::Start router;
  router.process.name = "vllm-router";
  router.process.argv = {"vllm-router",
                         "--policy",
                         "${runtime.ROUTER_POLICY}",
                         "--host",
                         "0.0.0.0",
                         "--port",
                         "${runtime.ROUTER_PORT}",
                         "--request-id-headers",
                         "x-session-id",
                         "--prometheus-port",
                         "${runtime.ROUTER_PORT+21000}",
                         "--worker-startup-timeout-secs",
                         "4200",
                         "--worker-urls",
                         "${workers...}"};
  router.process.ports = {"${runtime.ROUTER_PORT}", "${runtime.ROUTER_PORT+21000}"};
  router.process.log = {LogSpec::Mode::append, paths.logs / "inference" / "router.log", false};
  return router;
}

// One single-rank inference server per INFERENCE_TP GPUs of `slice`, each with its own vLLM,
// inductor and RPC directories under the node-local TMPDIR; `parallel_flags` are the
// generation's spelling of "one DP rank, one API server".
step::StartInferenceServers inference_servers_step(const ReplicaPlan &plan,
                                                   const PlanInputs &inputs,
                                                   int rank,
                                                   const Slice &slice,
                                                   const Paths &paths,
                                                   const fs::path &config,
                                                   const proc::Argv &parallel_flags) {
  step::StartInferenceServers servers;
  servers.slice = slice;
  const std::string cache =
      effective_tmpdir(plan, inputs) + fmt::format("/inference/node_{}_rank${{k}}", rank);
  servers.dirs = {cache + "/vllm", cache + "/inductor", cache + "/rpc"};
  auto &p = servers.each;
  p.name = "inference server ${k}";
  p.argv = {
      "inference", "@", config.string(), "--server.host", "0.0.0.0", "--server.port", "${port}"};
  p.argv.insert(p.argv.end(), parallel_flags.begin(), parallel_flags.end());
  p.component_env = "inference";
  p.env = {{"VLLM_CACHE_ROOT", cache + "/vllm"},
           {"TORCHINDUCTOR_CACHE_DIR", cache + "/inductor"},
           {"VLLM_RPC_BASE_PATH", cache + "/rpc"}};
  p.gpus = "${gpus}";
  p.ports = {"${port}"};
  p.log = {LogSpec::Mode::tee,
           paths.logs / "inference" / fmt::format("node_{}_rank${{k}}.log", rank),
           false};
  return servers;
}

// The orchestrator over `config`, its policy behind `base_url` and every worker's admin URL; the
// trainer's host for an NCCL broadcast and its own host for ZMQ rollouts when Prime-RL resolved
// those transports.
step::Start orchestrator_step(const Paths &paths,
                              const fs::path &config,
                              const std::string &base_url,
                              const std::string &broadcast_host,
                              const std::string &transport_host) {
  step::Start start;
  auto &p = start.process;
  p.name = "orchestrator";
  p.argv = {"orchestrator",
            "@",
            config.string(),
            "--model.client.base-url",
            base_url,
            "--model.client.admin-base-url",
            "${admin_urls...}"};
  p.when = {{"runtime.USE_NCCL_BROADCAST", {"--weight_broadcast.host", broadcast_host}},
            {"runtime.USE_ZMQ_TRANSPORT", {"--rollout_transport.host", transport_host}}};
  p.component_env = "orchestrator";
  p.env = {{"WANDB_SHARED_LABEL", "orchestrator"}};
  p.log = {LogSpec::Mode::truncate, paths.logs / "orchestrator.log", false};
  return start;
}

// The run identity every Prime-RL v0.9 process reads (rl.py sets it for its children).
EnvMap v0_9_run_env(const CommonEnv &env) {
  return {{"PRL_RUN_ID", env.run_id},
          {"PRL_RUN_NAME", env.run_name.empty() ? env.run_dir_name : env.run_name},
          {"WANDB_RUN_ID", env.run_id},
          {"WANDB_SHARED_MODE", "1"}};
}

// What differs between the generations in Prime-RL's own placement (its multi_node_rl.sbatch.j2
// at v0.8.0 and at 559b4477).
struct GenerationWiring {
  bool v0_9 = false;
  std::string label;     // "Prime-RL v0.9"
  std::string extension; // of the sub-configs Prime-RL writes: ".json" (v0.9), ".toml"
  // "one DP rank, one API server" in the generation's spelling, for an engine of a group of `dp`
  proc::Argv engine_flags(const std::string &dp) const {
    if (v0_9) {
      return {"--vllm.data-parallel-size",
              dp,
              "--vllm.data-parallel-size-local",
              "1",
              "--vllm.api-server-count",
              "1"};
    }
    return {"--parallel.dp", dp, "--data-parallel-size-local", "1", "--api-server-count", "1"};
  }
};

// Engines that are ranks of one DP group of `group_dp` (expert parallelism across nodes, a
// disaggregated instance): the group size and RPC port for all, and per engine `overrides`, a JSON
// object with its rank and the group head's address (${k} facts), as Prime-RL's
// _launch_rank.sh.j2 passes them: v0.8.0 with --vllm-extra, v0.9 through a `--vllm @ file`.
void dp_group_engines(const GenerationWiring &generation,
                      int group_dp,
                      const std::string &overrides,
                      step::StartInferenceServers &servers) {
  auto &argv = servers.each.argv;
  const auto flags = generation.engine_flags(std::to_string(group_dp));
  argv.erase(argv.end() - static_cast<std::ptrdiff_t>(flags.size()), argv.end());
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (generation.v0_9) {
    const std::string file = servers.dirs.back() + "/vllm-overrides.json";
    argv.insert(
        argv.end(),
        {"--vllm.data-parallel-rpc-port", "${runtime.INFERENCE_DP_RPC_PORT}", "--vllm", "@", file});
    servers.files.emplace_back(file, overrides);
  } else {
    argv.insert(argv.end(),
                {"--data-parallel-rpc-port",
                 "${runtime.INFERENCE_DP_RPC_PORT}",
                 "--vllm-extra",
                 overrides});
  }
}

std::string rank_overrides(int head, int start_rank, const std::string &more = "") {
  return fmt::format(R"({{"data_parallel_address": "${{host.{}}}", "data_parallel_rank": {}{}}})",
                     head,
                     start_rank == 0 ? std::string("${k}") : fmt::format("${{k+{}}}", start_rank),
                     more);
}

// Expert parallelism across nodes (docs/node.md "Prime-RL's placement"): every engine of an
// inference replica is one rank of a DP group rooted on the replica's first node.
void expert_parallel_engines(const RlEnv &env,
                             const GenerationWiring &generation,
                             step::StartInferenceServers &servers) {
  const int engines = env.gpus_per_node / std::max(1, env.inference_tp);
  const int per_replica = std::max(1, env.nodes_per_infer_replica);
  const int head = env.rank / per_replica * per_replica;
  dp_group_engines(generation,
                   per_replica * engines,
                   rank_overrides(head, (env.rank - head) * engines),
                   servers);
}

// The role of inference node `rank` in a disaggregated replica, as Prime-RL's template derives
// it: the first prefill_nodes() nodes of each replica are prefill instances of
// prefill_nodes_per_replica nodes, the rest decode instances; each instance is a DP group rooted
// on its first node.
struct PdRole {
  bool prefill = true;
  int head = 0;       // the node rooting this node's instance
  int group_dp = 1;   // DP ranks of the instance
  int start_rank = 0; // this node's first rank in it
};
PdRole pd_role(const RlEnv &env, int rank, int engines) {
  const int per_replica = std::max(1, env.nodes_per_infer_replica);
  const int base = rank / per_replica * per_replica;
  const auto place = env.disaggregated->place(rank % per_replica);
  PdRole role;
  role.prefill = place.prefill;
  role.head = base + static_cast<int>(place.head);
  role.group_dp = static_cast<int>(place.instance_nodes) * engines;
  role.start_rank = static_cast<int>(place.index) * engines;
  return role;
}

// Every engine's URL in Prime-RL's order (per replica: its prefill nodes' engines, then its
// decode nodes'), as "--prefill"/"--decode" and the URL.
std::vector<std::pair<std::string, std::string>> pd_endpoints(const RlEnv &env, int engines) {
  std::vector<std::pair<std::string, std::string>> out;
  // Node order already is Prime-RL's: replica by replica, prefill nodes first within each.
  for (int node = 0; node < env.num_infer_nodes; ++node) {
    const bool prefill = pd_role(env, node, engines).prefill;
    for (int k = 0; k < engines; ++k) {
      out.emplace_back(prefill ? "--prefill" : "--decode",
                       fmt::format("http://${{host.{}}}:${{runtime.{}{}}}",
                                   node,
                                   prefill ? "PREFILL_PORT" : "DECODE_PORT",
                                   k == 0 ? std::string() : fmt::format("+{}", k)));
    }
  }
  return out;
}

// vllm-router in prefill/decode mode on inference node 0, over every engine.
step::Start pd_router_step(const RlEnv &env, const Paths &paths, int engines) {
  step::Start router = router_step(paths);
  auto &argv = router.process.argv;
  argv.resize(argv.size() - 2); // --worker-urls ${workers...}
  argv.insert(argv.end(), {"--log-level", "debug", "--vllm-pd-disaggregation"});
  for (const auto &[flag, url] : pd_endpoints(env, engines)) {
    argv.push_back(flag);
    argv.push_back(url);
  }
  return router;
}

// llm-d's file-discovery endpoints (Prime-RL's templates/llmd/endpoints.yaml.j2): one per engine,
// at each node's published address, which is IPv4 as the file discovery requires
// (local_address()). Disaggregated: every prefill node's engines, then every decode node's,
// reached through that node's pd-sidecar.
std::string llm_d_endpoints(const RlEnv &env, int engines) {
  std::string out = "endpoints:\n";
  const auto add =
      [&](const std::string &name, int node, const char *port, int k, const char *role) {
        out += fmt::format("  - name: {}\n"
                           "    address: ${{host.{}}}\n"
                           "    port: \"${{runtime.{}{}}}\"\n"
                           "    namespace: default\n"
                           "    labels:\n"
                           "      llm-d.ai/pool: prime-rl\n",
                           name,
                           node,
                           port,
                           k == 0 ? std::string() : fmt::format("+{}", k));
        if (role != nullptr) {
          out += fmt::format("      llm-d.ai/role: {}\n", role);
        }
      };
  if (!env.disaggregated) {
    for (int node = 0; node < env.num_infer_nodes; ++node) {
      for (int k = 0; k < engines; ++k) {
        add(fmt::format("backend-{}-rank-{}", node, k), node, "BACKEND_PORT", k, nullptr);
      }
    }
    return out;
  }
  for (const bool prefill : {true, false}) {
    const char *role = prefill ? "prefill" : "decode";
    int index = 0;
    for (int node = 0; node < env.num_infer_nodes; ++node) {
      if (pd_role(env, node, engines).prefill != prefill) {
        continue;
      }
      for (int k = 0; k < engines; ++k) {
        add(fmt::format("{}-{}-rank-{}", role, index, k),
            node,
            prefill ? "PREFILL_PORT" : "DECODE_SIDECAR_PORT",
            k,
            role);
      }
      ++index;
    }
  }
  return out;
}

// Envoy in front of llm-d's endpoint picker (Prime-RL's templates/llmd/envoy.yaml.j2): every
// /v1/ and /inference/v1/ request asks the picker (gRPC on 127.0.0.1:9002) for its engine and goes
// to the address the picker names; no timeouts, and connection limits far above any rollout
// concurrency (Envoy's default of about 1024 overflows into 500s).
std::string llm_d_envoy_config() {
  const std::string limits = R"(      circuit_breakers:
        thresholds:
          - { priority: DEFAULT, max_connections: 100000, max_pending_requests: 100000, max_requests: 100000, max_retries: 1000 }
          - { priority: HIGH, max_connections: 100000, max_pending_requests: 100000, max_requests: 100000, max_retries: 1000 }
)";
  return R"(admin:
  address: { socket_address: { address: 127.0.0.1, port_value: 9901 } }
static_resources:
  listeners:
    - name: prime_rl
      address: { socket_address: { address: 0.0.0.0, port_value: ${runtime.ROUTER_PORT} } }
      filter_chains:
        - filters:
            - name: envoy.filters.network.http_connection_manager
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                stat_prefix: prime_rl
                codec_type: AUTO
                stream_idle_timeout: 0s
                request_timeout: 0s
                route_config:
                  virtual_hosts:
                    - name: prime_rl
                      domains: ["*"]
                      routes:
                        - { match: { prefix: "/v1/" }, route: { cluster: backend_cluster, timeout: 0s, idle_timeout: 86400s } }
                        - { match: { prefix: "/inference/v1/" }, route: { cluster: backend_cluster, timeout: 0s, idle_timeout: 86400s } }
                http_filters:
                  - name: envoy.filters.http.ext_proc
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor
                      grpc_service: { envoy_grpc: { cluster_name: epp_cluster }, timeout: 10s }
                      processing_mode:
                        request_header_mode: SEND
                        response_header_mode: SEND
                        request_body_mode: FULL_DUPLEX_STREAMED
                        response_body_mode: FULL_DUPLEX_STREAMED
                        request_trailer_mode: SEND
                        response_trailer_mode: SEND
                      message_timeout: 1000s
                  - name: envoy.filters.http.router
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
                      suppress_envoy_headers: true
  clusters:
    - name: backend_cluster
      type: ORIGINAL_DST
      lb_policy: CLUSTER_PROVIDED
      original_dst_lb_config: { use_http_header: true, http_header_name: x-gateway-destination-endpoint }
      connect_timeout: 5s
)" + limits +
         R"(    - name: epp_cluster
      type: STRICT_DNS
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config: { http2_protocol_options: {} }
      load_assignment:
        cluster_name: epp_cluster
        endpoints:
          - lb_endpoints:
              - endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 9002 } } }
      connect_timeout: 5s
)" + limits;
}

// llm-d's router on inference node 0 in place of vllm-router (Prime-RL's _launch_router.sh.j2):
// its three configs under logs/inference/llmd (the picker's, rendered by the config helper from
// the TOML's scorers), the endpoint picker (gRPC 9002; health on 9013, clear of Mooncake's
// metrics on 9003) and Envoy on Prime-RL's router port.
fs::path llm_d_dir(const Paths &paths) {
  return paths.logs / "inference" / "llmd";
}

void llm_d_router_steps(const RlEnv &env, const Paths &paths, int engines, ReplicaPlan &plan) {
  const fs::path dir = llm_d_dir(paths);
  const fs::path log = paths.logs / "inference" / "router.log";
  plan.steps.push_back(step::WriteFile{(dir / "epp.yaml").string(), "${runtime.LLMD_EPP_CONFIG}"});
  plan.steps.push_back(
      step::WriteFile{(dir / "endpoints.yaml").string(), llm_d_endpoints(env, engines)});
  plan.steps.push_back(step::WriteFile{(dir / "envoy.yaml").string(), llm_d_envoy_config()});
  step::Start epp;
  epp.process.name = "llm-d epp";
  epp.process.argv = {"epp",
                      "--pool-name",
                      "prime-rl",
                      "--pool-namespace",
                      "beaker",
                      "--config-file",
                      (dir / "epp.yaml").string(),
                      "--grpc-port",
                      "9002",
                      "--grpc-health-port",
                      "9013",
                      "--metrics-port",
                      "9090",
                      "--secure-serving=false",
                      "--metrics-endpoint-auth=false",
                      "--tracing=false"};
  epp.process.component_env = "inference";
  epp.process.ports = {"9002", "9013", "9090"};
  epp.process.log = {LogSpec::Mode::append, log, false};
  plan.steps.push_back(std::move(epp));
  step::Start envoy;
  envoy.process.name = "envoy";
  envoy.process.argv = {"envoy", "-c", (dir / "envoy.yaml").string()};
  envoy.process.ports = {"${runtime.ROUTER_PORT}", "9901"};
  envoy.process.log = {LogSpec::Mode::append, log, false};
  plan.steps.push_back(std::move(envoy));
}

// llm-d's pd-sidecar on every decode node: the picker sends decode requests to it (sidecar port +
// k), and it has the prefill done remotely before passing them to engine k (decode port + k).
step::Start pd_sidecar_step(int rank, const Paths &paths, int engines) {
  step::Start sidecar;
  auto &p = sidecar.process;
  p.name = "pd-sidecar";
  p.argv = {"pd-sidecar",
            "--port",
            "${runtime.DECODE_SIDECAR_PORT}",
            "--vllm-port",
            "${runtime.DECODE_PORT}",
            "--kv-connector",
            "nixlv2",
            "--secure-proxy=false",
            "--enable-ssrf-protection=false",
            "--inference-pool",
            "prime-rl",
            "--data-parallel-size",
            std::to_string(engines)};
  p.component_env = "decode";
  for (int k = 0; k < engines; ++k) {
    p.ports.push_back(k == 0 ? std::string("${runtime.DECODE_SIDECAR_PORT}")
                             : fmt::format("${{runtime.DECODE_SIDECAR_PORT+{}}}", k));
  }
  p.log = {
      LogSpec::Mode::append, paths.logs / "inference" / fmt::format("sidecar_{}.log", rank), false};
  return sidecar;
}

// Mooncake's shared KV store (Prime-RL's _mooncake_store.sh.j2) on an inference node: node 0 runs
// the master and its metadata server, every node waits for both, contributes its DRAM segment
// through a client, waits for that client, and writes the config its engines read
// (MOONCAKE_CONFIG_PATH). The sizes, devices and disk tier are the TOML's, resolved by the config
// helper; its environment (the disk tier's MOONCAKE_OFFLOAD_*) is the inference one.
void mooncake_steps(const RlEnv &env, const PlanInputs &inputs, ReplicaPlan &plan) {
  const auto [master_port, metadata_port, client_port] = env.tuning.mooncake_ports;
  const fs::path dir = env.run_dir() / "mooncake" / fmt::format("node_{}", env.rank);
  const std::string master = fmt::format("${{host.0}}:{}", master_port);
  const std::string metadata = fmt::format("http://${{host.0}}:{}/metadata", metadata_port);
  plan.steps.push_back(step::MakeDirs{{dir, "${runtime.MOONCAKE_DISK_PATH}"}});
  plan.steps.push_back(step::SetEnv{
      {{"PYTHONHASHSEED", "0"}, {"MOONCAKE_CONFIG_PATH", (dir / "config.json").string()}}});
  if (env.rank == 0) {
    step::Start start;
    auto &p = start.process;
    p.name = "mooncake master";
    // A lease of an hour, not 5 s: decode must find the blocks prefill stored.
    p.argv = {"mooncake_master",
              fmt::format("-rpc_port={}", master_port),
              "-enable_http_metadata_server",
              "-http_metadata_server_host=0.0.0.0",
              fmt::format("-http_metadata_server_port={}", metadata_port),
              "-default_kv_lease_ttl=3600000"};
    p.when = {{"runtime.MOONCAKE_DISK",
               {"-enable_offload=true", "-root_fs_dir=${runtime.MOONCAKE_DISK_PATH}"}}};
    p.component_env = "inference";
    p.ports = {std::to_string(master_port), std::to_string(metadata_port), "9003"};
    p.log = {LogSpec::Mode::truncate, dir / "master.log", false};
    plan.steps.push_back(std::move(start));
  }
  const int head_wait = env.tuning.port_wait_seconds.value_or(120);
  const int client_wait = env.tuning.port_wait_seconds.value_or(60);
  plan.steps.push_back(step::WaitPort{"Mooncake's master", "${host.0}", master_port, head_wait});
  plan.steps.push_back(
      step::WaitPort{"Mooncake's metadata server", "${host.0}", metadata_port, head_wait});
  step::Start client;
  auto &p = client.process;
  p.name = "mooncake client";
  p.argv = {"mooncake_client",
            "-host=" + inputs.address,
            fmt::format("-port={}", client_port),
            "-master_server_address=" + master,
            "-metadata_server=" + metadata,
            "-protocol=rdma",
            "-global_segment_size=${runtime.MOONCAKE_SEGMENT_BYTES}"};
  p.when = {{"runtime.MOONCAKE_DEVICES", {"-device_names=${runtime.MOONCAKE_DEVICE_NAME}"}},
            {"runtime.MOONCAKE_DISK", {"-enable_offload=true"}}};
  p.component_env = "inference";
  p.ports = {std::to_string(client_port)};
  p.log = {LogSpec::Mode::truncate, dir / "client.log", false};
  plan.steps.push_back(std::move(client));
  plan.steps.push_back(
      step::WaitPort{"this node's Mooncake client", inputs.address, client_port, client_wait});
  // The device list comes as a JSON string and the disk tier as a JSON boolean, from the helper.
  const std::string text = fmt::format(
      R"({{"mode":"standalone-store","global_segment_size":0,"local_buffer_size":4294967296,)"
      R"("protocol":"rdma","device_name":${{runtime.MOONCAKE_DEVICE_NAME_JSON}},)"
      R"("master_server_address":"{}","metadata_server":"{}",)"
      R"("enable_offload":${{runtime.MOONCAKE_ENABLE_OFFLOAD}}}})"
      "\n",
      master,
      metadata);
  plan.steps.push_back(step::WriteFile{(dir / "config.json").string(), text});
}

// The engines of a prefill or decode node (Prime-RL's multi_node_rl.sbatch.j2, disaggregated
// branch): ranks of their instance's DP group on the role's port, each with its NIXL side channel
// (5600 + k) on this host over the RDMA ports UCX can open; prefill with DeepEP's
// high-throughput all2all, decode with its low-latency one and decode-only CUDA graphs, plus the
// TOML's per-role overrides and environment (the config helper's ${runtime.*_VLLM_EXTRA}).
void disaggregated_engines(const PdRole &role,
                           const PlanInputs &inputs,
                           const GenerationWiring &generation,
                           step::StartInferenceServers &servers) {
  const std::string more =
      role.prefill ? R"(, "all2all_backend": "deepep_high_throughput"${runtime.PREFILL_VLLM_EXTRA})"
                   : R"(, "all2all_backend": "deepep_low_latency", "compilation_config": )"
                     R"({"cudagraph_mode": "FULL_DECODE_ONLY"}${runtime.DECODE_VLLM_EXTRA})";
  dp_group_engines(
      generation, role.group_dp, rank_overrides(role.head, role.start_rank, more), servers);
  servers.port_fact = role.prefill ? "runtime.PREFILL_PORT" : "runtime.DECODE_PORT";
  auto &p = servers.each;
  p.component_env = role.prefill ? "prefill" : "decode";
  p.env["VLLM_NIXL_SIDE_CHANNEL_HOST"] = inputs.address;
  p.env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = "${k+5600}";
  if (!is_set(inputs.env, "UCX_NET_DEVICES")) {
    // Prime-RL pins decode nodes to the first HCA port; prefill nodes use every active one.
    p.env["UCX_NET_DEVICES"] =
        role.prefill ? inputs.rdma_ports.value_or("all") : std::string("mlx5_0:1");
  }
}

// What the config helper needs to know of the placement's router and KV offload: where llm-d's
// endpoints file is, and the offload the replicas were placed for (it refuses a TOML edited since).
void serving_request(const RlEnv &env, const Paths &paths, nlohmann::json &request) {
  if (env.router == primerl::Router::llm_d) {
    request["llmd_endpoints"] = (llm_d_dir(paths) / "endpoints.yaml").string();
  }
  if (env.kv_offload != primerl::KvOffload::none) {
    request["kv_cache_offload"] =
        env.kv_offload == primerl::KvOffload::mooncake ? "mooncake" : "native";
  }
}

// Multi-node RL in Prime-RL's own placement, wired as its multi_node_rl.sbatch.j2 wires a SLURM
// job (docs/node.md "Prime-RL's placement"), for v0.9 and for v0.8.0 TOMLs the mixed layout
// cannot place: replicas [0, I) run inference (vLLM engines, one per INFERENCE_TP GPUs, with
// vllm-router on replica 0), replicas [I, I+T) the trainer (one torchrun per node, rendezvous
// on replica I port 29500); the orchestrator and one env server per source run on replica I, or
// on I-1 with deployment.orchestrator_on_inference.
ReplicaPlan plan_rl_prime_rl(const RlEnv &env, const PlanInputs &inputs) {
  const GenerationWiring generation =
      env.v0_9() ? GenerationWiring{true, "Prime-RL v0.9", ".json"}
                 : GenerationWiring{false, "Prime-RL v0.8.0, Prime-RL's placement", ".toml"};
  const Paths paths = rl_paths(env);
  const int infer_nodes = env.num_infer_nodes;
  const bool inference = env.rank < infer_nodes;
  const bool orchestrator = env.rank == env.orchestrator_replica && infer_nodes > 0;
  const std::string master = fmt::format("${{host.{}}}", infer_nodes);
  const std::string orchestrator_host = fmt::format("${{host.{}}}", env.orchestrator_replica);
  // v0.9's ZMQ transport binds in the orchestrator; v0.8.0's on trainer rank 0 (5555, and
  // 5556/5557 for the other trainer nodes), so both sides address the first trainer host.
  const std::string transport_host = generation.v0_9 ? orchestrator_host : master;
  const int engines = env.inference_tp > 0 ? env.gpus_per_node / env.inference_tp : 0;
  const auto config = [&](const std::string &name) {
    return paths.config_dir / (name + generation.extension);
  };
  const std::optional<PdRole> pd = inference && env.disaggregated
                                       ? std::optional(pd_role(env, env.rank, engines))
                                       : std::nullopt;
  ReplicaPlan plan = rl_plan(env,
                             paths,
                             !inference ? "trainer"
                             : pd       ? (pd->prefill ? "prefill" : "decode")
                                        : "inference");
  plan.publishes_complete = !inference;
  plan.summary = fmt::format("rank={} role={}{} GPUs={} host={} ({})",
                             env.rank,
                             plan.role,
                             orchestrator ? "+orchestrator" : "",
                             gpu_range(Slice{0, env.gpus_per_node}),
                             inputs.address,
                             generation.label);
  std::vector<fs::path> dirs = {
      paths.config_dir, paths.logs / "inference", paths.logs / "trainer", env.run_dir()};
  if (orchestrator) {
    for (const auto &server : env.env_servers) {
      dirs.push_back((paths.logs / "envs" / server).parent_path());
    }
  }
  common_start(plan, env, inputs, dirs);
  plan.steps.push_back(
      decide_resume(env, "node rl", env.num_train_nodes * env.gpus_per_node, false));
  setup_step(plan, env);
  const bool llm_d = env.router == primerl::Router::llm_d;
  const bool mooncake = env.kv_offload == primerl::KvOffload::mooncake;
  if (llm_d && inference) {
    // llm-d's file discovery takes IPv4 addresses only, and endpoints.yaml names each node by
    // the address it publishes.
    in_addr parsed{};
    if (::inet_pton(AF_INET, inputs.address.c_str(), &parsed) != 1) {
      throw usage_error(fmt::format("llm-d's endpoints need each inference node's IPv4 address, "
                                    "and this node publishes '{}' (PRIMEBEAKER_NODE_HOST, or the "
                                    "host name when it has no IPv4 address)",
                                    inputs.address));
    }
  }
  std::vector<std::string> programs;
  std::vector<std::string> image_programs; // what only an image built for the shape holds
  if (inference) {
    programs.emplace_back("inference");
    if (env.rank == 0) {
      if (llm_d) {
        image_programs.insert(image_programs.end(), {"epp", "envoy"});
      } else {
        programs.emplace_back("vllm-router");
      }
    }
    if (llm_d && pd && !pd->prefill) {
      image_programs.emplace_back("pd-sidecar");
    }
    if (mooncake) {
      if (env.rank == 0) {
        image_programs.emplace_back("mooncake_master");
      }
      image_programs.emplace_back("mooncake_client");
    }
  } else {
    programs.emplace_back("torchrun");
  }
  if (orchestrator) {
    programs.emplace_back("orchestrator");
    if (!env.env_servers.empty()) {
      programs.emplace_back("env-server");
    }
  }
  if (env.rank == 0) {
    programs.emplace_back("python3");
    if (env.managed_service_experiment_id) {
      programs.emplace_back("beaker");
    }
  }
  plan.steps.push_back(step::RequirePrograms{programs});
  if (!image_programs.empty()) {
    plan.steps.push_back(step::RequirePrograms{
        image_programs,
        fmt::format("cannot find {} on PATH: the image must hold {} (Prime-RL's "
                    "scripts/install_llmd.sh builds them into third_party/llmd/bin; put that "
                    "on the image's PATH)",
                    text::join(image_programs, ", "),
                    llm_d && mooncake ? "llm-d's programs and Mooncake's"
                    : llm_d           ? "llm-d's programs"
                                      : "Mooncake's programs")});
  }
  step::RaiseOpenFiles limits;
  limits.unlimited_locked_memory = inference && env.kv_offload != primerl::KvOffload::none;
  plan.steps.push_back(limits);

  const int timeout = env.rendezvous_timeout_seconds;
  plan.steps.push_back(step::Publish{fmt::format("host.{}", env.rank), inputs.address + "\n"});
  // Trainer replicas publish an empty GPU layout: the worker list is the inference replicas'.
  plan.steps.push_back(
      step::Publish{fmt::format("layout.{}", env.rank),
                    layout_text(inference ? Slice{0, env.gpus_per_node} : Slice{0, 0}) + "\n"});
  for (int n = 0; n < env.total_nodes; ++n) {
    plan.steps.push_back(
        step::WaitFor{fmt::format("host.{}", n), fmt::format("host.{}", n), timeout});
    plan.steps.push_back(
        step::WaitFor{fmt::format("layout.{}", n), fmt::format("layout.{}", n), timeout});
  }
  // The run identity: v0.9's PRL_RUN_ID; v0.8.0's shared W&B run (WANDB_SHARED_RUN_ID is the
  // contract's, set on every replica).
  EnvMap identity = generation.v0_9 ? v0_9_run_env(env) : EnvMap{{"WANDB_SHARED_MODE", "1"}};
  identity["MASTER_ADDR"] = master;
  identity["MASTER_PORT"] = std::to_string(primerl::v0_9::k_rendezvous_port);
  plan.steps.push_back(step::SetEnv{identity});
  if (generation.v0_9) {
    const fs::path runtime_toml = paths.local_tmp / "prime-rl.toml";
    if (env.rank == 0) {
      plan.steps.push_back(v0_9_runtime_toml_step(env, runtime_toml));
    }
    nlohmann::json request = {{"kind", "rl_v0_9"},
                              {"config", runtime_toml.string()},
                              {"config_dir", paths.config_dir.string()},
                              {"run_dir", env.run_dir().string()}};
    serving_request(env, paths, request);
    plan.steps.push_back(resolve_config(env.rank == 0,
                                        request,
                                        paths.local_tmp,
                                        env.config_path,
                                        {"trainer", "orchestrator", "inference"}));
  } else {
    // The helper applies the resume decision and rewrites legacy environment ids (v0.8.0).
    nlohmann::json request = {{"kind", "rl_prime_rl"},
                              {"config", env.config_path.string()},
                              {"config_dir", paths.config_dir.string()},
                              {"environment_modules", primerl::bundled_environment_modules()}};
    serving_request(env, paths, request);
    plan.steps.push_back(resolve_config(env.rank == 0,
                                        request,
                                        paths.local_tmp,
                                        env.config_path,
                                        {"trainer", "orchestrator", "inference"}));
  }
  network_hints(plan, inputs);
  // A disaggregated deployment's endpoints are known from the plan alone (each node's role and
  // port); the others are bound from every inference replica's published layout.
  if (infer_nodes > 0 && !env.disaggregated) {
    plan.steps.push_back(step::BindWorkers{env.total_nodes, infer_nodes * engines});
  }

  if (inference && mooncake) {
    mooncake_steps(env, inputs, plan);
  }
  if (inference && env.rank == 0) {
    if (llm_d) {
      llm_d_router_steps(env, paths, engines, plan);
    } else {
      plan.steps.push_back(env.disaggregated ? pd_router_step(env, paths, engines)
                                             : router_step(paths));
    }
  }
  if (inference && llm_d && pd && !pd->prefill) {
    plan.steps.push_back(pd_sidecar_step(env.rank, paths, engines));
  }
  if (inference) {
    auto servers = inference_servers_step(plan,
                                          inputs,
                                          env.rank,
                                          Slice{0, env.gpus_per_node},
                                          paths,
                                          config("inference"),
                                          generation.engine_flags("1"));
    if (pd) {
      disaggregated_engines(*pd, inputs, generation, servers);
    } else if (env.expert_parallel) {
      expert_parallel_engines(env, generation, servers);
    }
    plan.steps.push_back(std::move(servers));
  } else {
    const int node = env.rank - infer_nodes;
    step::Start trainer = torchrun_step(
        {"trainer",
         {fmt::format("--nnodes={}", env.num_train_nodes),
          fmt::format("--nproc-per-node={}", env.gpus_per_node),
          fmt::format("--node-rank={}", node),
          fmt::format("--rdzv-endpoint={}:{}", master, primerl::v0_9::k_rendezvous_port),
          "--rdzv-id=job_" + env.launch_id},
         paths.logs / "trainer",
         "prime_rl.trainer.rl.train",
         config("trainer"),
         paths.logs / "trainer" / fmt::format("node_{}.log", node)});
    auto &p = trainer.process;
    p.when = {{"runtime.USE_ZMQ_TRANSPORT", {"--rollout_transport.host", transport_host}}};
    p.env = {{"WANDB_SHARED_LABEL", "trainer"}};
    p.gpus = gpu_list(0, env.gpus_per_node);
    if (node == 0) {
      // The NCCL broadcast listens on weight_broadcast.port (29501 by default; glm-5.2: 29502).
      p.ports = {std::to_string(primerl::v0_9::k_rendezvous_port),
                 "${runtime.WEIGHT_BROADCAST_PORT}"};
      if (!generation.v0_9) {
        for (int port = 0; port < 3; ++port) {
          p.ports.push_back(std::to_string(primerl::v0_9::k_zmq_transport_port + port));
        }
      }
    }
    plan.steps.push_back(std::move(trainer));
  }
  std::vector<std::string> awaited;
  if (!inference) {
    awaited.emplace_back("trainer");
  }
  if (orchestrator) {
    int index = 0;
    for (const auto &server : env.env_servers) {
      step::Start start;
      auto &p = start.process;
      p.name = "env server " + server;
      p.argv = {"env-server",
                "@",
                (paths.config_dir / "envs" / (server + generation.extension)).string()};
      p.component_env = "orchestrator";
      p.ports = {std::to_string(primerl::v0_9::k_env_server_base_port + index++)};
      p.log = {LogSpec::Mode::truncate, paths.logs / "envs" / (server + ".log"), false};
      plan.steps.push_back(std::move(start));
    }
    step::Start start = orchestrator_step(paths,
                                          config("orchestrator"),
                                          "http://${host.0}:${runtime.ROUTER_PORT}/v1",
                                          master,
                                          transport_host);
    if (env.disaggregated) {
      // Its admin URLs are every engine's, prefill then decode per replica (Prime-RL's
      // inference_metrics_roles follow that order).
      auto &argv = start.process.argv;
      argv.pop_back(); // ${admin_urls...}
      for (const auto &[flag, url] : pd_endpoints(env, engines)) {
        argv.push_back(url + "/v1");
      }
    }
    if (generation.v0_9) {
      start.process.ports = {std::to_string(primerl::v0_9::k_zmq_transport_port),
                             std::to_string(primerl::v0_9::k_zmq_transport_port + 1)};
    }
    plan.steps.push_back(std::move(start));
    awaited.emplace_back("orchestrator");
  }
  plan.steps.push_back(step::AwaitExit{awaited});
  return plan;
}

} // namespace

std::string role_name(Role role) {
  switch (role) {
  case Role::trainer:
    return "trainer";
  case Role::mixed:
    return "mixed";
  default:
    return "inference";
  }
}

RlPlacement place_rl(const RlEnv &env) {
  RlPlacement p;
  if (env.rank == 0) {
    p.train_gpus = env.trainer_gpu_count;
    if (env.mixed_infer_gpu_count > 0) {
      p.role = Role::mixed;
      p.inference = {env.trainer_gpu_count, env.mixed_infer_gpu_count};
    } else {
      p.role = Role::trainer;
      p.inference = {0, 0};
    }
  } else {
    p.role = Role::inference;
    p.inference = {0, env.gpus_per_node};
  }
  if (p.train_gpus + p.inference.count > env.gpus_per_node) {
    throw usage_error(fmt::format("GPU partition exceeds node: {} trainer + {} inference GPUs > "
                                  "GPUS_PER_NODE={}",
                                  p.train_gpus,
                                  p.inference.count,
                                  env.gpus_per_node));
  }
  return p;
}

Paths rl_paths(const RlEnv &env) {
  Paths p;
  p.config_dir = env.run_dir() / "configs";
  p.logs = env.run_dir() / "logs";
  p.local_tmp =
      env.tuning.local_root / fmt::format("primebeaker-rl-{}-{}", env.launch_id, env.rank);
  return p;
}

Paths sft_paths(const SftEnv &env) {
  Paths p;
  p.config_dir = env.run_dir() / "configs";
  p.logs = env.run_dir() / "logs";
  p.local_tmp =
      env.tuning.local_root / fmt::format("primebeaker-sft-{}-{}", env.launch_id, env.rank);
  return p;
}

EnvMap cache_defaults(const EnvMap &env,
                      const std::filesystem::path &scratch,
                      const std::filesystem::path &local_tmp) {
  EnvMap out;
  auto value = [&](const std::string &name) -> std::string {
    if (const auto it = out.find(name); it != out.end()) {
      return it->second;
    }
    return env.at(name);
  };
  auto set_default = [&](const std::string &name, const std::string &fallback) {
    const auto it = env.find(name);
    if (it == env.end() || it->second.empty()) {
      out[name] = fallback;
    }
  };
  set_default("XDG_CACHE_HOME", (scratch / ".cache").string());
  set_default("HF_HOME", value("XDG_CACHE_HOME") + "/huggingface");
  set_default("TORCH_HOME", value("XDG_CACHE_HOME") + "/torch");
  set_default("TORCHINDUCTOR_CACHE_DIR", value("TORCH_HOME") + "/inductor");
  set_default("TRITON_CACHE_DIR", value("XDG_CACHE_HOME") + "/triton");
  set_default("VLLM_CACHE_ROOT", value("XDG_CACHE_HOME") + "/vllm");
  set_default("TMPDIR", local_tmp.string());
  return out;
}

proc::Argv local_gateway_argv(const RlEnv &env) {
  return {"python3",
          "-m",
          "literegistry.gateway",
          "--registry",
          env.registry,
          "--port",
          std::to_string(env.gateway_port),
          "--workers",
          std::to_string(env.gateway_workers),
          "--timeout",
          "800",
          "--judge-timeout",
          "800"};
}

proc::Argv
wait_redis_argv(const std::string &self, const RlEnv &env, const std::filesystem::path &stop_file) {
  return {self,
          "registry",
          "wait-redis",
          "--registry",
          env.registry,
          "--timeout",
          std::to_string(env.rendezvous_timeout_seconds),
          "--stop-file",
          stop_file.string()};
}

proc::Argv wait_services_argv(const std::string &self,
                              const RlEnv &env,
                              const std::filesystem::path &stop_file) {
  proc::Argv argv = {self, "registry", "wait-services", "--registry", env.registry};
  for (const auto &[name, count] : env.required_services) {
    argv.insert(argv.end(), {"--require", fmt::format("{}={}", name, count)});
  }
  argv.insert(argv.end(),
              {"--timeout",
               std::to_string(env.rendezvous_timeout_seconds),
               "--stop-file",
               stop_file.string()});
  return argv;
}

proc::Argv probe_gateway_argv(const std::string &self, const RlEnv &env) {
  proc::Argv argv = {self,
                     "registry",
                     "probe-gateway",
                     "--url",
                     fmt::format("http://127.0.0.1:{}", env.gateway_port)};
  for (const auto &path : env.local_search_model_paths) {
    argv.insert(argv.end(), {"--model-path", path});
  }
  argv.insert(argv.end(),
              {"--required-path",
               "/judge",
               "--timeout",
               fmt::format("{}", env.tuning.gateway_probe_timeout_seconds)});
  return argv;
}

RecoveryRequest
recovery_request(const CommonEnv &env, std::string replica, int trainer_ranks, bool trainer_only) {
  RecoveryRequest r;
  r.replica = std::move(replica);
  r.working_dir = env.working_dir;
  r.output_dir = env.output_dir;
  r.config_path = env.config_path;
  r.trainer_ranks = trainer_ranks;
  r.trainer_only = trainer_only;
  r.generation = env.generation;
  r.run_dir_name = env.run_dir_name;
  r.run_id = env.identity.run_id;
  r.launch_key = env.identity.launch_key;
  r.job_id = env.identity.job_id;
  r.experiment_id = env.identity.experiment_id;
  r.policy = {env.max_recoveries, env.max_restarts_on_errors};
  return r;
}

ReplicaPlan plan_rl(const RlEnv &env, const PlanInputs &inputs) {
  if (env.prime_rl_placement) {
    return plan_rl_prime_rl(env, inputs);
  }
  const RlPlacement place = place_rl(env);
  const Paths paths = rl_paths(env);
  const bool leader = place.role != Role::inference;
  ReplicaPlan plan = rl_plan(env, paths, role_name(place.role));
  plan.summary = fmt::format("rank={} role={} train GPUs={} inference GPUs={} host={}",
                             env.rank,
                             plan.role,
                             gpu_range(Slice{0, place.train_gpus}),
                             gpu_range(place.inference),
                             inputs.address);
  if (env.registry != env.registry_display && env.registry.find('@') != std::string::npos) {
    plan.redact.emplace_back(env.registry, env.registry_display);
  }
  common_start(
      plan,
      env,
      inputs,
      {paths.config_dir, paths.logs / "inference", paths.logs / "trainer", env.output_dir});
  plan.steps.push_back(decide_resume(env, "node rl", env.trainer_gpu_count, false));
  setup_step(plan, env);
  std::vector<std::string> programs = {"inference"};
  if (leader) {
    programs = {"torchrun", "orchestrator", "vllm-router", "python3"};
    if (place.inference.count > 0) {
      programs.emplace_back("inference");
    }
    if (env.managed_service_experiment_id) {
      programs.emplace_back("beaker");
    }
  }
  plan.steps.push_back(step::RequirePrograms{programs});
  plan.steps.push_back(step::RaiseOpenFiles{});

  const fs::path stop_file = fs::path("${attempt_dir}") / "shutdown.requested";
  const int timeout = env.rendezvous_timeout_seconds;
  {
    step::Run barrier;
    barrier.process.name = "registry barrier";
    barrier.process.argv = wait_redis_argv(inputs.self, env, stop_file);
    barrier.failure = "the registry barrier failed";
    barrier.registry_step = true;
    plan.steps.push_back(std::move(barrier));
  }
  plan.steps.push_back(step::Publish{fmt::format("host.{}", env.rank), inputs.address + "\n"});
  plan.steps.push_back(
      step::Publish{fmt::format("layout.{}", env.rank), layout_text(place.inference) + "\n"});
  for (int n = 0; n < env.total_nodes; ++n) {
    plan.steps.push_back(
        step::WaitFor{fmt::format("host.{}", n), fmt::format("host.{}", n), timeout});
    plan.steps.push_back(
        step::WaitFor{fmt::format("layout.{}", n), fmt::format("layout.{}", n), timeout});
  }
  plan.steps.push_back(step::SetEnv{{{"MASTER_ADDR", "${host.0}"}}});
  {
    // The helper rewrites legacy environment ids to these bundled modules (v0.8.0).
    const nlohmann::json request = {
        {"kind", "rl"},
        {"config", env.config_path.string()},
        {"config_dir", paths.config_dir.string()},
        {"environment_modules", primerl::bundled_environment_modules()}};
    plan.steps.push_back(resolve_config(leader,
                                        request,
                                        paths.local_tmp,
                                        env.config_path,
                                        {"trainer", "orchestrator", "inference"}));
  }
  network_hints(plan, inputs);
  plan.steps.push_back(step::BindWorkers{env.total_nodes, env.total_infer_ranks});

  if (leader) {
    plan.steps.push_back(step::Publish{
        "router.url", fmt::format("http://{}:${{runtime.ROUTER_PORT}}/v1\n", inputs.address)});
    plan.steps.push_back(step::Publish{"admin.urls", "${admin_urls}\n"});
    plan.steps.push_back(router_step(paths));
  }
  if (place.inference.count > 0) {
    plan.steps.push_back(inference_servers_step(
        plan,
        inputs,
        env.rank,
        place.inference,
        paths,
        paths.config_dir / "inference.toml",
        {"--parallel.dp", "1", "--data-parallel-size-local", "1", "--api-server-count", "1"}));
  }
  if (!leader) {
    plan.steps.push_back(step::AwaitExit{});
    return plan;
  }

  const fs::path gateway_log = env.output_dir / "literegistry-gateway.log";
  {
    step::Start gateway;
    gateway.process.name = "gateway";
    gateway.process.argv = local_gateway_argv(env);
    gateway.process.ports = {std::to_string(env.gateway_port)};
    gateway.process.log = {LogSpec::Mode::truncate, gateway_log, false};
    plan.steps.push_back(std::move(gateway));
  }
  plan.steps.push_back(step::Pause{env.tuning.gateway_settle_seconds});
  if (!env.required_services.empty()) {
    step::Run barrier;
    barrier.process.name = "required-service barrier";
    barrier.process.argv = wait_services_argv(inputs.self, env, stop_file);
    barrier.failure = "the required-service barrier failed";
    barrier.registry_step = true;
    plan.steps.push_back(std::move(barrier));
  }
  {
    step::Probe probe;
    probe.process.name = "gateway probe";
    probe.process.argv = probe_gateway_argv(inputs.self, env);
    probe.attempts = env.tuning.gateway_probe_attempts;
    probe.interval_seconds = env.tuning.gateway_probe_interval_seconds;
    probe.failure = fmt::format("gateway failed readiness after {} attempts", probe.attempts);
    probe.hint = fmt::format(" (log: {})", gateway_log.string());
    plan.steps.push_back(std::move(probe));
  }
  plan.steps.push_back(step::WaitFor{"router.url", "router_url", timeout});
  plan.steps.push_back(step::WaitFor{"admin.urls", "admin_urls", timeout});
  {
    step::Start trainer = torchrun_step({"trainer",
                                         {"--standalone",
                                          "--nnodes=1",
                                          fmt::format("--nproc-per-node={}", place.train_gpus),
                                          "--node-rank=0"},
                                         paths.logs / "trainer",
                                         "prime_rl.trainer.rl.train",
                                         paths.config_dir / "trainer.toml",
                                         paths.logs / "trainer" / "node_0.log"});
    auto &p = trainer.process;
    p.when = {{"runtime.USE_ZMQ_TRANSPORT", {"--rollout_transport.host", "${host.0}"}}};
    p.env = {{"WANDB_SHARED_LABEL", "trainer"}};
    p.gpus = gpu_list(0, place.train_gpus);
    plan.steps.push_back(std::move(trainer));
  }
  plan.steps.push_back(orchestrator_step(
      paths, paths.config_dir / "orchestrator.toml", "${router_url}", "${host.0}", "${host.0}"));
  plan.steps.push_back(step::AwaitExit{{"trainer", "orchestrator"}});
  return plan;
}

ReplicaPlan plan_sft(const SftEnv &env, const PlanInputs &inputs) {
  const Paths paths = sft_paths(env);
  ReplicaPlan plan;
  plan.command = "node sft";
  plan.role = "sft";
  plan.exit_subject = fmt::format("SFT node {}", env.rank);
  plan.local_tmp = paths.local_tmp;
  plan.summary = fmt::format("rank={} role=sft host={}", env.rank, inputs.address);
  common_start(plan, env, inputs, {paths.config_dir, paths.logs / "trainer", env.run_dir()});
  plan.steps.push_back(decide_resume(env, "node sft", env.total_nodes * env.gpus_per_node, true));
  setup_step(plan, env);
  std::vector<std::string> programs = {"torchrun"};
  if (env.rank == 0) {
    programs.emplace_back("python3");
  }
  plan.steps.push_back(step::RequirePrograms{programs});
  plan.steps.push_back(step::RaiseOpenFiles{});
  plan.steps.push_back(step::Publish{fmt::format("host.{}", env.rank), inputs.address + "\n"});
  for (int n = 0; n < env.total_nodes; ++n) {
    plan.steps.push_back(step::WaitFor{
        fmt::format("host.{}", n), fmt::format("host.{}", n), env.rendezvous_timeout_seconds});
  }
  EnvMap master = {{"MASTER_ADDR", "${host.0}"}};
  if (env.v0_9()) {
    master.merge(v0_9_run_env(env));
  }
  plan.steps.push_back(step::SetEnv{master});
  // v0.9 resolves to JSON (sft.json, as its launcher writes), v0.8.0 to TOML.
  const fs::path resolved = paths.config_dir / (env.v0_9() ? "sft.json" : "sft.toml");
  {
    fs::path config = env.config_path;
    if (env.v0_9()) {
      config = paths.local_tmp / "prime-rl.toml";
      if (env.rank == 0) {
        plan.steps.push_back(v0_9_runtime_toml_step(env, config));
      }
    }
    const nlohmann::json request = {{"kind", env.v0_9() ? "sft_v0_9" : "sft"},
                                    {"config", config.string()},
                                    {"output", resolved.string()}};
    plan.steps.push_back(
        resolve_config(env.rank == 0, request, paths.local_tmp, env.config_path, {"trainer"}));
  }
  network_hints(plan, inputs);
  step::Start torchrun =
      torchrun_step({"torchrun",
                     {fmt::format("--nnodes={}", env.total_nodes),
                      fmt::format("--nproc-per-node={}", env.gpus_per_node),
                      fmt::format("--node-rank={}", env.rank),
                      "--rdzv-endpoint=${host.0}:29500",
                      "--rdzv-id=primebeaker_" + env.launch_id},
                     paths.logs / "trainer",
                     "prime_rl.trainer.sft.train",
                     resolved,
                     paths.logs / "trainer" / fmt::format("node_{}.log", env.rank)});
  if (env.rank == 0) {
    torchrun.process.ports = {"29500"};
  }
  plan.steps.push_back(std::move(torchrun));
  plan.steps.push_back(step::AwaitExit{{"torchrun"}});
  return plan;
}

ReplicaPlan plan_single(const SingleEnv &env, const PlanInputs &inputs) {
  const bool rl = env.program == "rl";
  ReplicaPlan plan;
  plan.command = "node single " + env.program;
  plan.role = "single";
  plan.summary = fmt::format("one container, Prime-RL's `{}` supervised", env.program);
  plan.working_dir = env.working_dir;
  plan.tuning = env.tuning;
  plan.total_nodes = 1;
  // The node's cache chain, with TMPDIR on the scratch volume.
  plan.local_tmp = env.scratch / "tmp";
  plan.env = cache_defaults(inputs.env, env.scratch, plan.local_tmp);
  if (env.v0_9()) {
    // Prime-RL v0.9's run identity; a random PRL_RUN_ID per restart would split the W&B run.
    plan.env["PRL_RUN_ID"] = env.run_id;
    plan.env["PRL_RUN_NAME"] = env.run_name.empty() ? env.run_dir_name : env.run_name;
  }
  const auto effective = [&](const std::string &name) -> fs::path {
    const auto it = plan.env.find(name);
    return it != plan.env.end() ? it->second : inputs.env.at(name);
  };
  plan.steps.push_back(step::MakeDirs{{env.result_dir}});
  if (env.setup_command) {
    step::Run run;
    run.process.name = "setup command";
    run.process.argv = {"bash", "-lc", *env.setup_command};
    run.failure = "the setup command (PRIMEBEAKER_SETUP_COMMAND) failed";
    run.failure_code = static_cast<int>(ExitCode::failure);
    plan.steps.push_back(std::move(run));
  }
  plan.steps.push_back(step::RequirePrograms{
      {env.program}, fmt::format("Prime-RL's `{}` command is not on PATH", env.program)});
  plan.steps.push_back(step::MakeDirs{{env.output_dir,
                                       effective("XDG_CACHE_HOME"),
                                       effective("HF_HOME"),
                                       effective("TORCH_HOME"),
                                       effective("TMPDIR")}});
  step::CheckConfig check{env.config_path, {}};
  if (!rl) {
    check.readable_paths = {"data.name", "val.data.name"};
  }
  plan.steps.push_back(std::move(check));
  step::DecideResume decide;
  decide.request = recovery_request(
      env, plan.command, static_cast<int>(std::max<std::int64_t>(1, env.num_gpus)), !rl);
  decide.leader = true;
  decide.publish = false;
  decide.trainer_ranks_from_toml = rl;
  plan.steps.push_back(std::move(decide));
  step::WriteRuntimeToml runtime;
  runtime.config_path = env.config_path;
  runtime.path = env.runtime_toml;
  runtime.rewrite_environment_ids = rl; // v0.8.0's legacy ids -> the bundled modules
  runtime.generation = env.generation;
  runtime.run_name = env.run_name;
  plan.steps.push_back(std::move(runtime));
  step::Start start;
  start.process.name = env.program;
  start.process.argv = {env.program, "@", env.runtime_toml.string()};
  plan.steps.push_back(std::move(start));
  plan.steps.push_back(step::AwaitExit{{env.program}});
  return plan;
}

} // namespace pb::node
