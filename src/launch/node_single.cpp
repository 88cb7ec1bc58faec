// SPDX-License-Identifier: MIT
#include "node_single.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/exec.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/launch/rewrite_envs.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace pb::launch {

namespace {

std::string required(const std::map<std::string, std::string> &environment, const char *name) {
  const auto it = environment.find(name);
  if (it == environment.end() || it->second.empty()) {
    throw usage_error(fmt::format("missing required environment variable: {}", name));
  }
  return it->second;
}

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
  SingleNodeStart start;
  start.program = program;
  start.config_path = required(environment, "CONFIG_PATH");
  start.output_dir = required(environment, "OUTPUT_DIR");
  start.working_dir = required(environment, "WORKING_DIR");
  const std::string scratch = required(environment, "SCRATCH");
  start.setup_command = value_or(environment, "PRIMEBEAKER_SETUP_COMMAND", "");
  start.result_dir = value_or(environment, "PRIMEBEAKER_RESULT_DIR", "/tmp/beaker-result");
  start.runtime_toml =
      value_or(environment, "PRIMEBEAKER_RUNTIME_TOML", "/tmp/primebeaker-runtime.toml");
  start.quarantine_suffix = ".incomplete-" + value_or(environment, "BEAKER_JOB_ID", "manual");

  // Each default applies only when the variable is unset or empty, and later ones build on the
  // effective value of earlier ones (like ${VAR:-default} in the reference script).
  std::map<std::string, std::string> effective = environment;
  const auto set_default = [&](const std::string &name, const std::string &fallback) {
    if (value_or(effective, name, "").empty()) {
      effective[name] = fallback;
      start.cache_defaults[name] = fallback;
    }
    return effective[name];
  };
  const std::string xdg = set_default("XDG_CACHE_HOME", scratch + "/.cache");
  const std::string hf = set_default("HF_HOME", xdg + "/huggingface");
  const std::string torch = set_default("TORCH_HOME", xdg + "/torch");
  set_default("TORCHINDUCTOR_CACHE_DIR", torch + "/inductor");
  set_default("TRITON_CACHE_DIR", xdg + "/triton");
  set_default("VLLM_CACHE_ROOT", xdg + "/vllm");
  const std::string tmp = set_default("TMPDIR", scratch + "/tmp");
  start.directories = {start.output_dir, xdg, hf, torch, tmp};
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
    pb::fs::write_file_atomic(start.runtime_toml, rewrite_environment_ids(document));
    training.argv.push_back(start.runtime_toml);
  }
  proc::exec_replace(training);
}

} // namespace pb::launch
