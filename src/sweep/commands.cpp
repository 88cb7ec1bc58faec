// SPDX-License-Identifier: MIT
// `primebeaker sft|rl sweep`: the CLI of a sweep (docs/sweep.md).
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/staging/stage.hpp>
#include <primebeaker/sweep/sweep.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <iostream>

namespace pb::sweep {
namespace {

// The launch flags a sweep shares with every variant; --set is its own (the axes), and the spec
// files are always written by submit.
std::vector<std::string> shared_flag_names() {
  std::vector<std::string> names;
  for (const auto &name : launch::launch_flag_names()) {
    if (name != "set" && name != "write-spec") {
      names.push_back(name);
    }
  }
  return names;
}

void run_sweep(launch::Program program, const SweepOptions &given) {
  SweepOptions options = given;
  options.program = program;
  if (options.base.toml.empty()) {
    throw usage_error("--toml BASE is required");
  }
  if (options.parallel < 1 || options.parallel > 64) {
    throw usage_error(
        fmt::format("--parallel takes 1 to 64 variants at a time, got {}", options.parallel));
  }
  if (options.axes.empty() == options.grid.empty()) {
    throw usage_error("a sweep takes --set KEY=V1,V2,... (one or more) or --grid FILE, not both");
  }
  if (!options.grid.empty() && options.zip) {
    throw usage_error("--zip pairs --set values; a --grid lists its variants itself");
  }
  if (!options.base.wandb_run_id.empty()) {
    throw usage_error("--wandb-run-id cannot be given to a sweep: each variant gets its own W&B "
                      "run id (its own launch id), and one id would put every variant in one W&B "
                      "run and one ledger");
  }
  launch::apply_config(options.base, config::Settings::load());
  Grid grid;
  if (options.grid.empty()) {
    grid.variants = combine(options.axes, options.zip);
  } else {
    grid = read_grid(fs::read_file(options.grid), options.grid);
  }
  const launch::Gathered gathered = launch::gather(program, options.base);
  const launch::LaunchInputs &inputs = gathered.inputs;
  const SweepPlan plan = make_sweep_plan(options, grid.variants, inputs, grid.origins);
  if (options.dry_run) {
    if (::isatty(STDERR_FILENO) == 1) {
      std::cerr << sweep_card(plan);
    }
    print_json(std::cout, plan.preview_json());
    return;
  }
  const std::string beaker_program = beaker::program_from_environment(inputs.environment);
  beaker::require_program(beaker_program, inputs.environment);
  launch::confirm_submit(
      sweep_card(plan),
      fmt::format("Submit these {} experiments ({} GPUs)?", plan.variants.size(), plan.gpus),
      options.yes);
  proc::SystemRunner runner;
  fs::RealFileSystem files;
  beaker::Client client(runner, beaker_program);
  staging::RealStager stager(options.base.verify_stage ? staging::Verify::full
                                                       : staging::Verify::cached);
  launch::LaunchEffects effects{files, client, stager};
  const auto result = submit_sweep(plan, effects, options.parallel);
  print_json(std::cout, result.receipt);
  if (result.failure) {
    throw *result.failure; // the receipt above says which variants run
  }
}

void add_sweep_command(cli::CommandTree &tree, launch::Program program) {
  const std::string name(launch::program_name(program));
  tree.leaf(
      {name, "sweep"},
      fmt::format("Submit variants of one Prime-RL {} TOML (--set KEY=V1,V2 or --grid) as one "
                  "Beaker group",
                  program == launch::Program::sft ? "SFT" : "RL"),
      [&tree, program](cli::Command &command) {
        auto &options = tree.make_options<SweepOptions>();
        launch::register_launch_flags(command, options.base, shared_flag_names(), false);
        command
            .add_option(cli::flag("set"),
                        options.axes,
                        "KEY=V1,V2,...: sweep a TOML key over values (TOML literals, typed as "
                        "`toml set` types them); repeat for more keys (their cross product)")
            .type_name("KEY=VALUES")
            .take_all();
        command.add_flag(
            "--zip", options.zip, "Pair the --set values in order instead of the cross product");
        command
            .add_option("--grid",
                        options.grid,
                        "A YAML or TOML file listing the variants' overrides (docs/sweep.md)")
            .type_name("FILE");
        command.add_option(
            "--group", options.group, "The Beaker group of the sweep (default: <base name>-sweep)");
        command.add_flag("--dry-run",
                         options.dry_run,
                         "Plan and check every variant, print them as JSON; submit nothing");
        command.add_flag("--yes", options.yes, "Submit without asking on a terminal");
        command
            .add_option("--parallel",
                        options.parallel,
                        "Variants submitted at a time (each a few `beaker` calls) [8]")
            .type_name("N");
        command.callback([&options, program] { run_sweep(program, options); });
      });
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"sft"}, "Prime-RL supervised fine-tuning on Beaker");
  tree.command({"rl"}, "Prime-RL reinforcement learning on Beaker");
  add_sweep_command(tree, launch::Program::sft);
  add_sweep_command(tree, launch::Program::rl);
}

} // namespace pb::sweep
