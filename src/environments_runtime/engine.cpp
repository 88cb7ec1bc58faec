// SPDX-License-Identifier: MIT
#include "session.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/render.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments/validate.hpp>
#include <primebeaker/environments_runtime/engine.hpp>
#include <primebeaker/tool_services/scoring.hpp>

#include <algorithm>
#include <cctype>

namespace pb::environments_runtime {

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

namespace {

OrderedJson object_schema(OrderedJson properties, OrderedJson required) {
  return {
      {"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

// The search agents' tools, as Verifiers derives them from the reference's method signatures
// (docs/environments-runtime.md "Search agents"): no bounds on num_results.
OrderedJson search_agent_tool(const std::string &name) {
  if (name == "search") {
    return {{"name", "search"},
            {"description",
             "Search the web for candidate sources. Returns titles, links and snippets; a "
             "snippet is not evidence: open the page before relying on it."},
            {"parameters",
             object_schema({{"query", {{"type", "string"}, {"description", "the search query"}}},
                            {"num_results",
                             {{"type", "integer"},
                              {"description", "how many results to return"},
                              {"default", 10}}}},
                           {"query"})}};
  }
  if (name == "visit") {
    return {
        {"name", "visit"},
        {"description", "Open a web page by URL and return its content as text."},
        {"parameters",
         object_schema({{"url", {{"type", "string"}, {"description", "the page URL"}}}}, {"url"})}};
  }
  return {
      {"name", "webterminal"},
      {"description",
       "Run a restricted shell pipeline. `browse <url> | rg ...` fetches a page and pipes "
       "its text into the pipeline; `cat <asset-id>` reads a page fetched before. Returns "
       "stdout, stderr and the exit code."},
      {"parameters",
       object_schema({{"command", {{"type", "string"}, {"description", "the pipeline to run"}}}},
                     {"command"})}};
}

bool is_search_agent(Behaviour behaviour) {
  return behaviour == Behaviour::search_agent || behaviour == Behaviour::search_agent_judge ||
         behaviour == Behaviour::search_visit_agent ||
         behaviour == Behaviour::search_visit_agent_judge;
}

} // namespace

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
  OrderedJson defs = OrderedJson::array();
  if (is_search_agent(environment.behaviour)) {
    for (const auto &name : names) {
      defs.push_back(search_agent_tool(name));
    }
    return defs;
  }
  const auto known = environments::tool_spec_names();
  for (const auto &name : names) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      continue;
    }
    OrderedJson spec = environments::tool_spec(name);
    if (name == "bash" && environment.behaviour == Behaviour::podman_terminal) {
      spec["description"] =
          "Run one Bash command in your fresh task container and return its stdout and stderr. "
          "When the task is solved, call exactly `echo " +
          args.value("completion_marker", std::string("TERMINAL_COMPLETE")) + "`.";
    }
    defs.push_back(spec);
  }
  return defs;
}

namespace {

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
  shape["max_turns"] = single_turn(environment) ? 1 : environment.turn_limit(full);
  shape["tool_defs"] = tool_defs(environment, full);
  OrderedJson rewards = OrderedJson::array();
  for (const auto &reward : environment.rewards) {
    rewards.push_back({{"name", reward.name}, {"weight", reward.weight_for(full)}});
  }
  shape["rewards"] = rewards;
  shape["metrics"] = environment.metrics;
  add_hooks(environment, shape);
  shape["dataset"] = dataset_rules(environment);
  shape["args"] = full;
  return shape;
}

EnvironmentEngine::EnvironmentEngine(ToolBackend &tools) : m_tools(tools) {}

EnvironmentEngine::EnvironmentEngine()
    : m_own_tools(std::make_unique<ServiceToolBackend>()), m_tools(*m_own_tools) {}

EnvironmentEngine::~EnvironmentEngine() = default;

std::shared_ptr<Session> EnvironmentEngine::find(const std::string &session) {
  std::lock_guard lock(m_mutex);
  const auto found = m_sessions.find(session);
  return found == m_sessions.end() ? nullptr : found->second;
}

// `open`, or the first observe/respond of a session that was not opened in setup: both carry
// env, args and row.
std::shared_ptr<Session> EnvironmentEngine::open(const std::string &session,
                                                 const OrderedJson &request) {
  if (auto existing = find(session)) {
    return existing;
  }
  if (!request.contains("env")) {
    throw RequestError("unknown_session",
                       "session '" + session +
                           "' is not open (the first request carries env, "
                           "args and row)");
  }
  const Environment *environment = environments::find_environment(request.value("env", ""));
  if (environment == nullptr) {
    throw RequestError("bad_request", "unknown environment " + request["env"].dump());
  }
  if (single_turn(*environment)) {
    throw RequestError("bad_request", environment->name + " is single-turn: only score applies");
  }
  const OrderedJson args = request.value("args", OrderedJson::object());
  auto created = std::make_shared<Session>(session,
                                           *environment,
                                           with_defaults(*environment, args),
                                           request.value("row", OrderedJson::object()),
                                           m_tools);
  std::lock_guard lock(m_mutex);
  return m_sessions.emplace(session, created).first->second;
}

namespace {

// The rollout record the scorer reads (docs/environments.md "Rollout records").
OrderedJson rollout_record(const OrderedJson &request, const OrderedJson &state) {
  OrderedJson rollout;
  rollout["prompt"] = request.value("prompt", OrderedJson::array());
  rollout["completion"] = request.value("completion", OrderedJson::array());
  rollout["answer"] = request.value("answer", OrderedJson());
  // Verifiers' state["info"] is the row's info; the row's other columns are searched too.
  const OrderedJson row = request.value("row", OrderedJson::object());
  OrderedJson info = request.value("info", OrderedJson());
  if (!info.is_object()) {
    info = row.is_object() ? row.value("info", OrderedJson::object()) : OrderedJson::object();
  }
  if (!info.is_object()) {
    info = OrderedJson::object();
  }
  if (row.is_object()) {
    for (const auto &[key, value] : row.items()) {
      if (!info.contains(key) && key != "info") {
        info[key] = value;
      }
    }
  }
  rollout["input"] = row;
  rollout["info"] = info;
  rollout["state"] = state;
  rollout["is_truncated"] = request.value("is_truncated", false);
  return rollout;
}

} // namespace

OrderedJson EnvironmentEngine::score(const std::string &session, const OrderedJson &request) {
  const Environment *environment = environments::find_environment(request.value("env", ""));
  if (environment == nullptr) {
    throw RequestError("environment",
                       "unknown environment " + request.value("env", OrderedJson()).dump());
  }
  const OrderedJson args =
      with_defaults(*environment, request.value("args", OrderedJson::object()));
  OrderedJson state = OrderedJson::object();
  std::shared_ptr<Session> open_session = find(session);
  if (open_session) {
    std::lock_guard lock(open_session->mutex);
    open_session->cancelled = false;
    state = open_session->state;
  }
  OrderedJson rollout = rollout_record(request, state);
  OrderedJson info_update = OrderedJson::object();
  try {
    const OrderedJson body = environments::service_request(*environment, args, rollout);
    if (!body.is_null()) {
      const auto service = tool_services::scoring_service(*environment, args);
      if (!service) {
        throw RequestError("environment", environment->name + " names no scoring service");
      }
      const bool judge = environment->behaviour != Behaviour::reward_model;
      ServiceCall call;
      call.service = judge ? "judge" : "classify";
      call.url = service->endpoint.url;
      call.body = body;
      call.timeout = static_cast<double>(service->endpoint.timeout.count()) / 1000.0;
      call.max_retries = service->endpoint.max_retries;
      call.session = session;
      std::atomic<bool> never{false};
      OrderedJson response;
      try {
        response = m_tools.call(call, open_session ? open_session->cancelled : never);
      } catch (const ToolError &error) {
        throw RequestError("infra", error.detail());
      }
      rollout["state"][service->state_key] = response;
      info_update[judge ? "judge" : "reward_model"] = {{"request", body}, {"response", response}};
    }
    const environments::Score score = environments::score_rollout(*environment, args, rollout);
    return {{"values", score.metrics},
            {"metrics", OrderedJson::object()},
            {"info_update", info_update}};
  } catch (const Error &error) {
    throw RequestError("environment", error.what());
  }
}

OrderedJson EnvironmentEngine::handle(const std::string &op, const OrderedJson &request) {
  const std::string session_id = request.value("session", "");
  if (op == "score") {
    return score(session_id, request);
  }
  if (op == "close" || op == "release") {
    std::shared_ptr<Session> session = find(session_id);
    if (!session) {
      return {{"state", OrderedJson::object()}};
    }
    session->cancelled = true; // an overlapping request gives way
    std::lock_guard lock(session->mutex);
    session->close();
    OrderedJson state = session->public_state();
    if (op == "release") {
      m_tools.forget(session_id);
      std::lock_guard engine_lock(m_mutex);
      m_sessions.erase(session_id);
      return OrderedJson::object();
    }
    return {{"state", state}};
  }
  if (op != "open" && op != "observe" && op != "respond") {
    throw RequestError("bad_request", "unknown op '" + op + "'");
  }
  std::shared_ptr<Session> session = open(session_id, request);
  std::lock_guard lock(session->mutex);
  session->cancelled = false;
  try {
    if (op == "open") {
      if (!session->opened) {
        session->opened = true;
        session->setup();
      }
      return {{"state", session->public_state()}};
    }
    if (!session->opened) {
      session->opened = true;
      session->setup();
    }
    if (op == "observe") {
      return session->observe(request.value("turn", 0LL), request.value("message", OrderedJson()));
    }
    return session->respond(request);
  } catch (const ToolError &error) {
    throw RequestError("infra", error.detail());
  } catch (const Error &error) {
    throw RequestError("environment", error.what());
  }
}

void EnvironmentEngine::cancel(const std::string &session) {
  if (auto found = find(session)) {
    found->cancelled = true;
  }
}

void EnvironmentEngine::close_all() {
  std::map<std::string, std::shared_ptr<Session>> sessions;
  {
    std::lock_guard lock(m_mutex);
    sessions.swap(m_sessions);
  }
  for (auto &[id, session] : sessions) {
    std::lock_guard lock(session->mutex);
    session->close();
    m_tools.forget(id);
  }
}

} // namespace pb::environments_runtime
