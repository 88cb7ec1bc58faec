// SPDX-License-Identifier: MIT
// A tiny HTTP sink for the notification tests (docs/notify.md "Tests"): listens on a free port
// of 127.0.0.1, records each request's body, answers with the status codes it is given in turn
// (then 200), or never answers at all (a webhook that hangs).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pb::test {

class HttpSink {
public:
  // `statuses`: the answers to the first requests, in order; 200 after them. `silent`: accept
  // nothing and answer nothing (connections queue in the backlog until the client gives up).
  explicit HttpSink(std::vector<int> statuses = {}, bool silent = false);
  ~HttpSink();
  HttpSink(const HttpSink &) = delete;
  HttpSink &operator=(const HttpSink &) = delete;

  std::string url() const; // http://127.0.0.1:<port>/hook/secret-token
  int port() const { return m_port; }
  std::vector<std::string> bodies() const;
  // Waits until `count` requests arrived or `seconds` passed; returns how many did.
  std::size_t wait_for(std::size_t count, double seconds) const;

private:
  void serve();
  int m_fd = -1;
  int m_port = 0;
  bool m_silent = false;
  std::vector<int> m_statuses;
  std::atomic<bool> m_stop{false};
  mutable std::mutex m_mutex;
  std::vector<std::string> m_bodies;
  std::thread m_thread;
};

} // namespace pb::test
