// SPDX-License-Identifier: MIT
// The plan's ${...} facts filled in while a replica runs (replica_plan.hpp).
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/replica_plan.hpp>

#include <fmt/format.h>

namespace pb::node {

std::string substitute(const std::string &text, const EnvMap &facts) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t open = text.find("${", pos);
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      return out;
    }
    const size_t close = text.find('}', open);
    if (close == std::string::npos) {
      out.append(text, pos, std::string::npos);
      return out;
    }
    out.append(text, pos, open - pos);
    std::string name = text.substr(open + 2, close - open - 2);
    long long offset = 0;
    if (const auto plus = name.find('+'); plus != std::string::npos) {
      const std::string number = name.substr(plus + 1);
      offset = text::parse_integer(number).value_or(0);
      name.resize(plus);
    }
    if (name.size() > 3 && name.compare(name.size() - 3, 3, "...") == 0) {
      name.resize(name.size() - 3);
    }
    const auto it = facts.find(name);
    if (it == facts.end()) {
      throw Error(ExitCode::failure,
                  fmt::format("internal error: the plan uses ${{{}}} before it is known", name));
    }
    if (offset != 0) {
      const auto &v = it->second;
      const auto value = text::parse_integer(v);
      if (!value) {
        throw Error(ExitCode::failure,
                    fmt::format("internal error: ${{{}}} = '{}' is not a number", name, v));
      }
      out += std::to_string(*value + offset);
    } else {
      out += it->second;
    }
    pos = close + 1;
  }
}

proc::Argv resolve_argv(const ProcessSpec &process, const EnvMap &facts) {
  proc::Argv argv;
  auto add = [&](const std::string &arg) {
    if (arg.size() > 6 && arg.rfind("${", 0) == 0 && arg.compare(arg.size() - 4, 4, "...}") == 0) {
      for (const auto &word : text::split(substitute(arg, facts), ' ')) {
        if (!word.empty()) {
          argv.push_back(word);
        }
      }
      return;
    }
    argv.push_back(substitute(arg, facts));
  };
  for (const auto &arg : process.argv) {
    add(arg);
  }
  for (const auto &[fact, args] : process.when) {
    const auto it = facts.find(fact);
    if (it != facts.end() && it->second == "1") {
      for (const auto &arg : args) {
        add(arg);
      }
    }
  }
  return argv;
}

} // namespace pb::node
