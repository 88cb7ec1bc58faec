// SPDX-License-Identifier: MIT
#include <primebeaker/core/log.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdlib>

namespace pb::log {

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

void init(int verbosity) {
  // Thread-safe sinks: a sweep submits its variants from several threads (docs/sweep.md).
  auto logger = spdlog::stderr_color_mt("primebeaker");
  const bool colour = stderr_is_terminal() && std::getenv("NO_COLOR") == nullptr;
  if (auto *sink = dynamic_cast<spdlog::sinks::stderr_color_sink_mt *>(logger->sinks()[0].get())) {
    sink->set_color_mode(colour ? spdlog::color_mode::automatic : spdlog::color_mode::never);
  }
  logger->set_pattern("primebeaker: %^%l%$: %v");
  logger->set_level(verbosity >= 2   ? spdlog::level::debug
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

} // namespace pb::log
