// SPDX-License-Identifier: MIT
// A real redis-server for tests: started on a free localhost port in its own temp dir, stopped
// (and waited for) when the object dies. Reusable by any module's tests: add
// tests/registry/redis_server.cpp to your pb_add_tests SOURCES and include this header.
#pragma once

#include "test_support.hpp"

#include <sys/types.h>

#include <string>
#include <vector>

namespace pb::test {

class RedisServer {
public:
  // Starts `redis-server` (from PATH) with no persistence, bound to 127.0.0.1, and waits until
  // it answers PING. `extra_args` go to redis-server as is (e.g. {"--requirepass", "s3cret"}).
  // Throws std::runtime_error if it cannot start (the test then fails loudly). A non-zero
  // `port` is used as is (for "Redis appears late" tests that need the address in advance).
  explicit RedisServer(std::vector<std::string> extra_args = {}, int port = 0);
  ~RedisServer();
  RedisServer(const RedisServer &) = delete;
  RedisServer &operator=(const RedisServer &) = delete;

  int port() const { return m_port; }
  std::string uri() const { return "redis://127.0.0.1:" + std::to_string(m_port); }
  // Runs redis-cli against this server and returns its stdout (for assertions on raw storage).
  std::string cli(const std::vector<std::string> &args) const;
  // Stops the server now (SIGTERM, then SIGKILL after 5 s); idempotent.
  void stop();

private:
  TempDir m_dir;
  int m_port = 0;
  pid_t m_pid = 0;
  std::vector<std::string> m_extra;
};

// A localhost TCP port nobody listens on right now.
int free_tcp_port();

} // namespace pb::test
