// SPDX-License-Identifier: MIT
#include <primebeaker/contract/replica_env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/plan.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace pb::node {
namespace {

std::optional<long long> parse_integer(std::string_view text) {
  text = text::trim(text);
  long long value = 0;
  const auto *end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return std::nullopt;
  }
  return value;
}

int integer_var(const EnvMap &env, const std::string &name, long long min, long long max) {
  const std::string &raw = env.at(name);
  const auto value = parse_integer(raw);
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

std::optional<std::string> optional_var(const EnvMap &env, const std::string &name) {
  const auto it = env.find(name);
  if (it == env.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second;
}

// The contract's common fields, plus what only a replica knows (its rank, its tuning).
void fill_common(const EnvMap &env, const contract::ReplicaEnv &replica, CommonEnv &out) {
  out.total_nodes = static_cast<int>(replica.total_nodes);
  out.gpus_per_node = static_cast<int>(replica.gpus_per_node);
  out.config_path = replica.config_path;
  out.output_dir = replica.output_dir;
  out.working_dir = replica.working_dir;
  out.scratch = replica.scratch;
  out.launch_id = replica.launch_id;
  out.rendezvous_dir = replica.rendezvous_dir;
  out.rendezvous_timeout_seconds = static_cast<int>(replica.rendezvous_timeout_seconds);
  const auto rank = parse_integer(env.at(contract::var::replica_rank));
  if (!rank || *rank < 0 || *rank >= out.total_nodes) {
    throw usage_error(fmt::format("invalid node rank {} (TOTAL_NODES={})",
                                  env.at(contract::var::replica_rank),
                                  out.total_nodes));
  }
  out.rank = static_cast<int>(*rank);
  if (replica.setup_command && !replica.setup_command->empty()) {
    out.setup_command = replica.setup_command;
  }
  out.max_recoveries = replica.max_recoveries;
  out.max_restarts_on_errors = replica.max_restarts_on_errors;
  out.tuning = parse_tuning(env);
  out.generation = replica.generation;
  out.run_dir_name = replica.run_dir_name;
  out.run_name = replica.run_name;
  out.run_id = replica.wandb_run_id;
}

// The contract of `kind` and the replica rank Beaker sets, all missing names listed at once.
contract::ReplicaEnv read_contract(contract::Kind kind, const EnvMap &env) {
  auto names = contract::required_names(kind, contract::generation_of(env));
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
  return t;
}

SftEnv parse_sft_env(const EnvMap &env) {
  const auto replica = read_contract(contract::Kind::multi_sft, env);
  SftEnv out;
  fill_common(env, replica, out);
  return out;
}

RlEnv parse_rl_env(const EnvMap &env) {
  const auto replica = read_contract(contract::Kind::multi_rl, env);
  RlEnv out;
  fill_common(env, replica, out);
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
  if (replica.generation == primerl::Generation::v0_9) {
    out.num_train_nodes = static_cast<int>(replica.num_train_nodes);
    out.num_infer_nodes = static_cast<int>(replica.num_infer_nodes);
    out.inference_tp = static_cast<int>(replica.inference_tp);
    out.orchestrator_replica = static_cast<int>(replica.orchestrator_replica);
    out.env_servers = replica.env_servers;
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

std::string role_name(Role role) {
  switch (role) {
  case Role::trainer:
    return "trainer";
  case Role::mixed:
    return "mixed";
  default:
    return "inference";
  }
}

RlPlacement place_rl(const RlEnv &env) {
  RlPlacement p;
  if (env.rank == 0) {
    p.train_gpus = env.trainer_gpu_count;
    if (env.mixed_infer_gpu_count > 0) {
      p.role = Role::mixed;
      p.inference = {env.trainer_gpu_count, env.mixed_infer_gpu_count};
    } else {
      p.role = Role::trainer;
      p.inference = {0, 0};
    }
  } else {
    p.role = Role::inference;
    p.inference = {0, env.gpus_per_node};
  }
  if (p.train_gpus + p.inference.count > env.gpus_per_node) {
    throw usage_error(fmt::format("GPU partition exceeds node: {} trainer + {} inference GPUs > "
                                  "GPUS_PER_NODE={}",
                                  p.train_gpus,
                                  p.inference.count,
                                  env.gpus_per_node));
  }
  return p;
}

std::string layout_text(const Slice &slice) {
  return fmt::format("{} {}", slice.start, slice.count);
}

std::optional<Slice> parse_layout(const std::string &text) {
  const auto parts = text::split(text::trim(text), ' ');
  if (parts.size() != 2) {
    return std::nullopt;
  }
  const auto start = parse_integer(parts[0]);
  const auto count = parse_integer(parts[1]);
  if (!start || !count || *start < 0 || *count < 0) {
    return std::nullopt;
  }
  return Slice{static_cast<int>(*start), static_cast<int>(*count)};
}

std::vector<std::string> tp_blocks(const Slice &slice, int tp) {
  std::vector<std::string> blocks;
  for (int k = 0; k + tp <= slice.count; k += tp) {
    std::vector<std::string> ids;
    for (int g = 0; g < tp; ++g) {
      ids.push_back(std::to_string(slice.start + k + g));
    }
    blocks.push_back(text::join(ids, ","));
  }
  return blocks;
}

std::vector<Worker>
global_workers(const std::vector<NodeSlot> &nodes, int backend_port, int tp, int expected_ranks) {
  std::vector<Worker> workers;
  for (size_t rank = 0; rank < nodes.size(); ++rank) {
    const auto &node = nodes[rank];
    if (tp <= 0 || node.inference.count % tp != 0) {
      throw usage_error(fmt::format("inference slice not divisible by TP: node {} has {} "
                                    "inference GPUs, INFERENCE_TP={}",
                                    rank,
                                    node.inference.count,
                                    tp));
    }
    for (int k = 0; k < node.inference.count / tp; ++k) {
      Worker w;
      w.url = fmt::format("http://{}:{}", node.host, backend_port + k);
      w.admin_url = w.url + "/v1";
      workers.push_back(std::move(w));
    }
  }
  if (static_cast<int>(workers.size()) != expected_ranks) {
    throw usage_error(fmt::format("inference rank count mismatch: the nodes provide {} "
                                  "inference ranks, TOTAL_INFER_RANKS={}",
                                  workers.size(),
                                  expected_ranks));
  }
  return workers;
}

Paths rl_paths(const RlEnv &env) {
  Paths p;
  p.config_dir = env.run_dir() / "configs";
  p.logs = env.run_dir() / "logs";
  p.local_tmp =
      env.tuning.local_root / fmt::format("primebeaker-rl-{}-{}", env.launch_id, env.rank);
  return p;
}

Paths sft_paths(const SftEnv &env) {
  Paths p;
  p.config_dir = env.run_dir() / "configs";
  p.logs = env.run_dir() / "logs";
  p.local_tmp =
      env.tuning.local_root / fmt::format("primebeaker-sft-{}-{}", env.launch_id, env.rank);
  return p;
}

EnvMap cache_defaults(const EnvMap &env,
                      const std::filesystem::path &scratch,
                      const std::filesystem::path &local_tmp) {
  EnvMap out;
  auto value = [&](const std::string &name) -> std::string {
    if (const auto it = out.find(name); it != out.end()) {
      return it->second;
    }
    return env.at(name);
  };
  auto set_default = [&](const std::string &name, const std::string &fallback) {
    const auto it = env.find(name);
    if (it == env.end() || it->second.empty()) {
      out[name] = fallback;
    }
  };
  set_default("XDG_CACHE_HOME", (scratch / ".cache").string());
  set_default("HF_HOME", value("XDG_CACHE_HOME") + "/huggingface");
  set_default("TORCH_HOME", value("XDG_CACHE_HOME") + "/torch");
  set_default("TORCHINDUCTOR_CACHE_DIR", value("TORCH_HOME") + "/inductor");
  set_default("TRITON_CACHE_DIR", value("XDG_CACHE_HOME") + "/triton");
  set_default("VLLM_CACHE_ROOT", value("XDG_CACHE_HOME") + "/vllm");
  set_default("TMPDIR", local_tmp.string());
  return out;
}

proc::Argv local_gateway_argv(const RlEnv &env) {
  return {"python3",
          "-m",
          "literegistry.gateway",
          "--registry",
          env.registry,
          "--port",
          std::to_string(env.gateway_port),
          "--workers",
          std::to_string(env.gateway_workers),
          "--timeout",
          "800",
          "--judge-timeout",
          "800"};
}

proc::Argv
wait_redis_argv(const std::string &self, const RlEnv &env, const std::filesystem::path &stop_file) {
  return {self,
          "registry",
          "wait-redis",
          "--registry",
          env.registry,
          "--timeout",
          std::to_string(env.rendezvous_timeout_seconds),
          "--stop-file",
          stop_file.string()};
}

proc::Argv wait_services_argv(const std::string &self,
                              const RlEnv &env,
                              const std::filesystem::path &stop_file) {
  proc::Argv argv = {self, "registry", "wait-services", "--registry", env.registry};
  for (const auto &[name, count] : env.required_services) {
    argv.insert(argv.end(), {"--require", fmt::format("{}={}", name, count)});
  }
  argv.insert(argv.end(),
              {"--timeout",
               std::to_string(env.rendezvous_timeout_seconds),
               "--stop-file",
               stop_file.string()});
  return argv;
}

proc::Argv probe_gateway_argv(const std::string &self, const RlEnv &env) {
  proc::Argv argv = {self,
                     "registry",
                     "probe-gateway",
                     "--url",
                     fmt::format("http://127.0.0.1:{}", env.gateway_port)};
  for (const auto &path : env.local_search_model_paths) {
    argv.insert(argv.end(), {"--model-path", path});
  }
  argv.insert(argv.end(),
              {"--required-path",
               "/judge",
               "--timeout",
               fmt::format("{}", env.tuning.gateway_probe_timeout_seconds)});
  return argv;
}

std::optional<int> watcher_verdict(const Observation &seen, bool sft) {
  if (seen.complete && !sft) {
    return 0;
  }
  if (seen.shutdown_requested) {
    return static_cast<int>(ExitCode::peer_shutdown);
  }
  for (const auto &[rank, status] : seen.statuses) {
    if (status.code != 0) {
      return static_cast<int>(ExitCode::peer_failed);
    }
  }
  if (sft) {
    return std::nullopt;
  }
  for (const auto &[rank, status] : seen.statuses) {
    if (status.role != "inference") {
      return 0;
    }
  }
  if (!seen.statuses.empty()) {
    return static_cast<int>(ExitCode::unexpected_exit);
  }
  return std::nullopt;
}

std::string status_text(int code, const std::string &role) {
  return fmt::format("{} {}\n", code, role);
}

std::optional<PeerStatus> parse_status(const std::string &text) {
  const auto parts = text::split(text::trim(text), ' ');
  if (parts.size() != 2) {
    return std::nullopt;
  }
  const auto code = parse_integer(parts[0]);
  if (!code) {
    return std::nullopt;
  }
  return PeerStatus{static_cast<int>(*code), parts[1]};
}

std::string strip_rank_prefix(const std::string &line) {
  // "[default0]:text" -> "text"
  if (line.empty() || line[0] != '[') {
    return line;
  }
  size_t i = 1;
  while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i]))) {
    ++i;
  }
  const size_t letters_end = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) {
    ++i;
  }
  if (letters_end == 1 || i == letters_end || i + 1 >= line.size() + 1 ||
      line.compare(i, 2, "]:") != 0) {
    return line;
  }
  return line.substr(i + 2);
}

std::string env_file_text(const EnvMap &values, const std::string &file_name) {
  std::string out;
  for (const auto &[name, value] : values) {
    const bool valid = !name.empty() &&
                       (std::isupper(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isupper(static_cast<unsigned char>(c)) ||
                                std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!valid) {
      throw input_error(
          fmt::format("unsafe environment variable name in {}: '{}'", file_name, name));
    }
    out += "export " + name + "=" + text::shell_quote(value) + "\n";
  }
  return out;
}

} // namespace pb::node
