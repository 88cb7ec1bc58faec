// SPDX-License-Identifier: MIT
// The ToolBackend the binary uses: the engine's service calls mapped onto the tool_services
// clients (docs/tool-services.md). Per rollout it keeps the web asset store and the Podman
// container session.
#include <primebeaker/environments_runtime/serve.hpp>
#include <primebeaker/environments_runtime/tools.hpp>
#include <primebeaker/tool_services/clients.hpp>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

namespace pb::environments_runtime {
namespace {

using tool_services::CallControl;
using tool_services::Endpoint;
using tool_services::FailureKind;
using tool_services::ServiceError;

std::chrono::milliseconds seconds(double value) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(value * 1000.0)));
}

Endpoint endpoint(const std::string &url, double timeout, long long retries) {
  Endpoint out;
  out.url = url;
  out.timeout = seconds(timeout);
  out.max_retries = static_cast<int>(std::max(retries, 1LL));
  return out;
}

std::optional<std::string> optional_string(const OrderedJson &body, const char *key) {
  if (body.contains(key) && body.at(key).is_string() && !body.at(key).get<std::string>().empty()) {
    return body.at(key).get<std::string>();
  }
  return std::nullopt;
}

std::optional<long long> optional_integer(const OrderedJson &body, const char *key) {
  if (body.contains(key) && body.at(key).is_number_integer()) {
    return body.at(key).get<long long>();
  }
  return std::nullopt;
}

std::string text_of(const OrderedJson &value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}

} // namespace

struct ServiceToolBackend::Rollout {
  std::mutex mutex;
  std::unique_ptr<tool_services::PodmanSession> podman;
  std::unique_ptr<tool_services::WebAssetStore> assets;
};

ServiceToolBackend::ServiceToolBackend() = default;
ServiceToolBackend::~ServiceToolBackend() = default;

std::shared_ptr<ServiceToolBackend::Rollout>
ServiceToolBackend::rollout(const std::string &session) {
  std::lock_guard lock(m_mutex);
  auto &slot = m_rollouts[session];
  if (!slot) {
    slot = std::make_shared<Rollout>();
  }
  return slot;
}

void ServiceToolBackend::forget(const std::string &session) {
  std::lock_guard lock(m_mutex);
  m_rollouts.erase(session);
}

OrderedJson ServiceToolBackend::call(const ServiceCall &call, const std::atomic<bool> &cancelled) {
  CallControl control;
  control.cancel = &cancelled;
  const OrderedJson &body = call.body;
  const Endpoint target = endpoint(call.url, call.timeout, call.max_retries);
  try {
    if (call.service == "terminal") {
      return tool_services::terminal_execute(target,
                                             {text_of(body.value("command", OrderedJson())),
                                              optional_string(body, "contents").value_or(""),
                                              optional_integer(body, "truncation")},
                                             control);
    }
    if (call.service == "python") {
      return tool_services::python_execute(target,
                                           {text_of(body.value("code", OrderedJson())),
                                            body.value("context_payload", OrderedJson()),
                                            body.value("max_runtime", 2LL)},
                                           control);
    }
    if (call.service == "search") {
      tool_services::SearchCall search;
      search.query = text_of(body.value("query", OrderedJson()));
      search.num_results = body.value("num_results", 10LL);
      search.parameters = body.value("parameters", OrderedJson::object());
      search.model_path = optional_string(body, "model_path");
      return tool_services::search(target, search, control);
    }
    if (call.service == "fetch") {
      tool_services::FetchConfig fetch;
      fetch.gateway = target;
      fetch.model_path = optional_string(body, "model_path");
      return tool_services::fetch_url(fetch, text_of(body.value("url", OrderedJson())), control);
    }
    if (call.service == "webterminal") {
      tool_services::WebTerminalConfig config;
      config.terminal = target;
      config.truncation = optional_integer(body, "truncation");
      config.capture_web_assets = body.value("capture_web_assets", false);
      if (auto gateway = optional_string(body, "local_search_server_url")) {
        config.fetch.gateway = endpoint(*gateway,
                                        body.value("fetch_timeout", call.timeout),
                                        body.value("fetch_max_retries", call.max_retries));
        config.fetch.model_path = optional_string(body, "local_search_model_path");
      }
      if (auto jina = optional_string(body, "fetch_server_url")) {
        config.fetch.jina.url = *jina;
      }
      config.fetch.jina.timeout = seconds(body.value("fetch_timeout", 65.0));
      config.fetch.jina.max_retries = static_cast<int>(body.value("fetch_max_retries", 3LL));
      const auto state = rollout(call.session);
      std::lock_guard lock(state->mutex);
      if (!state->assets) {
        state->assets = std::make_unique<tool_services::WebAssetStore>();
        OrderedJson pages = body.value("web_pages", OrderedJson());
        if (pages.is_string()) {
          pages = OrderedJson::parse(pages.get<std::string>(), nullptr, false);
        }
        if (pages.is_object()) {
          state->assets->seed(pages);
        }
      }
      return tool_services::web_terminal_execute(config,
                                                 *state->assets,
                                                 text_of(body.value("command", OrderedJson())),
                                                 optional_string(body, "contents").value_or(""),
                                                 control);
    }
    if (call.service == "judge") {
      return tool_services::judge_body(target, body, control);
    }
    if (call.service == "classify") {
      return tool_services::classify(target, body, control);
    }
    if (call.service == "podman_start" || call.service == "podman_execute" ||
        call.service == "podman_close") {
      const auto state = rollout(call.session);
      if (call.service == "podman_start") {
        tool_services::PodmanConfig config;
        config.gateway =
            endpoint(call.url, call.options.value("request_timeout", 150.0), call.max_retries);
        config.handshake_timeout = seconds(call.timeout);
        config.service = text_of(body.value("service", OrderedJson("podman")));
        config.workdir = text_of(call.options.value("workdir", OrderedJson("/home/user")));
        auto session = std::make_unique<tool_services::PodmanSession>(config);
        const std::string id = session->start(text_of(body.value("image", OrderedJson())),
                                              optional_string(body, "client_id"),
                                              control);
        std::lock_guard lock(state->mutex);
        state->podman = std::move(session);
        return {{"affinity_id", id}, {"container_id", id}};
      }
      tool_services::PodmanSession *session = nullptr;
      {
        std::lock_guard lock(state->mutex);
        session = state->podman.get();
      }
      if (session == nullptr) {
        throw ToolError("RuntimeError", "no live Podman task session is bound");
      }
      if (call.service == "podman_close") {
        return session->close(control);
      }
      CallControl execute = control;
      execute.timeout = seconds(call.timeout);
      return session->execute(text_of(body.value("command", OrderedJson())),
                              text_of(body.value("stdin", OrderedJson(""))),
                              body.value("timeout", 60.0),
                              execute);
    }
    throw RequestError("bad_request", "no client for service '" + call.service + "'");
  } catch (const ServiceError &error) {
    if (error.kind() == FailureKind::cancelled) {
      throw RequestError("cancelled", error.what());
    }
    throw ToolError(error.exception_type(), error.what());
  }
}

} // namespace pb::environments_runtime
