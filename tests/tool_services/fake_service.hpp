// SPDX-License-Identifier: MIT
// A loopback fake tool service: records every request and answers from a script (then from a
// default reply or a handler). cpp-httplib stays inside fake_service.cpp.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/tool_services/transport.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pb::test {

struct FakeReply {
  int status = 200;
  std::string body = "{}";
  std::chrono::milliseconds delay{0}; // the handler sleeps this long before answering
};

struct RecordedRequest {
  std::string method;
  std::string path;
  std::string body;
  std::map<std::string, std::string> headers;
  std::chrono::steady_clock::time_point at;
  OrderedJson json() const; // the body parsed (null when it is not JSON)
};

class FakeService {
public:
  FakeService();
  ~FakeService();
  FakeService(const FakeService &) = delete;
  FakeService &operator=(const FakeService &) = delete;

  std::string url(const std::string &path = "") const;
  // Replies used in order, one per request, before the handler or the default.
  void script(std::vector<FakeReply> replies);
  // Computes a reply from the request when the script is used up.
  void handle(std::function<FakeReply(const RecordedRequest &)> handler);
  std::vector<RecordedRequest> requests() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// A URL nothing listens on (a port bound, then closed).
std::string unreachable_url(const std::string &path = "/");

// An endpoint with a short back-off so retry tests stay fast (the schedule itself is checked
// by BackoffDelay).
inline tool_services::Endpoint fast_endpoint(const std::string &url, int attempts = 3) {
  using namespace std::chrono_literals;
  tool_services::Endpoint endpoint;
  endpoint.url = url;
  endpoint.timeout = 2000ms;
  endpoint.max_retries = attempts;
  endpoint.initial_backoff = 5ms;
  endpoint.max_backoff = 20ms;
  return endpoint;
}

// Runs `call`, expects a ServiceError and returns it.
template <typename F> tool_services::ServiceError failure_of(F &&call) {
  try {
    call();
  } catch (const tool_services::ServiceError &error) {
    return error;
  }
  ADD_FAILURE() << "no ServiceError";
  return tool_services::ServiceError(tool_services::FailureKind::bad_response, "none", "none");
}

} // namespace pb::test
