// SPDX-License-Identifier: MIT
#include "interrupt.hpp"

namespace pb::runs {

namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void pb_runs_remember_signal(int signal) {
  g_signal = signal;
}

} // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = pb_runs_remember_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &m_old_int);
  ::sigaction(SIGTERM, &action, &m_old_term);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &m_old_int, nullptr);
  ::sigaction(SIGTERM, &m_old_term, nullptr);
}

int InterruptGuard::signal() {
  return g_signal;
}

} // namespace pb::runs
