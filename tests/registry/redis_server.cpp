// SPDX-License-Identifier: MIT
#include "redis_server.hpp"

#include <primebeaker/core/process.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace pb::test {
namespace {

// Alive and not a zombie: the daemonised server is not our child, and whoever reaps orphans in
// a container may take its time, so a zombie counts as stopped.
bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) {
    return false;
  }
  std::error_code ec;
  const auto stat = "/proc/" + std::to_string(pid) + "/stat";
  if (!std::filesystem::exists(stat, ec)) {
    return false;
  }
  const std::string text = read_file(stat);
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

} // namespace

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw std::runtime_error("cannot find a free TCP port");
  }
  const int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

RedisServer::RedisServer(std::vector<std::string> extra_args, int port)
    : m_extra(std::move(extra_args)) {
  proc::SystemRunner runner;
  // A freshly freed port can be taken by someone else before redis binds it: retry a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    m_port = port != 0 ? port : free_tcp_port();
    const auto pid_file = m_dir / ("redis." + std::to_string(m_port) + ".pid");
    proc::Command command;
    command.argv = {"redis-server",
                    "--port",
                    std::to_string(m_port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    m_dir.path().string(),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "yes",
                    "--pidfile",
                    pid_file.string(),
                    "--logfile",
                    (m_dir / "redis.log").string()};
    command.argv.insert(command.argv.end(), m_extra.begin(), m_extra.end());
    command.timeout = std::chrono::seconds(10);
    const auto started = runner.run(command);
    if (!started.ok()) {
      continue;
    }
    for (int i = 0; i < 1000; ++i) { // up to 10 s for the pid file and the first PONG
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (m_pid == 0 && std::filesystem::exists(pid_file)) {
        // redis writes the file after creating it: an empty or partial one is read again.
        const std::string text = read_file(pid_file);
        if (!text.empty() && text.back() == '\n') {
          m_pid = std::stoi(text);
        }
      }
      if (m_pid != 0) {
        // The answer must come from our process: if our bind lost a race, someone else's
        // server may be listening on the port.
        const std::string info = cli({"INFO", "server"});
        if (info.find("process_id:" + std::to_string(m_pid) + "\r") != std::string::npos ||
            (info.find("NOAUTH") != std::string::npos && running(m_pid) &&
             cli({"PING"}).find("NOAUTH") != std::string::npos)) {
          return;
        }
        if (!running(m_pid)) {
          break; // it died (port taken): next attempt
        }
      }
    }
    stop();
  }
  throw std::runtime_error("redis-server did not start; log: " +
                           (std::filesystem::exists(m_dir / "redis.log")
                                ? read_file(m_dir / "redis.log")
                                : std::string("none")));
}

RedisServer::~RedisServer() {
  stop();
}

std::string RedisServer::cli(const std::vector<std::string> &args) const {
  proc::Command command;
  command.argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(m_port)};
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  command.timeout = std::chrono::seconds(10);
  proc::SystemRunner runner;
  return runner.run(command).out;
}

void RedisServer::stop() {
  if (m_pid == 0) {
    return;
  }
  ::kill(m_pid, SIGTERM);
  for (int i = 0; i < 500 && running(m_pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (running(m_pid)) {
    ::kill(m_pid, SIGKILL);
  }
  m_pid = 0;
}

} // namespace pb::test
