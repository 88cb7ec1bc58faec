// SPDX-License-Identifier: MIT
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/limits.hpp>
#include <primebeaker/registry/registry.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace pb::contract {

namespace {

struct Range {
  std::int64_t min;
  std::int64_t max;
};

constexpr Range k_timeout_range{1, k_max_rendezvous_timeout_seconds};
constexpr Range k_nodes_range{1, primerl::k_max_nodes};
constexpr Range k_gpus_range{1, primerl::k_max_gpus_per_node};
constexpr Range k_optional_gpus_range{0, primerl::k_max_gpus_per_node};
constexpr Range k_ranks_range{1, primerl::k_max_infer_ranks};
constexpr Range k_port_range{1, 65535};
constexpr Range k_workers_range{1, k_max_gateway_workers};
constexpr Range k_recoveries_range{0, k_max_recoveries};
constexpr Range k_error_restarts_range{0, k_max_restarts_on_errors};

std::optional<std::int64_t> parse_whole(std::string_view text) {
  return text::parse_integer(text::trim(text));
}

Error out_of_range(const char *name, const std::string &raw, Range range) {
  return usage_error(fmt::format(
      "invalid {}='{}': expected an integer from {} to {}", name, raw, range.min, range.max));
}

std::int64_t integer_var(const EnvMap &env, const char *name, Range range) {
  const std::string &raw = env.at(name);
  const auto value = parse_whole(raw);
  if (!value || *value < range.min || *value > range.max) {
    throw out_of_range(name, raw, range);
  }
  return *value;
}

void check_range(const char *name, std::int64_t value, Range range) {
  if (value < range.min || value > range.max) {
    throw out_of_range(name, std::to_string(value), range);
  }
}

std::string string_or_empty(const EnvMap &env, const char *name) {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

std::optional<std::string> present(const EnvMap &env, const char *name) {
  const auto it = env.find(name);
  return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::optional<std::string> non_empty(const EnvMap &env, const char *name) {
  const auto it = env.find(name);
  return it == env.end() || it->second.empty() ? std::nullopt
                                               : std::optional<std::string>(it->second);
}

registry::ParseContext replica_context(const ReplicaEnv &replica) {
  return {replica.working_dir, replica.home};
}

} // namespace

bool is_multi_node(Kind kind) {
  return kind == Kind::multi_sft || kind == Kind::multi_rl;
}

bool is_rl(Kind kind) {
  return kind == Kind::single_rl || kind == Kind::multi_rl;
}

RegistryUri parse_registry(std::string_view text,
                           const registry::ParseContext &context,
                           std::string_view what,
                           bool opened_natively) {
  RegistryUri uri;
  uri.text = std::string(text);
  try {
    uri.location = registry::parse_location(text, context);
  } catch (const Error &error) {
    throw usage_error(fmt::format("{}: {}", what, error.what()));
  }
  const registry::Location *redis = &uri.location;
  if (uri.location.kind == registry::BackendKind::head && uri.location.head_backend) {
    redis = uri.location.head_backend.get();
  }
  if (opened_natively && redis->kind == registry::BackendKind::redis && redis->redis.tls) {
    throw usage_error(fmt::format("{}: {}", what, registry::tls_unsupported_message(redis->redis)));
  }
  return uri;
}

RequiredServices decode_required_services(std::string_view json, bool accept_string_counts) {
  const auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (!parsed.is_object()) {
    throw usage_error(fmt::format("invalid {}: expected a JSON object of service name to count, "
                                  "got {}",
                                  var::required_services,
                                  json));
  }
  RequiredServices out;
  for (const auto &[name, count] : parsed.items()) {
    std::optional<std::int64_t> value;
    if (count.is_number_integer()) {
      value = count.get<std::int64_t>();
    } else if (accept_string_counts && count.is_string()) {
      value = parse_whole(count.get<std::string>());
    }
    if (name.empty() || !value || *value < 1 || *value > k_max_service_count) {
      throw usage_error(fmt::format("invalid {}: '{}' needs a positive integer count (at most "
                                    "{}), got {}",
                                    var::required_services,
                                    name,
                                    k_max_service_count,
                                    count.dump()));
    }
    out[name] = *value;
  }
  return out;
}

std::string encode_required_services(const RequiredServices &services) {
  return nlohmann::json(services).dump();
}

std::vector<std::string> decode_string_list(std::string_view json, std::string_view name) {
  const auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (!parsed.is_array() || !std::all_of(parsed.begin(), parsed.end(), [](const auto &item) {
        return item.is_string() && !item.template get<std::string>().empty();
      })) {
    throw usage_error(
        fmt::format("invalid {}: expected a JSON array of non-empty strings, got {}", name, json));
  }
  std::vector<std::string> out;
  for (const auto &item : parsed) {
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::string encode_string_list(const std::vector<std::string> &items) {
  std::vector<std::string> quoted;
  for (const auto &item : items) {
    quoted.push_back(nlohmann::json(item).dump());
  }
  return "[" + text::join(quoted, ", ") + "]";
}

// Every replica needs the run's files; a multi-node one also its topology and rendezvous, and
// multi-node RL its inference split and services (in this order: the missing ones are listed).
primerl::Generation generation_of(const EnvMap &env) {
  const auto text = non_empty(env, var::prime_rl_generation);
  if (!text || *text == "v0.8.0") {
    return primerl::Generation::v0_8;
  }
  if (*text == "v0.9") {
    return primerl::Generation::v0_9;
  }
  throw usage_error(fmt::format("invalid {}: '{}' (this primebeaker runs \"v0.8.0\" and "
                                "\"v0.9\")",
                                var::prime_rl_generation,
                                *text));
}

bool prime_rl_placement_of(const EnvMap &env) {
  const auto text = non_empty(env, var::placement);
  if (!text) {
    return false;
  }
  if (*text == "prime-rl") {
    return true;
  }
  throw usage_error(fmt::format(
      "invalid {}: '{}' (this primebeaker places \"prime-rl\")", var::placement, *text));
}

std::vector<std::string>
required_names(Kind kind, primerl::Generation generation, bool prime_rl_placement) {
  const std::vector<std::string> files = {
      var::config_path, var::output_dir, var::working_dir, var::scratch};
  const bool v0_9 = generation == primerl::Generation::v0_9;
  if (v0_9 || (prime_rl_placement && kind == Kind::multi_rl)) {
    std::vector<std::string> names = files;
    if (v0_9) {
      names.emplace_back(var::run_dir_name);
    }
    if (is_multi_node(kind)) {
      names.insert(names.end(),
                   {var::total_nodes,
                    var::gpus_per_node,
                    var::launch_id,
                    var::rendezvous_dir,
                    var::rendezvous_timeout_seconds,
                    var::num_train_nodes});
      if (kind == Kind::multi_rl) {
        names.insert(
            names.end(),
            {var::num_infer_nodes, var::inference_tp, var::orchestrator_replica, var::env_servers});
      }
    }
    return names;
  }
  if (!is_multi_node(kind)) {
    return files;
  }
  const bool rl = kind == Kind::multi_rl;
  std::vector<std::string> names = {var::total_nodes};
  if (rl) {
    names.emplace_back(var::total_infer_ranks);
  }
  names.emplace_back(var::gpus_per_node);
  if (rl) {
    names.insert(names.end(), {var::trainer_gpu_count, var::mixed_infer_gpu_count});
  }
  names.insert(names.end(), files.begin(), files.end());
  names.insert(names.end(), {var::launch_id, var::rendezvous_dir, var::rendezvous_timeout_seconds});
  if (rl) {
    names.insert(names.end(),
                 {var::registry,
                  var::gateway_port,
                  var::gateway_workers,
                  var::required_services,
                  var::local_search_model_paths});
  }
  return names;
}

void require_set(const EnvMap &env, const std::vector<std::string> &names) {
  std::vector<std::string> missing;
  for (const auto &name : names) {
    const auto it = env.find(name);
    if (it == env.end() || it->second.empty()) {
      missing.push_back(name);
    }
  }
  if (missing.size() == 1) {
    throw usage_error("missing required environment variable: " + missing.front());
  }
  if (!missing.empty()) {
    throw usage_error("missing required environment variables: " + text::join(missing, ", "));
  }
}

void ReplicaEnv::check() const {
  check_range(var::max_recoveries, max_recoveries, k_recoveries_range);
  check_range(var::max_restarts_on_errors, max_restarts_on_errors, k_error_restarts_range);
  if (generation == primerl::Generation::v0_9 &&
      (run_dir_name.empty() || run_dir_name == "." || run_dir_name == ".." ||
       run_dir_name.find('/') != std::string::npos)) {
    throw usage_error(fmt::format(
        "invalid {}: '{}' (one directory name under OUTPUT_DIR)", var::run_dir_name, run_dir_name));
  }
  if (!is_multi_node(kind)) {
    check_range(var::num_gpus, num_gpus, k_optional_gpus_range);
    return;
  }
  check_range(var::rendezvous_timeout_seconds, rendezvous_timeout_seconds, k_timeout_range);
  check_range(var::total_nodes, total_nodes, k_nodes_range);
  check_range(var::gpus_per_node, gpus_per_node, k_gpus_range);
  if (prime_rl_topology()) {
    check_range(var::num_train_nodes, num_train_nodes, k_nodes_range);
    if (kind == Kind::multi_rl) {
      check_range(var::num_infer_nodes, num_infer_nodes, {0, primerl::k_max_nodes});
      check_range(var::inference_tp, inference_tp, k_gpus_range);
      check_range(var::orchestrator_replica, orchestrator_replica, {0, total_nodes - 1});
      if (expert_parallel || disaggregated) {
        check_range(var::nodes_per_infer_replica, nodes_per_infer_replica, k_nodes_range);
      }
      if (disaggregated) {
        check_range(var::nodes_per_prefill_replica,
                    disaggregated->prefill_nodes_per_replica,
                    k_nodes_range);
        check_range(var::num_prefill_replicas, disaggregated->num_prefill_replicas, k_nodes_range);
        check_range(
            var::nodes_per_decode_replica, disaggregated->decode_nodes_per_replica, k_nodes_range);
        check_range(var::num_decode_replicas, disaggregated->num_decode_replicas, k_nodes_range);
        if (disaggregated->nodes() != nodes_per_infer_replica ||
            num_infer_nodes % nodes_per_infer_replica != 0) {
          throw usage_error(fmt::format(
              "{} ({}) must be the prefill and decode nodes of a replica ({}) and divide {} ({})",
              var::nodes_per_infer_replica,
              nodes_per_infer_replica,
              disaggregated->nodes(),
              var::num_infer_nodes,
              num_infer_nodes));
        }
      }
    }
    if (num_train_nodes + num_infer_nodes != total_nodes) {
      throw usage_error(fmt::format("{} ({}) must be {} + {} ({} + {})",
                                    var::total_nodes,
                                    total_nodes,
                                    var::num_infer_nodes,
                                    var::num_train_nodes,
                                    num_infer_nodes,
                                    num_train_nodes));
    }
    return;
  }
  if (kind == Kind::multi_rl) {
    if (!registry) {
      throw usage_error(fmt::format("missing required environment variable: {}", var::registry));
    }
    check_range(var::total_infer_ranks, total_infer_ranks, k_ranks_range);
    check_range(var::trainer_gpu_count, trainer_gpu_count, k_gpus_range);
    check_range(var::mixed_infer_gpu_count, mixed_infer_gpu_count, k_optional_gpus_range);
    check_range(var::gateway_port, gateway_port, k_port_range);
    check_range(var::gateway_workers, gateway_workers, k_workers_range);
    for (const auto &[name, count] : required_services) {
      if (name.empty() || count < 1 || count > k_max_service_count) {
        throw usage_error(fmt::format("invalid {}: '{}' needs a positive integer count (at most "
                                      "{}), got {}",
                                      var::required_services,
                                      name,
                                      k_max_service_count,
                                      count));
      }
    }
    if (std::any_of(local_search_model_paths.begin(),
                    local_search_model_paths.end(),
                    [](const auto &path) { return path.empty(); })) {
      throw usage_error(
          fmt::format("invalid {}: paths cannot be empty", var::local_search_model_paths));
    }
  }
}

EnvMap ReplicaEnv::to_env() const {
  check();
  EnvMap env;
  env[var::home] = home;
  env[var::working_dir] = working_dir;
  env[var::scratch] = scratch;
  env[var::config_path] = config_path;
  env[var::output_dir] = output_dir;
  env[var::wandb_run_id] = wandb_run_id;
  env[var::wandb_resume] = "allow";
  env[var::max_recoveries] = std::to_string(max_recoveries);
  env[var::max_restarts_on_errors] = std::to_string(max_restarts_on_errors);
  if (!recover.empty()) {
    env[var::recover] = recover;
  }
  if (!controller_name.empty()) {
    env[var::controller_name] = controller_name;
  }
  if (setup_command) {
    env[var::setup_command] = *setup_command;
  }
  if (!prime_rl_version.empty()) {
    env[var::prime_rl_version] = prime_rl_version;
  }
  const bool v0_9 = generation == primerl::Generation::v0_9;
  if (v0_9) {
    env[var::prime_rl_generation] = "v0.9";
    env[var::run_dir_name] = run_dir_name;
    if (!run_name.empty()) {
      env[var::run_name] = run_name;
    }
  }
  if (!is_multi_node(kind)) {
    env[var::experiment_name] = experiment_name;
    env[var::num_gpus] = std::to_string(num_gpus);
    if (kind == Kind::single_rl) {
      env[var::wandb_shared_run_id] = wandb_shared_run_id;
      if (wandb_entity) {
        env[var::wandb_entity] = *wandb_entity;
      }
      if (registry) {
        env[var::registry] = registry->text;
      }
    }
    return env;
  }
  env[var::launch_id] = launch_id;
  env[var::rendezvous_dir] = rendezvous_dir;
  env[var::rendezvous_timeout_seconds] = std::to_string(rendezvous_timeout_seconds);
  env[var::wandb_shared_run_id] = wandb_shared_run_id;
  env[var::total_nodes] = std::to_string(total_nodes);
  env[var::gpus_per_node] = std::to_string(gpus_per_node);
  if (prime_rl_topology()) {
    env[var::num_train_nodes] = std::to_string(num_train_nodes);
    if (kind == Kind::multi_rl) {
      if (!v0_9) {
        env[var::placement] = "prime-rl";
      }
      env[var::num_infer_nodes] = std::to_string(num_infer_nodes);
      env[var::inference_tp] = std::to_string(inference_tp);
      env[var::orchestrator_replica] = std::to_string(orchestrator_replica);
      env[var::env_servers] = encode_string_list(env_servers);
      if (expert_parallel) {
        env[var::expert_parallel] = "1";
      }
      if (expert_parallel || disaggregated) {
        env[var::nodes_per_infer_replica] = std::to_string(nodes_per_infer_replica);
      }
      if (disaggregated) {
        env[var::inference_deployment] = "disaggregated";
        env[var::nodes_per_prefill_replica] =
            std::to_string(disaggregated->prefill_nodes_per_replica);
        env[var::num_prefill_replicas] = std::to_string(disaggregated->num_prefill_replicas);
        env[var::nodes_per_decode_replica] =
            std::to_string(disaggregated->decode_nodes_per_replica);
        env[var::num_decode_replicas] = std::to_string(disaggregated->num_decode_replicas);
      }
      if (router == primerl::Router::llm_d) {
        env[var::inference_router] = "llm-d";
      }
      if (kv_offload != primerl::KvOffload::none) {
        env[var::kv_cache_offload] =
            kv_offload == primerl::KvOffload::mooncake ? "mooncake" : "native";
      }
      if (registry) {
        env[var::registry] = registry->text;
      }
    }
    return env;
  }
  if (kind == Kind::multi_rl) {
    env[var::registry] = registry->text;
    env[var::total_infer_ranks] = std::to_string(total_infer_ranks);
    env[var::trainer_gpu_count] = std::to_string(trainer_gpu_count);
    env[var::mixed_infer_gpu_count] = std::to_string(mixed_infer_gpu_count);
    env[var::gateway_port] = std::to_string(gateway_port);
    env[var::gateway_workers] = std::to_string(gateway_workers);
    env[var::required_services] = encode_required_services(required_services);
    env[var::local_search_model_paths] = encode_string_list(local_search_model_paths);
  }
  return env;
}

ReplicaEnv ReplicaEnv::from_env(Kind kind, const EnvMap &env) {
  const primerl::Generation generation = generation_of(env);
  const bool placed = kind == Kind::multi_rl && prime_rl_placement_of(env);
  require_set(env, required_names(kind, generation, placed));
  ReplicaEnv out;
  out.kind = kind;
  out.generation = generation;
  out.prime_rl_placement = placed && generation != primerl::Generation::v0_9;
  out.prime_rl_version = string_or_empty(env, var::prime_rl_version);
  if (generation == primerl::Generation::v0_9) {
    out.run_dir_name = env.at(var::run_dir_name);
    out.run_name = string_or_empty(env, var::run_name);
  }
  out.home = string_or_empty(env, var::home);
  out.working_dir = env.at(var::working_dir);
  out.scratch = env.at(var::scratch);
  out.config_path = env.at(var::config_path);
  out.output_dir = env.at(var::output_dir);
  out.wandb_run_id = string_or_empty(env, var::wandb_run_id);
  out.setup_command = present(env, var::setup_command);
  out.wandb_shared_run_id = string_or_empty(env, var::wandb_shared_run_id);
  if (non_empty(env, var::max_recoveries)) {
    out.max_recoveries = integer_var(env, var::max_recoveries, k_recoveries_range);
  }
  if (non_empty(env, var::max_restarts_on_errors)) {
    out.max_restarts_on_errors =
        integer_var(env, var::max_restarts_on_errors, k_error_restarts_range);
  }
  out.recover = string_or_empty(env, var::recover);
  out.controller_name = string_or_empty(env, var::controller_name);
  if (!is_multi_node(kind)) {
    out.experiment_name = string_or_empty(env, var::experiment_name);
    if (non_empty(env, var::num_gpus)) {
      out.num_gpus = integer_var(env, var::num_gpus, k_optional_gpus_range);
    }
    if (kind == Kind::single_rl) {
      out.wandb_entity = present(env, var::wandb_entity);
      if (const auto text = non_empty(env, var::registry)) {
        out.registry = parse_registry(*text, replica_context(out), var::registry, false);
      }
    }
    return out;
  }
  out.total_nodes = integer_var(env, var::total_nodes, k_nodes_range);
  out.gpus_per_node = integer_var(env, var::gpus_per_node, k_gpus_range);
  out.launch_id = env.at(var::launch_id);
  out.rendezvous_dir = env.at(var::rendezvous_dir);
  out.rendezvous_timeout_seconds =
      integer_var(env, var::rendezvous_timeout_seconds, k_timeout_range);
  if (out.prime_rl_topology()) {
    out.num_train_nodes = integer_var(env, var::num_train_nodes, k_nodes_range);
    if (kind == Kind::multi_rl) {
      out.num_infer_nodes = integer_var(env, var::num_infer_nodes, {0, primerl::k_max_nodes});
      out.inference_tp = integer_var(env, var::inference_tp, k_gpus_range);
      out.orchestrator_replica =
          integer_var(env, var::orchestrator_replica, {0, primerl::k_max_nodes});
      out.env_servers = decode_string_list(env.at(var::env_servers), var::env_servers);
      out.expert_parallel = non_empty(env, var::expert_parallel).value_or("") == "1";
      if (const auto deployment = non_empty(env, var::inference_deployment)) {
        if (*deployment != "disaggregated") {
          throw usage_error(fmt::format("invalid {}: '{}' (this primebeaker places "
                                        "\"disaggregated\")",
                                        var::inference_deployment,
                                        *deployment));
        }
        require_set(env,
                    {var::nodes_per_prefill_replica,
                     var::num_prefill_replicas,
                     var::nodes_per_decode_replica,
                     var::num_decode_replicas});
        primerl::Disaggregated d;
        d.prefill_nodes_per_replica =
            integer_var(env, var::nodes_per_prefill_replica, k_nodes_range);
        d.num_prefill_replicas = integer_var(env, var::num_prefill_replicas, k_nodes_range);
        d.decode_nodes_per_replica = integer_var(env, var::nodes_per_decode_replica, k_nodes_range);
        d.num_decode_replicas = integer_var(env, var::num_decode_replicas, k_nodes_range);
        out.disaggregated = d;
      }
      if (const auto router = non_empty(env, var::inference_router)) {
        if (*router != "llm-d" && *router != "vllm-router") {
          throw usage_error(fmt::format("invalid {}: '{}' (this primebeaker places \"llm-d\")",
                                        var::inference_router,
                                        *router));
        }
        out.router = *router == "llm-d" ? primerl::Router::llm_d : primerl::Router::vllm_router;
      }
      if (const auto offload = non_empty(env, var::kv_cache_offload)) {
        if (*offload != "native" && *offload != "mooncake") {
          throw usage_error(fmt::format(
              "invalid {}: '{}' (native or mooncake)", var::kv_cache_offload, *offload));
        }
        out.kv_offload =
            *offload == "mooncake" ? primerl::KvOffload::mooncake : primerl::KvOffload::native;
      }
      if (out.expert_parallel || out.disaggregated) {
        require_set(env, {var::nodes_per_infer_replica});
        out.nodes_per_infer_replica = integer_var(env, var::nodes_per_infer_replica, k_nodes_range);
      }
      if (const auto text = non_empty(env, var::registry)) {
        out.registry = parse_registry(*text, replica_context(out), var::registry, false);
      }
    }
    out.check();
    return out;
  }
  if (kind == Kind::multi_rl) {
    out.total_infer_ranks = integer_var(env, var::total_infer_ranks, k_ranks_range);
    out.trainer_gpu_count = integer_var(env, var::trainer_gpu_count, k_gpus_range);
    out.mixed_infer_gpu_count = integer_var(env, var::mixed_infer_gpu_count, k_optional_gpus_range);
    out.registry = parse_registry(env.at(var::registry), replica_context(out), var::registry);
    out.gateway_port = integer_var(env, var::gateway_port, k_port_range);
    out.gateway_workers = integer_var(env, var::gateway_workers, k_workers_range);
    out.required_services = decode_required_services(env.at(var::required_services));
    out.local_search_model_paths =
        decode_string_list(env.at(var::local_search_model_paths), var::local_search_model_paths);
  }
  return out;
}

bool is_launcher_owned(std::string_view name, Kind kind) {
  // Every value present, so to_env() writes each name the kind can carry.
  ReplicaEnv full;
  full.kind = kind;
  full.setup_command = "";
  full.wandb_entity = "";
  full.num_gpus = 1;
  full.rendezvous_timeout_seconds = full.total_nodes = full.gpus_per_node = 1;
  full.total_infer_ranks = full.trainer_gpu_count = full.gateway_port = full.gateway_workers = 1;
  full.prime_rl_version = "v0.8.0";
  full.recover = "controller";
  full.controller_name = "run-recovery";
  if (is_rl(kind)) {
    full.registry = RegistryUri{"/registry", {}};
  }
  if (full.to_env().count(std::string(name)) > 0) {
    return true;
  }
  // The names only Prime-RL's placement writes (v0.8.0, then v0.9).
  full.prime_rl_placement = full.expert_parallel = true;
  full.num_train_nodes = full.total_nodes;
  full.disaggregated = primerl::Disaggregated{};
  full.nodes_per_infer_replica = full.disaggregated->nodes();
  full.router = primerl::Router::llm_d;
  full.kv_offload = primerl::KvOffload::mooncake;
  if (full.to_env().count(std::string(name)) > 0) {
    return true;
  }
  full.prime_rl_placement = false;
  full.generation = primerl::Generation::v0_9;
  full.run_dir_name = full.run_name = "run";
  full.num_train_nodes = full.total_nodes;
  full.registry.reset();
  return full.to_env().count(std::string(name)) > 0;
}

} // namespace pb::contract
