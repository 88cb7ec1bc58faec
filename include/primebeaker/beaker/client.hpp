// SPDX-License-Identifier: MIT
// The `beaker` CLI, run by argv through pb::proc::Runner (docs/launch.md): the program is
// `PRIMEBEAKER_BEAKER` when set, else `beaker` from PATH.
#pragma once

#include <primebeaker/core/clock.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace pb::beaker {

// The program to run: the value of PRIMEBEAKER_BEAKER in `environment` when non-empty, else
// "beaker" (looked up on PATH by the runner). Pure.
std::string program_from_environment(const std::map<std::string, std::string> &environment);

// `beaker experiment create --name NAME --workspace WS --format json SPEC` with `program` as
// argv[0]: the created experiment comes back as JSON (an array with the experiment object), not
// as text. This is also what previews show as `submit_command` (with program "beaker"). Pure.
proc::Argv experiment_create_argv(const std::string &program,
                                  const std::string &name,
                                  const std::string &workspace,
                                  const std::string &spec_path);

// What `beaker experiment create` printed about the experiment it created.
struct CreatedExperiment {
  std::string id;
  std::optional<std::string> url; // when beaker's JSON gives one ("url" or "link")
};

// The created experiment in `beaker experiment create` output: with `--format json` the first
// object of the array (or a lone object) and its "id"; otherwise, for older CLIs and text
// answers, the ID of "Experiment <ID> submitted" (ANSI colour codes ignored). nullopt when there
// is none. Pure.
std::optional<CreatedExperiment> parse_created_experiment(std::string_view create_stdout);

// parse_created_experiment(create_stdout)'s ID. Pure.
std::optional<std::string> parse_created_experiment_id(std::string_view create_stdout);

// Throws pb::Error exit 4 unless `program` (as from program_from_environment()) can be run, so
// that a submit stops before it stages, writes a spec or launches services it cannot create.
void require_program(const std::string &program,
                     const std::map<std::string, std::string> &environment);

// The exit code of a create Beaker refuses because the workspace already has an experiment of
// that name (docs/cli.md "Exit status"; `--if-exists adopt` takes that experiment instead).
inline constexpr int k_exit_already_exists = 5;

// How waits happen (retries here, the follow loop in runs): the clock and the sleep are
// injectable so tests never sleep. `sleep` returns false when it was interrupted (Ctrl-C);
// `interrupted` gives the signal that asked us to stop (SIGINT, SIGTERM), 0 for none.
struct Timing {
  Clock *clock = nullptr;                               // nullptr: the system clock
  std::function<bool(std::chrono::milliseconds)> sleep; // empty: std::this_thread::sleep_for
  std::function<int()> interrupted;                     // empty: never
};

// How often a call that fails transiently is tried. One attempt by default: a create or a
// group create that timed out may have happened, so only reads and stops ask for more.
struct RetryPolicy {
  int attempts = 1;                            // calls in all, for transient failures
  std::chrono::milliseconds first_delay{1000}; // doubled after each failure
  std::chrono::milliseconds max_delay{30000};
  // What `status`, `follow`, `stop` and the recovery controller use (docs/runs.md "Transient
  // failures"): 6 attempts, 1 s doubling to at most 30 s.
  static RetryPolicy for_reads() {
    return RetryPolicy{6, std::chrono::milliseconds(1000), std::chrono::milliseconds(30000)};
  }
};

// True when beaker's error text looks transient (timeouts, connection refused/reset, EOF,
// HTTP 429/500/502/503/504, "try again"). Pure.
bool is_transient_failure(std::string_view stderr_text);

// The one client of the `beaker` CLI: every command that talks to Beaker goes through it.
class Client {
public:
  // `program` as from program_from_environment(); the runner is borrowed.
  Client(proc::Runner &runner, std::string program, Timing timing = {}, RetryPolicy retry = {});

  // Runs `beaker experiment create ...` once (never retried); returns its stdout. A missing
  // program or a non-zero exit throws pb::Error exit 4 whose message holds beaker's stderr (or
  // stdout if empty).
  std::string create_experiment(const std::string &name,
                                const std::string &workspace,
                                const std::string &spec_path);

  // `beaker experiment get ID --format json`, parsed. Beaker prints an array; a single object
  // is wrapped into one. Failure or unparsable output throws pb::Error exit 4.
  OrderedJson get_experiment(const std::string &id);
  // The experiment `reference` (an id or author/name) names, nullopt when beaker says there is
  // none ("not found"); other failures throw as get_experiment does.
  std::optional<OrderedJson> find_experiment(const std::string &reference);

  // `beaker experiment stop ID`. Failure throws pb::Error exit 4.
  void stop_experiment(const std::string &id);

  std::string job_logs(const std::string &job_id); // job logs JOBID
  // `beaker job list --cluster C --format json`: the jobs that asked for C, as printed
  // (runs/queue.cpp reads them; docs/runs.md "Queue position").
  OrderedJson cluster_jobs(const std::string &cluster);
  OrderedJson workspace_experiments(const std::string &ws); // workspace experiments WS, a list
  OrderedJson group_experiments(const std::string &group);  // group experiments G, a list
  std::string whoami();                                     // account whoami -> the name
  // `beaker cluster list ACCOUNT --format json` and `beaker cluster get NAME --format json`:
  // Beaker's answers as printed (pb::clusters reads them; docs/clusters.md).
  OrderedJson list_clusters(const std::string &account);
  OrderedJson get_cluster(const std::string &name);

  // Any other call: runs `program args...` once and returns the result; a program that cannot
  // be started throws pb::Error exit 4.
  proc::Result run(const proc::Argv &args);

  // Like run(), tried again per the retry policy while it fails transiently; a failure left
  // throws pb::Error exit 4 "beaker <what> failed ...: <stderr>".
  proc::Result run_checked(const proc::Argv &args, const std::string &what);
  // run_checked() whose stdout must be JSON (exit 4 when it is not).
  OrderedJson run_json(const proc::Argv &args, const std::string &what);

  const std::string &program() const { return m_program; }
  Timing &timing() { return m_timing; }
  proc::Runner &runner() { return m_runner; } // `follow --recover` runs `rl resume` through it

private:
  OrderedJson experiments_of(const std::string &kind, const std::string &of);

  proc::Runner &m_runner;
  std::string m_program;
  Timing m_timing;
  RetryPolicy m_retry;
};

} // namespace pb::beaker
