// SPDX-License-Identifier: MIT
// `primebeaker evaluation worker`: the in-container evaluation worker (docs/evaluation-worker.md).
// It waits for the service stack the scheduler started (Redis, gateway, required services), runs
// `python3 -m MODULE ARGS...` in its own process group, forwards signals to it, and stops the
// stack's Beaker experiment exactly once on every way out.
#pragma once

#include <primebeaker/core/clock.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/core/subprocess.hpp>
#include <primebeaker/registry/registry.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::evaluation_worker {

using EnvMap = proc::EnvMap;

// The env contract the evaluator spec sets (docs/evaluation-worker.md, "Environment").
struct WorkerEnv {
  std::string module;                           // dotted Python module path
  std::vector<std::string> arguments;           // after `-m MODULE`
  std::map<std::string, int> required_services; // name -> minimum live count
  std::string coordination_root;                // the endpoint registry (plain path or URI)
  std::string service_experiment_id;            // stopped on exit unless keep_services
  bool keep_services = false;
  std::chrono::milliseconds readiness_timeout{7200 * 1000}; // for each of the three waits
  std::optional<std::string> registry; // external registry: the `redis` wait is skipped
  std::string python = "python3";      // PRIMEBEAKER_PYTHON
  std::string beaker = "beaker";       // PRIMEBEAKER_BEAKER
};

// How fast the worker reacts; defaults are for production, tests and benches shorten them.
struct Tuning {
  std::chrono::milliseconds poll_interval{200};    // endpoint and roster polls
  std::chrono::milliseconds probe_timeout{2000};   // one health check
  std::chrono::milliseconds stop_grace{20000};     // SIGTERM -> SIGKILL for the child's group
  std::chrono::milliseconds progress_every{30000}; // repeat an unchanged progress line
};

// Reads the contract from `env`. Pure. Throws pb::Error (exit 1) with the variable's name and
// what is wrong; nothing has been started or stopped at that point.
WorkerEnv parse_worker_env(const EnvMap &env);

// PRIMEBEAKER_EVALUATION_POLL_SECONDS and PRIMEBEAKER_EVALUATION_STOP_GRACE_SECONDS over the
// defaults. Pure. Throws pb::Error (exit 1) for a value that is not a non-negative number.
Tuning parse_tuning(const EnvMap &env);

// `<python> -m <module> <arguments...>`.
proc::Argv child_argv(const WorkerEnv &worker);

// The worker's whole environment plus REGISTRY, REGISTRY_URL, LITEREGISTRY_GATEWAY_URL and
// OPENAI_BASE_URL (<gateway without trailing "/">/v1). Pure.
EnvMap
child_environment(const EnvMap &base, const std::string &registry, const std::string &gateway);

// How a found endpoint is judged healthy.
enum class HealthCheck {
  redis, // Redis PING answers PONG
  http,  // GET <uri>/health answers 2xx or 3xx
  none,  // always
};

// Throws pb::Error (exit 1) with the reason when `uri` is not healthy under `check`.
void check_health(HealthCheck check, const std::string &uri, std::chrono::milliseconds timeout);

struct EndpointWait {
  std::string name; // "redis", "gateway"
  HealthCheck check = HealthCheck::none;
  std::chrono::milliseconds timeout{7200 * 1000};
  std::chrono::milliseconds poll_interval{200};
  Clock *clock = nullptr;                               // nullptr: the system clock
  std::function<void(std::chrono::milliseconds)> sleep; // empty: std::this_thread::sleep_for
  // Replaces check_health (tests); receives the found URI.
  std::function<void(const std::string &)> health;
  std::function<void(const std::string &)> progress; // one line per change of state
  std::chrono::milliseconds probe_timeout{2000};
};

// Polls `endpoints` until the newest live record named `wait.name` passes its health check and
// returns its URI. Read and health errors are retried. At the deadline throws pb::Error (exit 1)
// "timed out waiting for endpoint '<name>' in <root>" plus "; last published URI was <uri>" and
// the last health error when a record had been seen.
std::string wait_for_endpoint(registry::Registry &endpoints, const EndpointWait &wait);

// The status the worker exits with for a finished child: its exit code, or 128 + N when it was
// killed by signal N (docs/evaluation-worker.md, "Exit status").
int exit_status_of(const proc::ExitStatus &status);

// Runs the whole worker with `env` as its environment and returns the exit status. Prints
// STOPPED_EXPERIMENT_ID=<id> on stdout when it stopped the service experiment.
int run_worker(const EnvMap &env, const Tuning &tuning);

} // namespace pb::evaluation_worker
