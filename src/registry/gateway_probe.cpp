// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/gateway_probe.hpp>
#include <primebeaker/registry/http.hpp>
#include <primebeaker/registry/location.hpp>

#include <nlohmann/json.hpp>

namespace pb::registry {
namespace {

struct Response {
  long status = 0;
  std::string body;
};

Response request(const std::string &base_url,
                 const std::string &method,
                 const std::string &path,
                 const std::optional<std::string> &json_body,
                 std::chrono::milliseconds timeout) {
  HttpRequest http;
  http.method = method;
  http.url = base_url + path;
  http.timeout = timeout;
  http.body = json_body;
  if (method == "POST") {
    http.headers.push_back("Content-Type: application/json");
  }
  const HttpResponse reply = http_request(http, "gateway probe");
  if (!reply.error.empty()) {
    throw failure("gateway probe could not reach " + redact_uri(http.url) + ": " + reply.error);
  }
  return {reply.status, reply.body};
}

[[noreturn]] void http_failure(const std::string &what, const Response &response) {
  throw failure("gateway probe returned HTTP " + std::to_string(response.status) + " for " + what +
                ": " + response.body.substr(0, 1000));
}

} // namespace

std::vector<ProbeCheck> probe_gateway(const GatewayProbe &probe) {
  std::string base = probe.url;
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  if (base.find("://") == std::string::npos) {
    throw usage_error("--url must be an http:// URL, got '" + probe.url + "'");
  }
  std::vector<ProbeCheck> checks;
  const auto health = request(base, "GET", "/health", std::nullopt, probe.health_timeout);
  if (health.status != 200) {
    http_failure("GET /health", health);
  }
  checks.push_back({"GET", "/health", "", health.status});
  for (std::string path : probe.required_paths) {
    if (path.empty() || path.front() != '/') {
      path.insert(0, "/");
    }
    const auto response = request(base, "OPTIONS", path, std::nullopt, probe.timeout);
    // 405 means the route exists but takes another method: good enough for readiness.
    if (response.status != 200 && response.status != 204 && response.status != 405) {
      http_failure("OPTIONS " + path, response);
    }
    checks.push_back({"OPTIONS", path, "", response.status});
  }
  for (const auto &model_path : probe.model_paths) {
    const nlohmann::ordered_json body = {
        {"mode", "query"}, {"query", "PrimeBeaker readiness probe"}, {"model_path", model_path}};
    const auto response = request(base, "POST", "/search", body.dump(), probe.timeout);
    if (response.status != 200) {
      http_failure("POST /search (model_path " + model_path + ")", response);
    }
    checks.push_back({"POST", "/search", model_path, response.status});
  }
  return checks;
}

long http_get_status(const std::string &url, std::chrono::milliseconds timeout) {
  return request(url, "GET", "", std::nullopt, timeout).status;
}

} // namespace pb::registry
