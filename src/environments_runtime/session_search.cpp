// SPDX-License-Identifier: MIT
// The search agents' rules (search-agent, search-visit-agent and their judge variants): search,
// visit and webterminal calls, the tool-call budget, token and turn budget warnings.
#include "session_internal.hpp"

#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/render.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace pb::environments_runtime {
namespace {

using environments::Behaviour;
using J = OrderedJson;

struct RawCall {
  std::string id;
  std::string name;
  std::optional<J> arguments; // nullopt: not a JSON object
  std::string arguments_text;
};

std::vector<RawCall> raw_tool_calls(const J &message) {
  std::vector<RawCall> calls;
  const J &list = field(message, "tool_calls");
  if (!list.is_array()) {
    return calls;
  }
  for (const auto &item : list) {
    const J &fn = field(item, "function").is_object() ? field(item, "function") : item;
    RawCall call;
    call.id = string_field(item, "id");
    call.name = string_field(fn, "name");
    const J &arguments = field(fn, "arguments");
    if (arguments.is_object()) {
      call.arguments = arguments;
      call.arguments_text = arguments.dump();
    } else if (arguments.is_string()) {
      call.arguments_text = arguments.get<std::string>();
      auto parsed = environments::py::try_loads(call.arguments_text);
      if (parsed && parsed->is_object()) {
        call.arguments = *parsed;
      }
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

} // namespace

OrderedJson Session::observe_search(const OrderedJson &message) {
  const J &calls = field(message, "tool_calls");
  const bool has_calls = calls.is_array() && !calls.empty();
  const bool stop = !has_calls || state["jtc_tool_call_count"].get<long long>() >=
                                      args.value("max_tool_calls", 20LL);
  m_route = has_calls ? "tool" : "final";
  state["jtc_route"] = m_route;
  return {{"stop", stop}, {"route", m_route}, {"state", public_state()}};
}

std::string Session::run_search_call(const std::string &name, const OrderedJson &arguments) {
  auto required_string = [&](const char *key) {
    const J &value = field(arguments, key);
    if (value.is_null()) {
      throw ToolError("TypeError",
                      fmt::format("{}() missing 1 required positional argument: '{}'", name, key));
    }
    return value.is_string() ? value.get<std::string>() : environments::py::str(value);
  };
  const J &model_path = field(args, "local_search_model_path");
  const bool has_model_path = model_path.is_string() && !blank(model_path.get<std::string>());
  // search and visit both go to the search server's route, with the model path when one is set.
  auto search_route = [&](const char *service, J body) {
    if (has_model_path) {
      body["model_path"] = model_path;
    }
    return call_service(service,
                        string_field(args, "search_server_url"),
                        body,
                        args.value("timeout", 65.0),
                        args.value("max_retries", 3LL));
  };
  if (name == "search") {
    const std::string query = required_string("query");
    J body = {{"mode", "query"},
              {"query", query},
              {"num_results",
               field(arguments, "num_results").is_null() ? J(10) : arguments["num_results"]},
              {"parameters", J::object()}};
    return environments::render_search_results(search_route("search", std::move(body)));
  }
  if (name == "visit") {
    J body = {{"mode", "url"}, {"url", environments::py::strip(required_string("url"))}};
    return environments::render_visit_result(search_route("fetch", std::move(body)));
  }
  // webterminal: fetches go to the gateway search route (mode=url)
  const std::string command = required_string("command");
  J body = {{"contents", ""},
            {"command", command},
            {"truncation", field(args, "terminal_truncation")},
            {"web_pages", field(row, "web_pages")},
            {"capture_web_assets", false},
            {"fetch_server_url", nullptr},
            {"local_search_server_url", field(args, "search_server_url")},
            {"local_search_model_path", has_model_path ? model_path : J()}};
  const J output = call_service("webterminal",
                                string_field(args, "terminal_server_url"),
                                body,
                                args.value("timeout", 65.0),
                                args.value("max_retries", 3LL));
  if (environments::stderr_is_model_error("webterminal", {{"command", command}}, output)) {
    bump("jtc_tool_command_error_count");
  }
  return environments::render_terminal_payload(output);
}

OrderedJson Session::respond_search(const OrderedJson &request) {
  J reply = {{"messages", J::array()}, {"amend_last_tool", nullptr}, {"final", false}};
  const long long budget = args.value("max_tool_calls", 20LL);
  for (const auto &call : raw_tool_calls(m_message)) {
    check_cancelled();
    if (state["jtc_tool_call_count"].get<long long>() >= budget) {
      break; // past the budget the remaining calls are dropped
    }
    std::string content;
    if (!call.arguments) {
      // Malformed arguments: an error message, and no budget used.
      content = fmt::format(
          "Error: the arguments of {} are not a JSON object: {}", call.name, call.arguments_text);
    } else {
      bump("jtc_tool_call_count");
      const bool known =
          std::find(m_advertised.begin(), m_advertised.end(), call.name) != m_advertised.end();
      try {
        if (!known) {
          throw ToolError("ValueError",
                          fmt::format("unknown tool '{}'; the tools are: {}",
                                      call.name,
                                      text::join(m_advertised, ", ")));
        }
        content = run_search_call(call.name, *call.arguments);
      } catch (const ToolError &error) {
        content = "Error: " + error.detail();
      }
      state["jtc_tool_history"].push_back(
          {{"tool", call.name}, {"arguments", *call.arguments}, {"output", content}});
    }
    reply["messages"].push_back(environments::tool_message(call.id, call.name, content, true));
  }
  // Budget warnings, then the final warning, after the last tool message of this response.
  std::vector<std::string> warnings;
  const J fraction_tokens = field(args, "token_budget_warning_fraction");
  const J fraction_turns = field(args, "turn_budget_warning_fraction");
  const J limit = field(request, "max_total_completion_tokens");
  const J used = field(request, "completion_tokens");
  if (!m_token_warned && fraction_tokens.is_number() && limit.is_number() &&
      limit.get<double>() > 0 && used.is_number()) {
    const double remaining = limit.get<double>() - used.get<double>();
    if (remaining <= std::floor(limit.get<double>() * fraction_tokens.get<double>())) {
      m_token_warned = true;
      warnings.push_back("You are in the final 10% of your token budget. Stop researching soon "
                         "and write your final answer.");
    }
  }
  const J max_turns = field(request, "max_turns");
  const J turns_used = field(request, "trajectory_len");
  if (!m_turn_warned && fraction_turns.is_number() && max_turns.is_number_integer() &&
      max_turns.get<long long>() > 0 && turns_used.is_number_integer()) {
    const long long total = max_turns.get<long long>();
    const long long remaining = total - turns_used.get<long long>();
    const long long threshold =
        std::max<long long>(1,
                            static_cast<long long>(std::floor(static_cast<double>(total) *
                                                              fraction_turns.get<double>())));
    if (remaining <= threshold) {
      m_turn_warned = true;
      warnings.push_back("You are in the final 10% of your turn budget. Stop researching soon "
                         "and write your final answer.");
    }
  }
  if (!m_warning_sent && state["jtc_tool_call_count"].get<long long>() >= budget) {
    m_warning_sent = true;
    state["jtc_final_warning_sent"] = true;
    warnings.push_back(environment.behaviour == Behaviour::search_visit_agent_judge
                           ? "You have used all of your tool calls. Do not call any more tools; "
                             "write your final answer now. No JSON format is required."
                           : "You have used all of your tool calls. Do not call any more tools; "
                             "write your final answer now, ending with a fenced JSON block "
                             "```json\n{\"answer\": \"...\"}\n```");
  }
  if (!warnings.empty() && !reply["messages"].empty()) {
    J &last = reply["messages"].back();
    std::string content = last["content"].get<std::string>();
    for (const auto &warning : warnings) {
      content = append_block(content, warning);
    }
    last["content"] = content;
  }
  reply["state"] = public_state();
  return reply;
}

} // namespace pb::environments_runtime
