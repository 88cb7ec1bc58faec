// SPDX-License-Identifier: MIT
// `primebeaker node rl|sft`: what runs on each replica of a multi-node job (docs/node.md).
#include "runtime.hpp"

#include "config_helper.hpp"
#include "recovery.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/environments.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <cstdio>

namespace pb::node {
namespace {

using Clock = std::chrono::steady_clock;

// A milestone line on stderr: container logs are the operator's only view of a replica.
template <typename... Args>
void note(int rank, fmt::format_string<Args...> format, Args &&...args) {
  fmt::print(
      stderr, "primebeaker node[{}]: {}\n", rank, fmt::format(format, std::forward<Args>(args)...));
  std::fflush(stderr);
}

void make_dirs(const std::vector<std::filesystem::path> &dirs) {
  for (const auto &dir : dirs) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      throw failure(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
    }
  }
}

void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return;
  }
  constexpr rlim_t wanted = 65536;
  if (limit.rlim_cur >= wanted) {
    return;
  }
  rlimit raised = limit;
  raised.rlim_cur = wanted;
  if (raised.rlim_max < wanted) {
    raised.rlim_max = wanted; // only succeeds with privileges
  }
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    raised.rlim_cur = limit.rlim_max;
    raised.rlim_max = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &raised);
  }
}

std::string trimmed(const std::string &s) {
  return std::string(text::trim(s));
}

// State shared by the RL and SFT flows.
struct Replica {
  int rank = 0;
  std::string role;
  bool sft = false;
  Tuning tuning;
  Rendezvous rendezvous;
  Supervisor supervisor;
  EnvMap child_env; // what every child starts from
  std::filesystem::path working_dir;
  std::filesystem::path local_tmp; // node-local scratch of this replica
  std::optional<std::string> managed_service_id;
  // Replica 0's start record in the attempt ledger (docs/recovery.md); its end goes there too.
  std::optional<RecoveryOutcome> recovery;
  Clock::time_point started = Clock::now();

  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - started).count();
  }

  Replica(const CommonEnv &env, std::string role_, bool sft_)
      : rank(env.rank), role(std::move(role_)), sft(sft_), tuning(env.tuning),
        rendezvous(env.rendezvous_dir,
                   env.rank,
                   env.total_nodes,
                   env.tuning.poll_seconds,
                   env.rendezvous_timeout_seconds),
        working_dir(env.working_dir) {}

  proc::SpawnSpec spec(proc::Argv argv, const EnvMap &extra = {}) const {
    proc::SpawnSpec s;
    s.argv = std::move(argv);
    s.env = child_env;
    for (const auto &[k, v] : extra) {
      s.env[k] = v;
    }
    s.cwd = working_dir;
    return s;
  }

  // Stops the replica when a peer asks for it (docs/node.md).
  void check_peers() {
    if (!rendezvous.joined()) {
      return;
    }
    const Observation seen = rendezvous.observe();
    const auto verdict = watcher_verdict(seen, sft);
    if (!verdict) {
      return;
    }
    if (*verdict == 0) {
      throw Error(0, "");
    }
    if (seen.shutdown_requested) {
      const auto reason = rendezvous.read("shutdown.requested").value_or("");
      throw Error(*verdict, "shutdown requested by a peer: " + trimmed(reason));
    }
    for (const auto &[r, status] : seen.statuses) {
      if (status.code != 0) {
        throw Error(
            *verdict,
            fmt::format("replica {} ({}) failed with exit code {}", r, status.role, status.code));
      }
    }
    throw Error(*verdict, "a peer inference replica exited while training was still running");
  }

  // One supervision tick: signals, child exits (handed to on_exit, which may throw), peers.
  template <typename OnExit> void tick(double seconds, OnExit &&on_exit) {
    Signals::check();
    if (const auto event = supervisor.wait_event(seconds)) {
      on_exit(event->first, event->second);
    }
    Signals::check();
    check_peers();
  }

  // The rule for a supporting process (router, gateway, inference server) that ended.
  [[noreturn]] void unexpected_exit(const std::string &name, const proc::ExitStatus &status) {
    if (status.code() == 0) {
      if (rendezvous.joined() && rendezvous.read("complete")) {
        throw Error(0, "");
      }
      throw Error(ExitCode::unexpected_exit,
                  fmt::format("{} exited cleanly while the job was still running", name));
    }
    throw Error(status.code(), fmt::format("{} failed ({})", name, status.describe()));
  }

  // Runs one step to completion under supervision; other children ending are unexpected.
  proc::ExitStatus run_step(const std::string &name, proc::SpawnSpec s, ChildOptions options = {}) {
    supervisor.start(name, std::move(s), options);
    std::optional<proc::ExitStatus> result;
    while (!result) {
      tick(tuning.poll_seconds, [&](const std::string &who, const proc::ExitStatus &status) {
        if (who == name) {
          result = status;
        } else {
          unexpected_exit(who, status);
        }
      });
    }
    return *result;
  }

  // A `primebeaker registry ...` step: its JSON result is not needed and its error line becomes
  // part of ours (one error line per failure). A stop caused by a peer's shutdown is 92.
  struct StepOutcome {
    proc::ExitStatus status;
    std::string error; // the step's own message, without the "primebeaker: error: " prefix
  };
  StepOutcome registry_step(const std::string &name, proc::SpawnSpec s) {
    const auto err_file = local_tmp / "registry-step.stderr";
    ChildOptions options;
    options.out = proc::Output::null();
    options.err = proc::Output::truncate_to(err_file);
    StepOutcome outcome{run_step(name, std::move(s), options), {}};
    if (outcome.status.code() != 0) {
      if (rendezvous.read("shutdown.requested")) {
        check_peers();
      }
      std::string text;
      try {
        text = fs::read_file(err_file);
      } catch (const Error &) {
      }
      for (const auto &line : text::split(text, '\n')) {
        constexpr std::string_view prefix = "primebeaker: error: ";
        if (text::starts_with(line, prefix)) {
          outcome.error = line.substr(prefix.size());
        }
      }
      if (outcome.error.empty()) {
        outcome.error = outcome.status.describe();
      }
    }
    return outcome;
  }

  // Supervised sleep.
  void pause(double seconds) {
    const auto until = Clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    while (Clock::now() < until) {
      const double left = std::chrono::duration<double>(until - Clock::now()).count();
      tick(std::min(left, tuning.poll_seconds),
           [&](const std::string &who, const proc::ExitStatus &status) {
             unexpected_exit(who, status);
           });
    }
  }

  // The code that decided this attempt, for the ledger: a peer's own failure when this replica
  // only stopped because of it (90, 92).
  int root_code(int code) const {
    if ((code != static_cast<int>(ExitCode::peer_failed) &&
         code != static_cast<int>(ExitCode::peer_shutdown)) ||
        !rendezvous.joined()) {
      return code;
    }
    for (const auto &[r, status] : rendezvous.observe().statuses) {
      if (status.code != 0 && status.code != 90 && status.code != 91 && status.code != 92) {
        return status.code;
      }
    }
    return code;
  }

  // The exit trap (docs/node.md): publish, stop everything, clean up.
  int finish(int code, const std::string &message = {}) {
    if (rendezvous.joined()) {
      try {
        if (!sft && role != "inference" && code == 0) {
          rendezvous.publish("complete", fmt::format("Prime-RL completed on node {}\n", rank));
        }
        if (code != 0 && !rendezvous.read("complete") && !rendezvous.read("shutdown.requested")) {
          rendezvous.publish(
              "shutdown.requested",
              sft ? fmt::format("SFT node {} exited with code {}\n", rank, code)
                  : fmt::format("Prime-RL node {} ({}) exited with code {}\n", rank, role, code));
        }
        rendezvous.publish(fmt::format("status.{}", rank), status_text(code, sft ? "sft" : role));
      } catch (const Error &e) {
        note(rank, "warning: could not publish the exit status: {}", e.what());
      }
    }
    supervisor.stop_all(tuning.stop_grace_seconds);
    if (recovery) {
      record_end(*recovery, code, root_code(code), message);
    }
    if (managed_service_id && rank == 0) {
      proc::Command stop;
      stop.argv = {"beaker", "experiment", "stop", *managed_service_id};
      stop.timeout = std::chrono::seconds(120);
      try {
        const auto r = proc::SystemRunner().run(stop);
        if (!r.ok()) {
          note(rank,
               "warning: beaker experiment stop {} failed ({}): {}",
               *managed_service_id,
               r.status(),
               trimmed(r.err));
        } else {
          note(rank, "stopped the managed service experiment {}", *managed_service_id);
        }
      } catch (const Error &e) {
        note(rank,
             "warning: cannot stop the managed service experiment {}: {}",
             *managed_service_id,
             e.what());
      }
    }
    return code;
  }
};

// "2-3", "0", "none": for the summary line.
std::string gpu_range(const Slice &slice) {
  if (slice.count == 0) {
    return "none";
  }
  if (slice.count == 1) {
    return std::to_string(slice.start);
  }
  return fmt::format("{}-{}", slice.start, slice.start + slice.count - 1);
}

ChildOptions to_file(proc::Output output) {
  ChildOptions options;
  options.out = std::move(output);
  return options;
}

ChildOptions tee_to(std::filesystem::path log, bool strip) {
  ChildOptions options;
  options.tee = std::move(log);
  options.strip_rank_prefix = strip;
  return options;
}

void require_programs(const EnvMap &env, const std::vector<std::string> &programs) {
  const auto it = env.find("PATH");
  const std::string path = it != env.end() ? it->second : "/usr/bin:/bin";
  std::vector<std::string> missing;
  for (const auto &p : programs) {
    if (!proc::find_executable(p, path)) {
      missing.push_back(p);
    }
  }
  if (!missing.empty()) {
    throw tool_error(fmt::format("cannot find {} on PATH", text::join(missing, ", ")));
  }
}

void run_setup(Replica &r, const std::optional<std::string> &setup) {
  if (!setup) {
    return;
  }
  note(r.rank, "running the setup command");
  const auto status = r.run_step("setup command", r.spec({"bash", "-lc", *setup}));
  if (status.code() != 0) {
    throw tool_error(fmt::format("the setup command failed ({})", status.describe()));
  }
}

void add_network_hints(Replica &r, const std::string &address) {
  if (r.child_env.count("NCCL_IB_HCA") == 0) {
    if (const auto hcas = infiniband_hcas()) {
      r.child_env["NCCL_IB_HCA"] = *hcas;
    }
  }
  if (r.child_env.count("GLOO_SOCKET_IFNAME") == 0) {
    if (const auto iface = interface_of(address)) {
      r.child_env["GLOO_SOCKET_IFNAME"] = *iface;
    }
  }
}

EnvMap json_env(const nlohmann::json &j) {
  EnvMap out;
  if (j.is_object()) {
    for (const auto &[k, v] : j.items()) {
      out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  return out;
}

// Runs the Prime-RL config helper (docs/node.md) and returns its JSON answer.
nlohmann::json run_config_helper(Replica &r,
                                 const std::filesystem::path &scratch_dir,
                                 const std::filesystem::path &config_path,
                                 nlohmann::json request) {
  const auto script = scratch_dir / "primebeaker_prime_rl_config.py";
  const auto request_path = scratch_dir / "config-request.json";
  const auto result_path = scratch_dir / "config-result.json";
  fs::write_file_atomic(script, config_helper_source());
  request["environment_modules"] = primerl::bundled_environment_modules();
  fs::write_file_atomic(request_path, request.dump(2) + "\n");
  std::error_code ec;
  std::filesystem::remove(result_path, ec);
  note(r.rank, "resolving {} through Prime-RL", config_path.string());
  const auto status =
      r.run_step("config helper",
                 r.spec({"python3", script.string(), request_path.string(), result_path.string()}));
  nlohmann::json result;
  if (std::filesystem::exists(result_path, ec)) {
    result = nlohmann::json::parse(fs::read_file(result_path), nullptr, false);
  }
  if (status.code() == 0 && result.is_object() && !result.contains("error")) {
    return result;
  }
  const std::string error =
      result.is_object() && result.contains("error")
          ? result["error"].get<std::string>()
          : fmt::format("the Prime-RL config helper failed ({})", status.describe());
  Error e(status.code() == 3 ? 3 : 4,
          status.code() == 3 ? fmt::format("{}: {}", config_path.string(), error) : error);
  if (result.is_object() && result.contains("detail") && result["detail"].is_array()) {
    for (const auto &line : result["detail"]) {
      e.add_context(line.get<std::string>());
    }
  }
  throw e;
}

RlRuntime rl_runtime_from_json(const nlohmann::json &j) {
  RlRuntime rt;
  const auto &v = j.at("runtime");
  rt.router_port = v.at("ROUTER_PORT").get<int>();
  rt.router_policy = v.at("ROUTER_POLICY").get<std::string>();
  rt.backend_port = v.at("BACKEND_PORT").get<int>();
  rt.inference_tp = v.at("INFERENCE_TP").get<int>();
  rt.trainer_ranks_filter = v.value("TRAINER_RANKS_FILTER", "");
  rt.use_nccl_broadcast = v.value("USE_NCCL_BROADCAST", 0) != 0;
  rt.use_zmq_transport = v.value("USE_ZMQ_TRANSPORT", 0) != 0;
  rt.trainer_env = json_env(j.value("trainer_env", nlohmann::json::object()));
  rt.orchestrator_env = json_env(j.value("orchestrator_env", nlohmann::json::object()));
  rt.inference_env = json_env(j.value("inference_env", nlohmann::json::object()));
  return rt;
}

EnvMap runtime_env_values(const nlohmann::json &runtime) {
  EnvMap out;
  for (const auto &[k, v] : runtime.items()) {
    out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out;
}

// Rank 0 writes the runtime files every replica reads: runtime.json (machine-read) and the
// shell env files of docs/node.md (for people and scripts), then runtime.ready last.
void publish_runtime(Replica &r, const nlohmann::json &result, bool rl) {
  nlohmann::json stored = result;
  stored.erase("stale_state");
  r.rendezvous.publish(
      "runtime/trainer.env",
      env_file_text(json_env(result.value("trainer_env", nlohmann::json::object())),
                    "trainer.env"));
  if (rl) {
    r.rendezvous.publish("runtime/orchestrator.env",
                         env_file_text(json_env(result["orchestrator_env"]), "orchestrator.env"));
    r.rendezvous.publish("runtime/inference.env",
                         env_file_text(json_env(result["inference_env"]), "inference.env"));
  }
  r.rendezvous.publish("runtime/runtime.env",
                       env_file_text(runtime_env_values(result["runtime"]), "runtime.env"));
  r.rendezvous.publish("runtime/runtime.json", stored.dump(2) + "\n");
  r.rendezvous.publish("runtime/runtime.ready", "ready\n");
}

nlohmann::json read_runtime(Replica &r) {
  r.rendezvous.wait_for("runtime/runtime.ready", "the runtime config (runtime.ready)");
  const auto content = r.rendezvous.read("runtime/runtime.json");
  const auto j = content ? nlohmann::json::parse(*content, nullptr, false) : nlohmann::json();
  if (!j.is_object() || !j.contains("runtime")) {
    throw failure("the runtime config " + r.rendezvous.file("runtime/runtime.json").string() +
                  " is missing or malformed");
  }
  return j;
}

int run_with_trap(Replica &r, const std::function<void()> &body) {
  int code = 0;
  std::string message;
  std::vector<std::string> context;
  try {
    body();
  } catch (const Error &e) {
    code = e.code();
    message = e.what();
    context = e.context();
  }
  r.finish(code, message);
  if (code != 0) {
    throw Error(
        code, message.empty() ? fmt::format("exiting with code {}", code) : message, context);
  }
  return 0;
}

// Recovery (docs/recovery.md): replica 0 decides the resume point once per attempt, records the
// start in the ledger and publishes the decision as recovery.json; every other replica waits for
// it. A start past the recovery budget stops here, on every replica, before anything trains.
void decide_recovery(Replica &r,
                     const CommonEnv &env,
                     const EnvMap &process_env,
                     const std::string &replica,
                     int trainer_ranks) {
  if (r.rank != 0) {
    const auto published = nlohmann::json::parse(
        r.rendezvous.wait_for("recovery.json", "replica 0's resume decision"), nullptr, false);
    if (!published.is_object()) {
      throw failure("malformed " + r.rendezvous.file("recovery.json").string());
    }
    if (published.contains("refused") && published["refused"].is_string()) {
      throw Error(ExitCode::peer_shutdown,
                  "replica 0 refused to start: " + published["refused"].get<std::string>());
    }
    note(r.rank,
         "attempt {} ({}): {}",
         published.value("attempt", 0),
         published.value("cause", std::string("?")),
         published["resume_step"].is_number()
             ? fmt::format("resuming from step {}", published["resume_step"].get<long long>())
             : std::string("starting fresh"));
    return;
  }
  RecoveryRequest request;
  request.replica = replica;
  request.working_dir = env.working_dir;
  request.output_dir = env.output_dir;
  request.config_path = env.config_path;
  request.trainer_ranks = trainer_ranks;
  request.trainer_only = r.sft;
  request.policy = {env.max_recoveries, env.max_restarts_on_errors};
  fill_identity(request, process_env);
  r.recovery = start_recovery(request, [&](const std::string &line) { note(r.rank, "{}", line); });
  r.rendezvous.publish("recovery.json", r.recovery->published().dump() + "\n");
  const auto &decision = r.recovery->decision;
  if (!decision.refusal.empty()) {
    throw Error(decision.refusal_code, decision.refusal);
  }
}

// ---------------------------------------------------------------------------------------------

// The phases of an RL replica (docs/node.md "What a replica does (RL)"), in order.

// Joins the attempt, runs the setup command and checks the programs this replica runs.
void rl_start(Replica &r,
              const RlEnv &env,
              const EnvMap &process_env,
              const RlPlacement &place,
              bool leader) {
  r.rendezvous.join();
  note(r.rank, "joined attempt {} in {}", r.rendezvous.attempt(), env.rendezvous_dir.string());
  decide_recovery(r, env, process_env, "node rl", env.trainer_gpu_count);
  run_setup(r, env.setup_command);
  std::vector<std::string> programs = {"inference"};
  if (leader) {
    programs = {"torchrun", "orchestrator", "vllm-router", "python3"};
    if (place.inference.count > 0) {
      programs.push_back("inference");
    }
    if (env.managed_service_experiment_id) {
      programs.push_back("beaker");
    }
  }
  require_programs(r.child_env, programs);
  raise_open_file_limit();
}

// Registry barrier (every replica).
void registry_barrier(Replica &r,
                      const RlEnv &env,
                      const std::string &self,
                      const std::filesystem::path &stop_file) {
  note(r.rank, "waiting for the registry {}", env.registry_display);
  const auto redis =
      r.registry_step("registry barrier", r.spec(wait_redis_argv(self, env, stop_file)));
  if (redis.status.code() != 0) {
    throw failure("the registry barrier failed: " + redis.error);
  }
}

// Publishes this node's address and inference slice, then reads every peer's.
std::vector<NodeSlot> exchange_layout(Replica &r,
                                      const RlEnv &env,
                                      const RlPlacement &place,
                                      const std::string &address) {
  r.rendezvous.publish(fmt::format("host.{}", r.rank), address + "\n");
  r.rendezvous.publish(fmt::format("layout.{}", r.rank), layout_text(place.inference) + "\n");
  note(r.rank,
       "rank={} role={} train GPUs={} inference GPUs={} host={}",
       r.rank,
       role_name(place.role),
       gpu_range({0, place.train_gpus}),
       gpu_range(place.inference),
       address);
  std::vector<NodeSlot> slots;
  for (int n = 0; n < env.total_nodes; ++n) {
    NodeSlot slot;
    slot.host =
        trimmed(r.rendezvous.wait_for(fmt::format("host.{}", n), fmt::format("host.{}", n)));
    const auto layout = parse_layout(
        r.rendezvous.wait_for(fmt::format("layout.{}", n), fmt::format("layout.{}", n)));
    if (!layout) {
      throw failure(
          fmt::format("malformed {}", r.rendezvous.file(fmt::format("layout.{}", n)).string()));
    }
    slot.inference = *layout;
    slots.push_back(slot);
  }
  return slots;
}

// Config materialisation: the leader runs the helper and publishes, the others read.
RlRuntime materialise_config(Replica &r, const RlEnv &env, const Paths &paths, bool leader) {
  nlohmann::json runtime_json;
  if (leader) {
    nlohmann::json request = {{"kind", "rl"},
                              {"config", env.config_path.string()},
                              {"config_dir", paths.config_dir.string()},
                              {"resume", r.recovery->helper_request()}};
    runtime_json = run_config_helper(r, paths.local_tmp, env.config_path, request);
    publish_runtime(r, runtime_json, true);
  } else {
    runtime_json = read_runtime(r);
  }
  return rl_runtime_from_json(runtime_json);
}

// Local inference servers, one per TP block of this node's slice.
void start_inference_servers(Replica &r,
                             const RlPlacement &place,
                             const RlRuntime &runtime,
                             const Paths &paths) {
  const auto blocks = tp_blocks(place.inference, runtime.inference_tp);
  const std::filesystem::path tmpdir = r.child_env.at("TMPDIR");
  for (size_t k = 0; k < blocks.size(); ++k) {
    const auto cache = tmpdir / "inference" / fmt::format("node_{}_rank{}", r.rank, k);
    make_dirs({cache / "vllm", cache / "inductor", cache / "rpc"});
    EnvMap extra = runtime.inference_env;
    extra["CUDA_VISIBLE_DEVICES"] = blocks[k];
    extra["VLLM_CACHE_ROOT"] = (cache / "vllm").string();
    extra["TORCHINDUCTOR_CACHE_DIR"] = (cache / "inductor").string();
    extra["VLLM_RPC_BASE_PATH"] = (cache / "rpc").string();
    const int port = runtime.backend_port + static_cast<int>(k);
    r.supervisor.start(
        fmt::format("inference server {}", k),
        r.spec(inference_argv(paths.config_dir, port), extra),
        tee_to(paths.logs / "inference" / fmt::format("node_{}_rank{}.log", r.rank, k), false));
  }
  note(r.rank, "started {} inference server(s)", blocks.size());
}

// Local tool gateway, then the required-service barrier, then gateway readiness.
void start_gateway(Replica &r,
                   const RlEnv &env,
                   const std::string &self,
                   const std::filesystem::path &stop_file) {
  r.supervisor.start(
      "gateway",
      r.spec(local_gateway_argv(env)),
      to_file(proc::Output::truncate_to(env.output_dir / "literegistry-gateway.log")));
  r.pause(env.tuning.gateway_settle_seconds);
  if (!env.required_services.empty()) {
    note(r.rank, "waiting for required services {}", env.required_services_json);
    const auto barrier = r.registry_step("required-service barrier",
                                         r.spec(wait_services_argv(self, env, stop_file)));
    if (barrier.status.code() != 0) {
      throw failure("the required-service barrier failed: " + barrier.error);
    }
  }
  bool ready = false;
  std::string last_probe_error;
  for (int attempt = 1; attempt <= env.tuning.gateway_probe_attempts && !ready; ++attempt) {
    const auto probe = r.registry_step("gateway probe", r.spec(probe_gateway_argv(self, env)));
    ready = probe.status.code() == 0;
    last_probe_error = probe.error;
    if (!ready && attempt < env.tuning.gateway_probe_attempts) {
      r.pause(env.tuning.gateway_probe_interval_seconds);
    }
  }
  if (!ready) {
    throw failure(fmt::format("gateway failed readiness after {} attempts: {} (log: {})",
                              env.tuning.gateway_probe_attempts,
                              last_probe_error,
                              (env.output_dir / "literegistry-gateway.log").string()));
  }
  note(r.rank, "gateway ready on port {}", env.gateway_port);
}

void start_trainer_and_orchestrator(Replica &r,
                                    const RlPlacement &place,
                                    const RlRuntime &runtime,
                                    const Paths &paths,
                                    const std::string &master_addr) {
  const std::string router_url = trimmed(r.rendezvous.wait_for("router.url", "router.url"));
  const auto published_admin =
      text::split(trimmed(r.rendezvous.wait_for("admin.urls", "admin.urls")), ' ');

  EnvMap trainer_extra = runtime.trainer_env;
  std::vector<std::string> train_ids;
  for (int g = 0; g < place.train_gpus; ++g) {
    train_ids.push_back(std::to_string(g));
  }
  trainer_extra["CUDA_VISIBLE_DEVICES"] = text::join(train_ids, ",");
  trainer_extra["WANDB_SHARED_LABEL"] = "trainer";
  r.supervisor.start(
      "trainer",
      r.spec(trainer_argv(runtime, place.train_gpus, paths, master_addr), trainer_extra),
      tee_to(paths.logs / "trainer" / "node_0.log", true));
  EnvMap orchestrator_extra = runtime.orchestrator_env;
  orchestrator_extra["WANDB_SHARED_LABEL"] = "orchestrator";
  r.supervisor.start(
      "orchestrator",
      r.spec(orchestrator_argv(runtime, paths, router_url, published_admin, master_addr),
             orchestrator_extra),
      to_file(proc::Output::truncate_to(paths.logs / "orchestrator.log")));
  note(r.rank,
       "trainer and orchestrator started ({:.2f} s after this replica started)",
       r.seconds_since_start());
}

// Completion: the leader returns once trainer and orchestrator both exited 0 (docs/node.md).
void wait_for_training(Replica &r) {
  int finished = 0;
  for (;;) {
    r.tick(r.tuning.poll_seconds, [&](const std::string &who, const proc::ExitStatus &status) {
      if (who != "trainer" && who != "orchestrator") {
        r.unexpected_exit(who, status);
      }
      if (status.code() != 0) {
        throw Error(status.code(), fmt::format("{} failed ({})", who, status.describe()));
      }
      note(r.rank, "{} finished", who);
      ++finished;
    });
    if (finished == 2) {
      return;
    }
  }
}

void rl_body(Replica &r,
             const RlEnv &env,
             const EnvMap &process_env,
             const RlPlacement &place,
             const Paths &paths) {
  const bool leader = place.role != Role::inference;
  rl_start(r, env, process_env, place, leader);
  const std::string self = self_executable();
  const auto stop_file = r.rendezvous.file("shutdown.requested");
  registry_barrier(r, env, self, stop_file);

  const std::string address = local_address(env.tuning);
  const auto slots = exchange_layout(r, env, place, address);
  const std::string master_addr = slots.front().host;
  r.child_env["MASTER_ADDR"] = master_addr;

  const RlRuntime runtime = materialise_config(r, env, paths, leader);
  add_network_hints(r, address);
  const auto workers =
      global_workers(slots, runtime.backend_port, runtime.inference_tp, env.total_infer_ranks);
  if (leader) {
    std::vector<std::string> admin_urls;
    for (const auto &w : workers) {
      admin_urls.push_back(w.admin_url);
    }
    const std::string router_url = fmt::format("http://{}:{}/v1", address, runtime.router_port);
    r.rendezvous.publish("router.url", router_url + "\n");
    r.rendezvous.publish("admin.urls", text::join(admin_urls, " ") + "\n");
    r.supervisor.start("vllm-router",
                       r.spec(router_argv(runtime, workers)),
                       to_file(proc::Output::append_to(paths.logs / "inference" / "router.log")));
  }
  start_inference_servers(r, place, runtime, paths);

  if (!leader) {
    // Inference-only replica: serve until a peer finishes or something here ends.
    for (;;) {
      r.tick(r.tuning.poll_seconds, [&](const std::string &who, const proc::ExitStatus &status) {
        r.unexpected_exit(who, status);
      });
    }
  }
  start_gateway(r, env, self, stop_file);
  start_trainer_and_orchestrator(r, place, runtime, paths, master_addr);
  wait_for_training(r);
}

void sft_body(Replica &r, const SftEnv &env, const EnvMap &process_env, const Paths &paths) {
  r.rendezvous.join();
  note(r.rank, "joined attempt {} in {}", r.rendezvous.attempt(), env.rendezvous_dir.string());
  decide_recovery(r, env, process_env, "node sft", env.total_nodes * env.gpus_per_node);
  run_setup(r, env.setup_command);
  std::vector<std::string> programs = {"torchrun"};
  if (r.rank == 0) {
    programs.push_back("python3");
  }
  require_programs(r.child_env, programs);
  raise_open_file_limit();

  const std::string address = local_address(env.tuning);
  r.rendezvous.publish(fmt::format("host.{}", r.rank), address + "\n");
  note(r.rank, "rank={} role=sft host={}", r.rank, address);
  for (int n = 0; n < env.total_nodes; ++n) {
    r.rendezvous.wait_for(fmt::format("host.{}", n), fmt::format("host.{}", n));
  }
  const std::string master_addr = trimmed(*r.rendezvous.read("host.0"));
  r.child_env["MASTER_ADDR"] = master_addr;

  nlohmann::json runtime_json;
  if (r.rank == 0) {
    nlohmann::json request = {{"kind", "sft"},
                              {"config", env.config_path.string()},
                              {"output", (paths.config_dir / "sft.toml").string()},
                              {"resume", r.recovery->helper_request()}};
    runtime_json = run_config_helper(r, paths.local_tmp, env.config_path, request);
    publish_runtime(r, runtime_json, false);
  } else {
    runtime_json = read_runtime(r);
  }
  SftRuntime runtime;
  runtime.trainer_ranks_filter = runtime_json["runtime"].value("TRAINER_RANKS_FILTER", "");
  runtime.trainer_env = json_env(runtime_json.value("trainer_env", nlohmann::json::object()));
  add_network_hints(r, address);

  r.supervisor.start(
      "torchrun",
      r.spec(sft_torchrun_argv(env, runtime, paths, master_addr), runtime.trainer_env),
      tee_to(paths.logs / "trainer" / fmt::format("node_{}.log", r.rank), true));
  note(r.rank,
       "trainer started (node rank {} of {}, {:.2f} s after this replica started)",
       r.rank,
       env.total_nodes,
       r.seconds_since_start());
  for (;;) {
    r.tick(r.tuning.poll_seconds, [&](const std::string &who, const proc::ExitStatus &status) {
      if (who != "torchrun") {
        r.unexpected_exit(who, status);
      }
      if (status.code() != 0) {
        throw Error(status.code(), fmt::format("torchrun failed ({})", status.describe()));
      }
      throw Error(0, "");
    });
  }
}

void prepare_common(Replica &r,
                    const CommonEnv &env,
                    const EnvMap &process_env,
                    const Paths &paths,
                    std::vector<std::filesystem::path> dirs) {
  // Relative paths of the contract (OUTPUT_DIR as written in the TOML) are relative to it.
  std::error_code cd_error;
  std::filesystem::current_path(env.working_dir, cd_error);
  if (cd_error) {
    throw failure(fmt::format(
        "cannot change to WORKING_DIR {}: {}", env.working_dir.string(), cd_error.message()));
  }
  Signals::install();
  proc::become_subreaper();
  r.local_tmp = paths.local_tmp;
  r.child_env = process_env;
  for (const auto &[k, v] : cache_defaults(process_env, env.scratch, paths.local_tmp)) {
    r.child_env[k] = v;
  }
  dirs.push_back(r.child_env.at("XDG_CACHE_HOME"));
  dirs.push_back(r.child_env.at("HF_HOME"));
  dirs.push_back(r.child_env.at("TORCH_HOME"));
  dirs.push_back(r.child_env.at("TMPDIR"));
  dirs.push_back(paths.local_tmp);
  make_dirs(dirs);
  std::error_code ec;
  std::filesystem::create_directories("/tmp/beaker-result", ec);
}

} // namespace

int run_rl(const EnvMap &process_env) {
  const RlEnv env = parse_rl_env(process_env);
  const RlPlacement place = place_rl(env);
  const Paths paths = rl_paths(env);
  Replica r(env, role_name(place.role), false);
  r.managed_service_id = env.managed_service_experiment_id;
  prepare_common(
      r,
      env,
      process_env,
      paths,
      {paths.config_dir, paths.logs / "inference", paths.logs / "trainer", env.output_dir});
  return run_with_trap(r, [&] { rl_body(r, env, process_env, place, paths); });
}

int run_sft(const EnvMap &process_env) {
  const SftEnv env = parse_sft_env(process_env);
  const Paths paths = sft_paths(env);
  Replica r(env, "sft", true);
  prepare_common(
      r, env, process_env, paths, {paths.config_dir, paths.logs / "trainer", env.output_dir});
  return run_with_trap(r, [&] { sft_body(r, env, process_env, paths); });
}

} // namespace pb::node
