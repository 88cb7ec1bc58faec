// SPDX-License-Identifier: MIT
// `primebeaker rl resume --from-experiment ID|RECEIPT [--resume-step N] [--dry-run] [overrides]`.
#include "execute.hpp"
#include "plan.hpp"
#include "source.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/runs/recover.hpp>
#include <primebeaker/runs/runs.hpp>
#include <primebeaker/staging/stage.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>

namespace pb::resume {

namespace {

namespace stdfs = std::filesystem;

stdfs::path absolute_from(const stdfs::path &base, const std::string &path) {
  const stdfs::path given(path);
  return (given.is_relative() ? base / given : given).lexically_normal();
}

std::string checked_attempt_id(const std::string &id) {
  const bool ok = !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
  if (!ok) {
    // It names files under the output directory, so it must be a plain name.
    throw usage_error("--attempt-id must be 1-64 letters, digits, '_' or '-', got '" + id + "'");
  }
  return id;
}

// The experiment --from-experiment names: a receipt file (what submit printed) names its
// experiment, as for status, follow, logs and stop; an id or a name goes to beaker as given.
std::string source_reference(const std::string &from_experiment) {
  if (const auto receipt = runs::receipt_target(from_experiment)) {
    spdlog::info("{} names experiment {}", from_experiment, receipt->reference);
    return receipt->reference;
  }
  return from_experiment;
}

void record_by_hand(const ResumePlan &plan, const OrderedJson &receipt);

void run_resume(const ResumeOptions &options) {
  if (options.from_experiment.empty()) {
    throw usage_error("rl resume needs --from-experiment ID");
  }
  const std::string source_id = source_reference(options.from_experiment);
  const auto environment = env::snapshot();
  const stdfs::path cwd = stdfs::current_path();
  const std::string attempt_id =
      options.attempt_id.empty() ? launch::choose_launch_id(environment, launch::random_hex_id())
                                 : checked_attempt_id(options.attempt_id);
  proc::SystemRunner runner;
  beaker::Client beaker(runner, beaker::program_from_environment(environment));

  ResumeInputs inputs;
  inputs.source =
      parse_source(source_id, beaker.get_experiment(source_id), options.inherit_managed_service);
  for (const auto &[name, value] : inputs.source.not_inherited) {
    spdlog::warn(
        "not inheriting {}={} from {} (a joint run's service cleanup belongs to the original "
        "run; pass --inherit-managed-service to keep it)",
        name,
        value,
        inputs.source.id);
  }
  // Relative paths in the source are relative to its WORKING_DIR, as in the container.
  const stdfs::path source_working_dir(inputs.source.working_dir);
  inputs.config_path = options.config.empty()
                           ? absolute_from(source_working_dir, inputs.source.config_path)
                           : absolute_from(cwd, options.config);
  const auto config = toml::Document::load(inputs.config_path);
  primerl::require_supported_generation(config);
  if (primerl::read_deployment_type(config) != primerl::DeploymentType::multi_node) {
    throw input_error(
        inputs.config_path.string() +
        ": rl resume relaunches multi-node RL runs (deployment.type = \"multi_node\")");
  }
  inputs.config = &config;
  // v0.9: a TOML that names no run ran in the directory its launch named (PRIME_RL_RUN_DIR,
  // else the experiment name); the resume TOML pins it.
  // The generation the source's launch recorded decides, as the image's Prime-RL did then.
  const primerl::Generation recorded =
      inputs.source.v0_9 ? primerl::Generation::v0_9 : primerl::Generation::undetermined;
  inputs.layout = checkpoints::layout_from_toml(
      config,
      source_working_dir,
      inputs.source.run_dir_name.empty() ? inputs.source.name : inputs.source.run_dir_name,
      recorded);
  const auto source = checkpoints::source_from_layout(
      inputs.layout, checkpoints::expected_trainer_ranks(config, recorded));
  inputs.resolved_config_output_dir = launch::resolve_real_path(source.output_dir);
  inputs.resolved_source_output_dir =
      launch::resolve_real_path(absolute_from(source_working_dir, inputs.source.output_dir));
  if (inputs.resolved_config_output_dir != inputs.resolved_source_output_dir) {
    throw failure("config output_dir " + inputs.resolved_config_output_dir.string() +
                  " does not match source " + inputs.resolved_source_output_dir.string());
  }
  // Only the steps the pick needs (newest first, down to the first complete one).
  inputs.listing = checkpoints::list_latest(source, options.resume_step);
  inputs.attempt_id = attempt_id;
  inputs.random_run_id = launch::random_hex_id();
  inputs.cwd = cwd;
  inputs.environment = environment;
  if (options.controller_name.empty()) {
    // A new recovery controller stages the beaker CLI found here (docs/recovery.md).
    launch::LaunchInputs found;
    found.environment = environment;
    launch::find_beaker_cli(found);
    inputs.beaker_cli = found.beaker_cli;
    inputs.beaker_cli_sha256 = found.beaker_cli_sha256;
  }
  const ResumePlan plan = make_plan(options, inputs);

  fs::RealFileSystem files;
  SystemClock clock;
  staging::RealStager stager;
  ResumeEffects effects{beaker, files, clock, stager};
  if (options.dry_run) {
    // Read-only checks run too, so a dry run says what a real resume would refuse.
    OrderedJson out = OrderedJson::object();
    out["resume"] = plan.resume_json();
    out["generated_config"] = plan.generated_config;
    OrderedJson found = OrderedJson::array();
    for (const auto &refusal : refusals(plan, effects)) {
      found.push_back(refusal.message);
    }
    out["refusals"] = found;
    print_json(std::cout, out);
    return;
  }
  const OrderedJson out = execute(plan, effects);
  if (options.child_name.empty()) {
    record_by_hand(plan, out); // a recovering actor records its own claim
  }
  print_json(std::cout, out);
  if (out.contains("controller") && out["controller"].contains("error")) {
    throw failure(fmt::format("{} is submitted, but its recovery controller is not: {}; until one "
                              "runs, recover it with `primebeaker follow {} --recover`",
                              out.value("child_experiment_id", std::string("the new experiment")),
                              out["controller"]["error"].get<std::string>(),
                              out.value("child_experiment_id", std::string("RUN"))));
  }
}

// A resume by hand continues the run's chain like a recovery does (docs/runs.md "One chain"): a
// claim of the source and its child in the run's ledger, so that `status`, `list`, `stop` and a
// controller following the source all find the new experiment. Never fails the resume.
void record_by_hand(const ResumePlan &plan, const OrderedJson &receipt) {
  namespace ledger = recovery::ledger;
  const auto child = receipt.value("child_experiment_id", OrderedJson());
  const auto &dir = plan.launch.ownership.ledger_dir;
  if (!child.is_string() || dir.empty()) {
    return;
  }
  try {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    ledger::Claim claim;
    claim.source_experiment = plan.source_id;
    claim.cause = std::string(ledger::k_resubmission);
    claim.by = "rl resume by hand (" + runs::actor_identity(false) + ")";
    claim.claimed_unix = now;
    claim.attempt_id = plan.attempt_id;
    claim.child_name = plan.experiment_name;
    ledger::ChildStart from;
    from.from_start = plan.from_start;
    if (!plan.from_start) {
      from.resume_step = plan.record.step;
    }
    if (ledger::write_claim(dir, claim)) {
      ledger::write_claim_child(dir, plan.source_id, child.get<std::string>(), now, from);
    }
  } catch (const Error &error) {
    spdlog::warn("the run's ledger does not record this resume ({}): `status {}` shows the "
                 "source, not the new experiment",
                 error.what(),
                 plan.source_id);
  }
}

void add_resume_options(cli::CommandTree &tree, cli::Command &app) {
  auto &options = tree.make_options<ResumeOptions>();
  app.add_option("from_experiment_id," + cli::flag("from-experiment"),
                 options.from_experiment,
                 "Beaker experiment ID of the run to continue, or the receipt file its submit "
                 "printed (also the first positional)");
  app.add_option(cli::flag("config"),
                 options.config,
                 "Training TOML instead of the source's CONFIG_PATH (same output_dir required)");
  app.add_option(cli::flag("resume-step"),
                 options.resume_step,
                 "Resume from this step (it must be complete); default: the newest complete one");
  app.add_flag(cli::flag("from-start-if-none"),
               options.from_start_if_none,
               "When the run has no complete checkpoint (preempted before its first), relaunch "
               "it from the start in the same output dir with the same W&B run id instead of "
               "refusing (what recovery does)");
  app.add_option(cli::flag("experiment-name"),
                 options.experiment_name,
                 "Base of the new experiment name (default: the source's name)");
  app.add_option(
      cli::flag("attempt-id"),
      options.attempt_id,
      "Identity of this attempt (file names, LAUNCH_ID); default PRIMEBEAKER_LAUNCH_ID or random");
  app.add_option(cli::flag("child-name"),
                 options.child_name,
                 "The new experiment's exact name (what a recovering `follow` claimed)");
  app.add_option(cli::flag("controller-name"),
                 options.controller_name,
                 "The run's recovery controller, already running under this name: named in the "
                 "new spec, none submitted");
  app.add_flag(cli::flag("dry-run") + ",!--no-dry-run",
               options.dry_run,
               "Print the plan and the resume TOML; write nothing, submit nothing");
  app.add_flag(
      cli::flag("inherit-managed-service"),
      options.inherit_managed_service,
      "Keep the source's PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID (its trainer stops that "
      "service experiment on exit)");
  launch::register_launch_flags(app, options.overrides, override_flag_names(), false);
  // Unset overrides come from the source experiment, not from the launch defaults.
  const std::vector<std::pair<std::string, std::string>> help = {
      {"image", "Runtime image (beaker://<ref> or a Docker ref); default: the source's"},
      {"workspace", "Destination Beaker workspace; default: the source's"},
      {"cluster", "Beaker cluster, repeat for several; default: the source's"},
      {"priority", "normal, high or urgent; default: the source's"},
      {"min-runtime-hours", "Minimum runtime in hours (0 is honoured); default: the source's"},
      {"budget", "Beaker budget account; never inherited from the source"},
      {"registry", "LiteRegistry URI for the new run; default: the source's REGISTRY"},
      {"max-recoveries", "Preemptions recovered automatically; default: the source's"},
      {"max-restarts-on-errors", "Restarts after a failure; default: the source's"},
      {"recover", "controller, terminal or off; default: the source's (controller)"},
  };
  for (const auto &[name, text] : help) {
    if (auto option = app.find_option("--" + name)) {
      option->default_str("").description(text);
    }
  }
  app.callback([&options] { run_resume(options); });
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"rl"}, "Prime-RL reinforcement learning on Beaker");
  tree.leaf(
      {"rl", "resume"},
      "Start a fresh whole-topology experiment that continues a multi-node RL run from its newest "
      "(or a chosen) checkpoint step that trainer and orchestrator both finished",
      [&tree](cli::Command &app) { add_resume_options(tree, app); });
}

} // namespace pb::resume
