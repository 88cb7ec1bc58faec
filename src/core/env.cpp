// SPDX-License-Identifier: MIT
#include <primebeaker/core/env.hpp>

#include <cstdlib>
#include <string_view>

extern char **environ;

namespace pb::env {

std::optional<std::string> get(const std::string &name) {
  const char *value = std::getenv(name.c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

std::map<std::string, std::string> snapshot() {
  std::map<std::string, std::string> result;
  for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view kv(*entry);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) {
      result.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
    }
  }
  return result;
}

} // namespace pb::env
