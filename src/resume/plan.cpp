// SPDX-License-Identifier: MIT
#include "plan.hpp"

#include <primebeaker/checkpoints/report.hpp>
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/overrides.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/runs/recover.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::resume {

namespace {

namespace fs = std::filesystem;

bool name_character(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

std::string strip_dashes_and_dots(std::string text, bool leading) {
  const auto edge = [](char c) { return c == '-' || c == '.'; };
  while (!text.empty() && edge(text.back())) {
    text.pop_back();
  }
  if (leading) {
    const auto first = std::find_if_not(text.begin(), text.end(), edge);
    text.erase(text.begin(), first);
  }
  return text;
}

// Refuses a step that Prime-RL would not train from: at or past any max_steps.
void check_max_steps(const toml::Document &config, std::int64_t step) {
  for (const auto &path : {std::vector<std::string>{"max_steps"},
                           std::vector<std::string>{"trainer", "max_steps"},
                           std::vector<std::string>{"orchestrator", "max_steps"}}) {
    const toml::Value *value = config.root().find_path(path);
    if (value != nullptr && value->integer() && step >= *value->integer()) {
      throw failure("checkpoint step " + std::to_string(step) + " already reached " +
                    text::join(path, ".") + "=" + std::to_string(*value->integer()) + " (" +
                    config.location(*value) + ")");
    }
  }
}

} // namespace

const std::vector<std::string> &override_flag_names() {
  static const std::vector<std::string> names = {"image",
                                                 "prime-rl",
                                                 "workspace",
                                                 "cluster",
                                                 "priority",
                                                 "min-runtime-hours",
                                                 "budget",
                                                 "registry",
                                                 "max-recoveries",
                                                 "max-restarts-on-errors",
                                                 "recover",
                                                 "controller-token-secret",
                                                 "controller-cluster",
                                                 "controller-priority",
                                                 "controller-budget",
                                                 "set"};
  return names;
}

std::string
resume_experiment_name(const std::string &base, std::int64_t step, const std::string &attempt_id) {
  std::string sanitised;
  bool in_run = false;
  for (const char c : base) {
    if (name_character(c)) {
      sanitised += c;
      in_run = false;
    } else if (!in_run) {
      sanitised += '-';
      in_run = true;
    }
  }
  sanitised = strip_dashes_and_dots(sanitised, true);
  if (sanitised.empty()) {
    sanitised = "primebeaker";
  }
  const std::string suffix = "-resume-step" + std::to_string(step) + "-" + attempt_id.substr(0, 8);
  const std::size_t room = suffix.size() < 128 ? 128 - suffix.size() : 0;
  if (sanitised.size() > room) {
    sanitised = strip_dashes_and_dots(sanitised.substr(0, room), false);
  }
  return sanitised + suffix;
}

OrderedJson ResumePlan::resume_json() const {
  OrderedJson out = OrderedJson::object();
  out["source_experiment_id"] = source_id;
  out["source_experiment_name"] = source_name;
  // From the start: no checkpoint; "from" says so in words for whoever reads the receipt.
  out["checkpoint"] = from_start ? OrderedJson(nullptr) : checkpoints::record_json(record);
  out["from"] = from_start ? std::string("start") : "step " + std::to_string(record.step);
  out["source_config_path"] = source_config_path.string();
  out["generated_config_path"] = generated_config_path.string();
  out["manifest_path"] = manifest_path.string();
  out["experiment_name"] = experiment_name;
  out["attempt_id"] = attempt_id;
  out["launch"] = launch.preview_json();
  if (!not_inherited.empty()) {
    OrderedJson dropped = OrderedJson::object();
    for (const auto &[name, value] : not_inherited) {
      dropped[name] = value;
    }
    out["not_inherited"] = std::move(dropped);
  }
  return out;
}

namespace {

// v0.8.0: clean_output_dir = false, ckpt.resume_step = K (and the sub-config copies, which win
// over the shared one in Prime-RL), wandb.name when [wandb] has none.
// Without a step (from the start), every resume_step is removed instead: the node runtime then
// starts fresh after moving any cut-off step aside (docs/recovery.md).
std::string v0_8_resume_text(const toml::Document &config,
                             const std::optional<std::int64_t> &step,
                             const std::string &experiment_name,
                             std::vector<std::string> &edited) {
  toml::Editor editor(config);
  editor.set("clean_output_dir", "false");
  edited.push_back("clean_output_dir");
  // A sub-config value wins over the shared one in Prime-RL, so it must say the same step.
  for (const char *key :
       {"ckpt.resume_step", "trainer.ckpt.resume_step", "orchestrator.ckpt.resume_step"}) {
    const bool present = config.root().find_path(text::split(key, '.')) != nullptr;
    if (step && (present || std::string_view(key) == "ckpt.resume_step")) {
      editor.set(key, std::to_string(*step));
      edited.push_back(key);
    } else if (!step && present) {
      editor.unset(key);
      edited.push_back(key);
    }
  }
  const toml::Value *wandb = config.root().find("wandb");
  if (wandb != nullptr && wandb->is(toml::Type::table) && wandb->find("name") == nullptr) {
    editor.set_string("wandb.name", experiment_name);
    edited.push_back("wandb.name");
  }
  return editor.text();
}

// v0.9: clean = false, [resume] step = K (never "latest"; resume.dir removed, sub-config copies
// in step), and run.name = the source's run directory when the TOML names none: the child
// launch would otherwise name a new run directory after its own experiment.
std::string v0_9_resume_text(const toml::Document &config,
                             const std::optional<std::int64_t> &step,
                             const primerl::RunLayout &layout,
                             std::vector<std::string> &edited) {
  const auto &keys = primerl::resume_keys(primerl::Generation::v0_9);
  const auto has = [&](const std::string &key) {
    return config.root().find_path(text::split(key, '.')) != nullptr;
  };
  toml::Editor editor(config);
  editor.set(keys.clean, "false");
  edited.push_back(keys.clean);
  if (step) {
    editor.set(keys.step, std::to_string(*step));
    edited.push_back(keys.step);
  } else if (has(keys.step)) {
    editor.unset(keys.step);
    edited.push_back(keys.step);
  }
  for (const auto &copy : keys.copies) {
    if (step && has(copy.substr(0, copy.rfind('.')))) {
      editor.set(copy, std::to_string(*step));
      edited.push_back(copy);
    } else if (!step && has(copy)) {
      editor.unset(copy);
      edited.push_back(copy);
    }
  }
  // resume.dir (a fork of another run's step) stays while the run has none of its own.
  for (const auto &key : keys.exclusive) {
    if (step && has(key)) {
      editor.unset(key);
      edited.push_back(key);
    }
  }
  if (!primerl::names_its_run(config)) {
    editor.set_string("run.name", layout.run_dir.filename().string());
    edited.push_back("run.name");
  }
  return editor.text();
}

// Which step the relaunch starts from: the one asked for, else the newest complete one, else
// (with --from-start-if-none, when none is complete) the start. Returns the step (0: the start)
// and fills the plan's from_start, record and step_name.
std::int64_t choose_start(const ResumeOptions &options,
                          const ResumeInputs &inputs,
                          const toml::Document &config,
                          ResumePlan &plan) {
  const checkpoints::CheckpointSource &checkpoints = inputs.listing.source;
  const auto statuses = checkpoints::evaluate(inputs.listing);
  plan.from_start = options.from_start_if_none && !options.resume_step &&
                    std::none_of(statuses.begin(), statuses.end(), [](const auto &status) {
                      return status.complete;
                    });
  std::int64_t step = 0;
  if (!plan.from_start) {
    const checkpoints::StepStatus *chosen = nullptr;
    try {
      chosen = &checkpoints::require_step(statuses, options.resume_step);
    } catch (Error &error) {
      if (!options.resume_step) {
        error.add_context("to relaunch the run from the start in the same output dir, pass "
                          "--from-start-if-none");
      }
      throw;
    }
    const checkpoints::StepStatus &selected = *chosen;
    const auto listed = std::find_if(
        inputs.listing.steps.begin(),
        inputs.listing.steps.end(),
        [&](const checkpoints::StepListing &listing) { return listing.name == selected.name; });
    plan.record = checkpoints::make_record(*listed, checkpoints);
    plan.step_name = selected.name;
    step = selected.step;
    check_max_steps(config, step);
  }

  return step;
}

// The registry of the relaunch: --registry, else the source's. A run in Prime-RL's own placement
// (v0.9, or v0.8.0 with PRIME_RL_PLACEMENT) needs none; only the mixed layout does.
std::string
choose_registry(const ResumeOptions &options, const SourceExperiment &source, bool v0_9) {
  std::string registry =
      options.overrides.was_given("registry") ? options.overrides.registry : std::string();
  if (registry.empty() && source.registry) {
    registry = *source.registry;
  }
  if (registry.empty() && !v0_9 && !source.prime_rl_placement) {
    throw failure(
        "the source experiment recorded no external LiteRegistry endpoint (REGISTRY); deploy one "
        "with `primebeaker services launch` and pass --registry URI");
  }

  return registry;
}

// The launch options of the relaunch: the source's settings (on purpose: a relaunch of the same
// run, not a new launch with the user's defaults; docs/resume.md), each replaced by its flag
// when one is given.
launch::LaunchOptions relaunch_options(const ResumeOptions &options,
                                       const SourceExperiment &source,
                                       const ResumePlan &plan,
                                       const std::string &registry,
                                       bool v0_9,
                                       std::int64_t step,
                                       const std::string &random_run_id) {
  const launch::LaunchOptions &given = options.overrides;
  launch::LaunchOptions launch_options;
  launch_options.toml = plan.generated_config_path;
  launch_options.image = given.was_given("image") ? given.image : source.image;
  // The Prime-RL the source's image holds, as its launch recorded it. A source from before
  // PRIME_RL_VERSION ran what every launch then ran: the cataloged fork (v0.7.1.dev83) for the
  // v0.8.0 generation, Prime-RL v0.8.1.dev67 for v0.9 (docs/resume.md).
  if (given.was_given("prime-rl")) {
    launch_options.prime_rl = given.prime_rl;
  } else if (!given.was_given("image")) {
    launch_options.prime_rl = !source.prime_rl_version.empty() ? source.prime_rl_version
                              : v0_9                           ? "v0.8.1.dev67"
                                                               : "v0.7.1.dev83";
  }
  launch_options.workspace = given.was_given("workspace") ? given.workspace : source.workspace;
  launch_options.clusters = given.was_given("cluster") ? given.clusters : source.clusters;
  launch_options.priority =
      given.was_given("priority") && !given.priority.empty() ? given.priority : source.priority;
  launch_options.min_runtime_hours =
      given.was_given("min-runtime-hours") ? given.min_runtime_hours : source.min_runtime_hours;
  launch_options.budget = given.was_given("budget") ? given.budget : std::string();
  launch_options.registry = registry;
  launch_options.mount_path = source.mount_path;
  launch_options.dataset = source.dataset;
  launch_options.working_dir = source.working_dir;
  launch_options.scratch_dir = source.scratch_dir;
  launch_options.home_dir = source.home_dir;
  launch_options.gateway_port = source.gateway_port;
  launch_options.gateway_workers = source.gateway_workers;
  launch_options.rendezvous_timeout_seconds = source.rendezvous_timeout_seconds;
  launch_options.max_recoveries =
      given.was_given("max-recoveries") ? given.max_recoveries : source.max_recoveries;
  launch_options.max_restarts_on_errors = given.was_given("max-restarts-on-errors")
                                              ? given.max_restarts_on_errors
                                              : source.max_restarts_on_errors;
  // Who recovers the new experiment: as the source said (a source from before the choice gets
  // the default, a controller), unless --recover says otherwise.
  launch_options.recover = given.was_given("recover") ? given.recover : source.recover;
  launch_options.controller_token_secret = given.controller_token_secret;
  launch_options.controller_priority = given.controller_priority;
  launch_options.controller_budget = given.controller_budget;
  launch_options.controller_clusters = given.controller_clusters;
  launch_options.controller_name = options.controller_name;
  for (const auto &[name, count] : source.required_services) {
    launch_options.required_services.push_back(name + "=" + std::to_string(count));
  }
  launch_options.setup_command = source.setup_command;
  launch_options.wandb_secret = source.wandb_secret.value_or("");
  launch_options.hf_secret = source.hf_secret.value_or("");
  launch_options.wandb_run_id = source.wandb_run_id.value_or(random_run_id);
  for (const auto &[name, value] : source.env) {
    launch_options.env.push_back(name + "=" + value);
  }
  launch_options.env.push_back("PRIMEBEAKER_RESUME_PARENT_EXPERIMENT_ID=" + source.id);
  launch_options.env.push_back("PRIMEBEAKER_RESUME_STEP=" +
                               (plan.from_start ? std::string("start") : std::to_string(step)));
  for (const auto &[name, secret] : source.secrets) {
    launch_options.secrets.push_back(name + "=" + secret);
  }
  launch_options.description =
      "PrimeBeaker whole-topology resume of " + source.id +
      (plan.from_start ? std::string(" from the start (it had no complete checkpoint)")
                       : " from common checkpoint step " + std::to_string(step));

  return launch_options;
}

} // namespace

ResumePlan make_plan(const ResumeOptions &options, const ResumeInputs &inputs) {
  const SourceExperiment &source = inputs.source;
  const toml::Document &config = *inputs.config;
  const checkpoints::CheckpointSource &checkpoints = inputs.listing.source;
  const bool v0_9 = checkpoints::is_v0_9(
      config, source.v0_9 ? primerl::Generation::v0_9 : primerl::Generation::undetermined);
  const auto expected_layout = v0_9 ? checkpoints::Layout::v0_9 : checkpoints::Layout::v0_8_0;
  if (checkpoints.layout != expected_layout) {
    throw input_error(config.source_name() + ": a Prime-RL " +
                      std::string(checkpoints::layout_name(expected_layout)) +
                      " config, but its checkpoints were listed in the " +
                      std::string(checkpoints::layout_name(checkpoints.layout)) + " layout");
  }
  // Paths of the run (the glue resolves the layout; a v0.8.0 one follows from output_dir).
  const primerl::RunLayout layout =
      inputs.layout.output_dir.empty()
          ? primerl::run_layout(primerl::Generation::v0_8, checkpoints.output_dir, "", {})
          : inputs.layout;
  if (inputs.resolved_config_output_dir != inputs.resolved_source_output_dir) {
    throw failure("config output_dir " + inputs.resolved_config_output_dir.string() +
                  " does not match source " + inputs.resolved_source_output_dir.string());
  }

  ResumePlan plan;
  const std::int64_t step = choose_start(options, inputs, config, plan);
  const std::string registry = choose_registry(options, source, v0_9);
  plan.source_id = source.id;
  plan.source_name = source.name;
  plan.source_job_ids = source.job_ids;
  plan.checkpoints = checkpoints;
  plan.attempt_id = inputs.attempt_id;
  // Named after the run, not after the attempt resumed: a resume of a resumed (or recovered)
  // run must not stack suffixes.
  plan.experiment_name = !options.child_name.empty()
                             ? options.child_name
                             : resume_experiment_name(options.experiment_name.empty()
                                                          ? runs::run_base_name(source.name)
                                                          : options.experiment_name,
                                                      step,
                                                      inputs.attempt_id);
  plan.source_config_path = inputs.config_path;
  const fs::path artifacts = checkpoints.output_dir / "primebeaker_resume";
  plan.generated_config_path =
      artifacts / "configs" / (plan.experiment_name + "-" + inputs.attempt_id + ".toml");
  plan.manifest_path = artifacts / "attempts" / (inputs.attempt_id + ".json");
  plan.broadcast_archive = artifacts / "broadcast_archives" / inputs.attempt_id;
  plan.broadcasts_dir = layout.broadcasts;
  plan.not_inherited = source.not_inherited;

  // The resume TOML: the source text with only these keys changed; every other byte is kept.
  const std::optional<std::int64_t> pinned =
      plan.from_start ? std::nullopt : std::optional<std::int64_t>(step);
  plan.generated_config =
      v0_9 ? v0_9_resume_text(config, pinned, layout, plan.edited_keys)
           : v0_8_resume_text(config, pinned, plan.experiment_name, plan.edited_keys);
  // --set: applied to the resume TOML, never to a key the resume itself writes.
  const auto overrides = launch::parse_overrides(options.overrides.set);
  const auto resumed =
      toml::Document::parse(plan.generated_config, plan.generated_config_path.string());
  if (!overrides.empty()) {
    for (const auto &o : overrides) {
      for (const auto &edited : plan.edited_keys) {
        if (o.key == edited || text::starts_with(edited, o.key + ".")) {
          throw usage_error(fmt::format(
              "--set {}: rl resume writes {} itself (docs/resume.md)", o.argument, edited));
        }
      }
      plan.overrides.emplace_back(o.key, o.literal);
    }
    plan.generated_config = launch::apply_overrides(resumed, overrides);
  }
  const auto generated =
      toml::Document::parse(plan.generated_config, plan.generated_config_path.string());
  const auto &keys =
      primerl::resume_keys(v0_9 ? primerl::Generation::v0_9 : primerl::Generation::v0_8);
  const toml::Value *clean = generated.root().find(keys.clean);
  if (clean == nullptr || clean->boolean() != false) {
    throw failure("internal error: resume config must preserve its output directory");
  }
  const toml::Value *resume_step = generated.root().find_path(text::split(keys.step, '.'));
  if (plan.from_start ? resume_step != nullptr
                      : resume_step == nullptr || resume_step->integer() != step) {
    throw failure("internal error: resume config did not record the selected checkpoint");
  }
  if (v0_9 && primerl::run_dir_name(generated, "") != layout.run_dir.filename().string()) {
    throw failure("internal error: resume config does not name the run directory " +
                  layout.run_dir.string());
  }

  // The launch: the ordinary multi-node RL launcher, fed from the source plus overrides.
  const launch::LaunchOptions launch_options =
      relaunch_options(options, source, plan, registry, v0_9, step, inputs.random_run_id);
  launch::LaunchInputs launch_inputs;
  launch_inputs.program = launch::Program::rl;
  launch_inputs.document = &generated;
  launch_inputs.config_path = plan.generated_config_path;
  launch_inputs.cwd = inputs.cwd;
  launch_inputs.environment = inputs.environment;
  launch_inputs.launch_id = inputs.attempt_id;
  launch_inputs.experiment_name = plan.experiment_name;
  launch_inputs.output_dir_as_written = true; // the run's own dir, checked above
  launch_inputs.beaker_cli = inputs.beaker_cli;
  launch_inputs.beaker_cli_sha256 = inputs.beaker_cli_sha256;
  launch::resolve_launch_paths(launch_options, launch_inputs, inputs.resolve);
  try {
    plan.launch = launch::make_plan(launch_options, launch_inputs);
  } catch (const Error &error) {
    throw launch::at_override_arguments(error, resumed, generated, overrides);
  }
  // The receipt and the card show them; the resume TOML they are in is the one execute writes.
  plan.launch.overrides = plan.overrides;
  if (plan.launch.topology != launch::Topology::multi_node) {
    throw input_error(config.source_name() + ": rl resume relaunches multi-node RL runs "
                                             "(deployment.type = \"multi_node\")");
  }
  return plan;
}

} // namespace pb::resume
