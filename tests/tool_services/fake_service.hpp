// SPDX-License-Identifier: MIT
// A loopback fake tool service: records every request and answers from a script (then from a
// default reply or a handler). cpp-httplib stays inside fake_service.cpp.
#pragma once

#include <primebeaker/core/json.hpp>

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

} // namespace pb::test
