// SPDX-License-Identifier: MIT
// `environments rollout NAME --args JSON --row JSON --endpoint URL --model M`: one rollout
// against an OpenAI-compatible chat-completions endpoint (docs/environments-runtime.md).
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments_runtime/tools.hpp>

#include <string>

namespace pb::environments_runtime {

struct RolloutOptions {
  std::string name;
  std::string args = "{}";
  std::string row;
  std::string endpoint; // base URL: POST {endpoint}/chat/completions
  std::string model;
  double timeout = 600; // seconds per model call
};

// {"env", "turns", "stop_condition", "transcript", "state", "values", "info_update", "reward"}.
// Throws pb::Error: bad --args/--row (2 or 3), the endpoint failing (1).
OrderedJson run_rollout(const RolloutOptions &options, ToolBackend &tools);

} // namespace pb::environments_runtime
