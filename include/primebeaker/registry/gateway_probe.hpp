// SPDX-License-Identifier: MIT
// The gateway readiness probe of docs/registry.md, over libcurl.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace pb::registry {

struct GatewayProbe {
  std::string url;                         // e.g. http://127.0.0.1:1212 (trailing / ignored)
  std::vector<std::string> model_paths;    // POST /search {"mode":"query",...} must be 200
  std::vector<std::string> required_paths; // OPTIONS must be 200/204/405
  std::chrono::milliseconds health_timeout{10000};
  std::chrono::milliseconds timeout{70000}; // per required-path and search request
};

struct ProbeCheck {
  std::string method;     // GET, OPTIONS, POST
  std::string path;       // /health, /judge, /search
  std::string model_path; // POST /search only
  long status = 0;
};

// Runs every check in order (GET /health, OPTIONS each required path, POST /search per model
// path) and returns them on success. Throws pb::Error (exit 1) at the first failure:
// "gateway probe returned HTTP <code>: <up to 1000 chars of body>" or
// "gateway probe could not reach <url>: <reason>".
std::vector<ProbeCheck> probe_gateway(const GatewayProbe &probe);

// One GET of `url` through the same lazily loaded libcurl (no proxy, redirects not followed):
// the HTTP status. Throws pb::Error (exit 1) "... could not reach <url>: <reason>" when there
// is no answer within `timeout`. For health checks with their own rule on the status.
long http_get_status(const std::string &url, std::chrono::milliseconds timeout);

} // namespace pb::registry
