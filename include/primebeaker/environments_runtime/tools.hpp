// SPDX-License-Identifier: MIT
// The seam between the rollout engine and the tool services (terminal, python, web terminal,
// search, fetch, Podman gateway, judge, reward model; docs/environments-runtime.md "Tool
// services"). The engine builds each request body as the service expects it and hands it to a
// ToolBackend; tests use a fake, the binary uses the HTTP clients.
#pragma once

#include <primebeaker/core/json.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace pb::environments_runtime {

// A failed service call as Python PrimeBeaker saw it: the exception type name ("RuntimeError",
// "ValueError", "TimeoutError", ...) and its message. The engine turns it into the error
// observation "<tool> execution request failed: <type>: <message>" or a Podman failure.
class ToolError : public std::runtime_error {
public:
  ToolError(std::string type, const std::string &message)
      : std::runtime_error(message), m_type(std::move(type)) {}
  const std::string &type() const noexcept { return m_type; }
  std::string detail() const { return m_type + ": " + what(); }

private:
  std::string m_type;
};

struct ServiceCall {
  // terminal, python, webterminal, search, fetch, judge, classify, podman_start,
  // podman_execute, podman_close
  std::string service;
  std::string url;           // the service URL (for Podman: the gateway base)
  OrderedJson body;          // the request body, field for field as the service takes it
  double timeout = 0;        // total seconds per attempt (HTTP)
  long long max_retries = 1; // attempts in all
  std::string session;       // the rollout: web assets are kept per rollout
  // What the client needs beyond the body (podman_start: the session's workdir and
  // request_timeout for its later executes).
  OrderedJson options = OrderedJson::object();
};

class ToolBackend {
public:
  virtual ~ToolBackend() = default;
  // The service's response object, or ToolError. Must return soon after `cancelled` turns true
  // (throwing ToolError or RequestError{"cancelled"}). A RequestError (e.g. kind "infra")
  // fails the whole request instead of becoming an observation. Called from many threads.
  virtual OrderedJson call(const ServiceCall &call, const std::atomic<bool> &cancelled) = 0;
  // The rollout is over: drop what was kept for it (web assets).
  virtual void forget(const std::string & /*session*/) {}
};

// What the binary uses: the tool_services HTTP clients (docs/tool-services.md). It keeps each
// rollout's web asset store and Podman container session until forget().
class ServiceToolBackend final : public ToolBackend {
public:
  ServiceToolBackend();
  ~ServiceToolBackend() override;
  OrderedJson call(const ServiceCall &call, const std::atomic<bool> &cancelled) override;
  void forget(const std::string &session) override;

private:
  struct Rollout;
  std::shared_ptr<Rollout> rollout(const std::string &session);

  std::mutex m_mutex;
  std::map<std::string, std::shared_ptr<Rollout>> m_rollouts;
};

} // namespace pb::environments_runtime
