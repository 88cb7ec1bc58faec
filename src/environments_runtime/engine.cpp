// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/render.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments/validate.hpp>
#include <primebeaker/environments_runtime/engine.hpp>

#include <algorithm>
#include <cctype>

namespace pb::environments_runtime {
namespace {

using environments::Behaviour;
using environments::Environment;

OrderedJson with_defaults(const Environment &environment, const OrderedJson &args) {
  OrderedJson full = OrderedJson::object();
  for (const auto &parameter : environment.parameters) {
    if (!parameter.required) {
      full[parameter.name] = parameter.default_value;
    }
  }
  for (const auto &[key, value] : args.items()) {
    full[key] = value;
  }
  return full;
}

std::string first_word(const std::string &text) {
  return text.substr(0, text.find(' '));
}

// Catalog weights read "1.0" or "<parameter> (<default>)".
double weight_of(const std::string &weight, const OrderedJson &args) {
  const std::string word = first_word(weight);
  if (!word.empty() && (std::isdigit(static_cast<unsigned char>(word[0])) || word[0] == '-')) {
    return std::stod(word);
  }
  const OrderedJson value = args.value(word, OrderedJson());
  return value.is_number() ? value.get<double>() : 0.0;
}

// Catalog turn limits read "2", or "max_tool_calls + 1 (65)".
long long turn_limit(const Environment &environment, const OrderedJson &args) {
  if (args.contains("max_turns") && args["max_turns"].is_number_integer()) {
    return args["max_turns"].get<long long>();
  }
  const std::string word = first_word(environment.max_turns);
  if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0]))) {
    return std::stoll(word);
  }
  const OrderedJson budget = args.value(word, OrderedJson());
  return budget.is_number_integer() ? budget.get<long long>() + 1 : -1;
}

OrderedJson tool_defs(const Environment &environment, const OrderedJson &args) {
  std::vector<std::string> names;
  if (args.contains("tools") && args["tools"].is_array()) {
    for (const auto &tool : args["tools"]) {
      names.push_back(tool.get<std::string>());
    }
  } else {
    for (const auto &tool : environment.tools) {
      if (tool.find(' ') == std::string::npos) { // "submit (optional)" is chosen by arguments
        names.push_back(tool);
      }
    }
  }
  const auto known = environments::tool_spec_names();
  OrderedJson defs = OrderedJson::array();
  for (const auto &name : names) {
    if (std::find(known.begin(), known.end(), name) != known.end()) {
      defs.push_back(environments::tool_spec(name));
    }
  }
  return defs;
}

OrderedJson stop(const std::string &name, int priority, const std::string &key = {}) {
  OrderedJson spec = {
      {"name", name}, {"priority", priority}, {"kind", key.empty() ? "observe" : "state"}};
  if (!key.empty()) {
    spec["key"] = key;
  }
  return spec;
}

// Stop and cleanup hooks with the reference's names and priorities (docs/environments.md).
void add_hooks(const Environment &environment, OrderedJson &shape) {
  OrderedJson stops = OrderedJson::array();
  OrderedJson cleanups = OrderedJson::array();
  switch (environment.behaviour) {
  case Behaviour::podman_terminal:
    stops.push_back(stop("podman_failed", 90, "podman_failure"));
    stops.push_back(stop("terminal_complete", 75, "podman_terminal_complete"));
    stops.push_back(stop("stop_after_final_or_invalid", 50));
    cleanups.push_back({{"name", "close_podman_session"}, {"priority", 50}});
    break;
  case Behaviour::articulated_harness:
    stops.push_back(stop("all_rubrics_submitted", 75, "jtc_submit_complete"));
    stops.push_back(stop("stop_after_final_or_invalid", 50));
    break;
  case Behaviour::tool_label:
  case Behaviour::terminal_tool_label:
  case Behaviour::code_tool_label:
  case Behaviour::search_agent:
  case Behaviour::search_agent_judge:
  case Behaviour::search_visit_agent:
  case Behaviour::search_visit_agent_judge:
    stops.push_back(stop("stop_after_final_or_invalid", 50));
    break;
  default:
    break;
  }
  shape["stops"] = stops;
  shape["cleanups"] = cleanups;
  shape["needs_setup"] = environment.behaviour == Behaviour::podman_terminal;
  shape["keep_num_turns"] = environment.behaviour != Behaviour::podman_terminal;
}

OrderedJson dataset_rules(const Environment &environment) {
  switch (environment.behaviour) {
  case Behaviour::label:
    return {{"sources", {"jsonl"}}, {"split_column", "add"}};
  case Behaviour::tool_label:
  case Behaviour::articulated_harness:
  case Behaviour::podman_terminal:
    return {{"sources", {"disk", "jsonl", "hub"}}, {"split_column", "overwrite"}};
  default:
    return {{"sources", {"disk", "jsonl", "hub"}}, {"split_column", "add"}};
  }
}

bool single_turn(const Environment &environment) {
  return environment.env_class == "SingleTurnEnv";
}

} // namespace

OrderedJson describe(const std::string &name, const OrderedJson &args) {
  const Environment &environment = environments::resolve(name);
  if (!args.is_object()) {
    throw usage_error("--args must be a JSON object");
  }
  std::vector<std::string> errors;
  for (const auto &problem : environments::validate_args(environment, args)) {
    if (problem.error) {
      errors.push_back((problem.key_path.empty() ? "" : problem.key_path + ": ") + problem.message);
    }
  }
  if (!errors.empty()) {
    Error error = input_error("--args: " + errors.front() + " (" + environment.name + ")");
    for (size_t i = 1; i < errors.size(); ++i) {
      error.add_context(errors[i]);
    }
    throw error;
  }
  const OrderedJson full = with_defaults(environment, args);
  OrderedJson shape;
  shape["name"] = environment.name;
  shape["module"] = environment.module;
  shape["kind"] = single_turn(environment) ? "single_turn" : "multi_turn";
  shape["max_turns"] = single_turn(environment) ? 1 : turn_limit(environment, full);
  shape["tool_defs"] = tool_defs(environment, full);
  OrderedJson rewards = OrderedJson::array();
  for (const auto &reward : environment.rewards) {
    rewards.push_back({{"name", reward.name}, {"weight", weight_of(reward.weight, full)}});
  }
  shape["rewards"] = rewards;
  shape["metrics"] = environment.metrics;
  add_hooks(environment, shape);
  shape["dataset"] = dataset_rules(environment);
  shape["args"] = full;
  return shape;
}

nlohmann::json EnvironmentEngine::handle(const std::string &op, const nlohmann::json &request) {
  const std::string session = request.value("session", "");
  if (op == "close" || op == "release") {
    std::lock_guard lock(m_mutex);
    m_sessions.erase(session);
    return nlohmann::json::object();
  }
  if (op != "score") {
    // Known gap, said plainly rather than faked: the multi-turn rollout engine is not built.
    throw RequestError("environment",
                       "'" + op +
                           "': multi-turn rollouts are not available in this primebeaker "
                           "yet (docs/environments-runtime.md, Status)");
  }
  try {
    const Environment &environment = environments::resolve(request.value("env", ""));
    const OrderedJson args = with_defaults(
        environment, OrderedJson::parse(request.value("args", nlohmann::json::object()).dump()));
    OrderedJson rollout;
    const OrderedJson row =
        OrderedJson::parse(request.value("row", nlohmann::json::object()).dump());
    rollout["prompt"] = OrderedJson::parse(request.value("prompt", nlohmann::json::array()).dump());
    rollout["completion"] =
        OrderedJson::parse(request.value("completion", nlohmann::json::array()).dump());
    rollout["answer"] = OrderedJson::parse(request.value("answer", nlohmann::json()).dump());
    rollout["info"] = row;
    {
      std::lock_guard lock(m_mutex);
      const auto found = m_sessions.find(session);
      rollout["state"] = found == m_sessions.end() ? OrderedJson::object() : found->second;
    }
    rollout["is_truncated"] = request.value("is_truncated", false);
    if (!environments::service_request(environment, args, rollout).is_null()) {
      throw RequestError("environment",
                         environment.name + " scores through a service call, which serve does "
                                            "not make yet (docs/environments-runtime.md, Status)");
    }
    const environments::Score score = environments::score_rollout(environment, args, rollout);
    return {{"values", nlohmann::json::parse(score.metrics.dump())},
            {"metrics", nlohmann::json::object()},
            {"info_update", nlohmann::json::object()}};
  } catch (const Error &error) {
    throw RequestError("environment", error.what());
  }
}

void EnvironmentEngine::cancel(const std::string &) {
  // Nothing a session runs today blocks; cancellation matters once tools run.
}

void EnvironmentEngine::close_all() {
  std::lock_guard lock(m_mutex);
  m_sessions.clear();
}

} // namespace pb::environments_runtime
