// SPDX-License-Identifier: MIT
// code-tool-label's rules: a code request runs on the Python service, an XML verdict ends.
#include "session_internal.hpp"

#include <primebeaker/environments/render.hpp>

namespace pb::environments_runtime {
namespace {

using J = OrderedJson;

} // namespace

OrderedJson Session::observe_code(long long turn, const OrderedJson &message) {
  const std::string text = environments::message_text(message);
  const std::string route = environments::is_code_request(text)     ? "code"
                            : environments::parse_xml_verdict(text) ? "final"
                                                                    : "invalid";
  if (state.value("jtc_first_route", J()).is_null()) {
    state["jtc_first_route"] = route;
  }
  m_route = route;
  state["jtc_route"] = route;
  (void)turn;
  return {{"stop", route != "code"}, {"route", route}, {"state", public_state()}};
}

OrderedJson Session::respond_code() {
  J reply = {{"messages", J::array()}, {"amend_last_tool", nullptr}, {"final", false}};
  const std::string code = environments::extract_code(environments::message_text(m_message));
  J output;
  try {
    output = call_service("python",
                          string_field(args, "code_server_url"),
                          {{"code", code},
                           {"context_payload", m_output},
                           {"max_runtime", field(args, "max_runtime")},
                           {"model", "python"}},
                          args.value("timeout", 20.0),
                          args.value("max_retries", 3LL));
  } catch (const ToolError &error) {
    output = {{"stdout", ""},
              {"stderr", std::string("Code execution failed: ") + error.what()},
              {"success", false}};
  }
  bump("jtc_tool_call_count");
  state["jtc_tool_history"].push_back(
      {{"tool", "python"}, {"arguments", {{"code", code}}}, {"output", output}});
  const J &truncation = field(args, "code_output_truncation");
  const long long limit = truncation.is_number_integer() ? truncation.get<long long>() : -1;
  reply["messages"].push_back(environments::tool_message("python",
                                                         "python",
                                                         environments::render_fenced(output, limit),
                                                         args.value("tool_role", true)));
  reply["state"] = public_state();
  return reply;
}

} // namespace pb::environments_runtime
