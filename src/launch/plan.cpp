// SPDX-License-Identifier: MIT
// make_plan: options + loaded inputs -> the Beaker spec and everything printed or run. Pure.
// The seams: plan_flags.cpp (flags), plan_topology.cpp (TOML readers), here the container
// env (contract::ReplicaEnv), the mount check and the experiment.
#include "ownership.hpp"
#include "paths.hpp"
#include "placement.hpp"
#include "plan_parts.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/random.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/validate.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/notify/notify.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/pieces.hpp>
#include <primebeaker/primerl/release.hpp>
#include <primebeaker/primerl/schema.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/staging/stage.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

namespace pb::launch {

namespace {

const char *const k_result_path = "/tmp/beaker-result";

using detail::CheckedPath;

// The experiment's page: the URL beaker printed for `id` ("See progress at https://..."), else
// Beaker's public one.
std::string experiment_url(std::string_view beaker_stdout, const std::string &id) {
  for (size_t start = beaker_stdout.find("https://"); start != std::string_view::npos;
       start = beaker_stdout.find("https://", start + 1)) {
    size_t end = start;
    while (end < beaker_stdout.size() && beaker_stdout[end] > ' ' && beaker_stdout[end] != '\x1b') {
      ++end;
    }
    const std::string_view url = beaker_stdout.substr(start, end - start);
    if (url.size() >= id.size() && url.substr(url.size() - id.size()) == id) {
      return std::string(url);
    }
  }
  return "https://beaker.org/ex/" + id;
}

// Flag paths outside the mount throw (exit 2); TOML paths join the TOML's problems. A TOML's
// relative path is relative to --working-dir, as in the container.
void check_under_mount(const std::vector<CheckedPath> &paths,
                       const std::string &mount,
                       const std::string &working_dir,
                       const LaunchInputs &inputs,
                       primerl::Problems &problems) {
  const std::string mount_resolved = detail::real_path(inputs, mount);
  for (const auto &path : paths) {
    const std::string absolute = path.from_toml ? detail::in_container(working_dir, path.value)
                                                : detail::absolute_normalized(inputs, path.value);
    const std::string resolved = detail::real_path(inputs, absolute);
    if (!path_is_under(resolved, mount_resolved)) {
      const std::string message = fmt::format(
          "launch path must be under mounted path {}: {} ({})", mount, resolved, path.label);
      if (!path.from_toml) {
        throw usage_error(message);
      }
      problems.add(message);
    }
  }
}

// The resolved TOML path as the container sees it: re-rooted at the mount path as given, so a
// submitter whose mount is a symlink (/weka -> /mnt/weka) still embeds /weka/... .
std::string
container_path(const std::string &resolved, const std::string &mount, const LaunchInputs &inputs) {
  const std::string mount_resolved = detail::real_path(inputs, mount);
  if (mount_resolved == mount || !path_is_under(resolved, mount_resolved)) {
    return resolved;
  }
  return normalize_path(mount + "/" + resolved.substr(mount_resolved.size()));
}

// The W&B object of the output: entity from the TOML (or, for RL, --wandb-entity).
OrderedJson wandb_json(const primerl::Wandb &wandb,
                       const std::string &name,
                       const std::string &run_id,
                       const std::optional<std::string> &entity) {
  if (!wandb.enabled) {
    return nullptr; // no W&B run
  }
  OrderedJson out = OrderedJson::object();
  out["run_id"] = run_id;
  out["project"] = wandb.project;
  out["entity"] = entity ? OrderedJson(*entity) : OrderedJson(nullptr);
  out["name"] = name;
  out["offline"] = wandb.offline;
  if (wandb.offline || !entity) {
    out["url"] = nullptr;
  } else {
    out["url"] = fmt::format("https://wandb.ai/{}/{}/runs/{}",
                             text::percent_encode(*entity),
                             text::percent_encode(wandb.project),
                             text::percent_encode(run_id));
  }
  return out;
}

} // namespace

std::string_view program_name(Program program) {
  return program == Program::sft ? "sft" : "rl";
}

std::string choose_launch_id(const std::map<std::string, std::string> &environment,
                             const std::string &random_id) {
  const auto it = environment.find("PRIMEBEAKER_LAUNCH_ID");
  if (it == environment.end()) {
    return random_id;
  }
  const std::string &id = it->second;
  const bool ok = !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
  if (!ok) {
    throw usage_error(fmt::format("PRIMEBEAKER_LAUNCH_ID must be 1-64 letters, digits, '_' or "
                                  "'-', got '{}'",
                                  id));
  }
  return id;
}

std::string random_hex_id() {
  return random::hex_id();
}

std::int64_t LaunchPlan::gpus() const {
  std::int64_t total = 0;
  for (const auto &task : experiment.tasks) {
    total += (task.replication ? task.replication->replicas : 1) * task.gpu_count;
  }
  return total;
}

OrderedJson LaunchPlan::preview_json() const {
  OrderedJson out = OrderedJson::object();
  out["experiment_name"] = experiment_name;
  if (topology == Topology::multi_node) {
    out["launch_id"] = launch_id;
  }
  out["spec_path"] = spec_path.string();
  out["spec"] = spec;
  out["submit_command"] = submit_command;
  out["wandb_run"] = wandb_run;
  add_overrides(out);
  if (controller) {
    // Submitted right after the run, with the run's id in place of the placeholder.
    out["controller"] = {{"experiment_name", controller->experiment_name},
                         {"spec_path", controller->spec_path.string()},
                         {"spec", controller->spec}};
  }
  notify::redact_spec(out); // a literal webhook URL is never printed (docs/notify.md)
  return out;
}

OrderedJson LaunchPlan::receipt_json(const std::string &beaker_stdout) const {
  OrderedJson out = OrderedJson::object();
  out["experiment_name"] = experiment_name;
  if (topology == Topology::multi_node) {
    out["launch_id"] = launch_id;
  }
  // Fields, so that scripts need not read beaker's text (docs/launch.md "Output").
  const auto id = beaker::parse_created_experiment_id(beaker_stdout);
  out["experiment_id"] = id ? OrderedJson(*id) : OrderedJson(nullptr);
  out["experiment_url"] =
      id ? OrderedJson(experiment_url(beaker_stdout, *id)) : OrderedJson(nullptr);
  out["spec_path"] = spec_path.string();
  out["stdout"] = beaker_stdout;
  out["wandb_run"] = wandb_run;
  out["staged_program"] =
      staged_program.empty() ? OrderedJson(nullptr) : OrderedJson(staged_program.string());
  out["recovery"] = recovery;
  add_overrides(out);
  return out;
}

void LaunchPlan::add_overrides(OrderedJson &out) const {
  if (overrides.empty()) {
    return;
  }
  OrderedJson set = OrderedJson::object();
  for (const auto &[key, literal] : overrides) {
    set[key] = literal;
  }
  out["overrides"] = {{"set", set}};
  if (!config_copy_path.empty()) {
    out["overrides"]["config_path"] = config_copy_path.string();
  }
}

namespace detail {

std::string real_path(const LaunchInputs &inputs, const std::string &path) {
  const auto it = inputs.real_paths.find(path);
  return it == inputs.real_paths.end() ? path : it->second;
}

std::string absolute_normalized(const LaunchInputs &inputs, const std::string &path) {
  const std::filesystem::path absolute = path;
  return normalize_path((absolute.is_relative() ? inputs.cwd / absolute : absolute).string());
}

std::string in_container(const std::string &working_dir, const std::string &path) {
  return normalize_path(!path.empty() && path.front() == '/' ? path : working_dir + "/" + path);
}

} // namespace detail

namespace {

contract::Kind kind_of(Program program, bool multi) {
  if (multi) {
    return program == Program::sft ? contract::Kind::multi_sft : contract::Kind::multi_rl;
  }
  return program == Program::sft ? contract::Kind::single_sft : contract::Kind::single_rl;
}

// Steps 2-3: the topology, read as the image's Prime-RL generation reads it, and the program the
// TOML is written for. A TOML for the other program stops here; no deployment.type is Prime-RL's
// single_node, an invalid one a problem read as single_node so the other keys are still checked.
// A per-component Prime-RL TOML (inference, orchestrator, trainer, env server, evals) is not an
// rl or sft one: said in one line, as `toml check --prime-rl` reads it, before any rule of the
// launch could suggest an edit that would change what the file means.
void refuse_component_toml(const toml::Document &document, Program program) {
  const auto has = [&](const char *key) { return document.root().find(key) != nullptr; };
  if (has("trainer") || has("orchestrator") || (program == Program::sft && has("data"))) {
    return;
  }
  const primerl::Reading best = primerl::read_prime_rl_file(document, std::nullopt, std::nullopt);
  if (best.errors != 0 || best.root == primerl::ConfigRoot::rl ||
      best.root == primerl::ConfigRoot::sft) {
    return;
  }
  const auto own = primerl::read_prime_rl_file(document,
                                               program == Program::rl ? primerl::ConfigRoot::rl
                                                                      : primerl::ConfigRoot::sft,
                                               best.prime_rl);
  if (own.errors == 0) {
    return;
  }
  throw input_error(fmt::format(
      "{}: this is a Prime-RL {} {} config (as `primebeaker toml check --prime-rl` reads it), not "
      "an {} one: primebeaker launches Prime-RL's rl and sft entry points; launch the rl or sft "
      "TOML that runs this component",
      document.source_name(),
      best.prime_rl.version,
      primerl::root_name(best.root),
      program_name(program)));
}

contract::Kind read_kind(const LaunchInputs &inputs, primerl::Problems &problems) {
  const toml::Document &document = *inputs.document;
  refuse_component_toml(document, inputs.program);
  // Prime-RL defaults the deployment to single_node, in both generations.
  const bool multi =
      document.root().find_path({"deployment", "type"}) != nullptr &&
      primerl::read_deployment_type(document, problems, primerl::DeploymentType::single_node) ==
          primerl::DeploymentType::multi_node;
  const bool has_orchestrator = document.root().find("orchestrator") != nullptr;
  if (inputs.program == Program::sft && has_orchestrator) {
    throw input_error(fmt::format("{}: this looks like an RL TOML (it has [orchestrator]); use "
                                  "`primebeaker rl`",
                                  document.source_name()));
  }
  if (inputs.program == Program::rl && !has_orchestrator &&
      document.root().find("data") != nullptr) {
    throw input_error(fmt::format("{}: this looks like an SFT TOML ([data], no [orchestrator]); "
                                  "use `primebeaker sft`",
                                  document.source_name()));
  }
  return kind_of(inputs.program, multi);
}

// The container env of the launch: the replica contract, filled from flags and the TOML.
contract::ReplicaEnv replica_env(const LaunchOptions &options,
                                 const LaunchInputs &inputs,
                                 const detail::ValidatedFlags &flags,
                                 const detail::TopologyRead &read,
                                 const std::string &experiment_name,
                                 const std::optional<std::string> &entity,
                                 const std::string &config_path) {
  contract::ReplicaEnv replica = read.replica;
  replica.kind = kind_of(inputs.program, read.replicas > 0);
  const std::string run_id = options.wandb_run_id.empty() ? inputs.launch_id : options.wandb_run_id;
  replica.home = flags.home_dir;
  replica.working_dir = flags.working_dir;
  replica.scratch = flags.scratch_dir;
  replica.config_path = container_path(config_path, flags.mount, inputs);
  replica.output_dir = read.output_dir.value;
  replica.wandb_run_id = run_id;
  replica.setup_command = options.setup_command;
  replica.registry = flags.registry;
  replica.max_recoveries = options.max_recoveries;
  replica.max_restarts_on_errors = options.max_restarts_on_errors;
  if (const bool multi = read.replicas > 0; multi && inputs.program == Program::rl) {
    replica.recover = detail::recover_mode(options, inputs.program, multi);
    replica.controller_name = !options.controller_name.empty() ? options.controller_name
                              : replica.recover == "controller"
                                  ? detail::controller_name_for(experiment_name)
                                  : std::string();
  }
  if (read.generation == primerl::Generation::v0_9) {
    // Prime-RL names an unnamed run at random; the experiment name makes it findable again.
    replica.run_dir_name = read.run.named_by_launch ? experiment_name : read.run.dir;
    replica.run_name = read.run.named_by_launch ? experiment_name : std::string();
  }
  if (!contract::is_multi_node(replica.kind)) {
    replica.experiment_name = experiment_name;
    if (replica.kind == contract::Kind::single_rl) {
      replica.wandb_shared_run_id = run_id;
      replica.wandb_entity = entity;
    }
    return replica;
  }
  replica.launch_id = inputs.launch_id;
  replica.rendezvous_timeout_seconds = options.rendezvous_timeout_seconds;
  replica.wandb_shared_run_id = run_id;
  replica.rendezvous_dir = normalize_path(fmt::format(
      "{}/primebeaker/rendezvous/{}-{}", flags.scratch_dir, experiment_name, inputs.launch_id));
  if (replica.kind == contract::Kind::multi_rl && !replica.prime_rl_topology() &&
      !replica.registry) {
    // No --registry (nor config `registry`): a file registry on the shared mount, in the run's
    // rendezvous dir, which every replica sees and which needs no server (docs/launch.md
    // "Registry").
    replica.registry = contract::parse_registry("file://" + replica.rendezvous_dir + "/registry",
                                                {flags.working_dir, flags.home_dir},
                                                "--registry",
                                                true);
  }
  if (replica.kind == contract::Kind::multi_rl && !replica.prime_rl_topology()) {
    replica.gateway_port = options.gateway_port;
    replica.gateway_workers = options.gateway_workers;
    replica.required_services = flags.required_services;
  }
  return replica;
}

// Step 12: launcher-owned values, then --env, then secrets; sorted by code point.
std::vector<beaker::EnvVar> container_env(const contract::ReplicaEnv &replica,
                                          const detail::ValidatedFlags &flags) {
  std::map<std::string, std::string> values = replica.to_env();
  std::set<std::string> reserved;
  for (const auto &[name, value] : values) {
    reserved.insert(name);
  }
  reserved.insert(contract::var::setup_command);
  std::vector<std::string> clashes;
  for (const auto &[name, value] : flags.user_env) {
    if (reserved.count(name) > 0) {
      clashes.push_back(name);
    }
    values[name] = value;
  }
  if (!clashes.empty()) {
    throw usage_error(fmt::format("reserved environment names cannot be overridden: [{}]",
                                  text::join(clashes, ", ")));
  }
  std::vector<std::string> both;
  for (const auto &[name, secret] : flags.secrets) {
    if (values.count(name) > 0) {
      both.push_back(name);
    }
  }
  if (!both.empty()) {
    throw usage_error(fmt::format("environment names cannot be both values and secrets: [{}]",
                                  text::join(both, ", ")));
  }
  std::vector<beaker::EnvVar> env;
  for (const auto &[name, value] : values) {
    env.push_back(beaker::EnvVar::plain(name, value));
  }
  for (const auto &[name, secret] : flags.secrets) {
    env.push_back(beaker::EnvVar::from_secret(name, secret));
  }
  return env;
}

void check_clusters(const std::vector<std::string> &clusters) {
  if (std::none_of(clusters.begin(), clusters.end(), [](const auto &c) { return !c.empty(); })) {
    throw usage_error("at least one non-empty Beaker cluster is required (--cluster)");
  }
  if (std::any_of(clusters.begin(), clusters.end(), [](const auto &c) { return c.empty(); })) {
    throw usage_error("--cluster names cannot be empty");
  }
}

// Steps 2-3 begin here: an older generation stops first, then the image and the Prime-RL it holds
// decide how the TOML is read (images/choose.hpp).
images::ImageChoice choose_launch_image(const LaunchOptions &options, const LaunchInputs &inputs) {
  primerl::require_supported_generation(*inputs.document);
  const images::Catalog &catalog =
      inputs.catalog != nullptr ? *inputs.catalog : images::Catalog::builtin();
  images::ImageRequest request{
      options.image, options.prime_rl, options.workspace, options.stage, std::nullopt};
  if (options.was_given("image-holds")) {
    request.holds = options.image_holds;
  }
  return images::choose_image(catalog,
                              request,
                              *inputs.document,
                              inputs.program == Program::sft ? primerl::ConfigRoot::sft
                                                             : primerl::ConfigRoot::rl);
}

} // namespace

std::vector<std::string> launch_paths(const LaunchOptions &options, const LaunchInputs &inputs) {
  std::vector<std::string> paths;
  detail::ValidatedFlags flags;
  try {
    detail::check_basic_flags(options, flags);
    paths = {flags.mount, flags.working_dir, flags.scratch_dir, flags.home_dir};
    paths.push_back(detail::absolute_normalized(inputs, inputs.config_path.string()));
    if (inputs.document != nullptr) {
      primerl::Problems ignored(*inputs.document); // make_plan reports them
      const auto generation = choose_launch_image(options, inputs).prime_rl.generation;
      const auto read =
          detail::read_topology(*inputs.document, read_kind(inputs, ignored), generation, ignored);
      for (const auto &path : read.paths) {
        paths.push_back(detail::in_container(flags.working_dir, path.value));
      }
    }
  } catch (const Error &) {
    // make_plan reports it; the paths listed so far are all that can be resolved.
  }
  return paths;
}

void resolve_launch_paths(const LaunchOptions &options,
                          LaunchInputs &inputs,
                          const PathResolver &resolve) {
  for (const auto &path : launch_paths(options, inputs)) {
    inputs.real_paths[path] = normalize_path(resolve(path).string());
  }
}

namespace {

// Every environment entry of an RL TOML is checked against the catalog here, so a bad argument
// fails the preview instead of the Verifiers worker after scheduling (docs/environments.md).
void check_environment_arguments(const toml::Document &document, primerl::Problems &problems) {
  for (const auto &problem : environments::validate_toml(document, document.source_name())) {
    if (!problem.error) {
      continue;
    }
    std::string where = document.source_name();
    if (problem.position.line != 0) {
      where += fmt::format(":{}:{}", problem.position.line, problem.position.column);
    }
    problems.add(fmt::format("{}: {}{}{}",
                             where,
                             problem.key_path,
                             problem.key_path.empty() ? "" : ": ",
                             problem.message));
  }
}

// A v0.9 run is named by --name, monitors.wandb.name or run.name. Prime-RL's own default is
// random, which no resume could find, so an unnamed run takes the name its file's path gives
// (recorded as defaulted); a name Beaker cannot take is refused.
void check_v0_9_name(const toml::Document &document,
                     std::string &experiment_name,
                     const detail::TopologyRead &read,
                     primerl::Problems &problems) {
  if (experiment_name.empty()) {
    experiment_name = primerl::default_experiment_name(document);
    problems.defaulted(fmt::format("run.name: none, so the launch names the run '{}' (the file's "
                                   "folder and name; --name to choose), which a resume finds "
                                   "again",
                                   experiment_name));
  } else if (!primerl::is_experiment_name(experiment_name)) {
    const char *key = !read.wandb.name.empty() && read.wandb.name != read.run.name
                          ? "monitors.wandb.name"
                          : "run.name";
    const toml::Value *value = document.root().find_path(text::split(key, '.'));
    problems.add(fmt::format("{}: {} '{}' cannot be a Beaker experiment name: use letters, "
                             "digits, '.', '_' and '-' (at most 128)",
                             value ? document.location(*value) : document.source_name(),
                             key,
                             experiment_name));
  }
}

} // namespace

namespace {
LaunchPlan plan_document(const LaunchOptions &options, const LaunchInputs &inputs);
} // namespace

namespace {

// --wandb-project (or the config's wandb.project) for a TOML whose W&B table names no project:
// one more override, so the copy says it and the card shows it.
std::vector<std::string> with_wandb_project(const LaunchOptions &options,
                                            const toml::Document &document) {
  std::vector<std::string> set = options.set;
  if (options.wandb_project.empty()) {
    return set;
  }
  for (const char *table : {"wandb", "monitors.wandb"}) {
    const auto *found = document.root().find_path(text::split(table, '.'));
    if (found == nullptr || !found->is(toml::Type::table)) {
      continue;
    }
    const std::string key = std::string(table) + ".project";
    const bool overridden = std::any_of(set.begin(), set.end(), [&](const std::string &item) {
      return item.starts_with(key + "=");
    });
    if (found->find("project") == nullptr && !overridden) {
      set.push_back(key + "=" + nlohmann::json(options.wandb_project).dump());
    }
  }
  return set;
}

void add_origins(const LaunchOptions &options, LaunchPlan &plan) {
  for (const auto &[flag, origin] : options.origins) {
    if (origin == "built-in") {
      plan.built_in.push_back(flag);
    } else if (!origin.starts_with("flag ")) {
      plan.from_config.emplace_back(flag, origin);
    }
  }
}

LaunchPlan make_plan_with_overrides(const LaunchOptions &options, const LaunchInputs &inputs);

} // namespace

LaunchPlan make_plan(const LaunchOptions &options, const LaunchInputs &inputs) {
  LaunchPlan plan = make_plan_with_overrides(options, inputs);
  add_origins(options, plan);
  return plan;
}

namespace {

// Every run gets its own output dir (docs/launch.md "Output dir"): a v0.8.0-generation TOML that
// names none would take Prime-RL's `outputs`, shared by every run launched from one working
// dir, so the launch gives it `outputs/<run name>` in the copy the container reads. (v0.9 keeps
// each run in <output_dir>/<run name> by itself; a relaunch of a run keeps the run's dir.)
std::optional<std::string> default_output_dir(const LaunchOptions &options,
                                              const LaunchInputs &inputs,
                                              const std::vector<std::string> &set) {
  const toml::Document &document = *inputs.document;
  if (inputs.output_dir_as_written || document.root().find("output_dir") != nullptr ||
      std::any_of(set.begin(), set.end(), [](const std::string &item) {
        return item.starts_with("output_dir=");
      })) {
    return std::nullopt;
  }
  try {
    if (choose_launch_image(options, inputs).prime_rl.generation == primerl::Generation::v0_9) {
      return std::nullopt;
    }
  } catch (const Error &) {
    return std::nullopt; // plan_document reports it
  }
  const std::string name =
      primerl::launch_run_name(document, inputs.experiment_name.value_or(options.name));
  if (!primerl::is_experiment_name(name)) {
    return std::nullopt; // refused by plan_document, naming the key
  }
  return "outputs/" + name;
}

LaunchPlan make_plan_with_overrides(const LaunchOptions &options, const LaunchInputs &inputs) {
  if (inputs.document == nullptr) {
    throw failure("internal error: make_plan without a TOML document");
  }
  refuse_component_toml(*inputs.document, inputs.program); // named as the user wrote it
  std::vector<std::string> set = with_wandb_project(options, *inputs.document);
  const auto output_dir = default_output_dir(options, inputs, set);
  if (output_dir) {
    set.push_back("output_dir=" + nlohmann::json(*output_dir).dump());
  }
  if (set.empty()) {
    return plan_document(options, inputs);
  }
  // The overrides go into a copy beside the spec files, named after the TOML and the launch;
  // the plan is made from the copy, as the container will read it.
  auto overrides = parse_overrides(set);
  for (auto &o : overrides) {
    if (output_dir && o.key == "output_dir") {
      o.shown = fmt::format("the launch's default output_dir = \"{}\"", *output_dir);
    } else if (o.key.ends_with(".project") &&
               std::find(options.set.begin(), options.set.end(), o.argument) == options.set.end()) {
      o.shown = fmt::format("--wandb-project {}", options.wandb_project);
    }
  }
  detail::ValidatedFlags flags;
  detail::check_basic_flags(options, flags);
  // In a directory named after the launch and the copy's content, so that two TOMLs of one name
  // launched with one pinned PRIMEBEAKER_LAUNCH_ID never share a copy (the container reads it
  // hours later); under the TOML's own folder and file name, so that a reader of the spec knows
  // which TOML it came from (docs/launch.md "Overrides").
  const std::string copy_text = apply_overrides(*inputs.document, overrides);
  const std::filesystem::path source(inputs.document->source_name());
  const std::filesystem::path copy_path =
      normalize_path(fmt::format("{}/primebeaker/beaker_experiments/{}-{}/{}",
                                 flags.scratch_dir,
                                 inputs.launch_id,
                                 sha2::sha256_hex(copy_text).substr(0, 8),
                                 (source.parent_path().filename() / source.filename()).string()));
  // Read under the user's file name: the run is named from it as from the file itself, and its
  // problems name it (their lines mapped back by at_override_arguments).
  const auto copy = toml::Document::parse(copy_text, inputs.document->source_name());
  LaunchInputs edited = inputs;
  edited.document = &copy;
  edited.config_path = copy_path;
  LaunchPlan plan;
  try {
    plan = plan_document(options, edited);
  } catch (const Error &error) {
    throw at_override_arguments(error, *inputs.document, copy, overrides);
  }
  plan.config_copy_path = copy_path;
  plan.config_copy_text = copy.text();
  for (const auto &o : overrides) {
    if (!(output_dir && o.key == "output_dir")) {
      plan.overrides.emplace_back(o.key, o.literal);
    }
  }
  if (output_dir) {
    plan.ownership.defaulted = true;
    plan.defaulted.push_back(fmt::format(
        "output_dir = \"{}\" (Prime-RL's outputs plus the run name, so that no two runs share "
        "checkpoints; --set output_dir=... to choose)",
        *output_dir));
  }
  return plan;
}

} // namespace

namespace {

// The checks that read this machine (docs/launch.md "Checks"), every problem in one message:
// another run's claim on the checkpoint directory (not with --if-exists adopt, whose submit
// adopts a rerun before it checks), and the dataset files an RL TOML's environments name,
// looked for where this machine sees the mount (one it cannot see is a note).
void check_on_this_machine(const LaunchOptions &options,
                           const toml::Document &document,
                           fs::FileSystem &files,
                           LaunchPlan &plan) {
  primerl::Problems problems(document);
  if (plan.if_exists != "adopt") {
    if (auto claimed = claimed_directory_problem(plan, files)) {
      problems.add(std::move(*claimed));
    }
  }
  if (plan.program == Program::rl) {
    for (const auto &problem : environments::check_dataset_files(
             document, {options.working_dir, options.mount_path}, files)) {
      std::string where = document.source_name();
      if (problem.position.line != 0) {
        where += fmt::format(":{}:{}", problem.position.line, problem.position.column);
      }
      std::string line = fmt::format("{}: {}: {}", where, problem.key_path, problem.message);
      if (problem.error) {
        problems.add(std::move(line));
      } else {
        plan.notes.push_back(std::move(line));
      }
    }
  }
  problems.throw_if_any();
}

LaunchPlan plan_document(const LaunchOptions &options, const LaunchInputs &inputs) {
  if (inputs.document == nullptr) {
    throw failure("internal error: make_plan without a TOML document");
  }
  const toml::Document &document = *inputs.document;
  const Program program = inputs.program;

  // Flag errors stop at the first (exit 2); the TOML's problems are collected and reported
  // together once the flags are known good (exit 3, docs/launch.md "All problems at once").
  primerl::Problems problems(document);
  detail::ValidatedFlags flags;
  detail::check_basic_flags(options, flags); // 1
  const images::ImageChoice image = choose_launch_image(options, inputs);
  const primerl::Generation generation = image.prime_rl.generation;
  const bool v0_9 = generation == primerl::Generation::v0_9;
  const contract::Kind kind = read_kind(inputs, problems); // 2-3
  const bool multi = contract::is_multi_node(kind);
  detail::check_flags(options, program, multi, image, flags); // 4-9
  const detail::TopologyRead read =
      detail::read_topology(document, kind, generation, problems); // 10
  if (program == Program::rl) {
    check_environment_arguments(document, problems);
  }
  // Every key Prime-RL would refuse on the node (docs/primerl-schema.md), after the launch rules
  // so that what they reported is not said twice.
  // (An RL TOML with neither [trainer] nor [orchestrator], such as a per-component file, is not
  // read as the rl entrypoint: what the launch rules say of it is all that is sure.)
  std::vector<std::string> notes = {fmt::format(
      "image {}: {}, chosen as {}", image.name, primerl::display_name(image.prime_rl), image.why)};
  const bool schema_checked = v0_9 || program == Program::sft ||
                              document.root().find("trainer") != nullptr ||
                              document.root().find("orchestrator") != nullptr;
  primerl::SchemaCheckOptions schema_options;
  schema_options.release = image.prime_rl.schema;
  for (const auto &found :
       !schema_checked ? std::vector<primerl::SchemaProblem>{}
                       : primerl::check_schema(document,
                                               program == Program::sft ? primerl::ConfigRoot::sft
                                                                       : primerl::ConfigRoot::rl,
                                               schema_options)) {
    if (found.severity == primerl::SchemaProblem::Severity::note) {
      notes.push_back(found.message);
    } else if (!problems.already_reports(found.line != 0 ? found.location : "", found.key)) {
      problems.add(found.message);
    }
  }

  std::string experiment_name =
      inputs.experiment_name.value_or(options.name.empty() ? read.wandb.name : options.name);
  if (v0_9) {
    check_v0_9_name(document, experiment_name, read, problems);
  }
  std::optional<std::string> entity = read.wandb.entity;
  if (!entity && program == Program::rl && !options.wandb_entity.empty()) {
    entity = options.wandb_entity;
  }
  const std::string config_path =
      detail::real_path(inputs, detail::absolute_normalized(inputs, inputs.config_path.string()));
  contract::ReplicaEnv replica =
      replica_env(options, inputs, flags, read, experiment_name, entity, config_path);
  replica.prime_rl_version = image.prime_rl.version;

  // --cluster auto: the cluster is chosen from gather's snapshot (docs/clusters.md).
  auto placement =
      detail::place_run(options, inputs, read.replicas, read.gpu_count, flags.clusters);
  check_clusters(flags.clusters); // 11
  std::vector<CheckedPath> checked = {{"--toml", config_path, false}};
  checked.insert(checked.end(), read.paths.begin(), read.paths.end());
  checked.push_back({"--working-dir", flags.working_dir, false});
  checked.push_back({"--scratch-dir", flags.scratch_dir, false});
  checked.push_back({"--home-dir", flags.home_dir, false});
  check_under_mount(checked, flags.mount, flags.working_dir, inputs, problems);
  problems.throw_if_any();

  // The program the container runs: this build, staged on the mount (docs/staging.md), or with
  // --no-stage the image's own `primebeaker`.
  std::filesystem::path stage_dir;
  std::filesystem::path staged_program;
  if (options.stage) {
    const staging::Identity &identity =
        inputs.stage_identity != nullptr ? *inputs.stage_identity : staging::current();
    stage_dir = staging::stage_directory(flags.scratch_dir, identity);
    staged_program = staging::staged_program(flags.scratch_dir, identity);
  }

  beaker::Task task;
  task.name = read.task_name;
  task.image = beaker::Image::from_reference(flags.image_ref);
  task.command = {options.stage ? staged_program.string() : std::string("primebeaker"), "node"};
  if (!multi) {
    task.command.emplace_back("single");
  }
  task.command.emplace_back(program_name(program));
  task.datasets = {{flags.mount, options.dataset}};
  task.result_path = k_result_path;
  task.context.priority = options.priority;
  task.context.min_runtime = fmt::format("{}h", options.min_runtime_hours);
  task.context.auto_resume = detail::auto_resume(options, multi); // docs/recovery.md
  task.clusters = flags.clusters;
  task.gpu_count = read.gpu_count;
  if (multi) {
    task.replication = beaker::Replication{};
    task.replication->replicas = read.replicas;
  }
  // No W&B run (no [wandb], Prime-RL's default): the default W&B secret is not asked for, since
  // Beaker would refuse to start a task whose secret the workspace lacks.
  if (!read.wandb.enabled && !options.wandb_secret &&
      std::none_of(options.secrets.begin(), options.secrets.end(), [](const std::string &s) {
        return text::starts_with(s, "WANDB_API_KEY=");
      })) {
    flags.secrets.erase("WANDB_API_KEY");
  }
  task.env_vars = container_env(replica, flags); // 12
  const auto notify_to = notify::parse_target(options.notify, options.notify_events, "--notify");
  std::ranges::copy(notify::container_env(notify_to), std::back_inserter(task.env_vars));

  beaker::Experiment experiment;
  experiment.description =
      options.description.empty()
          ? fmt::format("PrimeBeaker {} {}", read.description_kind, experiment_name)
          : options.description;
  experiment.budget = options.budget;
  experiment.allowed_task_retries = detail::allowed_task_retries(options, multi);
  experiment.tasks.push_back(std::move(task));
  if (const auto found = beaker::problems(experiment); !found.empty()) {
    throw usage_error("the Beaker spec would be rejected: " + text::join(found, "; "));
  }

  LaunchPlan plan;
  plan.program = program;
  plan.topology = multi ? Topology::multi_node : Topology::single_node;
  plan.experiment_name = experiment_name;
  plan.workspace = options.workspace;
  plan.launch_id = inputs.launch_id;
  // Per launch: a later launch (a rerun Beaker then refuses, a parallel job of the same name)
  // never rewrites this one's spec (docs/launch.md "Files a launch writes").
  plan.spec_path = normalize_path(fmt::format("{}/primebeaker/beaker_experiments/{}-{}.json",
                                              flags.scratch_dir,
                                              experiment_name,
                                              inputs.launch_id));
  plan.spec = beaker::to_json(experiment);
  plan.spec_text = to_pretty_json(plan.spec);
  plan.experiment = std::move(experiment);
  plan.replica = replica;
  plan.submit_command = beaker::experiment_create_argv(
      "beaker", experiment_name, options.workspace, plan.spec_path.string());
  plan.wandb_run = wandb_json(read.wandb, experiment_name, replica.wandb_run_id, entity);
  plan.write_spec = options.write_spec;
  if (options.if_exists != "fail" && options.if_exists != "adopt") {
    throw usage_error(
        fmt::format("--if-exists must be fail or adopt, got '{}'", options.if_exists));
  }
  plan.if_exists = options.if_exists;
  plan.submit_refusal = flags.submit_refusal;
  plan.notes = std::move(notes);
  plan.prime_rl = image.prime_rl.version;
  plan.defaulted = problems.defaults();
  plan.image_name = image.name;
  plan.weight_broadcast_port = read.weight_broadcast_port;
  if (primerl::needs_deepep_across_nodes(document)) {
    plan.shape_cautions.emplace_back(
        "hosts",
        "DeepEP across nodes needs the hosts' IBGDA driver options (NVSHMEM), which a container "
        "cannot set: run on InfiniBand clusters whose nodes provide them");
  }
  if (replica.kv_offload == primerl::KvOffload::mooncake) {
    plan.shape_cautions.emplace_back(
        "hosts",
        "Mooncake pins each node's KV segment for RDMA, which needs an unlimited locked-memory "
        "limit (ulimit -l) that a container cannot raise past its host's: run on InfiniBand "
        "clusters whose containers allow it (each replica lifts it as far as it can and says so "
        "when it cannot)");
  }
  if (replica.disaggregated &&
      std::find(image.holds.begin(), image.holds.end(), primerl::k_piece_nixl_ucx) ==
          image.holds.end()) {
    plan.shape_cautions.emplace_back(
        "image",
        fmt::format("{} holds NIXL's pip wheel, whose own UCX Prime-RL reports crashing on "
                    "prefill->decode KV transfer: Prime-RL builds NIXL against UCX 1.19 "
                    "(INCLUDE_NIXL_FROM_SOURCE=1); an image built so is declared with "
                    "--image-holds ...,{}",
                    image.name,
                    primerl::k_piece_nixl_ucx));
  }
  plan.stage_dir = stage_dir;
  plan.staged_program = staged_program;
  plan.ownership.output_dir = detail::in_container(flags.working_dir, replica.output_dir);
  plan.ownership.v0_9 = v0_9;
  plan.ownership.mount = flags.mount;
  plan.ownership.checkpoint_dir =
      v0_9 ? plan.ownership.output_dir / replica.run_dir_name : plan.ownership.output_dir;
  plan.ownership.owner_path = recovery::ledger::owner_path(
      plan.ownership.output_dir, v0_9 ? replica.run_dir_name : std::string());
  plan.ownership.run_id = replica.wandb_run_id;
  plan.ownership.index_path = launch_index_path(flags.scratch_dir, plan.ownership.checkpoint_dir);
  plan.ownership.ledger_dir = recovery::ledger::directory(
      plan.ownership.output_dir, recovery::ledger::run_key(replica.wandb_run_id));
  plan.recovery = detail::recovery_policy(options, program, multi);
  plan.recovery["ledger"] = plan.ownership.ledger_dir.string();
  if (notify_to.enabled()) {
    plan.recovery["notify"] = notify::describe(notify_to); // redacted: docs/notify.md
  }
  plan.recover_mode = detail::recover_mode(options, program, multi);
  plan.controller = detail::controller_plan(
      options, inputs, flags, plan.recover_mode, experiment_name, staged_program, inputs.launch_id);
  if (plan.controller) {
    plan.recovery["controller"] = {{"experiment_name", plan.controller->experiment_name},
                                   {"spec_path", plan.controller->spec_path.string()}};
  } else if (!options.controller_name.empty()) {
    plan.recovery["controller"] = {{"experiment_name", options.controller_name},
                                   {"already_running", true}};
  }
  plan.placement = std::move(placement);
  if (inputs.files != nullptr) {
    check_on_this_machine(options, document, *inputs.files, plan);
  }
  return plan;
}

} // namespace

OrderedJson with_value(OrderedJson json, std::string_view placeholder, const std::string &value) {
  if (json.is_string()) {
    auto text = json.get<std::string>();
    for (auto pos = text.find(placeholder); pos != std::string::npos;
         pos = text.find(placeholder, pos + value.size())) {
      text.replace(pos, placeholder.size(), value);
    }
    return text;
  }
  if (json.is_structured()) {
    for (auto &item : json) {
      item = with_value(std::move(item), placeholder, value);
    }
  }
  return json;
}

LaunchPlan with_value(LaunchPlan plan, std::string_view placeholder, const std::string &value) {
  for (auto &task : plan.experiment.tasks) {
    for (auto &var : task.env_vars) {
      if (!var.is_secret) {
        var.value = with_value(OrderedJson(var.value), placeholder, value).get<std::string>();
      }
    }
  }
  plan.spec = with_value(std::move(plan.spec), placeholder, value);
  plan.spec_text = to_pretty_json(plan.spec);
  if (plan.controller) {
    plan.controller->spec = with_value(std::move(plan.controller->spec), placeholder, value);
  }
  return plan;
}

} // namespace pb::launch
