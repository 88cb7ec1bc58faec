// SPDX-License-Identifier: MIT
// One HTTP request through libcurl, which is dlopen()ed on first use (docs/registry.md):
// commands that never talk HTTP never pay for loading libcurl and its TLS stack.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pb::registry {

struct HttpRequest {
  std::string method = "GET"; // GET, POST, OPTIONS
  std::string url;
  std::vector<std::string> headers;      // "Name: value"
  std::optional<std::string> body;       // sent for POST
  std::optional<std::string> basic_auth; // "user:password"; never logged
  std::chrono::milliseconds timeout{30000};
  bool use_proxy = false;      // honour *_proxy variables (remote services only)
  std::size_t max_body = 4096; // bytes of the response body kept
  // Set from another thread to abandon the transfer (checked about every 20 ms); the response
  // then has `cancelled` true and `error` set.
  const std::atomic<bool> *cancel = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string error; // non-empty when no HTTP response arrived (libcurl's reason)
  bool cancelled = false;
  bool timed_out = false; // the transfer hit HttpRequest::timeout
};

// Performs the request. Transport failures are returned in `error`; only a missing or
// incomplete libcurl throws pb::Error (exit 1) "<purpose> needs libcurl ...".
HttpResponse http_request(const HttpRequest &request, const std::string &purpose);

} // namespace pb::registry
