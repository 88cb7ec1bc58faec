// SPDX-License-Identifier: MIT
#include "single.hpp"

#include <primebeaker/checkpoints/recovery.hpp>
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/exec.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/signals.hpp>
#include <primebeaker/core/subprocess.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/rewrite_envs.hpp>
#include <primebeaker/node/plan.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace pb::node {

namespace {

std::string value_or(const std::map<std::string, std::string> &environment,
                     const std::string &name,
                     const std::string &fallback) {
  const auto it = environment.find(name);
  return it == environment.end() || it->second.empty() ? fallback : it->second;
}

} // namespace

SingleNodeStart plan_single_node(const std::string &program,
                                 const std::map<std::string, std::string> &environment) {
  if (program != "sft" && program != "rl") {
    throw usage_error(fmt::format("node single expects sft or rl, got '{}'", program));
  }
  const auto replica = contract::ReplicaEnv::from_env(
      program == "sft" ? contract::Kind::single_sft : contract::Kind::single_rl, environment);
  SingleNodeStart start;
  start.program = program;
  start.config_path = replica.config_path;
  start.output_dir = replica.output_dir;
  start.working_dir = replica.working_dir;
  start.setup_command = replica.setup_command.value_or("");
  start.result_dir = value_or(environment, "PRIMEBEAKER_RESULT_DIR", "/tmp/beaker-result");
  start.runtime_toml =
      value_or(environment, "PRIMEBEAKER_RUNTIME_TOML", "/tmp/primebeaker-runtime.toml");
  start.recovery.replica = "node single " + program;
  start.recovery.working_dir = replica.working_dir;
  start.recovery.output_dir = replica.output_dir;
  start.recovery.config_path = replica.config_path;
  start.recovery.trainer_ranks = static_cast<int>(std::max<std::int64_t>(1, replica.num_gpus));
  start.recovery.trainer_only = program == "sft";
  start.recovery.policy = {replica.max_recoveries, replica.max_restarts_on_errors};
  fill_identity(start.recovery, environment);
  start.v0_9 = replica.generation == primerl::Generation::v0_9;
  start.recovery.generation = replica.generation;
  start.recovery.run_dir_name = replica.run_dir_name;
  start.run_name = replica.run_name;
  start.stop_grace_seconds = parse_tuning(environment).stop_grace_seconds;

  // The node's cache chain (each default only when unset or empty, later ones built on the
  // effective value of earlier ones), with TMPDIR on the scratch volume.
  start.cache_defaults = cache_defaults(environment, replica.scratch, replica.scratch + "/tmp");
  const auto effective = [&](const std::string &name) {
    const auto it = start.cache_defaults.find(name);
    return it != start.cache_defaults.end() ? it->second : environment.at(name);
  };
  if (start.v0_9) {
    // Prime-RL v0.9's run identity; a random PRL_RUN_ID per restart would split the W&B run.
    start.cache_defaults["PRL_RUN_ID"] = replica.wandb_run_id;
    start.cache_defaults["PRL_RUN_NAME"] =
        replica.run_name.empty() ? replica.run_dir_name : replica.run_name;
  }
  start.directories = {start.output_dir,
                       effective("XDG_CACHE_HOME"),
                       effective("HF_HOME"),
                       effective("TORCH_HOME"),
                       effective("TMPDIR")};
  return start;
}

namespace {

std::string quoted(const std::vector<std::string> &argv) {
  std::vector<std::string> words;
  for (const auto &a : argv) {
    words.push_back(text::shell_quote(a));
  }
  return text::join(words, " ");
}

} // namespace

std::string single_plan_text(const SingleNodeStart &start) {
  std::string out = fmt::format(
      "node single {}: one container, Prime-RL's `{}` supervised\n", start.program, start.program);
  int n = 0;
  const auto line = [&](const std::string &text) { out += fmt::format("{:>3}. {}\n", ++n, text); };
  line("make directory " + start.result_dir);
  line("enter " + start.working_dir);
  if (!start.setup_command.empty()) {
    line("run setup command (failure: exit 1)\n       argv: " +
         quoted({"bash", "-lc", start.setup_command}));
  }
  line("require on PATH: " + start.program);
  std::string dirs = "make directories";
  for (const auto &d : start.directories) {
    dirs += "\n       " + d;
  }
  line(dirs);
  line("check " + start.config_path + (start.program == "sft" ? " (and its data paths)" : ""));
  line(fmt::format("decide the resume point from the checkpoints on disk ({} trainer ranks{}), "
                   "record the start in the ledger -> ${{resume}}",
                   start.program == "rl" ? std::string("deployment.num_train_gpus")
                                         : std::to_string(start.recovery.trainer_ranks),
                   start.program == "rl" ? " of the TOML" : ""));
  line("write " + start.runtime_toml + ": " +
       (start.program == "rl" ? "the environment rewrite of " : "a copy of ") + start.config_path +
       " with ${resume}");
  std::string run = "start " + start.program + " and wait for its exit (the replica's exit code)" +
                    "\n       argv: " + quoted({start.program, "@", start.runtime_toml});
  for (const auto &[k, v] : start.cache_defaults) {
    run += "\n       env:  " + k + "=" + text::shell_quote(v);
  }
  line(run);
  return out;
}

std::string single_plan_json(const SingleNodeStart &start) {
  nlohmann::json j = {
      {"command", "node single " + start.program},
      {"working_dir", start.working_dir},
      {"result_dir", start.result_dir},
      {"setup_command",
       start.setup_command.empty() ? nlohmann::json() : nlohmann::json(start.setup_command)},
      {"directories", start.directories},
      {"config_path", start.config_path},
      {"runtime_toml", start.runtime_toml},
      {"resume",
       {{"replica", start.recovery.replica},
        {"trainer_ranks",
         start.program == "rl" ? nlohmann::json() : nlohmann::json(start.recovery.trainer_ranks)},
        {"max_recoveries", start.recovery.policy.max_recoveries},
        {"max_restarts_on_errors", start.recovery.policy.max_restarts_on_errors}}},
      {"process",
       {{"argv", {start.program, "@", start.runtime_toml}}, {"env", start.cache_defaults}}}};
  return j.dump(2) + "\n";
}

namespace {

// Prime-RL as a child in its own process group: SIGTERM/SIGINT/SIGHUP are passed on to the
// group, which gets `grace` seconds before SIGKILL. Returns its exit code (128 + signal).
int supervise(const proc::Command &training, double grace) {
  static const signals::Scope scope(
      signals::ScopeOptions{.hangup = true, .child_exit_wakes = true});
  proc::SpawnSpec spec;
  spec.argv = training.argv;
  spec.env = proc::child_environment(training);
  auto child = proc::Child::spawn(spec);
  for (;;) {
    if (const auto status = child.poll()) {
      return status->code();
    }
    if (signals::Scope::pending() != 0) {
      const auto status =
          child.stop(std::chrono::milliseconds(static_cast<long long>(grace * 1000.0)));
      const int sig = signals::Scope::pending();
      // We were stopped from outside: that is the attempt's end, whatever Prime-RL made of it.
      return status.code() == 0 ? 0 : (sig == SIGINT ? 130 : 143);
    }
    signals::Scope::sleep(std::chrono::milliseconds(500), {});
  }
}

} // namespace

int run_single_node(const SingleNodeStart &start, proc::Runner &runner) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(start.result_dir, ec);
  if (ec) {
    throw failure(fmt::format("cannot create {}: {}", start.result_dir, ec.message()));
  }
  if (::chdir(start.working_dir.c_str()) != 0) {
    throw failure(fmt::format(
        "cannot enter working directory {}: {}", start.working_dir, std::strerror(errno)));
  }
  if (!start.setup_command.empty()) {
    proc::Command setup;
    setup.argv = {"bash", "-lc", start.setup_command};
    setup.capture_stdout = false;
    setup.capture_stderr = false;
    const auto result = runner.run(setup);
    if (!result.ok()) {
      throw failure(
          fmt::format("the setup command (PRIMEBEAKER_SETUP_COMMAND) failed: {}", result.status()));
    }
  }
  proc::Command training;
  training.argv = {start.program, "@"};
  training.env_set = start.cache_defaults;
  const auto path = proc::child_environment(training)["PATH"];
  if (!proc::find_executable(start.program, path)) {
    throw tool_error(fmt::format("Prime-RL's `{}` command is not on PATH", start.program));
  }
  for (const auto &dir : start.directories) {
    fs::create_directories(dir, ec);
    if (ec) {
      throw failure(fmt::format("cannot create {}: {}", dir, ec.message()));
    }
  }
  if (!fs::is_regular_file(start.config_path, ec)) {
    throw input_error(fmt::format("config file not found: {}", start.config_path));
  }
  const auto document = toml::Document::load(start.config_path);
  if (start.program == "sft") {
    for (const char *key : {"data.name", "val.data.name"}) {
      const auto parts = std::string_view(key) == "data.name"
                             ? std::vector<std::string>{"data", "name"}
                             : std::vector<std::string>{"val", "data", "name"};
      const toml::Value *value = document.root().find_path(parts);
      const std::string *data = value ? value->string() : nullptr;
      if (data == nullptr || ::access(data->c_str(), R_OK) != 0) {
        throw input_error(fmt::format("{}: {} is not a readable path{}",
                                      value ? document.location(*value) : document.source_name(),
                                      key,
                                      data ? ": " + *data : std::string()));
      }
    }
  }

  // The recovery step (docs/recovery.md): the resume point, decided here on every start.
  RecoveryRequest request = start.recovery;
  if (start.program == "rl") {
    request.trainer_ranks = checkpoints::expected_trainer_ranks(document, request.generation);
  }
  const auto recovery = start_recovery(request, [](const std::string &line) {
    std::cerr << "primebeaker node single: " << line << '\n';
  });
  const auto &decision = recovery.decision;
  if (!decision.refusal.empty()) {
    record_end(recovery, decision.refusal_code, decision.refusal_code, decision.refusal);
    throw Error(decision.refusal_code, decision.refusal);
  }

  // The source TOML is never edited: what Prime-RL reads is a container-local copy.
  // RL's legacy environment ids point at the bundled modules (v0.8.0; v0.9 has none).
  const auto source =
      start.program == "rl"
          ? toml::Document::parse(launch::rewrite_environment_ids(document), start.runtime_toml)
          : toml::Document::parse(document.text(), start.runtime_toml);
  const std::string runtime_text = start.v0_9
                                       ? v0_9_runtime_toml(source, decision, start.run_name)
                                       : checkpoints::recovery::resume_toml(source, decision);
  fs::create_directories(fs::path(start.runtime_toml).parent_path(), ec);
  pb::fs::write_file_atomic(start.runtime_toml, runtime_text);
  training.argv.push_back(start.runtime_toml);
  std::cout.flush();
  const int code = supervise(training, start.stop_grace_seconds);
  record_end(recovery,
             code,
             code,
             code == 0 ? "" : fmt::format("{} exited with code {}", start.program, code));
  return code;
}

} // namespace pb::node
