// SPDX-License-Identifier: MIT
// make_plan: options + loaded inputs -> the Beaker spec and everything printed or run. Pure.
#include "paths.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/beaker/spec.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <random>
#include <set>

namespace pb::launch {

namespace {

const char *const k_result_path = "/tmp/beaker-result";

bool is_env_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// NAME=VALUE items of --env / --secret: split at the first '=', later duplicates win.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string> &items,
                                                     std::string_view flag,
                                                     std::string_view shape) {
  std::map<std::string, std::string> out;
  for (const auto &item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw usage_error(fmt::format("--{} expects {}, got '{}'", flag, shape, item));
    }
    const std::string name = item.substr(0, eq);
    if (!is_env_name(name)) {
      throw usage_error(fmt::format("--{}: '{}' is not an environment variable name (letters, "
                                    "digits and '_', not starting with a digit)",
                                    flag,
                                    name));
    }
    out[name] = item.substr(eq + 1);
  }
  return out;
}

std::map<std::string, std::int64_t> parse_required_services(const std::vector<std::string> &items) {
  std::map<std::string, std::int64_t> out;
  for (const auto &item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw usage_error(fmt::format("--required-service expects NAME=COUNT, got '{}'", item));
    }
    const std::string count_text = item.substr(eq + 1);
    std::int64_t count = 0;
    const auto [end, ec] =
        std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (ec != std::errc() || end != count_text.data() + count_text.size()) {
      throw usage_error(fmt::format(
          "--required-service expects NAME=COUNT, got {}='{}'", item.substr(0, eq), count_text));
    }
    if (count < 1) {
      throw usage_error(fmt::format("--required-service counts must be positive, got '{}'", item));
    }
    out[item.substr(0, eq)] = count;
  }
  return out;
}

bool disables_secret(const std::string &value) {
  return value.empty() || value == "None" || value == "none" || value == "null" ||
         value == "False" || value == "false";
}

// Python's urllib.parse.quote(text, safe=""): only unreserved characters stay.
std::string percent_encode(std::string_view text) {
  std::string out;
  for (const unsigned char c : text) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string require_absolute_flag(const std::string &flag, const std::string &value) {
  if (value.empty() || value.front() != '/') {
    throw usage_error(
        fmt::format("--{} must be an absolute container path, got '{}'", flag, value));
  }
  return normalize_path(value);
}

struct CheckedPath {
  std::string label; // "--working-dir" or "output_dir (file.toml:3:1)"
  std::string value; // as given
  bool from_toml = false;
};

void check_under_mount(const std::vector<CheckedPath> &paths,
                       const std::string &mount,
                       const LaunchInputs &inputs) {
  const std::filesystem::path mount_resolved = inputs.resolve(mount);
  for (const auto &path : paths) {
    std::filesystem::path absolute = path.value;
    if (absolute.is_relative()) {
      absolute = inputs.cwd / absolute;
    }
    const std::filesystem::path resolved = inputs.resolve(normalize_path(absolute.string()));
    if (!path_is_under(resolved.string(), mount_resolved.string())) {
      const std::string message = fmt::format("launch path must be under mounted path {}: {} ({})",
                                              mount,
                                              resolved.string(),
                                              path.label);
      throw path.from_toml ? input_error(message) : usage_error(message);
    }
  }
}

// The resolved TOML path as the container sees it: re-rooted at the mount path as given, so a
// submitter whose mount is a symlink (/weka -> /mnt/weka) still embeds /weka/... .
std::string
container_path(const std::string &resolved, const std::string &mount, const LaunchInputs &inputs) {
  const std::string mount_resolved = inputs.resolve(mount).string();
  if (mount_resolved == mount || !path_is_under(resolved, mount_resolved)) {
    return resolved;
  }
  return normalize_path(mount + "/" + resolved.substr(mount_resolved.size()));
}

CheckedPath toml_path(const toml::Document &document, const primerl::PathKey &key) {
  std::vector<std::string> parts = text::split(key.key, '.');
  const toml::Value *value = document.root().find_path(parts);
  return {
      fmt::format("{} at {}", key.key, value ? document.location(*value) : document.source_name()),
      key.value,
      true};
}

// The W&B object of the output: entity from the TOML (or, for RL, --wandb-entity).
OrderedJson wandb_json(const primerl::Wandb &wandb,
                       const std::string &name,
                       const std::string &run_id,
                       const std::optional<std::string> &entity) {
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
                             percent_encode(*entity),
                             percent_encode(wandb.project),
                             percent_encode(run_id));
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
  std::random_device device;
  std::string out;
  for (int i = 0; i < 4; ++i) {
    out += fmt::format("{:08x}", device());
  }
  return out;
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
  return out;
}

OrderedJson LaunchPlan::receipt_json(const std::string &beaker_stdout) const {
  OrderedJson out = OrderedJson::object();
  out["experiment_name"] = experiment_name;
  if (topology == Topology::multi_node) {
    out["launch_id"] = launch_id;
  }
  out["spec_path"] = spec_path.string();
  out["stdout"] = beaker_stdout;
  out["wandb_run"] = wandb_run;
  return out;
}

LaunchPlan make_plan(const LaunchOptions &options, const LaunchInputs &inputs) {
  if (inputs.document == nullptr) {
    throw failure("internal error: make_plan without a TOML document");
  }
  const toml::Document &document = *inputs.document;
  const Program program = inputs.program;

  // 1. Flags that need nothing else.
  if (options.priority != "normal" && options.priority != "high" && options.priority != "urgent") {
    throw usage_error(
        fmt::format("--priority must be normal, high, or urgent, got '{}'", options.priority));
  }
  if (!beaker::is_workspace_name(options.workspace)) {
    throw usage_error(
        fmt::format("--workspace must look like ACCOUNT/NAME, got '{}'", options.workspace));
  }
  if (options.min_runtime_hours < 0) {
    throw usage_error(
        fmt::format("--min-runtime-hours must be >= 0, got {}", options.min_runtime_hours));
  }
  if (options.dataset.empty()) {
    throw usage_error("--dataset cannot be empty");
  }
  const std::string mount = require_absolute_flag("mount-path", options.mount_path);
  const std::string working_dir = require_absolute_flag("working-dir", options.working_dir);
  const std::string scratch_dir = require_absolute_flag("scratch-dir", options.scratch_dir);
  const std::string home_dir = require_absolute_flag("home-dir", options.home_dir);

  // 2-3. The TOML's generation and topology.
  primerl::require_supported_generation(document);
  const auto deployment = primerl::read_deployment_type(document);
  const Topology topology = deployment == primerl::DeploymentType::multi_node
                                ? Topology::multi_node
                                : Topology::single_node;
  const bool multi = topology == Topology::multi_node;
  const bool has_orchestrator = document.root().find("orchestrator") != nullptr;
  if (program == Program::sft && has_orchestrator) {
    throw input_error(fmt::format("{}: this looks like an RL TOML (it has [orchestrator]); use "
                                  "`primebeaker rl`",
                                  document.source_name()));
  }
  if (program == Program::rl && !has_orchestrator && document.root().find("data") != nullptr) {
    throw input_error(fmt::format("{}: this looks like an SFT TOML ([data], no [orchestrator]); "
                                  "use `primebeaker sft`",
                                  document.source_name()));
  }
  if (multi && program == Program::rl && options.registry.empty()) {
    throw usage_error("multi-node RL requires --registry=redis://...");
  }

  // 4-9. Image, clusters, env, secrets, multi-node knobs.
  const std::string image_ref =
      options.image.empty()
          ? images::Catalog::builtin().default_location(options.workspace).immutable_uri
          : options.image;
  const std::vector<std::string> clusters =
      options.clusters.empty() ? std::vector<std::string>{"ai2/holmes"} : options.clusters;
  const auto user_env = parse_assignments(options.env, "env", "NAME=VALUE");
  auto secrets = parse_assignments(options.secrets, "secret", "NAME=SECRETNAME");
  if (multi && options.rendezvous_timeout_seconds <= 0) {
    throw usage_error(fmt::format("--rendezvous-timeout-seconds must be > 0, got {}",
                                  options.rendezvous_timeout_seconds));
  }
  const auto required_services = parse_required_services(options.required_services);
  if (multi && program == Program::rl) {
    if (options.gateway_port < 1 || options.gateway_port > 65535) {
      throw usage_error(
          fmt::format("--gateway-port must be in 1..65535, got {}", options.gateway_port));
    }
    if (options.gateway_workers < 1) {
      throw usage_error(
          fmt::format("--gateway-workers must be > 0, got {}", options.gateway_workers));
    }
  }
  for (const auto &[variable, flag, chosen] :
       {std::tuple{"WANDB_API_KEY", "wandb-secret", options.wandb_secret},
        std::tuple{"HF_TOKEN", "hf-secret", options.hf_secret}}) {
    const bool user_secret = secrets.count(variable) > 0;
    if (!chosen) {
      if (!user_secret) {
        secrets[variable] = variable; // the default secret name equals the variable name
      }
    } else if (!disables_secret(*chosen)) {
      if (user_secret) {
        throw usage_error(fmt::format("--secret {}={} and --{}={} both set {}; keep one (or "
                                      "pass --{}='' to use --secret)",
                                      variable,
                                      secrets[variable],
                                      flag,
                                      *chosen,
                                      variable,
                                      flag));
      }
      secrets[variable] = *chosen;
    }
  }

  // 10. The TOML's launch keys.
  std::map<std::string, std::string> values;
  std::vector<CheckedPath> checked;
  const std::filesystem::path config_path = inputs.resolve(normalize_path(
      (inputs.config_path.is_relative() ? inputs.cwd / inputs.config_path : inputs.config_path)
          .string()));
  checked.push_back({"--toml", config_path.string(), false});

  primerl::Wandb wandb;
  std::optional<std::string> entity;
  std::string description_kind;
  beaker::Task task;
  task.image = beaker::Image::from_reference(image_ref);
  task.datasets = {{mount, options.dataset}};
  task.result_path = k_result_path;
  task.context.priority = options.priority;
  task.context.min_runtime = fmt::format("{}h", options.min_runtime_hours);
  task.context.auto_resume = !multi;
  task.clusters = clusters;

  std::string experiment_name;
  const auto take_wandb = [&](const primerl::Wandb &read) {
    wandb = read;
    experiment_name = inputs.experiment_name.value_or(read.name);
    entity = read.entity;
    if (!entity && program == Program::rl && !options.wandb_entity.empty()) {
      entity = options.wandb_entity;
    }
  };
  const std::string launch_id = inputs.launch_id;
  const std::string run_id = options.wandb_run_id.empty() ? launch_id : options.wandb_run_id;
  primerl::PathKey output_dir;

  if (!multi) {
    std::int64_t gpus = 0;
    if (program == Program::sft) {
      const auto sft = primerl::read_single_node_sft(document);
      take_wandb(sft.wandb);
      output_dir = sft.output_dir;
      gpus = sft.num_gpus;
      checked.push_back(toml_path(document, sft.output_dir));
      checked.push_back(toml_path(document, sft.data_name));
      checked.push_back(toml_path(document, sft.val_data_name));
      description_kind = "SFT";
    } else {
      const auto rl = primerl::read_single_node_rl(document);
      take_wandb(rl.wandb);
      output_dir = rl.output_dir;
      gpus = rl.gpu_count();
      checked.push_back(toml_path(document, rl.output_dir));
      description_kind = "RL";
      values["WANDB_SHARED_RUN_ID"] = run_id;
      if (entity) {
        values["WANDB_ENTITY"] = *entity;
      }
      if (!options.registry.empty()) {
        values["REGISTRY"] = options.registry;
      }
    }
    task.name = std::string(program_name(program));
    task.command = {"primebeaker", "node", "single", std::string(program_name(program))};
    task.gpu_count = gpus;
    values["EXPERIMENT_NAME"] = experiment_name;
    values["NUM_GPUS"] = std::to_string(gpus);
  } else {
    task.replication = beaker::Replication{};
    values["LAUNCH_ID"] = launch_id;
    values["RENDEZVOUS_TIMEOUT_SECONDS"] = std::to_string(options.rendezvous_timeout_seconds);
    values["WANDB_SHARED_RUN_ID"] = run_id;
    if (program == Program::sft) {
      const auto sft = primerl::read_multi_node_sft(document);
      take_wandb(sft.wandb);
      output_dir = sft.output_dir;
      checked.push_back(toml_path(document, sft.output_dir));
      checked.push_back(toml_path(document, sft.data_name));
      checked.push_back(toml_path(document, sft.val_data_name));
      task.name = "prime-sft-multinode";
      task.replication->replicas = sft.num_nodes;
      task.gpu_count = sft.gpus_per_node;
      values["TOTAL_NODES"] = std::to_string(sft.num_nodes);
      values["GPUS_PER_NODE"] = std::to_string(sft.gpus_per_node);
      description_kind = "multi-node SFT";
    } else {
      const auto rl = primerl::read_multi_node_rl(document);
      take_wandb(rl.wandb);
      output_dir = rl.output_dir;
      checked.push_back(toml_path(document, rl.output_dir));
      task.name = "prime-rl-multinode";
      task.replication->replicas = rl.total_nodes;
      task.gpu_count = rl.gpus_per_node;
      values["REGISTRY"] = options.registry;
      values["TOTAL_NODES"] = std::to_string(rl.total_nodes);
      values["TOTAL_INFER_RANKS"] = std::to_string(rl.total_infer_ranks);
      values["GPUS_PER_NODE"] = std::to_string(rl.gpus_per_node);
      values["TRAINER_GPU_COUNT"] = std::to_string(rl.trainer_gpus);
      values["MIXED_INFER_GPU_COUNT"] = std::to_string(rl.mixed_infer_gpus);
      values["GATEWAY_PORT"] = std::to_string(options.gateway_port);
      values["GATEWAY_WORKERS"] = std::to_string(options.gateway_workers);
      values["REQUIRED_LITEREGISTRY_SERVICES"] = nlohmann::json(required_services).dump();
      std::vector<std::string> quoted;
      for (const auto &path : rl.local_search_model_paths) {
        quoted.push_back(nlohmann::json(path).dump());
      }
      values["LOCAL_SEARCH_MODEL_PATHS_JSON"] = "[" + text::join(quoted, ", ") + "]";
      description_kind = "multi-node RL";
    }
    task.command = {"primebeaker", "node", std::string(program_name(program))};
    values["RENDEZVOUS_DIR"] = normalize_path(
        fmt::format("{}/primebeaker/rendezvous/{}-{}", scratch_dir, experiment_name, launch_id));
  }
  values["HOME"] = home_dir;
  values["WORKING_DIR"] = working_dir;
  values["SCRATCH"] = scratch_dir;
  values["CONFIG_PATH"] = container_path(config_path.string(), mount, inputs);
  values["OUTPUT_DIR"] = output_dir.value;
  values["WANDB_RUN_ID"] = run_id;
  values["WANDB_RESUME"] = "allow";
  if (options.setup_command) {
    values["PRIMEBEAKER_SETUP_COMMAND"] = *options.setup_command;
  }

  if (std::none_of(clusters.begin(), clusters.end(), [](const auto &c) { return !c.empty(); })) {
    throw usage_error("at least one non-empty Beaker cluster is required (--cluster)");
  }
  if (std::any_of(clusters.begin(), clusters.end(), [](const auto &c) { return c.empty(); })) {
    throw usage_error("--cluster names cannot be empty");
  }
  checked.push_back({"--working-dir", working_dir, false});
  checked.push_back({"--scratch-dir", scratch_dir, false});
  checked.push_back({"--home-dir", home_dir, false});
  check_under_mount(checked, mount, inputs);

  // 12. Env: launcher-owned values, then --env, then secrets; sorted by code point.
  std::set<std::string> reserved;
  for (const auto &[name, value] : values) {
    reserved.insert(name);
  }
  reserved.insert("PRIMEBEAKER_SETUP_COMMAND");
  std::vector<std::string> clashes;
  for (const auto &[name, value] : user_env) {
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
  for (const auto &[name, secret] : secrets) {
    if (values.count(name) > 0) {
      both.push_back(name);
    }
  }
  if (!both.empty()) {
    throw usage_error(fmt::format("environment names cannot be both values and secrets: [{}]",
                                  text::join(both, ", ")));
  }
  for (const auto &[name, value] : values) {
    task.env_vars.push_back(beaker::EnvVar::plain(name, value));
  }
  for (const auto &[name, secret] : secrets) {
    task.env_vars.push_back(beaker::EnvVar::from_secret(name, secret));
  }

  beaker::Experiment experiment;
  experiment.description = options.description.empty()
                               ? fmt::format("PrimeBeaker {} {}", description_kind, experiment_name)
                               : options.description;
  experiment.budget = options.budget;
  experiment.tasks.push_back(std::move(task));
  if (const auto found = beaker::problems(experiment); !found.empty()) {
    throw usage_error("the Beaker spec would be rejected: " + text::join(found, "; "));
  }

  LaunchPlan plan;
  plan.program = program;
  plan.topology = topology;
  plan.experiment_name = experiment_name;
  plan.workspace = options.workspace;
  plan.launch_id = launch_id;
  plan.spec_path = normalize_path(fmt::format("{}/primebeaker/beaker_experiments/{}{}.json",
                                              scratch_dir,
                                              experiment_name,
                                              multi ? "-" + launch_id : std::string()));
  plan.spec = beaker::to_json(experiment);
  plan.spec_text = to_pretty_json(plan.spec);
  plan.submit_command = beaker::experiment_create_argv(
      "beaker", experiment_name, options.workspace, plan.spec_path.string());
  plan.wandb_run = wandb_json(wandb, experiment_name, run_id, entity);
  plan.write_spec = options.write_spec;
  return plan;
}

} // namespace pb::launch
