// SPDX-License-Identifier: MIT
// The shared transport of every tool-service client (docs/tool-services.md "Transport"): one
// JSON POST through the registry module's lazily loaded libcurl, with Python PrimeBeaker's
// attempts, back-off, status handling and messages, a per-call timeout and a cancellation flag.
#pragma once

#include <primebeaker/core/json.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pb::tool_services {

// Where a service lives and how hard to try. `max_retries` counts attempts in total (at least
// one is always made). Back-off sleeps initial_backoff, doubling, capped at max_backoff; tests
// shrink them, services use the defaults.
struct Endpoint {
  std::string url;
  std::chrono::milliseconds timeout{20000}; // total time of one attempt
  int max_retries = 3;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{8000};
};

// Per call: a timeout overriding Endpoint::timeout (the Podman handshake uses one), and a flag
// the caller sets from another thread to abandon the call (serve's `cancel`). A set flag ends
// the in-flight attempt and any back-off sleep within about 20 ms.
struct CallControl {
  std::optional<std::chrono::milliseconds> timeout;
  const std::atomic<bool> *cancel = nullptr;
};

// Why a call failed. Every client throws only ServiceError (or pb::Error when libcurl itself
// cannot be loaded).
enum class FailureKind {
  unreachable,      // connection refused, reset or timed out on every attempt
  http_status,      // the last attempt answered HTTP >= 400
  bad_response,     // not JSON, not an object, or a field the client needs is wrong
  invalid_argument, // refused before sending: the model's arguments were wrong
  cancelled,        // CallControl::cancel was set
};

class ServiceError : public std::runtime_error {
public:
  ServiceError(FailureKind kind,
               std::string exception_type,
               const std::string &message,
               long status = 0);
  FailureKind kind() const noexcept { return m_kind; }
  // Python PrimeBeaker's Python exception type, for "<tool> execution request failed: <Type>: ..."
  // observations: RuntimeError (transport), ValueError / TypeError (arguments, shapes).
  const std::string &exception_type() const noexcept { return m_exception_type; }
  long status() const noexcept { return m_status; } // HTTP status for http_status, else 0
  // A service could not do its job (unreachable, HTTP error, malformed answer): in scoring this
  // is serve's error.kind "infra". Tool calls show it to the model instead (docs/tool-services.md).
  bool infra() const noexcept;
  // docs/environments.md "Error observations": TypeError/ValueError, or " HTTP 400 " / 413 / 422.
  bool model_caused() const;
  // "<exception type>: <message>", the detail the Podman failure fields are split from.
  std::string detail() const;

private:
  FailureKind m_kind;
  std::string m_exception_type;
  long m_status;
};

// The sleep before attempt `attempt + 1` after attempt `attempt` (1-based) failed:
// initial_backoff * 2^(attempt-1), capped at max_backoff.
std::chrono::milliseconds backoff_delay(const Endpoint &endpoint, int attempt);

// POST `body` as JSON to endpoint.url with the transport rules; returns the response object.
// `request_name` is Python PrimeBeaker's name used in messages ("Terminal execution", ...).
OrderedJson post_json(const Endpoint &endpoint,
                      const std::string &request_name,
                      const OrderedJson &body,
                      const CallControl &control = {});

// GET with headers and the same rules (Jina Reader).
OrderedJson get_json(const Endpoint &endpoint,
                     const std::string &request_name,
                     const std::vector<std::string> &headers,
                     const CallControl &control = {});

} // namespace pb::tool_services
