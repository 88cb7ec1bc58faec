// SPDX-License-Identifier: MIT
#include "http_sink.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace pb::test {

HttpSink::HttpSink(std::vector<int> statuses, bool silent)
    : m_silent(silent), m_statuses(std::move(statuses)) {
  m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0; // a free port
  if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
      ::listen(m_fd, 64) != 0) {
    throw std::runtime_error("the HTTP sink cannot listen");
  }
  socklen_t size = sizeof address;
  ::getsockname(m_fd, reinterpret_cast<sockaddr *>(&address), &size);
  m_port = ntohs(address.sin_port);
  if (!m_silent) {
    m_thread = std::thread([this] { serve(); });
  }
}

HttpSink::~HttpSink() {
  m_stop = true;
  if (m_thread.joinable()) {
    m_thread.join();
  }
  ::close(m_fd);
}

std::string HttpSink::url() const {
  return "http://127.0.0.1:" + std::to_string(m_port) + "/hook/secret-token";
}

std::vector<std::string> HttpSink::bodies() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_bodies;
}

std::size_t HttpSink::wait_for(std::size_t count, double seconds) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (m_bodies.size() >= count || std::chrono::steady_clock::now() >= until) {
        return m_bodies.size();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void HttpSink::serve() {
  while (!m_stop) {
    pollfd ready{m_fd, POLLIN, 0};
    if (::poll(&ready, 1, 20) <= 0) {
      continue;
    }
    const int client = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      continue;
    }
    std::string request;
    char buffer[4096];
    std::size_t need = std::string::npos;
    while (need == std::string::npos || request.size() < need) {
      pollfd in{client, POLLIN, 0};
      if (::poll(&in, 1, 2000) <= 0) {
        break;
      }
      const auto got = ::read(client, buffer, sizeof buffer);
      if (got <= 0) {
        break;
      }
      request.append(buffer, static_cast<std::size_t>(got));
      const auto end = request.find("\r\n\r\n");
      if (need == std::string::npos && end != std::string::npos) {
        std::size_t length = 0;
        const auto at = request.find("Content-Length: ");
        if (at != std::string::npos && at < end) {
          length = std::strtoul(request.c_str() + at + 16, nullptr, 10);
        }
        need = end + 4 + length;
      }
    }
    int status = 200;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      const auto end = request.find("\r\n\r\n");
      m_bodies.push_back(end == std::string::npos ? std::string() : request.substr(end + 4));
      if (m_bodies.size() <= m_statuses.size()) {
        status = m_statuses[m_bodies.size() - 1];
      }
    }
    const std::string answer = "HTTP/1.1 " + std::to_string(status) +
                               " X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    (void)::write(client, answer.data(), answer.size());
    ::close(client);
  }
}

} // namespace pb::test
