// SPDX-License-Identifier: MIT
// The replica's environment read into values (env.hpp): the contract, the rank, the identity of
// this start, the timing knobs.
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/env.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::node {
namespace {

std::optional<std::string> optional_var(const EnvMap &env, const std::string &name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

std::string var_or(const EnvMap &env, const std::string &name, const std::string &fallback) {
  return optional_var(env, name).value_or(fallback);
}

int integer_var(const EnvMap &env, const std::string &name, long long min, long long max) {
  const std::string &raw = env.at(name);
  const auto value = text::parse_integer(text::trim(raw));
  if (!value || *value < min || *value > max) {
    throw usage_error(
        fmt::format("invalid {}='{}': expected an integer from {} to {}", name, raw, min, max));
  }
  return static_cast<int>(*value);
}

double seconds_var(const EnvMap &env, const std::string &name, double fallback) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) {
    return fallback;
  }
  try {
    size_t used = 0;
    const double value = std::stod(it->second, &used);
    if (used == it->second.size() && value >= 0) {
      return value;
    }
  } catch (const std::exception &) {
  }
  throw usage_error(fmt::format("invalid {}='{}': expected a number of seconds", name, it->second));
}

StartIdentity identity_of(const EnvMap &env) {
  StartIdentity id;
  id.job_id = var_or(env, contract::var::job_id, "manual");
  id.experiment_id = var_or(env, contract::var::experiment_id, "");
  id.run_id = var_or(env,
                     contract::var::wandb_run_id,
                     var_or(env,
                            contract::var::wandb_shared_run_id,
                            var_or(env, contract::var::launch_id, "run")));
  id.launch_key =
      var_or(env, contract::var::launch_id, var_or(env, contract::var::experiment_id, ""));
  return id;
}

// The contract's fields every replica has, plus what only the node knows (its tuning, who it is).
void fill_common(const EnvMap &env, const contract::ReplicaEnv &replica, CommonEnv &out) {
  out.gpus_per_node = static_cast<int>(replica.gpus_per_node);
  out.config_path = replica.config_path;
  out.output_dir = replica.output_dir;
  out.working_dir = replica.working_dir;
  out.scratch = replica.scratch;
  out.launch_id = replica.launch_id;
  out.rendezvous_dir = replica.rendezvous_dir;
  out.rendezvous_timeout_seconds = static_cast<int>(replica.rendezvous_timeout_seconds);
  if (replica.setup_command && !replica.setup_command->empty()) {
    out.setup_command = replica.setup_command;
  }
  out.max_recoveries = replica.max_recoveries;
  out.max_restarts_on_errors = replica.max_restarts_on_errors;
  out.tuning = parse_tuning(env);
  out.identity = identity_of(env);
  out.generation = replica.generation;
  out.run_dir_name = replica.run_dir_name;
  out.run_name = replica.run_name;
  out.run_id = replica.wandb_run_id;
}

// A multi-node replica: the common fields and its rank among TOTAL_NODES.
void fill_replica(const EnvMap &env, const contract::ReplicaEnv &replica, CommonEnv &out) {
  fill_common(env, replica, out);
  out.total_nodes = static_cast<int>(replica.total_nodes);
  const auto rank = text::parse_integer(text::trim(env.at(contract::var::replica_rank)));
  if (!rank || *rank < 0 || *rank >= out.total_nodes) {
    throw usage_error(fmt::format("invalid node rank {} (TOTAL_NODES={})",
                                  env.at(contract::var::replica_rank),
                                  out.total_nodes));
  }
  out.rank = static_cast<int>(*rank);
}

// The contract of `kind` and the replica rank Beaker sets, all missing names listed at once.
contract::ReplicaEnv read_contract(contract::Kind kind, const EnvMap &env) {
  auto names = contract::required_names(kind,
                                        contract::generation_of(env),
                                        kind == contract::Kind::multi_rl &&
                                            contract::prime_rl_placement_of(env));
  names.emplace_back(contract::var::replica_rank);
  contract::require_set(env, names);
  return contract::ReplicaEnv::from_env(kind, env);
}

} // namespace

Tuning parse_tuning(const EnvMap &env) {
  Tuning t;
  t.poll_seconds =
      std::max(0.01, seconds_var(env, "PRIMEBEAKER_NODE_POLL_SECONDS", t.poll_seconds));
  t.stop_grace_seconds =
      seconds_var(env, "PRIMEBEAKER_NODE_STOP_GRACE_SECONDS", t.stop_grace_seconds);
  t.gateway_settle_seconds =
      seconds_var(env, "PRIMEBEAKER_NODE_GATEWAY_SETTLE_SECONDS", t.gateway_settle_seconds);
  t.gateway_probe_interval_seconds = seconds_var(
      env, "PRIMEBEAKER_NODE_GATEWAY_PROBE_INTERVAL_SECONDS", t.gateway_probe_interval_seconds);
  t.gateway_probe_timeout_seconds = seconds_var(
      env, "PRIMEBEAKER_NODE_GATEWAY_PROBE_TIMEOUT_SECONDS", t.gateway_probe_timeout_seconds);
  if (optional_var(env, "PRIMEBEAKER_NODE_GATEWAY_PROBE_ATTEMPTS")) {
    t.gateway_probe_attempts =
        integer_var(env, "PRIMEBEAKER_NODE_GATEWAY_PROBE_ATTEMPTS", 1, 100000);
  }
  t.host = optional_var(env, "PRIMEBEAKER_NODE_HOST");
  if (const auto root = optional_var(env, "PRIMEBEAKER_NODE_LOCAL_ROOT")) {
    t.local_root = *root;
  }
  if (optional_var(env, "PRIMEBEAKER_NODE_PORT_WAIT_SECONDS")) {
    t.port_wait_seconds = integer_var(env, "PRIMEBEAKER_NODE_PORT_WAIT_SECONDS", 1, 86400);
  }
  if (const auto ports = optional_var(env, "PRIMEBEAKER_NODE_MOONCAKE_PORTS")) {
    // "master,metadata,client", for hosts where Prime-RL's ports are taken.
    const auto parts = text::split(*ports, ',');
    if (parts.size() != 3) {
      throw usage_error(fmt::format("invalid PRIMEBEAKER_NODE_MOONCAKE_PORTS: '{}' (three ports: "
                                    "master,metadata,client)",
                                    *ports));
    }
    for (size_t i = 0; i < 3; ++i) {
      const auto port = text::parse_integer(parts[i]);
      if (!port || *port < 1 || *port > 65535) {
        throw usage_error(
            fmt::format("invalid PRIMEBEAKER_NODE_MOONCAKE_PORTS: '{}' is not a port", parts[i]));
      }
      t.mooncake_ports[i] = static_cast<int>(*port);
    }
  }
  return t;
}

SftEnv parse_sft_env(const EnvMap &env) {
  const auto replica = read_contract(contract::Kind::multi_sft, env);
  SftEnv out;
  fill_replica(env, replica, out);
  return out;
}

RlEnv parse_rl_env(const EnvMap &env) {
  const auto replica = read_contract(contract::Kind::multi_rl, env);
  RlEnv out;
  fill_replica(env, replica, out);
  out.total_infer_ranks = static_cast<int>(replica.total_infer_ranks);
  out.trainer_gpu_count = static_cast<int>(replica.trainer_gpu_count);
  out.mixed_infer_gpu_count = static_cast<int>(replica.mixed_infer_gpu_count);
  out.managed_service_experiment_id =
      optional_var(env, contract::var::managed_service_experiment_id);
  if (out.managed_service_experiment_id && !optional_var(env, contract::var::beaker_token)) {
    throw usage_error(fmt::format("missing {} for managed service cleanup ({} is set)",
                                  contract::var::beaker_token,
                                  contract::var::managed_service_experiment_id));
  }
  if (replica.prime_rl_topology()) {
    out.prime_rl_placement = true;
    out.num_train_nodes = static_cast<int>(replica.num_train_nodes);
    out.num_infer_nodes = static_cast<int>(replica.num_infer_nodes);
    out.inference_tp = static_cast<int>(replica.inference_tp);
    out.orchestrator_replica = static_cast<int>(replica.orchestrator_replica);
    out.env_servers = replica.env_servers;
    out.expert_parallel = replica.expert_parallel;
    out.nodes_per_infer_replica = static_cast<int>(replica.nodes_per_infer_replica);
    out.disaggregated = replica.disaggregated;
    out.router = replica.router;
    out.kv_offload = replica.kv_offload;
    return out;
  }
  out.registry = replica.registry->text;
  out.registry_display = replica.registry->location.display();
  out.gateway_port = static_cast<int>(replica.gateway_port);
  out.gateway_workers = static_cast<int>(replica.gateway_workers);
  out.required_services_json = env.at(contract::var::required_services);
  for (const auto &[name, count] : replica.required_services) {
    out.required_services[name] = static_cast<int>(count);
  }
  out.local_search_model_paths = replica.local_search_model_paths;
  return out;
}

SingleEnv parse_single_env(const std::string &program, const EnvMap &env) {
  if (program != "sft" && program != "rl") {
    throw usage_error(fmt::format("node single expects sft or rl, got '{}'", program));
  }
  const auto replica = contract::ReplicaEnv::from_env(
      program == "sft" ? contract::Kind::single_sft : contract::Kind::single_rl, env);
  SingleEnv out;
  fill_common(env, replica, out);
  out.rank = 0;
  out.total_nodes = 1;
  out.program = program;
  out.num_gpus = replica.num_gpus;
  out.result_dir = var_or(env, "PRIMEBEAKER_RESULT_DIR", "/tmp/beaker-result");
  out.runtime_toml = var_or(env, "PRIMEBEAKER_RUNTIME_TOML", "/tmp/primebeaker-runtime.toml");
  return out;
}

} // namespace pb::node
