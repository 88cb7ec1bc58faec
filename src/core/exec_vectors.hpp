// SPDX-License-Identifier: MIT
// Private to core: the NULL-terminated argv and envp arrays execve / posix_spawn take, built
// once from an Argv and an EnvMap (used by process.cpp, subprocess.cpp and exec.cpp).
#pragma once

#include <primebeaker/core/process.hpp>

#include <string>
#include <vector>

namespace pb::proc::detail {

class ExecVectors {
public:
  ExecVectors(const Argv &argv, const EnvMap &env) : m_args(argv) {
    m_env.reserve(env.size());
    for (const auto &[name, value] : env) {
      m_env.push_back(name + "=" + value);
    }
    m_argv = pointers(m_args);
    m_envp = pointers(m_env);
  }
  // The arrays point into the owned strings: never copied or moved.
  ExecVectors(const ExecVectors &) = delete;
  ExecVectors &operator=(const ExecVectors &) = delete;

  char *const *argv() const { return m_argv.data(); }
  char *const *envp() const { return m_envp.data(); }

private:
  static std::vector<char *> pointers(std::vector<std::string> &strings) {
    std::vector<char *> out;
    out.reserve(strings.size() + 1);
    for (auto &s : strings) {
      out.push_back(s.data());
    }
    out.push_back(nullptr);
    return out;
  }

  std::vector<std::string> m_args;
  std::vector<std::string> m_env;
  std::vector<char *> m_argv;
  std::vector<char *> m_envp;
};

} // namespace pb::proc::detail
