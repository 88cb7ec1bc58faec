// SPDX-License-Identifier: MIT
#include "exec_vectors.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/exec.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace pb::proc {

void exec_replace(const Command &command) {
  if (command.argv.empty()) {
    throw failure("internal error: empty command");
  }
  const EnvMap environment = child_environment(command);
  const auto path_it = environment.find("PATH");
  const auto program =
      find_executable(command.argv[0], path_it == environment.end() ? "" : path_it->second);
  if (!program) {
    throw tool_error(fmt::format("cannot run {}: not found on PATH", command.argv[0]));
  }
  if (command.cwd && ::chdir(command.cwd->c_str()) != 0) {
    throw failure(fmt::format("cannot enter {}: {}", command.cwd->string(), std::strerror(errno)));
  }
  const detail::ExecVectors vectors(command.argv, environment);
  spdlog::debug("exec {}", argv_to_json(command.argv));
  std::cout.flush();
  std::cerr.flush();
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  ::execve(program->c_str(), vectors.argv(), vectors.envp());
  throw tool_error(fmt::format("cannot run {}: {}", program->string(), std::strerror(errno)));
}

} // namespace pb::proc
