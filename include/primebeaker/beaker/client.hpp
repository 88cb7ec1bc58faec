// SPDX-License-Identifier: MIT
// The `beaker` CLI, run by argv through pb::proc::Runner (docs/launch.md): the program is
// `PRIMEBEAKER_BEAKER` when set, else `beaker` from PATH.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>

#include <filesystem>
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

class Client {
public:
  // `program` as from program_from_environment(); the runner is borrowed.
  Client(proc::Runner &runner, std::string program);

  // Runs `beaker experiment create ...`; returns its stdout. A missing program or a non-zero
  // exit throws pb::Error exit 4 whose message holds beaker's stderr (or stdout if empty).
  std::string create_experiment(const std::string &name,
                                const std::string &workspace,
                                const std::string &spec_path);

  // `beaker experiment get ID --format json`, parsed. Beaker prints an array; a single object
  // is wrapped into one. Failure or unparsable output throws pb::Error exit 4.
  OrderedJson get_experiment(const std::string &id);

  // `beaker experiment stop ID`. Failure throws pb::Error exit 4.
  void stop_experiment(const std::string &id);

  // Any other call: runs `program args...` and returns the result; a program that cannot be
  // started throws pb::Error exit 4. `what` names the call in messages.
  proc::Result run(const proc::Argv &args);

  // Like run(), but a non-zero exit throws pb::Error exit 4 "beaker <what> failed ...: <stderr>".
  proc::Result run_checked(const proc::Argv &args, const std::string &what);

  const std::string &program() const { return m_program; }

private:
  proc::Runner &m_runner;
  std::string m_program;
};

} // namespace pb::beaker
