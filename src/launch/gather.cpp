// SPDX-License-Identifier: MIT
// The first step of every launch (docs/launch.md "The pipeline"): all that a launch reads from
// this machine before it is planned, in one place, so that every front end plans from the same
// facts and gets the same checks.
#include "placement.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/clusters/clusters.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/staging/stage.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace pb::launch {
namespace {

// Whether the launch may get a recovery controller, which stages the beaker CLI (found and
// hashed here, ~0.1 s for a 40 MB binary, so not for launches that cannot have one): multi-node
// RL, as the TOML or an override of deployment.type may say, unless --recover says otherwise.
bool may_have_controller(Program program,
                         const LaunchOptions &options,
                         const toml::Document &document) {
  if (program != Program::rl || options.recover == "off" || options.recover == "terminal") {
    return false;
  }
  const bool overridden = std::any_of(options.set.begin(), options.set.end(), [](const auto &s) {
    return s.starts_with("deployment.type=");
  });
  const toml::Value *type = document.root().find_path({"deployment", "type"});
  return overridden ||
         (type != nullptr && type->string() != nullptr && *type->string() == "multi_node");
}

// What -v shows of a plan: what was decided, in a few lines (docs/launch.md).
void log_decisions(const LaunchPlan &plan) {
  for (const auto &[flag, origin] : plan.from_config) {
    spdlog::info("--{} from {} (docs/config.md)", flag, origin);
  }
  if (!plan.built_in.empty()) {
    spdlog::info("built-in defaults (no flag, PRIMEBEAKER_* or config file sets them): --{}",
                 text::join(plan.built_in, ", --"));
  }
  for (const auto &task : plan.experiment.tasks) {
    spdlog::info("{} {}: task {} x{} replica(s), {} GPU(s) each, image {}",
                 program_name(plan.program),
                 plan.topology == Topology::multi_node ? "multi-node" : "single-node",
                 task.name,
                 task.replication ? task.replication->replicas : 1,
                 task.gpu_count,
                 task.image.ref);
    spdlog::info("runs: {}", proc::argv_to_json(task.command));
  }
  if (!plan.stage_dir.empty()) {
    spdlog::info("stage: {} (submit creates or verifies it)", plan.stage_dir.string());
  }
  spdlog::info("spec: {}{}", plan.spec_path.string(), plan.write_spec ? "" : " (not written)");
  spdlog::debug("submit command: {}", proc::argv_to_json(plan.submit_command));
}

} // namespace

void find_beaker_cli(LaunchInputs &inputs) {
  const auto path = inputs.environment.find("PATH");
  if (const auto found =
          proc::find_executable(beaker::program_from_environment(inputs.environment),
                                path == inputs.environment.end() ? "" : path->second)) {
    inputs.beaker_cli = *found;
    // What this machine remembers for the file as it is; submit's stage_tool checks it.
    inputs.beaker_cli_sha256 = staging::file_sha256(*found, staging::Verify::cached);
  }
}

Gathered gather(Program program, const LaunchOptions &options) {
  if (options.toml.empty()) {
    throw usage_error("--toml is required");
  }
  Gathered gathered;
  gathered.document = std::make_shared<const toml::Document>(toml::Document::load(options.toml));
  const toml::Document &document = *gathered.document;
  spdlog::info("read {} ({} bytes)", options.toml.string(), document.text().size());
  const auto generation = primerl::detect_generation(document);
  spdlog::info("its keys are of the Prime-RL {} generation{}; the image decides which Prime-RL "
               "reads it",
               primerl::generation_name(generation.generation),
               generation.evidence.empty() ? "" : " (from " + generation.evidence + ")");
  LaunchInputs &inputs = gathered.inputs;
  inputs.program = program;
  inputs.document = gathered.document.get();
  inputs.cwd = std::filesystem::current_path();
  inputs.config_path = options.toml.is_absolute() ? options.toml : inputs.cwd / options.toml;
  inputs.environment = env::snapshot();
  inputs.launch_id = choose_launch_id(inputs.environment, random_hex_id());
  gathered.catalog = std::make_shared<const images::Catalog>(
      images::Catalog::from_environment(inputs.environment));
  inputs.catalog = gathered.catalog.get();
  resolve_launch_paths(options, inputs);
  if (may_have_controller(program, options, document)) {
    find_beaker_cli(inputs);
  }
  gathered.files = std::make_shared<fs::RealFileSystem>();
  inputs.files = gathered.files.get();
  if (detail::asks_auto(options)) {
    // The only beaker calls a preview makes, and only for auto (docs/clusters.md).
    proc::SystemRunner runner;
    beaker::Client beaker(runner,
                          beaker::program_from_environment(inputs.environment),
                          {},
                          beaker::RetryPolicy::for_reads());
    gathered.clusters = std::make_shared<const clusters::Snapshot>(
        clusters::take_snapshot(beaker, clusters::patterns_of(options.clusters), "--cluster auto"));
    inputs.clusters = gathered.clusters.get();
    spdlog::info("--cluster auto: looked at {} cluster(s) with {} beaker call(s)",
                 gathered.clusters->clusters.size(),
                 gathered.clusters->calls.size());
  }
  return gathered;
}

LaunchPlan plan_from_options(Program program, const LaunchOptions &options) {
  const Gathered gathered = gather(program, options);
  LaunchPlan plan = make_plan(options, gathered.inputs);
  if (plan.controller && plan.controller->beaker_cli.empty()) {
    plan.notes.push_back("no beaker CLI found here to stage for the recovery controller; "
                         "submit needs one");
  }
  log_decisions(plan);
  return plan;
}

} // namespace pb::launch
