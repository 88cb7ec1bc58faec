// SPDX-License-Identifier: MIT
// terminal-tool-label's rules: one terminal call a turn, its own budget and final warning
// template.
#include "session_internal.hpp"

#include <primebeaker/environments/render.hpp>

#include <exception>

namespace pb::environments_runtime {
namespace {

using environments::ToolCall;
using J = OrderedJson;

bool single_terminal_call(const std::vector<ToolCall> &calls) {
  return calls.size() == 1 && calls[0].name == "terminal" &&
         field(calls[0].arguments, "command").is_string() &&
         !blank(calls[0].arguments["command"].get<std::string>());
}

} // namespace

OrderedJson Session::observe_terminal(const OrderedJson &message) {
  const auto structured = environments::parse_structured_calls(message);
  std::string route;
  if (structured && single_terminal_call(*structured)) {
    route = "terminal";
  } else if (single_terminal_call(
                 environments::parse_qwen_tool_calls(environments::message_text(message)))) {
    route = "terminal";
  } else {
    const std::string content = environments::message_text(message);
    const bool content_empty = environments::strip_qwen_special_blocks(content).empty();
    route = environments::parse_final_verdict(
                content_empty ? environments::message_reasoning(message) : content)
                ? "final"
                : "invalid";
  }
  const bool stop =
      route != "terminal" || m_warning_sent ||
      state["jtc_tool_call_count"].get<long long>() >= args.value("max_terminal_calls", 4LL);
  m_route = route;
  state["jtc_route"] = route;
  return {{"stop", stop}, {"route", route}, {"state", public_state()}};
}

OrderedJson Session::respond_terminal() {
  J reply = {{"messages", J::array()}, {"amend_last_tool", nullptr}, {"final", false}};
  const auto structured = environments::parse_structured_calls(m_message);
  if (!structured || !single_terminal_call(*structured)) {
    reply["state"] = public_state(); // a text-only call routes terminal but runs nothing
    return reply;
  }
  const ToolCall &call = structured->front();
  J output;
  try {
    output = call_service("terminal",
                          string_field(args, "terminal_server_url"),
                          {{"contents", output_text(m_output)},
                           {"command", call.arguments["command"]},
                           {"truncation", field(args, "terminal_truncation")}},
                          args.value("timeout", 20.0),
                          args.value("max_retries", 3LL));
  } catch (const ToolError &error) {
    output = {{"stdout", ""},
              {"stderr", std::string("Terminal execution failed: ") + error.what()},
              {"success", false},
              {"returncode", nullptr}};
  }
  bump("jtc_tool_call_count");
  state["jtc_tool_history"].push_back(
      {{"tool", "terminal"}, {"arguments", call.arguments}, {"output", output}});
  std::string content = environments::render_raw_result(output);
  if (state["jtc_tool_call_count"].get<long long>() == args.value("max_terminal_calls", 4LL)) {
    std::string warning;
    try {
      const J values = {{"tool_content", content},
                        {"tool_name", "terminal"},
                        {"stdout", ""},
                        {"stderr", ""},
                        {"code", ""},
                        {"success", true}};
      const J rendered = environments::render_template(
          environments::load_template(string_field(args, "final_warning_template_path")), values);
      for (const auto &message : rendered) {
        if (message.value("role", "") == "user") {
          warning = message.value("content", "");
          break;
        }
      }
    } catch (const std::exception &) {
      warning.clear();
    }
    if (blank(warning)) {
      warning = "That was your last allowed terminal call. Reply now with only a JSON object "
                "{\"feedback\": \"...\", \"label\": \"...\"} and nothing else.";
    }
    content = append_block(content, warning);
    m_warning_sent = true;
    state["jtc_final_warning_sent"] = true;
  }
  reply["messages"].push_back(environments::tool_message(
      call.id.empty() ? "terminal" : call.id, "terminal", content, args.value("tool_role", true)));
  reply["state"] = public_state();
  return reply;
}

} // namespace pb::environments_runtime
