// SPDX-License-Identifier: MIT
#include "session.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/render.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments/validate.hpp>
#include <primebeaker/environments_runtime/engine.hpp>
#include <primebeaker/environments_runtime/json_line.hpp>
#include <primebeaker/tool_services/scoring.hpp>
#include <primebeaker/tool_services/transport.hpp>

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

// The search agents' tools, as Verifiers derives them from Python PrimeBeaker's method signatures
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

// Stop and cleanup hooks with Python PrimeBeaker's names and priorities (docs/environments.md).
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

std::shared_ptr<const OrderedJson> EnvironmentEngine::full_args(const Environment &environment,
                                                                const OrderedJson &args) {
  std::lock_guard lock(m_args_mutex);
  for (const auto &entry : m_args_cache) {
    if (entry.environment == &environment && entry.given == args) {
      return entry.full;
    }
  }
  auto full = std::make_shared<const OrderedJson>(with_defaults(environment, args));
  if (m_args_cache.size() >= 64) {
    m_args_cache.erase(m_args_cache.begin());
  }
  m_args_cache.push_back({&environment, args, full});
  return full;
}

namespace {

OrderedJson take(OrderedJson &request, const char *key, OrderedJson fallback) {
  const auto found = request.find(key);
  return found == request.end() ? std::move(fallback) : std::move(*found);
}

// The rollout record the scorer reads (docs/environments.md "Rollout records"), made of the
// score request's fields (moved, not copied).
OrderedJson rollout_record(OrderedJson request, OrderedJson state) {
  OrderedJson rollout;
  rollout["prompt"] = take(request, "prompt", OrderedJson::array());
  rollout["completion"] = take(request, "completion", OrderedJson::array());
  rollout["answer"] = take(request, "answer", OrderedJson());
  // Verifiers' state["info"] is the row's info; the row's other columns are searched too.
  OrderedJson row = take(request, "row", OrderedJson::object());
  OrderedJson info = take(request, "info", OrderedJson());
  if (!info.is_object()) {
    info = row.is_object() ? row.value("info", OrderedJson::object()) : OrderedJson::object();
  }
  if (!info.is_object()) {
    info = OrderedJson::object();
  }
  if (row.is_object()) {
    // Not the row's own prompt, answer and completion: the scorer reads those from the record
    // (copying the prompt once more was a fifth of a single-turn score's time).
    for (const auto &[key, value] : row.items()) {
      if (key != "info" && key != "prompt" && key != "answer" && key != "completion" &&
          !info.contains(key)) {
        info[key] = value;
      }
    }
  }
  rollout["input"] = std::move(row);
  rollout["info"] = std::move(info);
  rollout["state"] = std::move(state);
  rollout["is_truncated"] = take(request, "is_truncated", false);
  // What the RubricHub shadow judge samples by (docs/tool-services.md).
  for (const char *key : {"trajectory_id", "example_id", "cache_salt"}) {
    rollout[key] = take(request, key, OrderedJson());
  }
  return rollout;
}

} // namespace

OrderedJson EnvironmentEngine::score(const std::string &session,
                                     OrderedJson request,
                                     OrderedJson state,
                                     const std::atomic<bool> *cancelled) {
  const OrderedJson &name = request.contains("env") ? request["env"] : OrderedJson();
  const Environment *environment =
      name.is_string() ? environments::find_environment(name.get_ref<const std::string &>())
                       : nullptr;
  if (environment == nullptr) {
    throw RequestError("environment", "unknown environment " + name.dump());
  }
  const auto args = full_args(*environment, request.value("args", OrderedJson::object()));
  const OrderedJson rollout = rollout_record(std::move(request), std::move(state));
  return score_record(session, *environment, *args, rollout, cancelled);
}

OrderedJson EnvironmentEngine::score_record(const std::string &session,
                                            const Environment &environment,
                                            const OrderedJson &args,
                                            const OrderedJson &rollout,
                                            const std::atomic<bool> *cancelled) {
  static const std::atomic<bool> never{false};
  tool_services::ScoringOptions options;
  // The judge and the reward model go through the tool backend, as tool calls do.
  options.caller = [&](const tool_services::ScoringCall &scoring) {
    ServiceCall call;
    call.service = scoring.service;
    call.url = scoring.endpoint.url;
    call.body = scoring.body;
    call.timeout = static_cast<double>(scoring.endpoint.timeout.count()) / 1000.0;
    call.max_retries = scoring.endpoint.max_retries;
    call.session = session;
    try {
      return m_tools.call(call, cancelled != nullptr ? *cancelled : never);
    } catch (const ToolError &error) {
      throw tool_services::ServiceError(
          tool_services::FailureKind::unreachable, error.type(), error.what());
    } catch (const RequestError &error) {
      if (error.kind() != "cancelled") {
        throw;
      }
      throw tool_services::ServiceError(
          tool_services::FailureKind::cancelled, "CancelledError", error.what());
    }
  };
  try {
    tool_services::ServiceScore scored =
        tool_services::score_with_services(environment, args, rollout, options);
    return {{"values", std::move(scored.score.metrics)},
            {"metrics", std::move(scored.metrics)},
            {"info_update", std::move(scored.info_update)}};
  } catch (const tool_services::ServiceError &error) {
    if (error.kind() == tool_services::FailureKind::cancelled) {
      throw RequestError("cancelled", error.what());
    }
    throw RequestError("infra", error.detail());
  } catch (const Error &error) {
    throw RequestError("environment", error.what());
  }
}

OrderedJson EnvironmentEngine::close(const std::string &op,
                                     const std::shared_ptr<Session> &session) {
  session->close();
  OrderedJson state = session->public_state();
  if (op == "release") {
    m_tools.forget(session->id);
    std::lock_guard engine_lock(m_mutex);
    m_sessions.erase(session->id);
    return OrderedJson::object();
  }
  return {{"state", std::move(state)}};
}

const std::vector<std::string> &EnvironmentEngine::ops() const {
  static const std::vector<std::string> known = {
      "open", "observe", "respond", "score", "close", "release"};
  return known;
}

OrderedJson EnvironmentEngine::handle(const std::string &op, const OrderedJson &request) {
  const std::string session_id = request.value("session", "");
  if (op == "score") {
    std::shared_ptr<Session> session = find(session_id);
    OrderedJson state = OrderedJson::object();
    if (session) {
      std::lock_guard lock(session->mutex);
      session->cancelled = false;
      state = session->state;
    }
    return score(session_id, request, std::move(state), session ? &session->cancelled : nullptr);
  }
  if (op == "close" || op == "release") {
    std::shared_ptr<Session> session = find(session_id);
    if (!session) {
      return op == "close" ? OrderedJson{{"state", OrderedJson::object()}} : OrderedJson::object();
    }
    session->cancel(); // an overlapping request gives way
    std::lock_guard lock(session->mutex);
    return close(op, session);
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

std::optional<OrderedJson> EnvironmentEngine::handle_now(const std::string &op,
                                                         OrderedJson &request) {
  const OrderedJson &id = request.contains("session") ? request["session"] : OrderedJson();
  const std::string session_id = id.is_string() ? id.get<std::string>() : std::string();
  if (op == "score") {
    const OrderedJson &name = request.contains("env") ? request["env"] : OrderedJson();
    const Environment *environment =
        name.is_string() ? environments::find_environment(name.get_ref<const std::string &>())
                         : nullptr;
    if (environment != nullptr && tool_services::scores_with_services(*environment)) {
      return std::nullopt; // a judge or reward-model call: on a worker
    }
    std::shared_ptr<Session> session = find(session_id);
    OrderedJson state = OrderedJson::object();
    if (session) {
      std::unique_lock lock(session->mutex, std::try_to_lock);
      if (!lock.owns_lock()) {
        return std::nullopt; // closing (a container) on a worker: wait there
      }
      session->cancelled = false;
      state = session->state;
    }
    return score(
        session_id, std::move(request), std::move(state), session ? &session->cancelled : nullptr);
  }
  std::shared_ptr<Session> session = find(session_id);
  if (op == "close" || op == "release") {
    if (!session) {
      return op == "close" ? OrderedJson{{"state", OrderedJson::object()}} : OrderedJson::object();
    }
    if (session->environment.behaviour == Behaviour::podman_terminal) {
      return std::nullopt; // closing a container is a gateway call
    }
    std::unique_lock lock(session->mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
      return std::nullopt;
    }
    return close(op, session);
  }
  if (op == "observe" && session) {
    std::unique_lock lock(session->mutex, std::try_to_lock);
    if (!lock.owns_lock() || !session->opened) {
      return std::nullopt; // the first observe may start a container (setup)
    }
    session->cancelled = false;
    try {
      return session->observe(request.value("turn", 0LL), request.value("message", OrderedJson()));
    } catch (const Error &error) {
      throw RequestError("environment", error.what());
    }
  }
  return std::nullopt;
}

namespace {

// The environments whose scorer reads only the record's `completion` and `answer`
// (environments::score_rollout, Behaviour::label: the last message's verdict against the gold
// answer). tests/environments_runtime/test_serve.cpp checks the two records score alike.
bool reads_completion_and_answer(const Environment &environment) {
  return environment.behaviour == Behaviour::label &&
         !tool_services::scores_with_services(environment);
}

} // namespace

std::optional<OrderedJson> EnvironmentEngine::score_now(RequestLine &request) {
  const Environment *environment = nullptr;
  if (const auto name = request.plain_string("env")) {
    environment = environments::find_environment(std::string(*name));
  }
  if (environment == nullptr || !reads_completion_and_answer(*environment)) {
    return std::nullopt; // the whole request, as before
  }
  std::string session_id;
  if (const auto plain = request.plain_string("session")) {
    session_id = *plain;
  } else if (const OrderedJson *id = request.find("session"); id != nullptr && id->is_string()) {
    session_id = id->get<std::string>();
  }
  // As handle_now: an open session of that id (none for a single-turn environment, which
  // refuses open) must be free, and clears its cancel flag.
  std::shared_ptr<Session> session = find(session_id);
  std::unique_lock<std::mutex> lock;
  if (session) {
    lock = std::unique_lock(session->mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
      return std::nullopt;
    }
    session->cancelled = false;
  }
  std::shared_ptr<const OrderedJson> args;
  const std::optional<std::string_view> args_text = request.text("args");
  if (args_text) {
    std::lock_guard args_lock(m_args_mutex);
    for (const auto &entry : m_args_text_cache) {
      if (entry.environment == environment && entry.text == *args_text) {
        args = entry.full;
        break;
      }
    }
  }
  if (!args) {
    const OrderedJson *given = request.find("args");
    args = full_args(*environment, given != nullptr ? *given : OrderedJson::object());
    if (args_text) {
      std::lock_guard args_lock(m_args_mutex);
      if (m_args_text_cache.size() >= 64) {
        m_args_text_cache.erase(m_args_text_cache.begin());
      }
      m_args_text_cache.push_back({environment, std::string(*args_text), args});
    }
  }
  // The record rollout_record() would make, but for the fields this scorer never reads.
  OrderedJson rollout(OrderedJson::value_t::object);
  rollout["completion"] = request.take("completion", OrderedJson::array());
  rollout["answer"] = request.take("answer", OrderedJson());
  if (lock.owns_lock()) {
    lock.unlock(); // score() ran unlocked too: it copies the state, then scores
  }
  return score_record(
      session_id, *environment, *args, rollout, session ? &session->cancelled : nullptr);
}

void EnvironmentEngine::cancel(const std::string &session) {
  if (auto found = find(session)) {
    found->cancel();
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
