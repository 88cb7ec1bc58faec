// SPDX-License-Identifier: MIT
// The recovery controller of a multi-node run (docs/recovery.md "The controller"): a small
// CPU-only experiment on Beaker that runs the staged `primebeaker follow <run> --controller`,
// so that a preempted topology is resubmitted with nobody watching. Planned here (pure), and
// submitted by execute_submit() right after the training experiment.
#include "paths.hpp"
#include "plan_parts.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/notify/notify.hpp>
#include <primebeaker/staging/stage.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

namespace pb::launch::detail {

namespace {

constexpr std::string_view k_controller_role = "recovery_controller";

// The catalog's controller image for the workspace; the built-in catalog's when a custom
// catalog has none.
std::string controller_image(const images::Catalog *catalog, const std::string &workspace) {
  for (const images::Catalog *source : {catalog, &images::Catalog::builtin()}) {
    if (source == nullptr) {
      continue;
    }
    for (const auto &role : source->roles) {
      if (role.name != k_controller_role) {
        continue;
      }
      for (const auto &location : role.locations) {
        if (location.in_workspace(workspace)) {
          return location.reference();
        }
      }
    }
  }
  throw input_error(fmt::format(
      "the image catalog has no {} image usable from {}", k_controller_role, workspace));
}

std::string seconds_text(std::chrono::seconds seconds) {
  return std::to_string(seconds.count());
}

} // namespace

std::optional<ControllerPlan> controller_plan(const LaunchOptions &options,
                                              const LaunchInputs &inputs,
                                              const ValidatedFlags &flags,
                                              const std::string &mode,
                                              const std::string &training_name,
                                              const std::filesystem::path &staged_program,
                                              const std::string &launch_id) {
  if (mode != "controller" || !options.controller_name.empty()) {
    return std::nullopt; // none wanted, or the run's controller already runs
  }
  if (staged_program.empty()) {
    throw usage_error("--recover controller runs the staged primebeaker on a small image; with "
                      "--no-stage use --recover terminal (or off)");
  }
  if (options.controller_token_secret.empty()) {
    throw usage_error("--controller-token-secret must name the workspace secret that holds a "
                      "Beaker token (or use --recover terminal)");
  }
  if (!options.controller_priority.empty() &&
      !beaker::is_known_priority(options.controller_priority)) {
    const std::string meant =
        text::closest_match(options.controller_priority, beaker::known_priorities());
    throw usage_error(fmt::format("--controller-priority: unknown priority '{}'{}",
                                  options.controller_priority,
                                  meant.empty() ? "" : "; did you mean '" + meant + "'?"));
  }
  ControllerPlan plan;
  plan.experiment_name = controller_name_for(training_name);
  plan.spec_path = normalize_path(fmt::format("{}/primebeaker/beaker_experiments/{}-{}.json",
                                              flags.scratch_dir,
                                              plan.experiment_name,
                                              launch_id));
  plan.token_secret = options.controller_token_secret;
  plan.image = controller_image(inputs.catalog, options.workspace);
  plan.beaker_cli = inputs.beaker_cli;
  plan.beaker_cli_sha256 = inputs.beaker_cli_sha256;
  staging::Tool tool{"beaker", inputs.beaker_cli, inputs.beaker_cli_sha256};
  const std::string staged_beaker =
      inputs.beaker_cli_sha256.empty()
          ? fmt::format("{}/primebeaker/tools/beaker-<sha256 of your beaker CLI>/beaker",
                        flags.scratch_dir)
          : staging::staged_tool(flags.scratch_dir, tool).string();
  if (!inputs.beaker_cli_sha256.empty()) {
    plan.beaker_stage = staging::tool_directory(flags.scratch_dir, tool);
  }

  beaker::Task task;
  task.name = "recovery-controller";
  task.image = beaker::Image::from_reference(plan.image);
  task.command = {staged_program.string(),
                  "follow",
                  std::string(k_training_id_placeholder),
                  "--controller",
                  "--poll-interval",
                  seconds_text(k_controller_poll),
                  "--recover-backoff",
                  seconds_text(k_controller_backoff)};
  // Values by name, then the secret: the order of every spec this tool writes.
  task.env_vars = {
      beaker::EnvVar::plain("BEAKER_DEFAULT_WORKSPACE", options.workspace),
      beaker::EnvVar::plain("HOME", flags.home_dir),
      beaker::EnvVar::plain("PRIMEBEAKER_BEAKER", staged_beaker),
      beaker::EnvVar::from_secret("BEAKER_TOKEN", options.controller_token_secret),
  };
  // It posts the run's transitions (docs/notify.md): the run's webhook, as the run has it.
  std::ranges::copy(notify::container_env(
                        notify::parse_target(options.notify, options.notify_events, "--notify")),
                    std::back_inserter(task.env_vars));
  task.datasets = {{flags.mount, options.dataset}};
  task.result_path = "/tmp/beaker-result";
  task.cpu_count = 1;
  task.memory = "2GiB";
  task.context.priority =
      options.controller_priority.empty() ? std::string("normal") : options.controller_priority;
  task.context.auto_resume = true; // its own preemption: it resumes from the ledger
  task.clusters =
      options.controller_clusters.empty() ? flags.clusters : options.controller_clusters;

  beaker::Experiment experiment;
  experiment.description = fmt::format("PrimeBeaker recovery controller of {}", training_name);
  experiment.budget =
      options.controller_budget.empty() ? options.budget : options.controller_budget;
  experiment.tasks.push_back(std::move(task));
  if (const auto found = beaker::problems(experiment); !found.empty()) {
    throw usage_error("the recovery controller's Beaker spec would be rejected: " +
                      text::join(found, "; "));
  }
  plan.spec = beaker::to_json(experiment);
  plan.experiment = std::move(experiment);
  return plan;
}

std::string controller_name_for(const std::string &training_name) {
  std::string name = training_name;
  constexpr std::string_view tail = "-recovery";
  if (name.size() + tail.size() > 128) {
    name.resize(128 - tail.size());
  }
  return name + std::string(tail);
}

} // namespace pb::launch::detail

namespace pb::launch {

OrderedJson controller_spec_for(const ControllerPlan &plan, const std::string &training_id) {
  return with_value(plan.spec, k_training_id_placeholder, training_id);
}

// Submit-time check of the secrets both experiments name: Beaker would otherwise accept the
// controller and fail it at start, leaving the run unguarded. One line per missing secret with
// how to create it; never a secret's value.
void require_controller_secrets(const LaunchPlan &plan, beaker::Client &beaker) {
  if (!plan.controller) {
    return;
  }
  const auto listed = beaker.run_checked(
      {"secret", "list", "--workspace", plan.workspace, "--format", "json"}, "secret list");
  const auto secrets = OrderedJson::parse(listed.out, nullptr, false);
  std::set<std::string> have;
  if (secrets.is_array()) {
    for (const auto &secret : secrets) {
      if (secret.is_object() && secret.contains("name") && secret["name"].is_string()) {
        have.insert(secret["name"].get<std::string>());
      }
    }
  }
  if (have.count(plan.controller->token_secret) == 0) {
    throw input_error(fmt::format(
        "workspace {} has no secret {}, from which the recovery controller takes its Beaker "
        "token: create it with `beaker secret write {} --workspace {}` (the token on stdin; "
        "yours is under Account > Token on the Beaker site), or pass "
        "--controller-token-secret NAME, or --recover terminal (nothing was submitted)",
        plan.workspace,
        plan.controller->token_secret,
        plan.controller->token_secret,
        plan.workspace));
  }
}

} // namespace pb::launch
