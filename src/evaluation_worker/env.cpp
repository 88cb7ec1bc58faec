// SPDX-License-Identifier: MIT
// The worker's env contract (docs/evaluation-worker.md, "Environment"): pure parsing, the child's
// argv and environment, and the exit-status rule.
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation_worker/worker.hpp>
#include <primebeaker/registry/registry.hpp>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>

namespace pb::evaluation_worker {
namespace {

constexpr const char *k_module = "PRIMEBEAKER_EVALUATION_MODULE";
constexpr const char *k_arguments = "PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON";
constexpr const char *k_required = "PRIMEBEAKER_REQUIRED_SERVICES_JSON";
constexpr const char *k_root = "PRIMEBEAKER_COORDINATION_ROOT";
constexpr const char *k_service_id = "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID";
constexpr const char *k_keep = "PRIMEBEAKER_KEEP_SERVICES";
constexpr const char *k_timeout = "PRIMEBEAKER_READINESS_TIMEOUT_SECONDS";
constexpr const char *k_registry = "PRIMEBEAKER_REGISTRY";

// The value of `name` with surrounding whitespace removed; nullopt when unset or blank.
std::optional<std::string> value_of(const EnvMap &env, const char *name) {
  const auto it = env.find(name);
  if (it == env.end()) {
    return std::nullopt;
  }
  std::string value(text::trim(it->second));
  if (value.empty()) {
    return std::nullopt;
  }
  return value;
}

std::string required_value(const EnvMap &env, const char *name) {
  auto value = value_of(env, name);
  if (!value) {
    throw failure(std::string("missing required environment variable ") + name);
  }
  return *value;
}

std::optional<double> parse_number(const std::string &text) {
  const char *begin = text.c_str();
  char *end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin || *end != '\0' || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::chrono::milliseconds to_millis(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000.0)));
}

bool parse_bool(const std::string &value, const char *name) {
  std::string lower;
  for (const char c : value) {
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (lower == "true" || lower == "1" || lower == "yes") {
    return true;
  }
  if (lower == "false" || lower == "0" || lower == "no") {
    return false;
  }
  throw failure("invalid boolean value: '" + value + "' (" + name + ")");
}

std::vector<std::string> parse_arguments(const std::optional<std::string> &text) {
  if (!text) {
    return {};
  }
  const auto parsed = nlohmann::json::parse(*text, nullptr, false);
  std::vector<std::string> arguments;
  bool strings = !parsed.is_discarded() && parsed.is_array();
  if (strings) {
    for (const auto &element : parsed) {
      strings = strings && element.is_string();
      if (strings) {
        arguments.push_back(element.get<std::string>());
      }
    }
  }
  if (!strings) {
    throw failure(std::string(k_arguments) +
                  " must encode strings (a JSON array of strings), got " + *text);
  }
  return arguments;
}

std::map<std::string, int> parse_required(const std::optional<std::string> &text) {
  if (!text) {
    return {};
  }
  const auto parsed = nlohmann::json::parse(*text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw failure(std::string(k_required) + " must encode an object, got " + *text);
  }
  std::map<std::string, int> required;
  for (auto it = parsed.begin(); it != parsed.end(); ++it) {
    long long count = 0;
    bool valid = !it.key().empty();
    if (it.value().is_number_integer()) {
      count = it.value().get<long long>();
    } else if (it.value().is_string()) { // Python PrimeBeaker converts with int(): "2" counts as 2
      const auto raw = it.value().get<std::string>();
      auto digits = text::trim(raw);
      if (digits.size() > 1 && digits.front() == '+') {
        digits.remove_prefix(1); // int("+2") is 2 too
      }
      const auto number = text::parse_integer(digits);
      count = number.value_or(0);
      valid = valid && number.has_value();
    } else {
      valid = false;
    }
    if (!valid || count < 1 || count > 1'000'000) {
      throw failure(std::string(k_required) + " needs service names and positive integer counts, " +
                    "got '" + it.key() + "': " + it.value().dump());
    }
    required[it.key()] = static_cast<int>(count);
  }
  return required;
}

// A registry locator must be usable now (opening parses it and does no I/O): a typo, or a
// rediss:// that Debian's hiredis cannot speak, fails before anything is started or stopped.
void check_locator(const std::string &uri, const char *name) {
  try {
    (void)registry::open_registry(uri);
  } catch (const Error &error) {
    throw failure(std::string(name) + ": " + error.what());
  }
}

std::chrono::milliseconds
seconds_setting(const EnvMap &env, const char *name, std::chrono::milliseconds fallback) {
  const auto text = value_of(env, name);
  if (!text) {
    return fallback;
  }
  const auto seconds = parse_number(*text);
  if (!seconds || *seconds < 0) {
    throw failure(std::string(name) + " must be a non-negative number of seconds, got '" + *text +
                  "'");
  }
  return to_millis(*seconds);
}

} // namespace

WorkerEnv parse_worker_env(const EnvMap &env) {
  WorkerEnv worker;
  worker.module = required_value(env, k_module);
  static const std::regex dotted(R"([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)");
  if (!std::regex_match(worker.module, dotted)) {
    throw failure("invalid Python module path: '" + worker.module + "' (" + k_module + ")");
  }
  worker.arguments = parse_arguments(value_of(env, k_arguments));
  worker.required_services = parse_required(value_of(env, k_required));
  worker.coordination_root = required_value(env, k_root);
  check_locator(worker.coordination_root, k_root);
  worker.service_experiment_id = required_value(env, k_service_id);
  if (const auto keep = value_of(env, k_keep)) {
    worker.keep_services = parse_bool(*keep, k_keep);
  }
  if (const auto timeout = value_of(env, k_timeout)) {
    const auto seconds = parse_number(*timeout);
    if (!seconds || *seconds <= 0) {
      throw failure(std::string(k_timeout) + " must be a positive number of seconds, got '" +
                    *timeout + "'");
    }
    worker.readiness_timeout = to_millis(*seconds);
  }
  if (auto registry = value_of(env, k_registry)) {
    check_locator(*registry, k_registry);
    worker.registry = std::move(registry);
  }
  worker.python = value_of(env, "PRIMEBEAKER_PYTHON").value_or("python3");
  worker.beaker = beaker::program_from_environment(env);
  return worker;
}

Tuning parse_tuning(const EnvMap &env) {
  Tuning tuning;
  tuning.poll_interval =
      seconds_setting(env, "PRIMEBEAKER_EVALUATION_POLL_SECONDS", tuning.poll_interval);
  tuning.stop_grace =
      seconds_setting(env, "PRIMEBEAKER_EVALUATION_STOP_GRACE_SECONDS", tuning.stop_grace);
  return tuning;
}

proc::Argv child_argv(const WorkerEnv &worker) {
  proc::Argv argv{worker.python, "-m", worker.module};
  argv.insert(argv.end(), worker.arguments.begin(), worker.arguments.end());
  return argv;
}

EnvMap
child_environment(const EnvMap &base, const std::string &registry, const std::string &gateway) {
  EnvMap env = base;
  std::string openai = gateway;
  while (!openai.empty() && openai.back() == '/') {
    openai.pop_back();
  }
  env["REGISTRY"] = registry;
  env["REGISTRY_URL"] = registry;
  env["LITEREGISTRY_GATEWAY_URL"] = gateway;
  env["OPENAI_BASE_URL"] = openai + "/v1";
  return env;
}

int exit_status_of(const proc::ExitStatus &status) {
  return status.code();
}

} // namespace pb::evaluation_worker
