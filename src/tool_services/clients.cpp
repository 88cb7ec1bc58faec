// SPDX-License-Identifier: MIT
// The tool-service clients (docs/tool-services.md "Clients").
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/tool_services/clients.hpp>

#include <fmt/format.h>

#include <cmath>

namespace pb::tool_services {
namespace py = environments::py;

namespace {

[[noreturn]] void refuse(const std::string &exception_type, const std::string &message) {
  throw ServiceError(FailureKind::invalid_argument, exception_type, message);
}

[[noreturn]] void malformed(const std::string &message) {
  throw ServiceError(FailureKind::bad_response, "ValueError", message);
}

std::string join_url(const std::string &base, std::string_view route) {
  std::string url = base;
  while (!url.empty() && url.back() == '/') {
    url.pop_back();
  }
  return url + std::string(route);
}

Endpoint at(const Endpoint &endpoint, std::string url) {
  Endpoint copy = endpoint;
  copy.url = std::move(url);
  return copy;
}

bool non_empty_string(const OrderedJson &value) {
  return value.is_string() && !value.get<std::string>().empty();
}

// Seconds as Python PrimeBeaker sends them: an integer when whole.
OrderedJson seconds_value(double seconds) {
  if (std::floor(seconds) == seconds && std::fabs(seconds) < 1e15) {
    return static_cast<long long>(seconds);
  }
  return seconds;
}

} // namespace

OrderedJson
terminal_execute(const Endpoint &endpoint, const TerminalCall &call, const CallControl &control) {
  return terminal_request(endpoint, call, "Terminal execution", control);
}

OrderedJson terminal_request(const Endpoint &endpoint,
                             const TerminalCall &call,
                             const std::string &request_name,
                             const CallControl &control) {
  OrderedJson body;
  body["contents"] = call.contents.value_or("");
  body["command"] = call.command;
  body["truncation"] = call.truncation ? OrderedJson(*call.truncation) : OrderedJson();
  return post_json(endpoint, request_name, body, control);
}

OrderedJson
python_execute(const Endpoint &endpoint, const PythonCall &call, const CallControl &control) {
  const OrderedJson body = {{"code", call.code},
                            {"context_payload", call.context_payload},
                            {"max_runtime", call.max_runtime},
                            {"model", "python"}};
  return post_json(endpoint, "Code execution", body, control);
}

// ---- Podman ---------------------------------------------------------------------------------

std::string qualify_image(std::string_view image) {
  const std::string name = py::strip(image);
  if (name.empty()) {
    refuse("ValueError", "the Podman image name is empty");
  }
  const size_t slash = name.find('/');
  if (slash == std::string::npos) {
    return "docker.io/library/" + name;
  }
  const std::string first = name.substr(0, slash);
  if (first == "localhost" || first.find('.') != std::string::npos ||
      first.find(':') != std::string::npos) {
    return name;
  }
  return "docker.io/" + name;
}

PodmanSession::PodmanSession(PodmanConfig config) : m_config(std::move(config)) {}

std::string PodmanSession::start(const std::string &qualified_image,
                                 const std::optional<std::string> &client_id,
                                 const CallControl &control) {
  std::lock_guard lock(m_mutex);
  if (!m_affinity_id.empty()) {
    refuse("RuntimeError", "the Podman session is already started");
  }
  OrderedJson body = {{"image", qualified_image}};
  if (client_id) {
    body["client_id"] = *client_id;
  }
  body["service"] = m_config.service;
  CallControl handshake = control;
  if (!handshake.timeout) {
    handshake.timeout = m_config.handshake_timeout;
  }
  const OrderedJson response =
      post_json(at(m_config.gateway, join_url(m_config.gateway.url, "/affinity/handshake")),
                "Podman execution",
                body,
                handshake);
  const OrderedJson affinity = response.value("affinity_id", OrderedJson());
  const OrderedJson container = response.value("container_id", OrderedJson());
  if (!non_empty_string(affinity) || !non_empty_string(container) || affinity != container) {
    throw ServiceError(FailureKind::bad_response,
                       "RuntimeError",
                       "Podman handshake did not return equal non-empty affinity_id and "
                       "container_id");
  }
  m_affinity_id = affinity.get<std::string>();
  return m_affinity_id;
}

OrderedJson PodmanSession::execute(const std::string &command,
                                   const std::string &stdin_text,
                                   double timeout_seconds,
                                   const CallControl &control) {
  std::lock_guard lock(m_mutex);
  if (m_affinity_id.empty()) {
    refuse("RuntimeError", "the Podman session is not started");
  }
  if (command.empty()) {
    refuse("ValueError", "the Podman command is empty");
  }
  if (!(timeout_seconds > 0)) {
    refuse("ValueError", "the Podman command timeout must be positive");
  }
  const OrderedJson body = {{"affinity_id", m_affinity_id},
                            {"command", command},
                            {"stdin", stdin_text},
                            {"timeout", seconds_value(timeout_seconds)},
                            {"workdir", m_config.workdir},
                            {"service", m_config.service}};
  return post_json(at(m_config.gateway, join_url(m_config.gateway.url, "/affinity/podman")),
                   "Podman execution",
                   body,
                   control);
}

OrderedJson PodmanSession::close(const CallControl &control) {
  std::lock_guard lock(m_mutex);
  if (m_affinity_id.empty()) {
    refuse("RuntimeError", "the Podman session is not started");
  }
  const OrderedJson body = {{"affinity_id", m_affinity_id}, {"service", m_config.service}};
  const std::string affinity = std::exchange(m_affinity_id, std::string());
  (void)affinity; // cleared whatever the outcome, as Python PrimeBeaker's finally does
  const OrderedJson response =
      post_json(at(m_config.gateway, join_url(m_config.gateway.url, "/affinity/close")),
                "Podman execution",
                body,
                control);
  if (response.value("removed", OrderedJson()) != OrderedJson(true)) {
    throw ServiceError(FailureKind::bad_response,
                       "RuntimeError",
                       "Podman close did not report the container removed");
  }
  return response;
}

bool PodmanSession::started() const {
  std::lock_guard lock(m_mutex);
  return !m_affinity_id.empty();
}

std::string PodmanSession::affinity_id() const {
  std::lock_guard lock(m_mutex);
  return m_affinity_id;
}

// ---- fetch ----------------------------------------------------------------------------------

namespace {

OrderedJson
jina_fetch(const FetchConfig &config, const std::string &url, const CallControl &control) {
  std::string key = config.jina_api_key.value_or("");
  if (key.empty()) {
    key = env::get("JINA_API_KEY").value_or("");
  }
  if (key.empty()) {
    refuse("ValueError", "Jina Reader needs an API key (jina_api_key or $JINA_API_KEY)");
  }
  std::vector<std::string> headers = {
      "Accept: application/json", "Authorization: Bearer " + key, "X-Return-Format: markdown"};
  if (config.jina_parameters.is_object()) {
    for (const auto &[name, value] : config.jina_parameters.items()) {
      headers.push_back(name + ": " + py::str(value));
    }
  }
  const OrderedJson response =
      get_json(at(config.jina, join_url(config.jina.url, "/" + text::percent_encode(url, ":/"))),
               "Jina Reader request",
               headers,
               control);
  const OrderedJson code = response.value("code", OrderedJson());
  if (!code.is_number() || code.get<double>() != 200) {
    const OrderedJson message = response.value("message", OrderedJson());
    return {{"success", false},
            {"mode", "url"},
            {"error",
             message.is_string() ? message.get<std::string>()
                                 : fmt::format("Jina Reader returned code {}", py::str(code))}};
  }
  const OrderedJson data = response.value("data", OrderedJson::object());
  const std::string title = data.is_object() ? py::str(data.value("title", OrderedJson(""))) : "";
  std::string content = data.is_object() ? py::str(data.value("content", OrderedJson(""))) : "";
  if (!title.empty()) {
    content = "# " + title + "\n\n" + content;
  }
  if (config.max_content_length) {
    content = py::prefix(content, *config.max_content_length);
  }
  const OrderedJson page_url =
      data.is_object() && data.contains("url") ? data["url"] : OrderedJson(url);
  return {{"success", true},
          {"mode", "url"},
          {"data", {{"title", title}, {"content", content}, {"url", page_url}}}};
}

} // namespace

OrderedJson
fetch_url(const FetchConfig &config, const std::string &url, const CallControl &control) {
  const std::string target = py::strip(url);
  if (target.empty()) {
    refuse("ValueError", "the URL to fetch is empty");
  }
  if (!config.gateway) {
    return jina_fetch(config, target, control);
  }
  OrderedJson body = {{"mode", "url"}, {"url", target}};
  if (config.model_path && !config.model_path->empty()) {
    body["model_path"] = *config.model_path;
  }
  const std::string pool =
      config.model_path && !config.model_path->empty() ? *config.model_path : "gateway default";
  return post_json(*config.gateway, "Gateway URL fetch request (" + pool + ")", body, control);
}

// ---- judge, reward model, search -------------------------------------------------------------

OrderedJson judge(const Endpoint &endpoint, const JudgeCall &call, const CallControl &control) {
  OrderedJson rubrics = OrderedJson::array();
  for (const auto &rubric : call.rubrics) {
    rubrics.push_back(rubric);
  }
  const OrderedJson body = {{"input", call.input},
                            {"output", call.output},
                            {"rubrics", rubrics},
                            {"model", call.model},
                            {"model_path", call.model_path}};
  return judge_body(endpoint, body, control);
}

OrderedJson
judge_body(const Endpoint &endpoint, const OrderedJson &body, const CallControl &control) {
  const OrderedJson rubrics = body.value("rubrics", OrderedJson());
  if (!rubrics.is_array()) {
    refuse("TypeError", "judge rubrics must be a list of strings");
  }
  if (rubrics.empty()) {
    refuse("ValueError", "judge rubrics must not be empty");
  }
  for (const auto &rubric : rubrics) {
    if (!rubric.is_string()) {
      refuse("TypeError", "every judge rubric must be a string");
    }
    if (py::strip(rubric.get<std::string>()).empty()) {
      refuse("ValueError", "every judge rubric must be a non-empty string");
    }
  }
  OrderedJson response = post_json(endpoint, "Judge request", body, control);
  if (!response.value("judgments", OrderedJson()).is_array()) {
    malformed("Judge request at " + endpoint.url + ": the response has no judgments list");
  }
  return response;
}

OrderedJson
classify(const Endpoint &endpoint, const OrderedJson &body, const CallControl &control) {
  const OrderedJson messages = body.value("messages", OrderedJson());
  if (!messages.is_array() || messages.empty()) {
    refuse("ValueError", "reward-model messages must be a non-empty list");
  }
  for (const auto &message : messages) {
    const OrderedJson role = message.is_object() ? message.value("role", OrderedJson()) : nullptr;
    if (!role.is_string() || py::strip(role.get<std::string>()).empty() ||
        !message.contains("content")) {
      refuse("ValueError", "every reward-model message needs a non-blank role and a content key");
    }
  }
  OrderedJson response = post_json(endpoint, "Reward model classification", body, control);
  const OrderedJson data = response.value("data", OrderedJson());
  if (!data.is_array() || data.size() != 1) {
    malformed("Reward model classification at " + endpoint.url +
              ": the response must have exactly one item in data");
  }
  return response;
}

OrderedJson search(const Endpoint &endpoint, const SearchCall &call, const CallControl &control) {
  if (py::strip(call.query).empty()) {
    refuse("ValueError", "the search query is empty");
  }
  OrderedJson body = {
      {"mode", "query"},
      {"query", call.query},
      {"num_results", call.num_results},
      {"parameters", call.parameters.is_null() ? OrderedJson::object() : call.parameters}};
  if (call.model_path && !call.model_path->empty()) {
    body["model_path"] = *call.model_path;
  }
  return post_json(endpoint, "Search request", body, control);
}

// ---- submit ---------------------------------------------------------------------------------

SubmissionStore::SubmissionStore(std::vector<std::string> expected_ids)
    : m_expected(std::move(expected_ids)) {}

OrderedJson SubmissionStore::submit(const OrderedJson &rubric_id,
                                    const OrderedJson &feedback,
                                    const OrderedJson &label) {
  std::string id;
  if (rubric_id.is_string()) {
    id = py::strip(rubric_id.get<std::string>());
  } else if (rubric_id.is_number_integer()) {
    id = rubric_id.dump();
  } else {
    refuse("ValueError", "rubric_id must be a string or an integer");
  }
  if (id.empty()) {
    refuse("ValueError", "rubric_id must not be empty");
  }
  if (!m_expected.empty() &&
      std::find(m_expected.begin(), m_expected.end(), id) == m_expected.end()) {
    std::vector<std::string> quoted;
    for (const auto &expected : m_expected) {
      quoted.push_back("'" + expected + "'");
    }
    refuse(
        "ValueError",
        fmt::format("unknown rubric ID '{}'; expected one of: {}", id, text::join(quoted, ", ")));
  }
  const auto non_blank = [](const OrderedJson &value, const char *what) {
    const std::string stripped = value.is_string() ? py::strip(value.get<std::string>()) : "";
    if (stripped.empty()) {
      refuse("ValueError", fmt::format("{} must be a non-empty string", what));
    }
    return stripped;
  };
  const std::string feedback_text = non_blank(feedback, "feedback");
  const std::string label_text = non_blank(label, "label");
  const bool replaced = m_submissions.contains(id);
  m_submissions[id] = {{"feedback", feedback_text}, {"label", label_text}};
  OrderedJson status = {{"accepted_rubric_id", id}, {"replaced", replaced}};
  const OrderedJson now = this->status();
  for (const auto &[key, value] : now.items()) {
    status[key] = value;
  }
  return {{"success", true},
          {"stdout", py::dumps(status)},
          {"stderr", ""},
          {"exit_code", 0},
          {"data", status}};
}

OrderedJson SubmissionStore::status() const {
  OrderedJson completed = OrderedJson::array();
  OrderedJson waiting = OrderedJson::array();
  if (m_expected.empty()) {
    for (const auto &[id, entry] : m_submissions.items()) {
      completed.push_back(id);
    }
  }
  for (const auto &id : m_expected) {
    (m_submissions.contains(id) ? completed : waiting).push_back(id);
  }
  return {{"completed_rubric_ids", completed},
          {"waiting_rubric_ids", waiting},
          {"all_completed", !m_expected.empty() && waiting.empty()}};
}

OrderedJson SubmissionStore::submissions() const {
  return m_submissions;
}

} // namespace pb::tool_services
