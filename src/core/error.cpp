// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>

namespace pb {

Error::Error(ExitCode code, const std::string &message, std::vector<std::string> context)
    : Error(static_cast<int>(code), message, std::move(context)) {}

Error::Error(int exit_code, const std::string &message, std::vector<std::string> context)
    : std::runtime_error(message), m_code(exit_code), m_context(std::move(context)) {}

Error &Error::add_context(std::string line) {
  m_context.push_back(std::move(line));
  return *this;
}

Error failure(const std::string &message) {
  return {ExitCode::failure, message};
}
Error usage_error(const std::string &message) {
  return {ExitCode::usage, message};
}
Error input_error(const std::string &message) {
  return {ExitCode::bad_input, message};
}
Error tool_error(const std::string &message) {
  return {ExitCode::tool_failed, message};
}

} // namespace pb
