// SPDX-License-Identifier: MIT
// The effects of a joint run: service stack first, then RL, with rollback; and the CLI.
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/signals.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/joint/joint.hpp>
#include <primebeaker/staging/stage.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>

namespace pb::joint {
namespace {

std::string service_name(const OrderedJson &receipt) {
  if (receipt.is_object() && receipt.contains("experiment_name") &&
      receipt["experiment_name"].is_string()) {
    return receipt["experiment_name"].get<std::string>();
  }
  return "(unnamed)";
}

// Stops the service experiment after a failed RL submission and says so under the original
// error, which keeps its message and exit code.
[[noreturn]] void roll_back(Error error, const std::string &service_id, beaker::Client &beaker) {
  if (const int signal = signals::Scope::pending(); signal != 0) {
    error = Error(signal == SIGTERM ? ExitCode::terminated : ExitCode::interrupted,
                  fmt::format("interrupted while submitting RL ({})", error.what()),
                  error.context());
  }
  try {
    beaker.stop_experiment(service_id);
    error.add_context(fmt::format("stopped service experiment {} (rollback)", service_id));
  } catch (const Error &stop_error) {
    error.add_context(fmt::format(
        "also failed to stop service experiment {}: {}", service_id, stop_error.what()));
    for (const auto &line : stop_error.context()) {
      error.add_context("  " + line);
    }
    error.add_context(fmt::format("it is still running: beaker experiment stop {}", service_id));
  }
  throw error;
}

} // namespace

RunPlan plan_run(const RunConfig &config, const RunInputs &inputs) {
  const auto options =
      rl_options_with_lifecycle(config, *inputs.rl_toml, std::string(k_service_id_fact));
  try {
    return RunPlan{config.service, launch::make_plan(options, inputs.launch)};
  } catch (const Error &error) {
    if (error.code() != static_cast<int>(ExitCode::usage)) {
      throw;
    }
    Error wrapped(ExitCode::bad_input, error.what(), error.context());
    wrapped.add_context(fmt::format("in the rl: section of {} (each --flag is the rl key of the "
                                    "same name in snake_case)",
                                    config.config_path.string()));
    throw wrapped;
  }
}

OrderedJson run_preview(const RunPlan &plan, RunEffects &effects) {
  OrderedJson result;
  result["service"] = effects.services.preview(plan.service);
  if (!plan.rl.submit_refusal.empty()) {
    spdlog::warn("`run launch` would refuse this run: {}", plan.rl.submit_refusal);
  }
  result["rl"] = launch::execute_preview(plan.rl, effects.launch);
  return result;
}

OrderedJson run_launch(const RunPlan &plan, RunEffects &effects) {
  if (!plan.rl.submit_refusal.empty()) {
    throw usage_error(plan.rl.submit_refusal + " (rl.image in a run YAML); nothing was launched");
  }
  // Staged before the services too: a mount that refuses the copy costs no service experiment
  // (the RL submit below then finds the stage and only verifies it).
  if (!plan.rl.stage_dir.empty()) {
    effects.launch.stager.stage(plan.rl.stage_dir);
  }

  const OrderedJson receipt = effects.services.submit(plan.service);
  const auto ids = receipt_experiment_ids(receipt);
  if (ids.size() != 1) {
    const std::string name = service_name(receipt);
    Error error = failure(fmt::format(
        "LiteRegistry launch receipt did not contain exactly one service experiment ID (found "
        "{}); RL was not submitted",
        ids.empty() ? std::string("none") : "[" + text::join(ids, ", ") + "]"));
    error.add_context(fmt::format("service experiment {} was launched and is NOT stopped", name));
    error.add_context(fmt::format("receipt: {}", receipt.dump()));
    for (const auto &id : ids) {
      error.add_context(fmt::format("to stop it: beaker experiment stop {}", id));
    }
    throw error;
  }
  const std::string &service_id = ids.front();
  spdlog::info("service experiment {} launched; submitting RL", service_id);

  OrderedJson rl;
  // SIGINT and SIGTERM are noted instead of killing us, so that an interrupted RL submission (the
  // beaker child dies with the terminal's signal) still rolls the services back.
  const signals::Scope guard;
  try {
    rl = launch::execute_submit(launch::with_value(plan.rl, k_service_id_fact, service_id),
                                effects.launch);
    if (signals::Scope::pending() != 0) {
      // Too late to take it back: the RL run exists and needs its services.
      spdlog::warn("interrupted, but the RL experiment was already submitted; nothing was stopped");
    }
  } catch (const Error &error) {
    roll_back(error, service_id, effects.beaker);
  } catch (const std::exception &error) {
    roll_back(
        failure(fmt::format("RL submission failed: {}", error.what())), service_id, effects.beaker);
  }
  OrderedJson result;
  result["service_experiment_id"] = service_id;
  result["service"] = receipt;
  result["rl"] = rl;
  return result;
}

namespace {

// The launch-path flags `run preview|launch` take, as `rl preview` does; they override the
// YAML's rl: values (docs/run.md).
const std::vector<std::string> k_path_overrides = {
    "mount-path", "working-dir", "scratch-dir", "home-dir"};

struct RunCommandOptions {
  std::string config_path;
  std::optional<std::string> python;
  launch::LaunchOptions overrides; // only the k_path_overrides are registered
};

void run_command(const RunCommandOptions &options, bool submit) {
  if (options.config_path.empty()) {
    throw usage_error("--config RUN.yaml is required");
  }
  const auto env = env::snapshot();
  const auto home = env.find("HOME");
  const std::filesystem::path yaml_path =
      text::expand_user(options.config_path, home != env.end() ? home->second : std::string());
  const auto text = fs::read_file(yaml_path);
  const auto document = yaml::parse_yaml(text, options.config_path);
  std::error_code ec;
  auto absolute = std::filesystem::weakly_canonical(std::filesystem::absolute(yaml_path), ec);
  RunConfig config = load_run_config(document, ec ? yaml_path : absolute, env);
  for (const auto &name : k_path_overrides) {
    if (options.overrides.was_given(name)) {
      const auto &o = options.overrides;
      const std::string &value = name == "mount-path"    ? o.mount_path
                                 : name == "working-dir" ? o.working_dir
                                 : name == "scratch-dir" ? o.scratch_dir
                                                         : o.home_dir;
      launch::apply_setting(config.rl, name, {value});
    }
  }
  // What neither the flags nor the YAML's rl: say comes from the user's defaults, as for `rl
  // preview` (docs/config.md), each with its origin.
  launch::apply_config(config.rl, config::Settings::load());
  share_placement_with_services(config);

  const launch::Gathered gathered = launch::gather(launch::Program::rl, config.rl);
  RunInputs inputs;
  inputs.rl_toml = gathered.document.get();
  inputs.launch = gathered.inputs;

  proc::SystemRunner runner;
  services::LiteRegistry literegistry(runner, services::resolve_python(options.python, env));
  const std::string beaker_program = beaker::program_from_environment(env);
  const auto path = env.find("PATH");
  literegistry.use_beaker(beaker_program, path != env.end() ? path->second : "/usr/bin:/bin");
  fs::RealFileSystem files;
  beaker::Client beaker(runner, beaker_program);
  staging::RealStager stager(config.rl.verify_stage ? staging::Verify::full
                                                    : staging::Verify::cached);
  launch::LaunchEffects launch_effects{files, beaker, stager};
  RunEffects effects{literegistry, launch_effects, beaker};
  const RunPlan plan = plan_run(config, inputs);
  print_json(std::cout, submit ? run_launch(plan, effects) : run_preview(plan, effects));
}

void register_run_command(cli::CommandTree &tree, std::string_view name, bool submit) {
  cli::Command &command = tree.command(
      {"run", name},
      submit ? "Launch the LiteRegistry services of a run YAML, then its RL experiment (the "
               "services are stopped again if the RL submission fails)"
             : "Preview the services and the RL experiment of a run YAML (submits nothing)");
  auto &options = tree.make_options<RunCommandOptions>();
  command.add_option("config", options.config_path, "The primebeaker.run/v1 YAML")
      .type_name("FILE");
  command.add_option(cli::flag("config"), options.config_path, "The primebeaker.run/v1 YAML")
      .type_name("FILE");
  command.add_option(cli::flag("python"),
                     options.python,
                     "Python interpreter that has LiteRegistry's launchers "
                     "(default: $PRIMEBEAKER_PYTHON, else python3)");
  launch::register_launch_flags(command, options.overrides, k_path_overrides, false);
  command.callback([&options, submit] { run_command(options, submit); });
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"run"}, "A LiteRegistry service stack and the RL run that uses it, from one YAML");
  register_run_command(tree, "preview", false);
  register_run_command(tree, "launch", true);
}

} // namespace pb::joint
