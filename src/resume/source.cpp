// SPDX-License-Identifier: MIT
#include "source.hpp"

#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <algorithm>
#include <set>
#include <tuple>

namespace pb::resume {

namespace {

constexpr const char *k_managed_service_env = contract::var::managed_service_experiment_id;
// The v0.9 run directory a launch names (docs/contract.md "Generations"); the launcher writes it
// and every PRIME_RL_* name again.
constexpr const char *k_run_dir_env = "PRIME_RL_RUN_DIR";

const OrderedJson *member(const OrderedJson &object, const char *key) {
  if (!object.is_object()) {
    return nullptr;
  }
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_or(const OrderedJson *value, const std::string &fallback) {
  return value != nullptr && value->is_string() && !value->get<std::string>().empty()
             ? value->get<std::string>()
             : fallback;
}

// The job's plain-valued envVars as name -> value, secrets as name -> secret.
struct JobEnv {
  std::vector<std::pair<std::string, std::string>> plain;
  std::vector<std::pair<std::string, std::string>> secrets;
  const std::string *find(const std::string &name) const {
    for (const auto &[key, value] : plain) {
      if (key == name) {
        return &value;
      }
    }
    return nullptr;
  }
};

JobEnv job_env(const OrderedJson &spec) {
  JobEnv env;
  const OrderedJson *vars = member(spec, "envVars");
  if (vars == nullptr || !vars->is_array()) {
    return env;
  }
  for (const auto &entry : *vars) {
    const OrderedJson *name = member(entry, "name");
    if (name == nullptr || !name->is_string()) {
      continue;
    }
    if (const OrderedJson *value = member(entry, "value"); value != nullptr && value->is_string()) {
      env.plain.emplace_back(name->get<std::string>(), value->get<std::string>());
    } else if (const OrderedJson *secret = member(entry, "secret");
               secret != nullptr && secret->is_string()) {
      env.secrets.emplace_back(name->get<std::string>(), secret->get<std::string>());
    }
  }
  return env;
}

std::int64_t positive_env(const JobEnv &env, const char *name, std::int64_t fallback) {
  const std::string *value = env.find(name);
  if (value == nullptr) {
    return fallback;
  }
  const auto number = text::parse_integer(text::trim(*value));
  if (!number || *number < 1) {
    throw failure("source experiment has invalid " + std::string(name) + "=" + *value);
  }
  return *number;
}

bool timestamp_set(const OrderedJson *value) {
  if (value == nullptr || value->is_null()) {
    return false;
  }
  // Go's zero time means "never happened".
  return !(value->is_string() && text::starts_with(value->get<std::string>(), "0001-01-01"));
}

} // namespace

bool is_regenerated_env_name(const std::string &name) {
  return contract::is_launcher_owned(name, contract::Kind::multi_rl) ||
         text::starts_with(name, "DATADEV_") || text::starts_with(name, "PRIMEBEAKER_RESUME_") ||
         text::starts_with(name, "PRIME_RL_");
}

SourceExperiment
parse_source(const std::string &id, const OrderedJson &payload, bool keep_managed_service) {
  const OrderedJson *experiment = &payload;
  if (payload.is_array()) {
    experiment = payload.empty() ? nullptr : &payload.front();
  }
  if (experiment == nullptr || !experiment->is_object()) {
    throw failure("Beaker did not return experiment " + id);
  }
  const OrderedJson *jobs = member(*experiment, "jobs");
  if (jobs == nullptr || !jobs->is_array() || jobs->empty()) {
    throw failure("experiment " + id + " has no jobs");
  }

  SourceExperiment source;
  source.id = id;
  for (const auto &job : *jobs) {
    if (const OrderedJson *job_id = member(job, "id"); job_id != nullptr && job_id->is_string()) {
      source.job_ids.push_back(job_id->get<std::string>());
    }
  }
  const OrderedJson *spec = nullptr;
  JobEnv env;
  for (const auto &job : *jobs) {
    const OrderedJson *candidate = member(job, "execution");
    candidate = candidate != nullptr ? member(*candidate, "spec") : nullptr;
    if (candidate == nullptr) {
      continue;
    }
    JobEnv candidate_env = job_env(*candidate);
    if (candidate_env.find(contract::var::config_path) != nullptr &&
        candidate_env.find(contract::var::output_dir) != nullptr) {
      spec = candidate;
      env = std::move(candidate_env);
      break;
    }
  }
  if (spec == nullptr) {
    throw failure("experiment " + id +
                  " is not a PrimeBeaker/Prime-RL launch (no job sets CONFIG_PATH and OUTPUT_DIR)");
  }

  const std::string full_name = string_or(member(*experiment, "name"), id);
  const auto slash = full_name.find('/');
  source.name = slash == std::string::npos ? full_name : full_name.substr(slash + 1);
  if (source.name.empty()) {
    source.name = id;
  }
  const OrderedJson *workspace_ref = member(*experiment, "workspaceRef");
  source.workspace = string_or(
      workspace_ref != nullptr ? member(*workspace_ref, "fullName") : nullptr, "ai2/oe-agents");

  const OrderedJson *image = member(*spec, "image");
  const std::string beaker_image =
      string_or(image != nullptr ? member(*image, "beaker") : nullptr, "");
  // Prime-RL's own published images are registry images (images/catalog.json).
  const std::string docker_image =
      string_or(image != nullptr ? member(*image, "docker") : nullptr, "");
  if (beaker_image.empty() && docker_image.empty()) {
    throw failure("experiment " + id + " has no image");
  }
  source.image = beaker_image.empty()                           ? docker_image
                 : text::starts_with(beaker_image, "beaker://") ? beaker_image
                                                                : "beaker://" + beaker_image;

  const OrderedJson *constraints = member(*spec, "constraints");
  if (const OrderedJson *clusters =
          constraints != nullptr ? member(*constraints, "cluster") : nullptr;
      clusters != nullptr && clusters->is_array()) {
    for (const auto &cluster : *clusters) {
      if (cluster.is_string()) {
        source.clusters.push_back(cluster.get<std::string>());
      }
    }
  }
  if (source.clusters.empty()) {
    source.clusters = {"ai2/holmes"};
  }
  const OrderedJson *context = member(*spec, "context");
  source.priority = string_or(context != nullptr ? member(*context, "priority") : nullptr, "high");
  const std::string min_runtime =
      string_or(context != nullptr ? member(*context, "minRuntime") : nullptr, "");
  if (min_runtime.size() > 1 && min_runtime.back() == 'h' &&
      std::all_of(min_runtime.begin(),
                  min_runtime.end() - 1,
                  [](char c) { return c >= '0' && c <= '9'; }) &&
      min_runtime.size() < 12) {
    source.min_runtime_hours = std::stoll(min_runtime.substr(0, min_runtime.size() - 1));
  }
  source.mount_path = "/weka";
  source.dataset = "oe-adapt-default";
  if (const OrderedJson *datasets = member(*spec, "datasets");
      datasets != nullptr && datasets->is_array() && !datasets->empty()) {
    const OrderedJson &first = datasets->front();
    source.mount_path = string_or(member(first, "mountPath"), "/weka");
    const OrderedJson *dataset_source = member(first, "source");
    source.dataset = string_or(
        dataset_source != nullptr ? member(*dataset_source, "weka") : nullptr, "oe-adapt-default");
  }

  source.config_path = *env.find(contract::var::config_path);
  source.output_dir = *env.find(contract::var::output_dir);
  if (const std::string *registry = env.find(contract::var::registry);
      registry != nullptr && !registry->empty()) {
    source.registry = *registry;
  }
  if (const std::string *run_id = env.find(contract::var::wandb_shared_run_id);
      run_id != nullptr && !run_id->empty()) {
    source.wandb_run_id = *run_id;
  }
  const auto plain_or = [&](const char *name, const char *fallback) {
    const std::string *value = env.find(name);
    return value != nullptr ? *value : std::string(fallback);
  };
  source.run_dir_name = plain_or(k_run_dir_env, "");
  source.prime_rl_version = plain_or(contract::var::prime_rl_version, "");
  source.recover = plain_or(contract::var::recover, "");
  source.controller_name = plain_or(contract::var::controller_name, "");
  source.v0_9 = plain_or(contract::var::prime_rl_generation, "") == "v0.9";
  source.prime_rl_placement = plain_or(contract::var::placement, "") == "prime-rl";
  source.working_dir = plain_or(contract::var::working_dir, "/weka");
  source.scratch_dir = plain_or(contract::var::scratch, "/weka");
  source.home_dir = plain_or(contract::var::home, "/weka");
  source.gateway_port = positive_env(env, contract::var::gateway_port, 1212);
  source.gateway_workers = positive_env(env, contract::var::gateway_workers, 8);
  source.rendezvous_timeout_seconds =
      positive_env(env, contract::var::rendezvous_timeout_seconds, 1800);
  // 0 is a valid budget: read as "0 + 1" through positive_env's rule, then back.
  for (const auto &[name, target, fallback] :
       {std::tuple{contract::var::max_recoveries, &source.max_recoveries, std::int64_t{10}},
        std::tuple{contract::var::max_restarts_on_errors,
                   &source.max_restarts_on_errors,
                   std::int64_t{0}}}) {
    const std::string *value = env.find(name);
    if (value != nullptr && text::trim(*value) == "0") {
      *target = 0;
    } else {
      *target = positive_env(env, name, fallback);
    }
  }
  if (const std::string *services = env.find(contract::var::required_services)) {
    try {
      source.required_services = contract::decode_required_services(*services, true);
    } catch (const Error &error) {
      throw failure(std::string("source experiment has ") + error.what());
    }
  }
  if (const std::string *setup = env.find(contract::var::setup_command)) {
    source.setup_command = *setup;
  }
  for (const auto &[name, value] : env.plain) {
    if (is_regenerated_env_name(name)) {
      continue;
    }
    if (name == k_managed_service_env && !keep_managed_service) {
      source.not_inherited.emplace_back(name, value);
      continue;
    }
    source.env.emplace_back(name, value);
  }
  for (const auto &[name, secret] : env.secrets) {
    if (name == "WANDB_API_KEY") {
      source.wandb_secret = secret;
    } else if (name == "HF_TOKEN") {
      source.hf_secret = secret;
    } else {
      source.secrets.emplace_back(name, secret);
    }
  }
  std::sort(source.env.begin(), source.env.end());
  std::sort(source.secrets.begin(), source.secrets.end());
  return source;
}

std::vector<JobState> parse_jobs(const OrderedJson &payload,
                                 const std::vector<std::string> &job_ids) {
  std::vector<const OrderedJson *> jobs;
  if (payload.is_array()) {
    for (const auto &job : payload) {
      jobs.push_back(&job);
    }
  } else {
    jobs.push_back(&payload);
  }
  std::vector<JobState> states;
  std::set<std::string> seen;
  for (const OrderedJson *job : jobs) {
    if (!job->is_object()) {
      continue;
    }
    JobState state;
    state.id = string_or(member(*job, "id"), "unknown");
    state.name = string_or(member(*job, "name"), "unknown");
    const OrderedJson *status = member(*job, "status");
    state.active = !(
        status != nullptr && status->is_object() &&
        (timestamp_set(member(*status, "exited")) || timestamp_set(member(*status, "finalized"))));
    seen.insert(state.id);
    states.push_back(std::move(state));
  }
  for (const auto &id : job_ids) {
    if (seen.count(id) == 0) {
      states.push_back({id, "status unknown: not in beaker's answer", true});
    }
  }
  return states;
}

} // namespace pb::resume
