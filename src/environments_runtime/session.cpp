// SPDX-License-Identifier: MIT
// The multi-turn rules of every family (docs/environments-runtime.md "The rollout engine").
#include "session.hpp"

#include <primebeaker/core/random.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/render.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments_runtime/serve.hpp>
#include <primebeaker/tool_services/transport.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>

namespace pb::environments_runtime {
namespace {

using environments::Behaviour;
using environments::ToolCall;
using J = OrderedJson;

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

// `success` true or `exit_code` 0: how the Podman grading judges a command.
bool command_succeeded(const J &output) {
  return is_true(field(output, "success")) || field(output, "exit_code") == J(0);
}

bool blank(const std::string &text) {
  return environments::py::strip(text).empty();
}

// shlex.quote, byte for byte: the command strings the container receives are pinned.
std::string shlex_quote(const std::string &word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '@' || c == '%' || c == '+' || c == '=' ||
           c == ':' || c == ',' || c == '.' || c == '/' || c == '-' || c >= 0x80;
  });
  if (safe) {
    return word;
  }
  std::string quoted = "'";
  for (const char c : word) {
    quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  }
  return quoted + "'";
}

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

std::string output_text(const J &output) {
  return output.is_string() ? output.get<std::string>() : environments::py::dumps(output);
}

std::string append_block(const std::string &content, const std::string &block) {
  return content + "\n\n" + block;
}

const char *const k_default_final_warning =
    "You have used your last tool call; no further tool calls will be run. Reply now with only "
    "a JSON object {\"feedback\": \"<your reasoning>\", \"label\": \"<your label>\"} and nothing "
    "else.";

} // namespace

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

// ------------------------------------------------------------------ the tool-label family

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
// its own per-call timeout, as the reference gathers them; a batch with a submit runs in order
// (the reference's rule), and so does one with a bash call (one container takes one command at
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

// ------------------------------------------------------------------------------- Podman

namespace {

// The image a row names (docs/environments-runtime.md "Podman setup"): the row, then its
// info/source/misc/raw objects and their own misc/raw; never a saved trace.
std::pair<std::string, std::string> podman_row_fields(const J &row) {
  std::vector<const J *> places = {&row};
  for (const char *key : {"info", "source", "misc", "raw"}) {
    const J &sub = field(row, key);
    if (sub.is_object()) {
      places.push_back(&sub);
      for (const char *inner : {"misc", "raw"}) {
        if (field(sub, inner).is_object()) {
          places.push_back(&field(sub, inner));
        }
      }
    }
  }
  auto first = [&](std::initializer_list<const char *> keys) {
    for (const J *place : places) {
      for (const char *key : keys) {
        const J &value = field(*place, key);
        if (value.is_string() && !blank(value.get<std::string>())) {
          return value.get<std::string>();
        }
      }
    }
    return std::string();
  };
  return {environments::py::strip(first({"original_image",
                                         "image",
                                         "container_image",
                                         "published_container_image",
                                         "resolved_container_image"})),
          first({"test_final_state", "unit_tests"})};
}

// The gateway base URL, trimmed and without a trailing slash.
std::string gateway_base(const J &args) {
  std::string gateway = environments::py::strip(string_field(args, "podman_gateway_url"));
  while (!gateway.empty() && gateway.back() == '/') {
    gateway.pop_back();
  }
  return gateway;
}

} // namespace

void Session::podman_setup() {
  const auto [image, test_source] = podman_row_fields(row);
  state["podman_terminal_complete"] = false;
  state["podman_tests_ran"] = false;
  state["podman_test_command"] = field(args, "test_command");
  state["podman_test_file_path"] = field(args, "test_file_path");
  state["podman_test_source"] = test_source.empty() ? J() : J(test_source);
  state["podman_reward_file_path"] = field(args, "reward_file_path");
  state["podman_reward_file_present"] = false;
  state["podman_reward_file_error"] = nullptr;
  state["podman_reward_file_score"] = 0.0;
  for (const char *key : {"podman_image",
                          "podman_container_id",
                          "podman_completion_command",
                          "podman_test_output",
                          "podman_test_install_output",
                          "podman_reward_file_clear_output",
                          "podman_cleanup",
                          "podman_cleanup_error"}) {
    state[key] = nullptr;
  }
  state["podman_failure"] = false;
  try {
    if (image.empty()) {
      throw ToolError("ValueError",
                      "the dataset row needs original_image, image or container_image");
    }
    std::string qualified;
    try {
      qualified = tool_services::qualify_image(image);
    } catch (const tool_services::ServiceError &error) {
      throw ToolError(error.exception_type(), error.what());
    }
    state["podman_image"] = qualified;
    const std::string gateway = gateway_base(args);
    J body = {{"image", qualified},
              {"client_id", string_field(args, "client_id_prefix") + "-" + random::hex_id(16)},
              {"service", field(args, "service")}};
    check_cancelled();
    ServiceCall start{"podman_start",
                      gateway,
                      body,
                      args.value("handshake_timeout", 600.0),
                      std::max(args.value("max_retries", 3LL), 1LL),
                      id,
                      {{"workdir", field(args, "podman_workdir")},
                       {"request_timeout", args.value("request_timeout", 150.0)}}};
    const J started = m_tools.call(start, cancelled);
    const std::string affinity = string_field(started, "affinity_id");
    const std::string container = string_field(started, "container_id");
    if (!affinity.empty()) {
      m_affinity_id = affinity; // close it even if the pair is inconsistent
    }
    if (affinity.empty() || container.empty() || affinity != container) {
      throw ToolError("RuntimeError",
                      "the Podman handshake must return equal non-empty affinity_id and "
                      "container_id");
    }
    state["podman_container_id"] = container;
  } catch (const ToolError &error) {
    podman_close();
    podman_failure("setup", error.detail());
  }
}

OrderedJson
Session::podman_execute(const std::string &command, double timeout, const std::string &stdin_text) {
  if (m_affinity_id.empty()) {
    throw ToolError("RuntimeError", "no live Podman task session is bound");
  }
  const std::string gateway = gateway_base(args);
  return call_service("podman_execute",
                      gateway,
                      {{"affinity_id", m_affinity_id},
                       {"command", command},
                       {"stdin", stdin_text},
                       {"timeout", timeout},
                       {"workdir", field(args, "podman_workdir")},
                       {"service", field(args, "service")}},
                      args.value("request_timeout", 150.0),
                      args.value("max_retries", 3LL));
}

void Session::podman_failure(const std::string &phase, const std::string &detail) {
  const J fields = environments::podman_failure_fields(phase, detail);
  for (auto it = fields.begin(); it != fields.end(); ++it) {
    state[it.key()] = it.value();
  }
}

void Session::podman_close() {
  if (m_affinity_id.empty()) {
    return;
  }
  const std::string gateway = gateway_base(args);
  const std::string affinity = m_affinity_id;
  m_affinity_id.clear();
  try {
    ServiceCall request{"podman_close",
                        gateway,
                        {{"affinity_id", affinity}, {"service", field(args, "service")}},
                        args.value("request_timeout", 150.0),
                        std::max(args.value("max_retries", 3LL), 1LL),
                        id};
    static const std::atomic<bool> never{false}; // closing must not be cancelled
    state["podman_cleanup"] = m_tools.call(request, never);
  } catch (const ToolError &error) {
    state["podman_cleanup_error"] = error.detail();
  } catch (const RequestError &error) {
    state["podman_cleanup_error"] = error.what();
  }
}

void Session::podman_after_response(size_t first_new_entry, bool &final) {
  const std::string marker = environments::py::strip(string_field(args, "completion_marker"));
  const J &history = state["jtc_tool_history"];
  for (size_t i = first_new_entry; i < history.size(); ++i) {
    const J entry = history[i];
    if (entry["tool"] != "bash") {
      continue;
    }
    const J &output = entry["output"];
    const std::string stderr_text = string_field(output, "stderr");
    static const std::string prefix = "bash execution request failed:";
    if (environments::py::lower(stderr_text.substr(0, prefix.size())) == prefix) {
      podman_failure("execute", environments::py::strip(stderr_text.substr(prefix.size())));
      final = true;
      return;
    }
    const std::string command = string_field(entry["arguments"], "command");
    if (environments::is_completion_command(command, marker) &&
        field(output, "success") == J(true)) {
      const auto lines = text::split(string_field(output, "stdout"), '\n');
      if (std::find(lines.begin(), lines.end(), marker) != lines.end()) {
        state["podman_terminal_complete"] = true;
        state["podman_completion_command"] = command;
        podman_grade();
        final = true;
        return;
      }
    }
  }
}

void Session::podman_grade() {
  if (is_true(state["podman_tests_ran"])) {
    return;
  }
  state["podman_tests_ran"] = true;
  if (m_affinity_id.empty()) {
    podman_failure("test", "no live Podman task session is available for tests");
    return;
  }
  const double timeout = args.value("test_timeout", 600.0);
  const std::string path = shlex_quote(string_field(args, "reward_file_path"));
  try {
    const J clear = podman_execute("rm -f -- " + path, timeout, "");
    state["podman_reward_file_clear_output"] = clear;
    const J &source = state["podman_test_source"];
    if (source.is_string()) {
      const std::string install_command =
          "python3 -c " +
          shlex_quote("import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
                      "p.parent.mkdir(parents=True, exist_ok=True); "
                      "p.write_text(sys.stdin.read())") +
          " " + shlex_quote(string_field(args, "test_file_path"));
      const J install = podman_execute(install_command, timeout, source.get<std::string>());
      state["podman_test_install_output"] = install;
      if (!command_succeeded(install)) {
        throw ToolError("RuntimeError", "Podman private-test install failed");
      }
    }
    state["podman_test_output"] = podman_execute(string_field(args, "test_command"), timeout, "");
    const J probe =
        podman_execute(fmt::format("if [ -f {0} ]; then printf '%s\\n' {1}; cat -- {0}; fi; true",
                                   path,
                                   environments::reward_file_sentinel),
                       timeout,
                       "");
    environments::RewardFile reward =
        environments::parse_reward_probe(string_field(probe, "stdout"));
    if (!command_succeeded(clear)) {
      reward = {0.0, false, "could not clear reward file before tests"};
    }
    state["podman_reward_file_present"] = reward.present;
    state["podman_reward_file_error"] = reward.error.empty() ? J() : J(reward.error);
    state["podman_reward_file_score"] = reward.value;
  } catch (const ToolError &error) {
    podman_failure("test", error.detail());
  }
}

// ---------------------------------------------------------------------- terminal-tool-label

namespace {

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

// -------------------------------------------------------------------------- code-tool-label

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

// ----------------------------------------------------------------------------- search agents

namespace {

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
