// SPDX-License-Identifier: MIT
// The real `environments serve --stdio` as a child process, for end-to-end tests.
#pragma once

#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

namespace pb::test {

// The real `environments serve --stdio` as a child on two pipes, like the Python parent runs
// it. The transport cancels requests still queued at end of input, so send() waits for each
// reply before the next request; the destructor closes stdin and expects exit status 0.
class ServeChild {
public:
  ServeChild() {
    int to_child[2];
    int from_child[2];
    if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) {
      throw std::runtime_error("pipe failed");
    }
    m_pid = ::fork();
    if (m_pid == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      ::close(to_child[1]);
      ::close(from_child[0]);
      const std::string binary = pb::test::binary_path().string();
      ::execl(binary.c_str(),
              binary.c_str(),
              "environments",
              "serve",
              "--stdio",
              static_cast<char *>(nullptr));
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    m_in = to_child[1];
    m_out = from_child[0];
  }
  ~ServeChild() {
    if (m_in >= 0) {
      ::close(m_in);
    }
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    ::close(m_out);
  }
  ServeChild(const ServeChild &) = delete;
  ServeChild &operator=(const ServeChild &) = delete;

  nlohmann::json send(const nlohmann::json &request) {
    write(request);
    return read();
  }
  // Pipelining: write many requests, then read the replies as they come (out of order).
  void write(const nlohmann::json &request) {
    const std::string line = request.dump() + "\n";
    EXPECT_EQ(::write(m_in, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  nlohmann::json read() {
    for (;;) {
      const auto newline = m_buffer.find('\n');
      if (newline != std::string::npos) {
        const nlohmann::json reply =
            nlohmann::json::parse(m_buffer.substr(0, newline)); // stdout is protocol only
        m_buffer.erase(0, newline + 1);
        return reply;
      }
      char chunk[4096];
      const ssize_t got = ::read(m_out, chunk, sizeof chunk);
      if (got <= 0) {
        ADD_FAILURE() << "serve closed its output";
        return nlohmann::json::object();
      }
      m_buffer.append(chunk, static_cast<size_t>(got));
    }
  }

private:
  pid_t m_pid = -1;
  int m_in = -1;
  int m_out = -1;
  std::string m_buffer;
};

} // namespace pb::test
