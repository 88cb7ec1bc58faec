// SPDX-License-Identifier: MIT
// node::plan_rl / plan_sft: one replica's whole run as a value (docs/node.md "The plan").
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/replica_plan.hpp>
#include <primebeaker/primerl/v0_9.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

std::string gpu_range(int start, int count) {
  if (count == 0) {
    return "none";
  }
  if (count == 1) {
    return std::to_string(start);
  }
  return fmt::format("{}-{}", start, start + count - 1);
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

step::DecideResume
decide_resume(const CommonEnv &env, std::string replica, int trainer_ranks, bool trainer_only) {
  step::DecideResume s;
  s.replica = std::move(replica);
  s.trainer_ranks = trainer_ranks;
  s.leader = env.rank == 0;
  s.trainer_only = trainer_only;
  s.output_dir = env.output_dir;
  s.config_path = env.config_path;
  s.max_recoveries = env.max_recoveries;
  s.max_restarts_on_errors = env.max_restarts_on_errors;
  s.generation = env.generation;
  s.run_dir_name = env.run_dir_name;
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
                                   const fs::path &config_path) {
  step::ResolveConfig s;
  s.leader = leader;
  s.request_json = request.dump();
  s.config_path = config_path;
  s.script = helper_dir / "primebeaker_prime_rl_config.py";
  s.request_path = helper_dir / "config-request.json";
  s.result_path = helper_dir / "config-result.json";
  s.helper.name = "config helper";
  s.helper.argv = {"python3", s.script.string(), s.request_path.string(), s.result_path.string()};
  return s;
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

// Prime-RL v0.9 multi-node RL, wired as its multi_node_rl.sbatch.j2 wires a SLURM job
// (docs/node.md "Prime-RL v0.9"): replicas [0, I) run inference (vLLM engines, one per
// INFERENCE_TP GPUs, with vllm-router on replica 0), replicas [I, I+T) the trainer (one torchrun
// per node, rendezvous on replica I port 29500); the orchestrator and one env server per source
// run on replica I, or on I-1 with deployment.orchestrator_on_inference.
ReplicaPlan plan_rl_v0_9(const RlEnv &env, const PlanInputs &inputs) {
  const Paths paths = rl_paths(env);
  const int infer_nodes = env.num_infer_nodes;
  const bool inference = env.rank < infer_nodes;
  const bool orchestrator = env.rank == env.orchestrator_replica && infer_nodes > 0;
  const std::string master = fmt::format("${{host.{}}}", infer_nodes);
  const std::string orchestrator_host = fmt::format("${{host.{}}}", env.orchestrator_replica);
  const int engines = env.inference_tp > 0 ? env.gpus_per_node / env.inference_tp : 0;
  ReplicaPlan plan = rl_plan(env, paths, inference ? "inference" : "trainer");
  plan.summary = fmt::format("rank={} role={}{} GPUs={} host={} (Prime-RL v0.9)",
                             env.rank,
                             plan.role,
                             orchestrator ? "+orchestrator" : "",
                             gpu_range(0, env.gpus_per_node),
                             inputs.address);
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
  std::vector<std::string> programs;
  if (inference) {
    programs.emplace_back("inference");
    if (env.rank == 0) {
      programs.emplace_back("vllm-router");
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
  plan.steps.push_back(step::RaiseOpenFiles{});

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
  EnvMap identity = v0_9_run_env(env);
  identity["MASTER_ADDR"] = master;
  identity["MASTER_PORT"] = std::to_string(primerl::v0_9::k_rendezvous_port);
  plan.steps.push_back(step::SetEnv{identity});
  {
    const nlohmann::json request = {{"kind", "rl_v0_9"},
                                    {"config", env.config_path.string()},
                                    {"runtime_toml", (paths.local_tmp / "prime-rl.toml").string()},
                                    {"config_dir", paths.config_dir.string()},
                                    {"run_dir", env.run_dir().string()},
                                    {"run_name", env.run_name}};
    plan.steps.push_back(resolve_config(env.rank == 0, request, paths.local_tmp, env.config_path));
  }
  network_hints(plan, inputs);
  if (infer_nodes > 0) {
    plan.steps.push_back(step::BindWorkers{env.total_nodes, infer_nodes * engines});
  }

  if (inference && env.rank == 0) {
    plan.steps.push_back(router_step(paths));
  }
  if (inference) {
    // v0.9 spells the engine flags as [inference.vllm] keys (#3202).
    plan.steps.push_back(inference_servers_step(plan,
                                                inputs,
                                                env.rank,
                                                Slice{0, env.gpus_per_node},
                                                paths,
                                                paths.config_dir / "inference.json",
                                                {"--vllm.data-parallel-size",
                                                 "1",
                                                 "--vllm.data-parallel-size-local",
                                                 "1",
                                                 "--vllm.api-server-count",
                                                 "1"}));
  } else {
    const int node = env.rank - infer_nodes;
    step::Start trainer;
    auto &p = trainer.process;
    p.name = "trainer";
    p.argv = {"torchrun",
              "--role=trainer",
              fmt::format("--nnodes={}", env.num_train_nodes),
              fmt::format("--nproc-per-node={}", env.gpus_per_node),
              fmt::format("--node-rank={}", node),
              fmt::format("--rdzv-endpoint={}:{}", master, primerl::v0_9::k_rendezvous_port),
              "--rdzv-id=job_" + env.launch_id,
              "--log-dir=" + (paths.logs / "trainer" / "torchrun").string(),
              "--tee=3",
              "--redirects=3",
              "--local-ranks-filter=${runtime.TRAINER_RANKS_FILTER}",
              "-m",
              "prime_rl.trainer.rl.train",
              "@",
              (paths.config_dir / "trainer.json").string()};
    p.when = {{"runtime.USE_ZMQ_TRANSPORT", {"--rollout_transport.host", orchestrator_host}}};
    p.component_env = "trainer";
    p.env = {{"WANDB_SHARED_LABEL", "trainer"}};
    p.gpus = gpu_list(0, env.gpus_per_node);
    if (node == 0) {
      p.ports = {std::to_string(primerl::v0_9::k_rendezvous_port),
                 std::to_string(primerl::v0_9::k_nccl_broadcast_port)};
    }
    p.log = {LogSpec::Mode::tee, paths.logs / "trainer" / fmt::format("node_{}.log", node), true};
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
      p.argv = {"env-server", "@", (paths.config_dir / "envs" / (server + ".json")).string()};
      p.component_env = "orchestrator";
      p.ports = {std::to_string(primerl::v0_9::k_env_server_base_port + index++)};
      p.log = {LogSpec::Mode::truncate, paths.logs / "envs" / (server + ".log"), false};
      plan.steps.push_back(std::move(start));
    }
    step::Start start = orchestrator_step(paths,
                                          paths.config_dir / "orchestrator.json",
                                          "http://${host.0}:${runtime.ROUTER_PORT}/v1",
                                          master,
                                          orchestrator_host);
    start.process.ports = {std::to_string(primerl::v0_9::k_zmq_transport_port),
                           std::to_string(primerl::v0_9::k_zmq_transport_port + 1)};
    plan.steps.push_back(std::move(start));
    awaited.emplace_back("orchestrator");
  }
  plan.steps.push_back(step::AwaitExit{awaited});
  return plan;
}

} // namespace

ReplicaPlan plan_rl(const RlEnv &env, const PlanInputs &inputs) {
  if (env.v0_9()) {
    return plan_rl_v0_9(env, inputs);
  }
  const RlPlacement place = place_rl(env);
  const Paths paths = rl_paths(env);
  const bool leader = place.role != Role::inference;
  ReplicaPlan plan = rl_plan(env, paths, role_name(place.role));
  plan.summary = fmt::format("rank={} role={} train GPUs={} inference GPUs={} host={}",
                             env.rank,
                             plan.role,
                             gpu_range(0, place.train_gpus),
                             gpu_range(place.inference.start, place.inference.count),
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
    const nlohmann::json request = {{"kind", "rl"},
                                    {"config", env.config_path.string()},
                                    {"config_dir", paths.config_dir.string()}};
    plan.steps.push_back(resolve_config(leader, request, paths.local_tmp, env.config_path));
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
    step::Start trainer;
    auto &p = trainer.process;
    p.name = "trainer";
    p.argv = {"torchrun",
              "--role=trainer",
              "--standalone",
              "--nnodes=1",
              fmt::format("--nproc-per-node={}", place.train_gpus),
              "--node-rank=0",
              "--log-dir=" + (paths.logs / "trainer" / "torchrun").string(),
              "--tee=3",
              "--redirects=3",
              "--local-ranks-filter=${runtime.TRAINER_RANKS_FILTER}",
              "-m",
              "prime_rl.trainer.rl.train",
              "@",
              (paths.config_dir / "trainer.toml").string()};
    p.when = {{"runtime.USE_ZMQ_TRANSPORT", {"--rollout_transport.host", "${host.0}"}}};
    p.component_env = "trainer";
    p.env = {{"WANDB_SHARED_LABEL", "trainer"}};
    p.gpus = gpu_list(0, place.train_gpus);
    p.log = {LogSpec::Mode::tee, paths.logs / "trainer" / "node_0.log", true};
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
    nlohmann::json request = {{"kind", env.v0_9() ? "sft_v0_9" : "sft"},
                              {"config", env.config_path.string()},
                              {"output", resolved.string()}};
    if (env.v0_9()) {
      request["runtime_toml"] = (paths.local_tmp / "prime-rl.toml").string();
      request["run_name"] = env.run_name;
    }
    plan.steps.push_back(resolve_config(env.rank == 0, request, paths.local_tmp, env.config_path));
  }
  network_hints(plan, inputs);
  step::Start torchrun;
  auto &p = torchrun.process;
  p.name = "torchrun";
  p.argv = {"torchrun",
            "--role=trainer",
            fmt::format("--nnodes={}", env.total_nodes),
            fmt::format("--nproc-per-node={}", env.gpus_per_node),
            fmt::format("--node-rank={}", env.rank),
            "--rdzv-endpoint=${host.0}:29500",
            "--rdzv-id=primebeaker_" + env.launch_id,
            "--log-dir=" + (paths.logs / "trainer" / "torchrun").string(),
            "--tee=3",
            "--redirects=3",
            "--local-ranks-filter=${runtime.TRAINER_RANKS_FILTER}",
            "-m",
            "prime_rl.trainer.sft.train",
            "@",
            resolved.string()};
  p.component_env = "trainer";
  p.gpus = "";
  if (env.rank == 0) {
    p.ports = {"29500"};
  }
  p.log = {LogSpec::Mode::tee, paths.logs / "trainer" / fmt::format("node_{}.log", env.rank), true};
  plan.steps.push_back(std::move(torchrun));
  plan.steps.push_back(step::AwaitExit{{"torchrun"}});
  return plan;
}

// ---------------------------------------------------------------------------------------------

std::string substitute(const std::string &text, const EnvMap &facts) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t open = text.find("${", pos);
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      return out;
    }
    const size_t close = text.find('}', open);
    if (close == std::string::npos) {
      out.append(text, pos, std::string::npos);
      return out;
    }
    out.append(text, pos, open - pos);
    std::string name = text.substr(open + 2, close - open - 2);
    long long offset = 0;
    if (const auto plus = name.find('+'); plus != std::string::npos) {
      const std::string number = name.substr(plus + 1);
      std::from_chars(number.data(), number.data() + number.size(), offset);
      name.resize(plus);
    }
    if (name.size() > 3 && name.compare(name.size() - 3, 3, "...") == 0) {
      name.resize(name.size() - 3);
    }
    const auto it = facts.find(name);
    if (it == facts.end()) {
      throw Error(ExitCode::failure,
                  fmt::format("internal error: the plan uses ${{{}}} before it is known", name));
    }
    if (offset != 0) {
      long long value = 0;
      const auto &v = it->second;
      const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (ec != std::errc() || ptr != v.data() + v.size()) {
        throw Error(ExitCode::failure,
                    fmt::format("internal error: ${{{}}} = '{}' is not a number", name, v));
      }
      out += std::to_string(value + offset);
    } else {
      out += it->second;
    }
    pos = close + 1;
  }
}

proc::Argv resolve_argv(const ProcessSpec &process, const EnvMap &facts) {
  proc::Argv argv;
  auto add = [&](const std::string &arg) {
    if (arg.size() > 6 && arg.rfind("${", 0) == 0 && arg.compare(arg.size() - 4, 4, "...}") == 0) {
      for (const auto &word : text::split(substitute(arg, facts), ' ')) {
        if (!word.empty()) {
          argv.push_back(word);
        }
      }
      return;
    }
    argv.push_back(substitute(arg, facts));
  };
  for (const auto &arg : process.argv) {
    add(arg);
  }
  for (const auto &[fact, args] : process.when) {
    const auto it = facts.find(fact);
    if (it != facts.end() && it->second == "1") {
      for (const auto &arg : args) {
        add(arg);
      }
    }
  }
  return argv;
}

// ---------------------------------------------------------------------------------------------

namespace {

std::string redacted(const ReplicaPlan &plan, std::string text) {
  for (const auto &[secret, shown] : plan.redact) {
    for (size_t pos = text.find(secret); pos != std::string::npos;
         pos = text.find(secret, pos + shown.size())) {
      text.replace(pos, secret.size(), shown);
    }
  }
  return text;
}

const char *mode_name(LogSpec::Mode mode) {
  switch (mode) {
  case LogSpec::Mode::tee:
    return "tee";
  case LogSpec::Mode::truncate:
    return "truncate";
  case LogSpec::Mode::append:
    return "append";
  case LogSpec::Mode::discard:
    return "discard";
  default:
    return "inherit";
  }
}

nlohmann::json process_json(const ProcessSpec &p) {
  nlohmann::json when = nlohmann::json::array();
  for (const auto &[fact, args] : p.when) {
    when.push_back({{"fact", fact}, {"args", args}});
  }
  nlohmann::json log = {{"mode", mode_name(p.log.mode)}};
  if (!p.log.path.empty()) {
    log["path"] = p.log.path.string();
  }
  if (p.log.strip_rank_prefix) {
    log["strip_rank_prefix"] = true;
  }
  nlohmann::json j = {{"name", p.name}, {"argv", p.argv}};
  if (!p.when.empty()) {
    j["when"] = when;
  }
  if (!p.component_env.empty()) {
    j["component_env"] = p.component_env;
  }
  j["env"] = p.env;
  if (!p.gpus.empty()) {
    j["gpus"] = p.gpus;
  }
  j["ports"] = p.ports;
  j["log"] = log;
  return j;
}

struct JsonStep {
  nlohmann::json operator()(const step::MakeDirs &s) const {
    nlohmann::json dirs = nlohmann::json::array();
    for (const auto &d : s.dirs) {
      dirs.push_back(d.string());
    }
    return {{"step", "make_dirs"}, {"dirs", dirs}};
  }
  nlohmann::json operator()(const step::JoinAttempt &s) const {
    return {{"step", "join_attempt"},
            {"rendezvous_dir", s.rendezvous_dir.string()},
            {"timeout_seconds", s.timeout_seconds},
            {"binds", {"attempt_dir"}}};
  }
  nlohmann::json operator()(const step::DecideResume &s) const {
    nlohmann::json j = {{"step", "decide_resume"},
                        {"replica", s.replica},
                        {"trainer_ranks", s.trainer_ranks},
                        {"decides", s.leader},
                        {"output_dir", s.output_dir.string()},
                        {"max_recoveries", s.max_recoveries},
                        {"max_restarts_on_errors", s.max_restarts_on_errors},
                        {"binds", {"resume"}}};
    if (s.generation == primerl::Generation::v0_9) {
      j["run_dir"] = (s.output_dir / s.run_dir_name).string();
    }
    return j;
  }
  nlohmann::json operator()(const step::Run &s) const {
    return {{"step", "run"},
            {"process", process_json(s.process)},
            {"failure", s.failure},
            {"failure_code", s.failure_code}};
  }
  nlohmann::json operator()(const step::RequirePrograms &s) const {
    return {{"step", "require_programs"}, {"programs", s.programs}};
  }
  nlohmann::json operator()(const step::RaiseOpenFiles &s) const {
    return {{"step", "raise_open_files"}, {"limit", s.limit}};
  }
  nlohmann::json operator()(const step::SetEnv &s) const {
    return {{"step", "set_env"}, {"env", s.env}};
  }
  nlohmann::json operator()(const step::Publish &s) const {
    return {{"step", "publish"}, {"file", s.file}, {"content", s.content}};
  }
  nlohmann::json operator()(const step::WaitFor &s) const {
    return {{"step", "wait_for"},
            {"file", s.file},
            {"timeout_seconds", s.timeout_seconds},
            {"binds", {s.fact}}};
  }
  nlohmann::json operator()(const step::ResolveConfig &s) const {
    return {{"step", "resolve_config"},
            {"runs_helper", s.leader},
            {"request", nlohmann::json::parse(s.request_json)},
            {"request_path", s.request_path.string()},
            {"result_path", s.result_path.string()},
            {"process", process_json(s.helper)},
            {"binds", {"runtime.*"}}};
  }
  nlohmann::json operator()(const step::BindWorkers &s) const {
    return {{"step", "bind_workers"},
            {"nodes", s.total_nodes},
            {"expected_ranks", s.expected_ranks},
            {"binds", {"workers", "admin_urls"}}};
  }
  nlohmann::json operator()(const step::Start &s) const {
    return {{"step", "start"}, {"process", process_json(s.process)}};
  }
  nlohmann::json operator()(const step::StartInferenceServers &s) const {
    return {
        {"step", "start_inference_servers"},
        {"gpus", {{"start", s.slice.start}, {"count", s.slice.count}}},
        {"per_server", "${runtime.INFERENCE_TP} GPUs, ${port} = ${runtime.BACKEND_PORT} + ${k}"},
        {"dirs", s.dirs},
        {"process", process_json(s.each)}};
  }
  nlohmann::json operator()(const step::Pause &s) const {
    return {{"step", "pause"}, {"seconds", s.seconds}};
  }
  nlohmann::json operator()(const step::Probe &s) const {
    return {{"step", "probe"},
            {"process", process_json(s.process)},
            {"attempts", s.attempts},
            {"interval_seconds", s.interval_seconds},
            {"failure", s.failure}};
  }
  nlohmann::json operator()(const step::AwaitExit &s) const {
    return {{"step", "await_exit"}, {"processes", s.processes}};
  }
};

// Shell-quoted words, except that ${...} placeholders are shown as they are.
std::string quoted(const proc::Argv &argv) {
  std::vector<std::string> words;
  for (const auto &a : argv) {
    std::string plain = a;
    for (size_t open = plain.find("${"); open != std::string::npos; open = plain.find("${")) {
      const size_t close = plain.find('}', open);
      if (close == std::string::npos) {
        break;
      }
      plain.replace(open, close - open + 1, "x");
    }
    words.push_back(text::shell_quote(plain) == plain ? a : text::shell_quote(a));
  }
  return text::join(words, " ");
}

std::string seconds(double value) {
  return fmt::format("{:g} s", value);
}

void process_text(std::string &out, const ProcessSpec &p) {
  out += "       argv: " + quoted(p.argv) + "\n";
  for (const auto &[fact, args] : p.when) {
    out += "       + when ${" + fact + "} = 1: " + quoted(args) + "\n";
  }
  if (!p.component_env.empty()) {
    out += "       env:  runtime/" + p.component_env + ".env\n";
  }
  for (const auto &[k, v] : p.env) {
    out += "       env:  " + k + "=" + text::shell_quote(v) + "\n";
  }
  if (!p.gpus.empty()) {
    out += "       GPUs: " + p.gpus + "\n";
  }
  if (!p.ports.empty()) {
    out += "       ports: " + text::join(p.ports, " ") + "\n";
  }
  if (p.log.mode != LogSpec::Mode::inherit) {
    const char *how = p.log.mode == LogSpec::Mode::tee        ? " (appended, and on stdout)"
                      : p.log.mode == LogSpec::Mode::append   ? " (appended)"
                      : p.log.mode == LogSpec::Mode::truncate ? " (truncated first)"
                                                              : "discarded";
    out += fmt::format("       log:  {}{}{}\n",
                       p.log.path.string(),
                       how,
                       p.log.strip_rank_prefix ? " (rank prefix stripped)" : "");
  }
}

struct TextStep {
  std::string &out;
  void operator()(const step::MakeDirs &s) const {
    out += "make directories\n";
    for (const auto &d : s.dirs) {
      out += "       " + d.string() + "\n";
    }
  }
  void operator()(const step::JoinAttempt &s) const {
    out += fmt::format("join the attempt under {} (timeout {} s) -> ${{attempt_dir}}\n",
                       s.rendezvous_dir.string(),
                       s.timeout_seconds);
  }
  void operator()(const step::DecideResume &s) const {
    if (!s.leader) {
      out += "wait for replica 0's resume decision (recovery.json) -> ${resume}\n";
      return;
    }
    out += fmt::format("decide the resume point from the checkpoints under {} ({} trainer ranks), "
                       "record the start in the ledger, publish recovery.json -> ${{resume}}\n",
                       s.generation == primerl::Generation::v0_9
                           ? "the Prime-RL v0.9 run directory " +
                                 (s.output_dir / s.run_dir_name).string()
                           : s.output_dir.string(),
                       s.trainer_ranks);
    out += fmt::format("       budget: {} preemption recoveries, {} restarts after errors\n",
                       s.max_recoveries,
                       s.max_restarts_on_errors);
  }
  void operator()(const step::Run &s) const {
    out += "run " + s.process.name + " to its end (failure: exit " +
           std::to_string(s.failure_code) + ")\n";
    process_text(out, s.process);
  }
  void operator()(const step::RequirePrograms &s) const {
    out += "require on PATH: " + text::join(s.programs, " ") + "\n";
  }
  void operator()(const step::RaiseOpenFiles &s) const {
    out += fmt::format("raise the open-file limit to {}\n", s.limit);
  }
  void operator()(const step::SetEnv &s) const {
    out += "set for every later child:";
    for (const auto &[k, v] : s.env) {
      out += " " + k + "=" + v;
    }
    out += "\n";
  }
  void operator()(const step::Publish &s) const {
    std::string content = s.content;
    if (!content.empty() && content.back() == '\n') {
      content.pop_back();
    }
    out += "publish " + s.file + " = " + content + "\n";
  }
  void operator()(const step::WaitFor &s) const {
    out +=
        fmt::format("wait for {} (timeout {} s) -> ${{{}}}\n", s.file, s.timeout_seconds, s.fact);
  }
  void operator()(const step::ResolveConfig &s) const {
    if (s.leader) {
      out += "resolve " + s.config_path.string() +
             " through Prime-RL (the config helper, with ${resume}), publish runtime/* -> "
             "${runtime.*}\n";
      out += "       request: " + s.request_json + " in " + s.request_path.string() +
             ", answer in " + s.result_path.string() + "\n";
      process_text(out, s.helper);
    } else {
      out += "wait for replica 0's resolved config (runtime/runtime.ready) -> ${runtime.*}\n";
    }
  }
  void operator()(const step::BindWorkers &s) const {
    out += fmt::format("list the inference workers of the {} nodes (layout.N, host.N, "
                       "${{runtime.INFERENCE_TP}}, ${{runtime.BACKEND_PORT}}; expect {}) -> "
                       "${{workers}} ${{admin_urls}}\n",
                       s.total_nodes,
                       s.expected_ranks);
  }
  void operator()(const step::Start &s) const {
    out += "start " + s.process.name + "\n";
    process_text(out, s.process);
  }
  void operator()(const step::StartInferenceServers &s) const {
    out += fmt::format("start one inference server per ${{runtime.INFERENCE_TP}} GPUs of {} "
                       "(server ${{k}}: ${{gpus}} its block, ${{port}} = "
                       "${{runtime.BACKEND_PORT}} + ${{k}})\n",
                       gpu_range(s.slice.start, s.slice.count));
    for (const auto &d : s.dirs) {
      out += "       dir:  " + d + "\n";
    }
    process_text(out, s.each);
  }
  void operator()(const step::Pause &s) const { out += "pause " + seconds(s.seconds) + "\n"; }
  void operator()(const step::Probe &s) const {
    out += fmt::format("probe up to {} times, {} apart, until it succeeds\n",
                       s.attempts,
                       seconds(s.interval_seconds));
    process_text(out, s.process);
  }
  void operator()(const step::AwaitExit &s) const {
    out += s.processes.empty() ? std::string("serve until the job ends (a peer's verdict)\n")
                               : "wait until " + text::join(s.processes, " and ") + " exit 0\n";
  }
};

} // namespace

std::string plan_json(const ReplicaPlan &plan) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto &s : plan.steps) {
    steps.push_back(std::visit(JsonStep{}, s));
  }
  nlohmann::json j = {{"command", plan.command},
                      {"rank", plan.rank},
                      {"total_nodes", plan.total_nodes},
                      {"role", plan.role},
                      {"summary", plan.summary},
                      {"working_dir", plan.working_dir.string()},
                      {"rendezvous_dir", plan.rendezvous_dir.string()},
                      {"local_tmp", plan.local_tmp.string()},
                      {"env", plan.env},
                      {"on_exit", plan.on_exit},
                      {"stop_grace_seconds", plan.tuning.stop_grace_seconds},
                      {"steps", steps}};
  return redacted(plan, j.dump(2) + "\n");
}

std::string plan_text(const ReplicaPlan &plan) {
  std::string out = fmt::format(
      "{}, replica {} of {}: {}\n", plan.command, plan.rank, plan.total_nodes, plan.summary);
  out += "working dir: " + plan.working_dir.string() + "\n";
  out += "every child also gets:";
  for (const auto &[k, v] : plan.env) {
    out += " " + k + "=" + text::shell_quote(v);
  }
  out += "\n";
  const bool completes = plan.role != "sft" && plan.role != "inference";
  out += fmt::format("on exit (any path): publish status.{}, {}shutdown.requested on failure; stop "
                     "every child (SIGTERM, {} grace, SIGKILL){}\n",
                     plan.rank,
                     completes ? "complete on success, " : "",
                     seconds(plan.tuning.stop_grace_seconds),
                     plan.on_exit.empty() ? std::string() : "; then " + quoted(plan.on_exit));
  out += "${...}: values learned while running, bound by the step marked ->\n";
  int n = 0;
  for (const auto &s : plan.steps) {
    out += fmt::format("{:>3}. ", ++n);
    std::visit(TextStep{out}, s);
  }
  return redacted(plan, out);
}

} // namespace pb::node
