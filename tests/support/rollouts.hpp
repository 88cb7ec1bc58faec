// SPDX-License-Identifier: MIT
// Recorded rollouts as scoring reads them (docs/environments.md "Scoring"), for the tests of
// environments and tool_services.
#pragma once

#include <primebeaker/core/json.hpp>

#include <string>
#include <utility>

namespace pb::test {

inline OrderedJson assistant(const std::string &content) {
  return OrderedJson{{"role", "assistant"}, {"content", content}};
}

// One user turn ("judge this"), then `completion`; not truncated unless `state` or the caller
// says so.
inline OrderedJson rollout(OrderedJson completion,
                           const std::string &answer = "",
                           OrderedJson state = OrderedJson::object(),
                           OrderedJson info = OrderedJson::object()) {
  return OrderedJson{
      {"prompt", OrderedJson::array({OrderedJson{{"role", "user"}, {"content", "judge this"}}})},
      {"completion", std::move(completion)},
      {"answer", answer},
      {"info", std::move(info)},
      {"state", std::move(state)}};
}

} // namespace pb::test
