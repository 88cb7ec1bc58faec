// SPDX-License-Identifier: MIT
// `environments rollout NAME --args JSON --row JSON --endpoint URL --model M`: one rollout
// against an OpenAI-compatible chat-completions endpoint (docs/environments-runtime.md).
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments_runtime/tools.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace pb::environments_runtime {

struct RolloutOptions {
  std::string name;
  std::string args = "{}";
  std::string row;
  std::string endpoint; // base URL: POST {endpoint}/chat/completions
  std::string model;
  double timeout = 600; // seconds per model call
  // Verifiers' max_total_completion_tokens: the rollout's budget of generated tokens, counted
  // from each answer's `usage`; it feeds the search agents' token warning and stops the rollout
  // when spent. None (or <= 0): no budget.
  std::optional<std::int64_t> max_total_completion_tokens;
};

// {"env", "turns", "stop_condition", "transcript", "state", "values", "info_update", "usage",
// "reward"}; usage is {"prompt_tokens", "completion_tokens"} summed over the model's answers
// (null when the endpoint reported none).
// Throws pb::Error: bad --args/--row (2 or 3), the endpoint failing (1).
OrderedJson run_rollout(const RolloutOptions &options, ToolBackend &tools);

} // namespace pb::environments_runtime
