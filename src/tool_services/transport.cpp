// SPDX-License-Identifier: MIT
// The shared transport (docs/tool-services.md "Transport").
#include <primebeaker/environments/python.hpp>
#include <primebeaker/registry/http.hpp>
#include <primebeaker/tool_services/transport.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace pb::tool_services {
namespace py = environments::py;

namespace {

constexpr std::size_t k_max_response_bytes = std::size_t{256} << 20;
constexpr std::chrono::milliseconds k_cancel_poll{20};

bool is_cancelled(const CallControl &control) {
  return control.cancel != nullptr && control.cancel->load();
}

[[noreturn]] void throw_cancelled(const std::string &request_name, const std::string &url) {
  throw ServiceError(FailureKind::cancelled,
                     "CancelledError",
                     fmt::format("{} was cancelled at {}", request_name, url));
}

// Sleeps `delay`, waking early (and throwing) when the call is cancelled.
void sleep_unless_cancelled(std::chrono::milliseconds delay,
                            const CallControl &control,
                            const std::string &request_name,
                            const std::string &url) {
  const auto until = std::chrono::steady_clock::now() + delay;
  while (std::chrono::steady_clock::now() < until) {
    if (is_cancelled(control)) {
      throw_cancelled(request_name, url);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    std::this_thread::sleep_for(std::clamp(left, std::chrono::milliseconds(0), k_cancel_poll));
  }
  if (is_cancelled(control)) {
    throw_cancelled(request_name, url);
  }
}

OrderedJson request_json(const Endpoint &endpoint,
                         const std::string &request_name,
                         registry::HttpRequest request,
                         const CallControl &control) {
  request.url = endpoint.url;
  request.timeout = control.timeout.value_or(endpoint.timeout);
  request.max_body = k_max_response_bytes;
  request.use_proxy = false; // Python PrimeBeaker's session ignores proxy variables
  request.cancel = control.cancel;
  const int attempts = std::max(1, endpoint.max_retries);
  for (int attempt = 1;; ++attempt) {
    if (is_cancelled(control)) {
      throw_cancelled(request_name, endpoint.url);
    }
    const registry::HttpResponse response = registry::http_request(request, request_name);
    if (response.cancelled) {
      throw_cancelled(request_name, endpoint.url);
    }
    const bool last = attempt >= attempts;
    if (!response.error.empty()) {
      // Connection refused or reset, server disconnect, timeout: retried.
      if (last) {
        throw ServiceError(FailureKind::unreachable,
                           "RuntimeError",
                           fmt::format("{} failed after {} attempts at {}: {}",
                                       request_name,
                                       attempts,
                                       endpoint.url,
                                       response.error));
      }
    } else if (response.status >= 400) {
      // 429/502/503 are the retryable statuses of Python PrimeBeaker, but it retries every other
      // status >= 400 too (docs/tool-services.md): the same rule for all.
      if (last) {
        throw ServiceError(FailureKind::http_status,
                           "RuntimeError",
                           fmt::format("{} failed with HTTP {} at {}: {}",
                                       request_name,
                                       response.status,
                                       endpoint.url,
                                       py::prefix(response.body, 1000)),
                           response.status);
      }
    } else {
      std::optional<OrderedJson> parsed = py::try_loads(response.body);
      if (!parsed) {
        throw ServiceError(
            FailureKind::bad_response,
            "RuntimeError",
            fmt::format("{} at {}: response was not valid JSON", request_name, endpoint.url));
      }
      if (!parsed->is_object()) {
        throw ServiceError(
            FailureKind::bad_response,
            "RuntimeError",
            fmt::format("{} at {}: response was not a JSON object", request_name, endpoint.url));
      }
      return std::move(*parsed);
    }
    sleep_unless_cancelled(backoff_delay(endpoint, attempt), control, request_name, endpoint.url);
  }
}

} // namespace

ServiceError::ServiceError(FailureKind kind,
                           std::string exception_type,
                           const std::string &message,
                           long status)
    : std::runtime_error(message), m_kind(kind), m_exception_type(std::move(exception_type)),
      m_status(status) {}

bool ServiceError::infra() const noexcept {
  return m_kind == FailureKind::unreachable || m_kind == FailureKind::http_status ||
         m_kind == FailureKind::bad_response;
}

bool ServiceError::model_caused() const {
  if (m_exception_type == "TypeError" || m_exception_type == "ValueError") {
    return true;
  }
  const std::string message = what();
  return message.find(" HTTP 400 ") != std::string::npos ||
         message.find(" HTTP 413 ") != std::string::npos ||
         message.find(" HTTP 422 ") != std::string::npos;
}

std::string ServiceError::detail() const {
  return m_exception_type + ": " + what();
}

std::chrono::milliseconds backoff_delay(const Endpoint &endpoint, int attempt) {
  std::chrono::milliseconds delay = endpoint.initial_backoff;
  for (int i = 1; i < attempt && delay < endpoint.max_backoff; ++i) {
    delay *= 2;
  }
  return std::min(delay, endpoint.max_backoff);
}

OrderedJson post_json(const Endpoint &endpoint,
                      const std::string &request_name,
                      const OrderedJson &body,
                      const CallControl &control) {
  registry::HttpRequest request;
  request.method = "POST";
  // aiohttp's json= sends Content-Type: application/json; "Expect:" stops libcurl from waiting
  // for a 100-continue on large bodies.
  request.headers = {"Content-Type: application/json", "Expect:"};
  request.body = py::dumps(body);
  return request_json(endpoint, request_name, std::move(request), control);
}

OrderedJson get_json(const Endpoint &endpoint,
                     const std::string &request_name,
                     const std::vector<std::string> &headers,
                     const CallControl &control) {
  registry::HttpRequest request;
  request.method = "GET";
  request.headers = headers;
  return request_json(endpoint, request_name, std::move(request), control);
}

} // namespace pb::tool_services
