// SPDX-License-Identifier: MIT
#include "single.hpp"

#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/exec.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/launch/rewrite_envs.hpp>
#include <primebeaker/node/plan.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

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

void quarantine_incomplete_checkpoints(const std::string &output_dir, const std::string &suffix) {
  namespace fs = std::filesystem;
  const fs::path checkpoints = fs::path(output_dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(checkpoints, ec)) {
    return;
  }
  std::vector<fs::path> incomplete;
  for (const auto &entry : fs::directory_iterator(checkpoints, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || name.find(".incomplete-") != std::string::npos) {
      continue;
    }
    const fs::path trainer = entry.path() / "trainer";
    if (fs::is_directory(trainer, ec) && !fs::exists(trainer / ".metadata", ec)) {
      incomplete.push_back(entry.path());
    }
  }
  std::sort(incomplete.begin(), incomplete.end());
  for (const auto &dir : incomplete) {
    fs::path target = dir.string() + suffix;
    for (int n = 1; fs::exists(target, ec); ++n) {
      target = fmt::format("{}{}-{}", dir.string(), suffix, n);
    }
    std::cerr << "Quarantining incomplete checkpoint: " << dir.string() << " -> " << target.string()
              << '\n';
    fs::rename(dir, target, ec);
    if (ec) {
      throw failure(fmt::format("cannot quarantine {}: {}", dir.string(), ec.message()));
    }
  }
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
  start.quarantine_suffix = ".incomplete-" + value_or(environment, contract::var::job_id, "manual");

  // The node's cache chain (each default only when unset or empty, later ones built on the
  // effective value of earlier ones), with TMPDIR on the scratch volume.
  start.cache_defaults = cache_defaults(environment, replica.scratch, replica.scratch + "/tmp");
  const auto effective = [&](const std::string &name) {
    const auto it = start.cache_defaults.find(name);
    return it != start.cache_defaults.end() ? it->second : environment.at(name);
  };
  start.directories = {start.output_dir,
                       effective("XDG_CACHE_HOME"),
                       effective("HF_HOME"),
                       effective("TORCH_HOME"),
                       effective("TMPDIR")};
  return start;
}

void run_single_node(const SingleNodeStart &start, proc::Runner &runner) {
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
    quarantine_incomplete_checkpoints(start.output_dir, start.quarantine_suffix);
    training.argv.push_back(start.config_path);
  } else {
    // The source TOML is never edited: the rewrite goes to a container-local file.
    fs::create_directories(fs::path(start.runtime_toml).parent_path(), ec);
    pb::fs::write_file_atomic(start.runtime_toml, launch::rewrite_environment_ids(document));
    training.argv.push_back(start.runtime_toml);
  }
  proc::exec_replace(training);
}

} // namespace pb::node
