// SPDX-License-Identifier: MIT
// A scripted ToolBackend: records every call and answers per service from a handler the test
// sets. A handler may sleep; `wait_or_cancel` ends early when the request is cancelled.
#pragma once

#include <primebeaker/environments_runtime/tools.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pb::test {

class FakeTools : public environments_runtime::ToolBackend {
public:
  using Handler = std::function<OrderedJson(const environments_runtime::ServiceCall &,
                                            const std::atomic<bool> &)>;

  OrderedJson call(const environments_runtime::ServiceCall &call,
                   const std::atomic<bool> &cancelled) override {
    Handler handler;
    {
      std::lock_guard lock(m_mutex);
      m_calls.push_back(call);
      const auto found = m_handlers.find(call.service);
      if (found != m_handlers.end()) {
        handler = found->second;
      }
    }
    if (!handler) {
      throw environments_runtime::ToolError("RuntimeError", "no fake for " + call.service);
    }
    return handler(call, cancelled);
  }
  void forget(const std::string &session) override {
    std::lock_guard lock(m_mutex);
    m_forgotten.push_back(session);
  }

  void on(const std::string &service, Handler handler) {
    std::lock_guard lock(m_mutex);
    m_handlers[service] = std::move(handler);
  }
  std::vector<environments_runtime::ServiceCall> calls(const std::string &service = {}) {
    std::lock_guard lock(m_mutex);
    std::vector<environments_runtime::ServiceCall> out;
    for (const auto &call : m_calls) {
      if (service.empty() || call.service == service) {
        out.push_back(call);
      }
    }
    return out;
  }
  std::vector<std::string> forgotten() {
    std::lock_guard lock(m_mutex);
    return m_forgotten;
  }

  // Sleeps up to `duration`; true when cancelled first.
  static bool wait_or_cancel(std::chrono::milliseconds duration,
                             const std::atomic<bool> &cancelled) {
    const auto until = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < until) {
      if (cancelled) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

private:
  std::mutex m_mutex;
  std::map<std::string, Handler> m_handlers;
  std::vector<environments_runtime::ServiceCall> m_calls;
  std::vector<std::string> m_forgotten;
};

} // namespace pb::test
