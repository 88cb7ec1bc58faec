// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/signals.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pb::signals {
namespace {

volatile sig_atomic_t g_pending = 0;
int g_wake[2] = {-1, -1}; // a self-pipe: the handler writes, sleep() polls

extern "C" void pb_note_signal(int signal) {
  if (signal != SIGCHLD && g_pending == 0) {
    g_pending = signal;
  }
  const int saved = errno;
  if (g_wake[1] >= 0) {
    (void)!::write(g_wake[1], "x", 1);
  }
  errno = saved;
}

void drain_wake_pipe() {
  char drain[256];
  while (::read(g_wake[0], drain, sizeof drain) > 0) {
  }
}

} // namespace

Scope::Scope(ScopeOptions options) {
  if (g_wake[0] < 0 && ::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw failure(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  m_signals = {SIGINT, SIGTERM};
  if (options.hangup) {
    m_signals.push_back(SIGHUP);
  }
  if (options.child_exit_wakes) {
    m_signals.push_back(SIGCHLD);
  }
  m_previous.resize(m_signals.size());
  drain_wake_pipe(); // wake-ups of an earlier scope
  g_pending = 0;
  struct sigaction action {};
  action.sa_handler = pb_note_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < m_signals.size(); ++i) {
    ::sigaction(m_signals[i], &action, &m_previous[i]);
  }
}

Scope::~Scope() {
  for (size_t i = 0; i < m_signals.size(); ++i) {
    ::sigaction(m_signals[i], &m_previous[i], nullptr);
  }
}

int Scope::pending() {
  return g_pending;
}

void Scope::sleep(std::chrono::milliseconds duration, const std::vector<int> &extra_fds) {
  if (pending() != 0) {
    return;
  }
  std::vector<pollfd> fds;
  if (g_wake[0] >= 0) {
    fds.push_back({g_wake[0], POLLIN, 0});
  }
  for (const int fd : extra_fds) {
    fds.push_back({fd, POLLIN, 0});
  }
  const auto ms = duration.count() < 0 ? 0 : static_cast<int>(duration.count());
  if (::poll(fds.data(), fds.size(), ms) > 0 && g_wake[0] >= 0 && (fds[0].revents & POLLIN)) {
    drain_wake_pipe();
  }
}

void Scope::throw_if_pending(const std::string &what) {
  if (const int signal = pending()) {
    throw Error(128 + signal, fmt::format("interrupted ({}) {}", name(signal), what));
  }
}

const char *name(int signal) {
  switch (signal) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  case SIGCHLD:
    return "SIGCHLD";
  default:
    return "a signal";
  }
}

} // namespace pb::signals
