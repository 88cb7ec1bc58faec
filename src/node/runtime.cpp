// SPDX-License-Identifier: MIT
// `primebeaker node rl|sft|single`: the executor of a replica's plan (docs/node.md "The plan").
#include "runtime.hpp"

#include "config_helper.hpp"
#include "notify_hook.hpp"
#include "recovery.hpp"
#include "support.hpp"

#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/rewrite_envs.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <variant>

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

// `ulimit -l unlimited` where the container allows it, else as far as the hard limit goes.
void lift_locked_memory_limit(int rank) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return;
  }
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  if (::setrlimit(RLIMIT_MEMLOCK, &unlimited) == 0) {
    return;
  }
  rlimit raised{limit.rlim_max, limit.rlim_max};
  ::setrlimit(RLIMIT_MEMLOCK, &raised);
  if (raised.rlim_max != RLIM_INFINITY) {
    note(rank,
         "the locked-memory limit stays at {} KiB (the container's hard limit): KV-cache offload "
         "may fail to pin its buffers",
         raised.rlim_max / 1024);
  }
}

void raise_open_file_limit(int limit_wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return;
  }
  const auto wanted = static_cast<rlim_t>(limit_wanted);
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

// What one replica holds while its plan runs.
struct Replica {
  const ReplicaPlan &plan;
  int rank = 0;
  Tuning tuning;
  Rendezvous rendezvous;
  Supervisor supervisor;
  EnvMap child_env; // what every child starts from
  // Replica 0's start record in the attempt ledger (docs/recovery.md); its end goes there too.
  std::optional<RecoveryOutcome> recovery;
  Clock::time_point started = Clock::now();

  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - started).count();
  }

  explicit Replica(const ReplicaPlan &plan_)
      : plan(plan_), rank(plan_.rank), tuning(plan_.tuning),
        rendezvous(plan_.rendezvous_dir,
                   plan_.rank,
                   plan_.total_nodes,
                   plan_.tuning.poll_seconds,
                   plan_.rendezvous_timeout_seconds) {}

  // Stops the replica when a peer asks for it (docs/node.md).
  void check_peers() {
    if (!rendezvous.joined()) {
      return;
    }
    const Observation seen = rendezvous.observe();
    const auto verdict = watcher_verdict(seen, !plan.peer_success_ends);
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
    const auto err_file = plan.local_tmp / "registry-step.stderr";
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
        if (plan.publishes_complete && code == 0) {
          rendezvous.publish("complete", fmt::format("Prime-RL completed on node {}\n", rank));
        }
        if (code != 0 && !rendezvous.read("complete") && !rendezvous.read("shutdown.requested")) {
          rendezvous.publish("shutdown.requested",
                             fmt::format("{} exited with code {}\n", plan.exit_subject, code));
        }
        rendezvous.publish(fmt::format("status.{}", rank), status_text(code, plan.role));
      } catch (const Error &e) {
        note(rank, "warning: could not publish the exit status: {}", e.what());
      }
    }
    supervisor.stop_all(tuning.stop_grace_seconds);
    if (recovery) {
      record_end(*recovery, code, root_code(code), message);
      notify_end(*recovery, code); // node single only (docs/notify.md)
    }
    if (plan.managed_service_experiment_id && !plan.on_exit.empty()) {
      const auto &service = *plan.managed_service_experiment_id;
      proc::Command stop;
      stop.argv = plan.on_exit;
      stop.timeout = std::chrono::seconds(120);
      try {
        const auto r = proc::SystemRunner().run(stop);
        if (!r.ok()) {
          note(rank,
               "warning: beaker experiment stop {} failed ({}): {}",
               service,
               r.status(),
               trimmed(r.err));
        } else {
          note(rank, "stopped the managed service experiment {}", service);
        }
      } catch (const Error &e) {
        note(rank, "warning: cannot stop the managed service experiment {}: {}", service, e.what());
      }
    }
    return code;
  }
};

void require_programs(const EnvMap &env, const step::RequirePrograms &required) {
  const auto &programs = required.programs;
  const auto it = env.find("PATH");
  const std::string path = it != env.end() ? it->second : "/usr/bin:/bin";
  std::vector<std::string> missing;
  for (const auto &p : programs) {
    if (!proc::find_executable(p, path)) {
      missing.push_back(p);
    }
  }
  if (!missing.empty()) {
    throw tool_error(required.failure.empty()
                         ? fmt::format("cannot find {} on PATH", text::join(missing, ", "))
                         : required.failure);
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
                                 const step::ResolveConfig &s,
                                 const proc::SpawnSpec &helper,
                                 nlohmann::json request) {
  const auto &config_path = s.config_path;
  const auto &request_path = s.request_path;
  const auto &result_path = s.result_path;
  fs::write_file_atomic(s.script, config_helper_source());
  fs::write_file_atomic(request_path, request.dump(2) + "\n");
  std::error_code ec;
  std::filesystem::remove(result_path, ec);
  note(r.rank, "resolving {} through Prime-RL", config_path.string());
  const auto status = r.run_step(s.helper.name, helper);
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

EnvMap runtime_env_values(const nlohmann::json &runtime) {
  EnvMap out;
  for (const auto &[k, v] : runtime.items()) {
    out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out;
}

// Rank 0 writes the runtime files every replica reads: runtime.json (machine-read) and the
// shell env files of docs/node.md (for people and scripts), then runtime.ready last.
void publish_runtime(Replica &r, const nlohmann::json &result, const step::ResolveConfig &s) {
  nlohmann::json stored = result;
  stored.erase("stale_state");
  for (const auto &component : s.components) {
    const std::string file = component + ".env";
    r.rendezvous.publish(
        "runtime/" + file,
        env_file_text(json_env(result.value(component + "_env", nlohmann::json::object())), file));
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
void decide_recovery(Replica &r, const step::DecideResume &s) {
  if (!s.leader) {
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
  RecoveryRequest request = s.request;
  if (s.trainer_ranks_from_toml) {
    request.trainer_ranks = checkpoints::expected_trainer_ranks(
        toml::Document::load(request.config_path), request.generation);
  }
  r.recovery = start_recovery(request, [&](const std::string &line) { note(r.rank, "{}", line); });
  notify_start(*r.recovery); // node single only (docs/notify.md)
  if (s.publish) {
    r.rendezvous.publish("recovery.json", r.recovery->published().dump() + "\n");
  }
  const auto &decision = r.recovery->decision;
  if (!decision.refusal.empty()) {
    throw Error(decision.refusal_code, decision.refusal);
  }
}

// The runtime TOML of step::WriteRuntimeToml: the source is never edited.
void write_runtime_toml(const step::WriteRuntimeToml &s, const recovery::Decision &decision) {
  const auto document = toml::Document::load(s.config_path);
  const auto source =
      s.rewrite_environment_ids
          ? toml::Document::parse(primerl::rewrite_environment_ids(document), s.path.string())
          : toml::Document::parse(document.text(), s.path.string());
  const std::string text = s.generation == primerl::Generation::v0_9
                               ? v0_9_runtime_toml(source, decision, s.run_name)
                               : recovery::resume_toml(source, decision);
  std::error_code ec;
  std::filesystem::create_directories(s.path.parent_path(), ec);
  fs::write_file_atomic(s.path, text);
}

// step::CheckConfig: the TOML exists, and the paths it names that Prime-RL reads first do too.
void check_config(const step::CheckConfig &s) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(s.config_path, ec)) {
    throw input_error(fmt::format("config file not found: {}", s.config_path.string()));
  }
  const auto document = toml::Document::load(s.config_path);
  for (const auto &key : s.readable_paths) {
    const toml::Value *value = document.root().find_path(text::split(key, '.'));
    const std::string *path = value ? value->string() : nullptr;
    if (path == nullptr || ::access(path->c_str(), R_OK) != 0) {
      throw input_error(fmt::format("{}: {} is not a readable path{}",
                                    value ? document.location(*value) : document.source_name(),
                                    key,
                                    path ? ": " + *path : std::string()));
    }
  }
}

// ---------------------------------------------------------------------------------------------

// Executes a ReplicaPlan (docs/node.md "The plan"): each step in order, substituting the values
// learned on the way (the plan's ${...} facts). Nothing here decides what runs: the argv, env,
// GPUs, logs and waits are the plan's.
class Executor {
public:
  Executor(Replica &r, const ReplicaPlan &plan) : m_r(r), m_plan(plan) {}

  void run() {
    for (const auto &s : m_plan.steps) {
      std::visit([this](const auto &step) { (*this)(step); }, s);
    }
  }

  void operator()(const step::MakeDirs &s) {
    std::vector<std::filesystem::path> dirs;
    for (const auto &dir : s.dirs) {
      if (auto path = substitute(dir.string(), m_facts); !path.empty()) {
        dirs.emplace_back(std::move(path));
      }
    }
    make_dirs(dirs);
  }

  void operator()(const step::JoinAttempt &s) {
    m_r.rendezvous.join();
    m_facts["attempt_dir"] = m_r.rendezvous.dir().string();
    note(m_r.rank, "joined attempt {} in {}", m_r.rendezvous.attempt(), s.rendezvous_dir.string());
    note(m_r.rank, "{}", m_plan.summary);
  }

  void operator()(const step::DecideResume &s) {
    decide_recovery(m_r, s);
    m_facts["resume"] = m_r.recovery ? m_r.recovery->helper_request().dump() : "replica 0's";
  }

  void operator()(const step::Run &s) {
    note(m_r.rank, "running the {}", s.process.name);
    if (s.registry_step) {
      const auto outcome = m_r.registry_step(s.process.name, spec(s.process));
      if (outcome.status.code() != 0) {
        throw Error(s.failure_code, s.failure + ": " + outcome.error);
      }
      return;
    }
    const auto status = m_r.run_step(s.process.name, spec(s.process), options(s.process.log));
    if (status.code() != 0) {
      throw Error(s.failure_code, fmt::format("{} ({})", s.failure, status.describe()));
    }
  }

  void operator()(const step::RequirePrograms &s) { require_programs(m_r.child_env, s); }

  void operator()(const step::CheckConfig &s) { check_config(s); }

  void operator()(const step::WriteRuntimeToml &s) {
    write_runtime_toml(s, m_r.recovery->decision);
    note(m_r.rank, "wrote {}", s.path.string());
  }

  void operator()(const step::RaiseOpenFiles &s) {
    raise_open_file_limit(s.limit);
    if (s.unlimited_locked_memory) {
      lift_locked_memory_limit(m_r.rank);
    }
  }

  void operator()(const step::WriteFile &s) {
    const std::filesystem::path path = substitute(s.path, m_facts);
    make_dirs({path.parent_path()});
    fs::write_file_atomic(path, substitute(s.content, m_facts));
  }

  // Polled under supervision, so a peer's failure or a child's exit still ends the wait.
  void operator()(const step::WaitPort &s) {
    const std::string host = substitute(s.host, m_facts);
    const auto deadline = Clock::now() + std::chrono::seconds(s.timeout_seconds);
    while (!accepts_connections(host, s.port, 1.0)) {
      if (Clock::now() >= deadline) {
        throw failure(fmt::format("{} did not accept connections on {}:{} within {} s",
                                  s.what,
                                  host,
                                  s.port,
                                  s.timeout_seconds));
      }
      m_r.pause(std::min(1.0, std::max(0.05, m_r.tuning.poll_seconds)));
    }
    note(m_r.rank, "{} accepts connections on {}:{}", s.what, host, s.port);
  }

  void operator()(const step::SetEnv &s) {
    for (const auto &[k, v] : s.env) {
      m_r.child_env[k] = substitute(v, m_facts);
    }
  }

  void operator()(const step::Publish &s) {
    m_r.rendezvous.publish(s.file, substitute(s.content, m_facts));
  }

  void operator()(const step::WaitFor &s) {
    m_facts[s.fact] = trimmed(m_r.rendezvous.wait_for(s.file, s.file));
  }

  void operator()(const step::ResolveConfig &s) {
    nlohmann::json result;
    if (s.leader) {
      auto request = nlohmann::json::parse(s.request_json);
      request["resume"] = m_r.recovery->helper_request();
      result = run_config_helper(m_r, s, spec(s.helper), request);
      publish_runtime(m_r, result, s);
    } else {
      result = read_runtime(m_r);
    }
    for (const auto &[k, v] : runtime_env_values(result["runtime"])) {
      m_facts["runtime." + k] = v;
    }
    // prefill/decode: a disaggregated deployment's per-role inference environment.
    for (const char *component : {"trainer", "orchestrator", "inference", "prefill", "decode"}) {
      m_component_env[component] =
          json_env(result.value(std::string(component) + "_env", nlohmann::json::object()));
    }
  }

  void operator()(const step::BindWorkers &s) {
    std::vector<NodeSlot> slots;
    for (int n = 0; n < s.total_nodes; ++n) {
      NodeSlot slot;
      slot.host = m_facts.at(fmt::format("host.{}", n));
      const auto layout = parse_layout(m_facts.at(fmt::format("layout.{}", n)));
      if (!layout) {
        throw failure(
            fmt::format("malformed {}", m_r.rendezvous.file(fmt::format("layout.{}", n)).string()));
      }
      slot.inference = *layout;
      slots.push_back(slot);
    }
    const auto workers = global_workers(
        slots, number("runtime.BACKEND_PORT"), number("runtime.INFERENCE_TP"), s.expected_ranks);
    std::vector<std::string> urls;
    std::vector<std::string> admin;
    for (const auto &w : workers) {
      urls.push_back(w.url);
      admin.push_back(w.admin_url);
    }
    m_facts["workers"] = text::join(urls, " ");
    m_facts["admin_urls"] = text::join(admin, " ");
  }

  void operator()(const step::Start &s) {
    m_r.supervisor.start(s.process.name, spec(s.process), options(s.process.log));
    note(m_r.rank,
         "started {} ({:.2f} s after this replica started)",
         s.process.name,
         m_r.seconds_since_start());
  }

  void operator()(const step::StartInferenceServers &s) {
    const int base = number(s.port_fact);
    const auto blocks = tp_blocks(s.slice, number("runtime.INFERENCE_TP"));
    for (size_t k = 0; k < blocks.size(); ++k) {
      EnvMap local = {{"k", std::to_string(k)},
                      {"gpus", blocks[k]},
                      {"port", std::to_string(base + static_cast<int>(k))}};
      std::vector<std::filesystem::path> dirs;
      for (const auto &d : s.dirs) {
        dirs.emplace_back(substitute(d, with(local)));
      }
      make_dirs(dirs);
      for (const auto &[path, content] : s.files) {
        fs::write_file_atomic(substitute(path, with(local)), substitute(content, with(local)));
      }
      m_r.supervisor.start(
          substitute(s.each.name, with(local)), spec(s.each, local), options(s.each.log, local));
    }
    note(m_r.rank, "started {} inference server(s)", blocks.size());
  }

  void operator()(const step::Pause &s) { m_r.pause(s.seconds); }

  void operator()(const step::Probe &s) {
    std::string last_error;
    for (int attempt = 1; attempt <= s.attempts; ++attempt) {
      const auto probe = m_r.registry_step(s.process.name, spec(s.process));
      if (probe.status.code() == 0) {
        note(m_r.rank, "{} succeeded", s.process.name);
        return;
      }
      last_error = probe.error;
      if (attempt < s.attempts) {
        m_r.pause(s.interval_seconds);
      }
    }
    throw failure(s.failure + ": " + last_error + s.hint);
  }

  void operator()(const step::AwaitExit &s) {
    size_t finished = 0;
    for (;;) {
      m_r.tick(m_r.tuning.poll_seconds, [&](const std::string &who, const proc::ExitStatus &st) {
        if (std::find(s.processes.begin(), s.processes.end(), who) == s.processes.end()) {
          m_r.unexpected_exit(who, st);
        }
        if (st.code() != 0) {
          throw Error(st.code(), fmt::format("{} failed ({})", who, st.describe()));
        }
        note(m_r.rank, "{} finished", who);
        ++finished;
      });
      if (!s.processes.empty() && finished == s.processes.size()) {
        return;
      }
    }
  }

private:
  EnvMap with(const EnvMap &local) const {
    EnvMap facts = m_facts;
    for (const auto &[k, v] : local) {
      facts[k] = v;
    }
    return facts;
  }

  int number(const std::string &fact) const {
    const std::string &value = m_facts.at(fact);
    const auto number = text::parse_integer(text::trim(value));
    if (!number || *number < INT32_MIN || *number > INT32_MAX) {
      throw failure(fmt::format("Prime-RL resolved {} to '{}', not a number", fact, value));
    }
    return static_cast<int>(*number);
  }

  proc::SpawnSpec spec(const ProcessSpec &p, const EnvMap &local = {}) const {
    const EnvMap facts = with(local);
    proc::SpawnSpec s;
    s.argv = resolve_argv(p, facts);
    s.env = m_r.child_env;
    if (!p.component_env.empty()) {
      for (const auto &[k, v] : m_component_env.at(p.component_env)) {
        s.env[k] = v;
      }
    }
    for (const auto &[k, v] : p.env) {
      s.env[k] = substitute(v, facts);
    }
    if (!p.gpus.empty()) {
      s.env["CUDA_VISIBLE_DEVICES"] = substitute(p.gpus, facts);
    }
    s.cwd = m_plan.working_dir;
    return s;
  }

  ChildOptions options(const LogSpec &log, const EnvMap &local = {}) const {
    ChildOptions o;
    const std::filesystem::path path = substitute(log.path.string(), with(local));
    switch (log.mode) {
    case LogSpec::Mode::tee:
      o.tee = path;
      o.strip_rank_prefix = log.strip_rank_prefix;
      break;
    case LogSpec::Mode::truncate:
      o.out = proc::Output::truncate_to(path);
      break;
    case LogSpec::Mode::append:
      o.out = proc::Output::append_to(path);
      break;
    case LogSpec::Mode::discard:
      o.out = proc::Output::null();
      break;
    default:
      break;
    }
    return o;
  }

  Replica &m_r;
  const ReplicaPlan &m_plan;
  EnvMap m_facts;
  std::map<std::string, EnvMap> m_component_env;
};

// Runs a plan (the replica's only entry into node::plan was before this): the process-wide
// setup every replica needs (working directory, signals, subreaper), then the steps.
int execute(const ReplicaPlan &plan, const EnvMap &process_env) {
  // Relative paths of the contract (OUTPUT_DIR as written in the TOML) are relative to it.
  std::error_code cd_error;
  std::filesystem::current_path(plan.working_dir, cd_error);
  if (cd_error) {
    throw failure(fmt::format(
        "cannot change to WORKING_DIR {}: {}", plan.working_dir.string(), cd_error.message()));
  }
  Signals::install();
  proc::become_subreaper();
  Replica r(plan);
  r.child_env = process_env;
  for (const auto &[k, v] : plan.env) {
    r.child_env[k] = v;
  }
  return run_with_trap(r, [&] { Executor(r, plan).run(); });
}

// This machine's read-only facts the plan needs.
PlanInputs machine_inputs(const EnvMap &process_env, const Tuning &tuning) {
  PlanInputs inputs;
  inputs.env = process_env;
  inputs.self = self_executable();
  inputs.address = local_address(tuning);
  inputs.infiniband_hcas = infiniband_hcas();
  inputs.rdma_ports = rdma_ports();
  inputs.socket_ifname = interface_of(inputs.address);
  return inputs;
}

} // namespace

ReplicaPlan plan_rl_here(const EnvMap &process_env) {
  const RlEnv env = parse_rl_env(process_env);
  return plan_rl(env, machine_inputs(process_env, env.tuning));
}

ReplicaPlan plan_sft_here(const EnvMap &process_env) {
  const SftEnv env = parse_sft_env(process_env);
  return plan_sft(env, machine_inputs(process_env, env.tuning));
}

ReplicaPlan plan_single_here(const std::string &program, const EnvMap &process_env) {
  const SingleEnv env = parse_single_env(program, process_env);
  return plan_single(env, machine_inputs(process_env, env.tuning));
}

// Each plans once, then executes the plan.
int run_rl(const EnvMap &process_env) {
  const ReplicaPlan plan = plan_rl_here(process_env);
  return execute(plan, process_env);
}

int run_sft(const EnvMap &process_env) {
  const ReplicaPlan plan = plan_sft_here(process_env);
  return execute(plan, process_env);
}

int run_single(const std::string &program, const EnvMap &process_env) {
  const ReplicaPlan plan = plan_single_here(program, process_env);
  return execute(plan, process_env);
}

} // namespace pb::node
