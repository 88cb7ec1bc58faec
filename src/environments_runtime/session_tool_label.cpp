// SPDX-License-Identifier: MIT
// The tool-label family's rules (tool-label, articulated-harness, podman-terminal): routing,
// the tool-call budget and final warning, concurrent tool calls, the in-memory submit.
#include "session_internal.hpp"

#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/render.hpp>
#include <primebeaker/tool_services/transport.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <thread>

namespace pb::environments_runtime {
namespace {

using environments::Behaviour;
using environments::ToolCall;
using J = OrderedJson;

const char *const k_default_final_warning =
    "You have used your last tool call; no further tool calls will be run. Reply now with only "
    "a JSON object {\"feedback\": \"<your reasoning>\", \"label\": \"<your label>\"} and nothing "
    "else.";

} // namespace

OrderedJson Session::observe_tool_label(const OrderedJson &message) {
  const auto calls = environments::extract_tool_calls(message);
  std::string route;
  if (!calls.empty()) {
    route = "tool";
    for (const auto &call : calls) {
      const bool advertised =
          std::find(m_advertised.begin(), m_advertised.end(), call.name) != m_advertised.end();
      if (advertised && !environments::tool_arguments_usable(call.name, call.arguments)) {
        route = "invalid";
      }
    }
  } else {
    const std::string content = environments::message_text(message);
    const bool content_empty = environments::strip_qwen_special_blocks(content).empty();
    const std::string text = content_empty ? environments::message_reasoning(message) : content;
    route = environments::parse_final_verdict(text) ? "final" : "invalid";
  }
  bool stop = route != "tool";
  m_overrun = false;
  if (route == "tool") {
    const long long used = state["jtc_tool_call_count"].get<long long>();
    const long long budget = args.value("max_tool_calls", 0LL);
    if (m_warning_sent) {
      route = "invalid"; // a call after the final warning ends the episode
      stop = true;
    } else if (used + static_cast<long long>(calls.size()) > budget) {
      route = "invalid"; // the batch would overrun: warn instead, one last chance to answer
      m_overrun = true;
    }
  }
  m_route = route;
  state["jtc_route"] = route;
  return {{"stop", stop}, {"route", route}, {"state", public_state()}};
}

std::string Session::final_warning() const {
  const J &given = field(args, "final_warning");
  return given.is_string() && !blank(given.get<std::string>()) ? given.get<std::string>()
                                                               : k_default_final_warning;
}

OrderedJson Session::respond_tool_label() {
  J reply = {{"messages", J::array()}, {"amend_last_tool", nullptr}, {"final", false}};
  const bool tool_role = args.value("tool_role", true);
  if (m_overrun) {
    // Nothing runs; the warning goes after the last tool result, or alone when there is none.
    m_warning_sent = true;
    state["jtc_final_warning_sent"] = true;
    if (m_sent_tool_message && tool_role) {
      reply["amend_last_tool"] = final_warning();
    } else {
      reply["messages"].push_back({{"role", "user"}, {"content", final_warning()}});
    }
    reply["state"] = public_state();
    return reply;
  }
  const auto calls = environments::extract_tool_calls(m_message);
  const size_t first_new_entry = state["jtc_tool_history"].size();
  std::vector<char> caused(calls.size(), 0);
  std::vector<J> outputs = run_tool_label_batch(calls, caused);
  for (size_t i = 0; i < calls.size(); ++i) {
    const ToolCall &call = calls[i];
    bump("jtc_tool_call_count");
    const long long number = state["jtc_tool_call_count"].get<long long>();
    state["jtc_tool_calls"].push_back(environments::to_json(call));
    const bool model_caused = caused[i] != 0;
    J output;
    const bool advertised =
        std::find(m_advertised.begin(), m_advertised.end(), call.name) != m_advertised.end();
    if (!advertised) {
      bump("jtc_unknown_tool_call_count");
      output = environments::unknown_tool_output(call.name, m_advertised);
    } else {
      state["jtc_tool_execution_calls"].push_back(environments::to_json(call));
      output = std::move(outputs[i]);
      if (call.name == "terminal") {
        count_terminal_command(call, output);
      }
    }
    if (!blank(string_field(output, "stderr"))) {
      bump("jtc_tool_nonempty_stderr_count");
      if (!model_caused) {
        bump("jtc_tool_infrastructure_stderr_count");
      } else if (environments::stderr_is_model_error(call.name, call.arguments, output)) {
        bump("jtc_tool_command_error_count");
      }
    }
    const std::string call_id = call.id.empty() ? fmt::format("{}_{}", call.name, number) : call.id;
    state["jtc_tool_results"].push_back(output);
    state["jtc_tool_history"].push_back({{"tool", call.name},
                                         {"arguments", call.arguments},
                                         {"output", output},
                                         {"tool_call_id", call_id}});
    reply["messages"].push_back(environments::tool_message(
        call_id, call.name, environments::render_tool_result(call.name, output), tool_role));
  }
  if (!m_warning_sent && !reply["messages"].empty() &&
      state["jtc_tool_call_count"].get<long long>() == args.value("max_tool_calls", 0LL)) {
    J &last = reply["messages"].back();
    const std::string warning = final_warning();
    const std::string content = last["content"].get<std::string>();
    if (content.find(warning) == std::string::npos) {
      last["content"] = append_block(content, warning);
    }
    m_warning_sent = true;
    state["jtc_final_warning_sent"] = true;
  }
  bool final = false;
  if (environment.behaviour == Behaviour::articulated_harness &&
      is_true(state["jtc_submit_complete"])) {
    final = true; // the response that completed the last rubric ends the episode
  }
  if (environment.behaviour == Behaviour::podman_terminal) {
    podman_after_response(first_new_entry, final);
  }
  reply["final"] = final;
  reply["state"] = public_state();
  return reply;
}

// Known tools of a batch run concurrently, each on its own thread with its own cancel flag and
// its own per-call timeout, as Python PrimeBeaker gathers them; a batch with a submit runs in order
// (Python PrimeBeaker's rule), and so does one with a bash call (one container takes one command at
// a time, in the order the model gave them). Results are in the model's order either way.
std::vector<OrderedJson> Session::run_tool_label_batch(const std::vector<ToolCall> &calls,
                                                       std::vector<char> &model_caused) {
  std::vector<J> outputs(calls.size());
  std::vector<size_t> known;
  bool in_order = false;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (std::find(m_advertised.begin(), m_advertised.end(), calls[i].name) != m_advertised.end()) {
      known.push_back(i);
      in_order = in_order || calls[i].name == "submit" || calls[i].name == "bash";
    }
  }
  if (in_order || known.size() <= 1) {
    for (const size_t i : known) {
      check_cancelled();
      bool caused = false;
      outputs[i] = run_tool_label_call(calls[i], caused);
      model_caused[i] = caused;
    }
    check_cancelled();
    return outputs;
  }
  std::vector<std::atomic<bool>> flags(known.size());
  {
    std::lock_guard lock(m_flags_mutex);
    for (auto &flag : flags) {
      flag = cancelled.load();
      m_call_flags.push_back(&flag);
    }
  }
  std::vector<std::exception_ptr> failures(known.size());
  auto run = [&](size_t k) {
    const size_t i = known[k];
    try {
      bool caused = false;
      outputs[i] = run_tool_label_call(calls[i], caused, &flags[k]);
      model_caused[i] = caused;
    } catch (...) {
      failures[k] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(known.size() - 1);
  for (size_t k = 1; k < known.size(); ++k) {
    threads.emplace_back(run, k);
  }
  run(0);
  for (auto &thread : threads) {
    thread.join();
  }
  {
    std::lock_guard lock(m_flags_mutex);
    m_call_flags.clear();
  }
  check_cancelled();
  for (const auto &failure : failures) {
    if (failure) {
      std::rethrow_exception(failure);
    }
  }
  return outputs;
}

OrderedJson Session::run_tool_label_call(const ToolCall &call,
                                         bool &model_caused,
                                         const std::atomic<bool> *flag) {
  try {
    J output;
    if (call.name == "submit") {
      output = submit(call.arguments);
    } else if (call.name == "bash") {
      output = podman_execute(
          string_field(call.arguments, "command"), args.value("command_timeout", 60.0), "");
      (void)flag; // bash calls run in order, under the session's own flag
    } else if (call.name == "terminal") {
      const bool web = args.value("browser_aware_terminal", false);
      J body = {{"contents", m_output.is_null() ? J("") : J(output_text(m_output))},
                {"command", field(call.arguments, "command")},
                {"truncation", field(args, "terminal_truncation")}};
      if (web) {
        body["web_pages"] = field(row, "web_pages").is_null() ? field(row, "web_pages_json")
                                                              : field(row, "web_pages");
        body["capture_web_assets"] = args.value("capture_web_assets", false);
        body["fetch_server_url"] = field(args, "fetch_server_url");
        body["local_search_server_url"] = field(args, "local_search_server_url");
        body["local_search_model_path"] = field(args, "local_search_model_path");
      }
      output = call_service(web ? "webterminal" : "terminal",
                            string_field(args, "terminal_server_url"),
                            body,
                            args.value("timeout", 20.0),
                            args.value("max_retries", 3LL),
                            flag);
    } else {
      throw ToolError("RuntimeError", "no execution client for tool '" + call.name + "'");
    }
    model_caused = true; // a response is the model's doing: its stderr counts against it
    return output;
  } catch (const ToolError &error) {
    model_caused = environments::exception_is_model_caused(error.type(), error.what());
    return environments::execution_error_output(call.name, error.type(), error.what());
  }
}

void Session::count_terminal_command(const ToolCall &call, const OrderedJson &output) {
  const std::string command = string_field(call.arguments, "command");
  const auto stages = environments::pipeline_stage_names(command);
  if (!stages.empty() && stages.front() == "browse") {
    bump("jtc_browse_call_count");
    const auto words = environments::shell_split(command);
    const auto plain = environments::py::split(command);
    std::string target;
    if (words && words->size() > 1) {
      target = (*words)[1];
    } else if (plain.size() > 1) {
      target = plain[1];
    }
    const auto urls = environments::extract_urls(output_text(m_output));
    if (std::find(urls.begin(), urls.end(), target) == urls.end()) {
      bump("jtc_browse_url_not_in_output_count");
    }
    if (is_true(field(output, "success"))) {
      bump("jtc_successful_browse_count");
    }
  }
  if (stages.size() == 1) {
    bump("jtc_standalone_command_count");
    const J &repeat = field(args, "standalone_command_repeat_commands");
    if (repeat.is_array() &&
        std::find(repeat.begin(), repeat.end(), J(stages.front())) != repeat.end()) {
      bump("jtc_targeted_standalone_command_count");
    }
  }
}

// In-memory submit (docs/tool-services.md "Submit"); its refusals are the model's ValueErrors.
OrderedJson Session::submit(const OrderedJson &arguments) {
  J output;
  try {
    output = m_submissions.submit(
        field(arguments, "rubric_id"), field(arguments, "feedback"), field(arguments, "label"));
  } catch (const tool_services::ServiceError &error) {
    throw ToolError(error.exception_type(), error.what());
  }
  state["jtc_submit_submissions"] = m_submissions.submissions();
  if (environment.behaviour == Behaviour::articulated_harness) {
    // podman never ends on submissions
    state["jtc_submit_complete"] = is_true(field(m_submissions.status(), "all_completed"));
  }
  return output;
}

} // namespace pb::environments_runtime
