// SPDX-License-Identifier: MIT
// The session core (docs/environments-runtime.md "The rollout engine"): state, cancellation,
// service calls, the dispatch to each family's rules, and the helpers the families share.
#include "session_internal.hpp"

#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments_runtime/serve.hpp>

#include <algorithm>

namespace pb::environments_runtime {
namespace {

using environments::Behaviour;
using J = OrderedJson;

// The judged output: the row's `output` (or its info's), else the first user message's
// <output> block.
J judged_output(const J &row) {
  for (const J *place : {&row, &field(row, "info")}) {
    if (!field(*place, "output").is_null()) {
      return field(*place, "output");
    }
  }
  const J &prompt = field(row, "prompt");
  if (prompt.is_array()) {
    for (const auto &message : prompt) {
      if (field(message, "role") == "user") {
        const auto bodies =
            environments::find_tag_bodies(environments::message_text(message), "output");
        return bodies.empty() ? J("") : J(bodies.front());
      }
    }
  }
  return "";
}

} // namespace

const J &field(const J &object, const char *key) {
  static const J null_value;
  return object.is_object() && object.contains(key) ? object.at(key) : null_value;
}

std::string string_field(const J &object, const char *key) {
  const J &value = field(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

bool is_true(const J &value) {
  return value.is_boolean() && value.get<bool>();
}

bool blank(const std::string &text) {
  return environments::py::strip(text).empty();
}

std::string output_text(const J &output) {
  return output.is_string() ? output.get<std::string>() : environments::py::dumps(output);
}

std::string append_block(const std::string &content, const std::string &block) {
  return content + "\n\n" + block;
}

Session::Session(std::string session_id,
                 const environments::Environment &env,
                 OrderedJson full_args,
                 OrderedJson row_fields,
                 ToolBackend &tools)
    : id(std::move(session_id)), environment(env), args(std::move(full_args)),
      row(std::move(row_fields)), m_tools(tools) {
  for (const auto &def : tool_defs(environment, args)) {
    m_advertised.push_back(def.at("name").get<std::string>());
  }
  m_output = judged_output(row);
  m_submissions =
      tool_services::SubmissionStore(environments::expected_rubric_ids({{"info", row}}));
  for (const char *counter : {"jtc_tool_call_count",
                              "jtc_tool_nonempty_stderr_count",
                              "jtc_tool_command_error_count",
                              "jtc_unknown_tool_call_count",
                              "jtc_tool_infrastructure_stderr_count",
                              "jtc_browse_call_count",
                              "jtc_browse_url_not_in_output_count",
                              "jtc_successful_browse_count",
                              "jtc_standalone_command_count",
                              "jtc_targeted_standalone_command_count"}) {
    state[counter] = 0;
  }
  state["jtc_route"] = nullptr;
  state["jtc_final_warning_sent"] = false;
  state["jtc_submit_complete"] = false;
  state["jtc_submit_submissions"] = J::object();
  for (const char *list :
       {"jtc_tool_calls", "jtc_tool_execution_calls", "jtc_tool_results", "jtc_tool_history"}) {
    state[list] = J::array();
  }
}

OrderedJson Session::public_state() const {
  J out = J::object();
  for (auto it = state.begin(); it != state.end(); ++it) {
    const std::string &key = it.key();
    if (key == "jtc_tool_calls" || key == "jtc_tool_execution_calls" || key == "jtc_tool_results" ||
        key == "jtc_tool_history" || key == "podman_test_source") {
      continue;
    }
    out[key] = it.value();
  }
  return out;
}

void Session::cancel() {
  cancelled = true;
  std::lock_guard lock(m_flags_mutex);
  for (std::atomic<bool> *flag : m_call_flags) {
    *flag = true;
  }
}

void Session::check_cancelled() const {
  if (cancelled) {
    throw RequestError("cancelled", "the request of session " + id + " was cancelled");
  }
}

void Session::bump(const char *counter, long long by) {
  state[counter] = state.value(counter, 0LL) + by;
}

OrderedJson Session::call_service(const std::string &service,
                                  const std::string &url,
                                  OrderedJson body,
                                  double timeout,
                                  long long retries,
                                  const std::atomic<bool> *flag) {
  check_cancelled();
  ServiceCall request{service, url, std::move(body), timeout, std::max(retries, 1LL), id};
  J response;
  try {
    response = m_tools.call(request, flag != nullptr ? *flag : cancelled);
  } catch (const ToolError &) {
    check_cancelled(); // a call interrupted by cancel ends the request, not the rollout
    throw;
  }
  check_cancelled();
  if (!response.is_object()) {
    throw ToolError("RuntimeError", service + " response was not a JSON object");
  }
  return response;
}

// ------------------------------------------------------------------------------ dispatch

void Session::setup() {
  if (environment.behaviour == Behaviour::podman_terminal) {
    podman_setup();
  }
}

OrderedJson Session::observe(long long turn, const OrderedJson &message) {
  m_message = message.is_object() ? message : J::object();
  switch (environment.behaviour) {
  case Behaviour::tool_label:
  case Behaviour::articulated_harness:
  case Behaviour::podman_terminal:
    return observe_tool_label(m_message);
  case Behaviour::terminal_tool_label:
    return observe_terminal(m_message);
  case Behaviour::code_tool_label:
    return observe_code(turn, m_message);
  case Behaviour::search_agent:
  case Behaviour::search_agent_judge:
  case Behaviour::search_visit_agent:
  case Behaviour::search_visit_agent_judge:
    return observe_search(m_message);
  default:
    throw RequestError("bad_request", environment.name + " is a single-turn environment");
  }
}

OrderedJson Session::respond(const OrderedJson &request) {
  J reply;
  switch (environment.behaviour) {
  case Behaviour::tool_label:
  case Behaviour::articulated_harness:
  case Behaviour::podman_terminal:
    reply = respond_tool_label();
    break;
  case Behaviour::terminal_tool_label:
    reply = respond_terminal();
    break;
  case Behaviour::code_tool_label:
    reply = respond_code();
    break;
  case Behaviour::search_agent:
  case Behaviour::search_agent_judge:
  case Behaviour::search_visit_agent:
  case Behaviour::search_visit_agent_judge:
    reply = respond_search(request);
    break;
  default:
    throw RequestError("bad_request", environment.name + " is a single-turn environment");
  }
  for (const auto &message : reply["messages"]) {
    if (message.value("role", "") == "tool") {
      m_sent_tool_message = true;
    }
  }
  return reply;
}

void Session::close() {
  if (environment.behaviour == Behaviour::podman_terminal) {
    podman_close();
  }
}

} // namespace pb::environments_runtime
