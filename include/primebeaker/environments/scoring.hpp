// SPDX-License-Identifier: MIT
// Reward scoring from a recorded rollout, for all 13 behaviours (docs/environments.md
// "Scoring"). Pure: judge and reward-model environments score from the service responses
// recorded in the rollout's state; service_request() gives the body the runtime must send.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/catalog.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace pb::environments {

// A rollout record (docs/environments.md "Rollout records"):
//   {"prompt": [messages] | str, "completion": [messages], "answer": str,
//    "info": {row fields}, "state": {counters, recorded service responses}, "is_truncated": bool}
struct Score {
  double reward = 0.0;
  OrderedJson metrics = OrderedJson::object(); // every reward term's raw value, then metrics
};

// Throws pb::Error (exit 3) when the record, the arguments or a recorded service response is
// malformed (where Python PrimeBeaker would fail the rollout). A non-finite term or total scores 0.
Score score_rollout(const Environment &environment,
                    const OrderedJson &args,
                    const OrderedJson &rollout);

// The judge (/judge) or classify (/classify) request body the environment sends for this
// rollout, or null when it sends none (no service, truncated, empty answer, ...).
OrderedJson service_request(const Environment &environment,
                            const OrderedJson &args,
                            const OrderedJson &rollout);

// `environments score`: reads JSON lines from `in`, writes one JSON line per rollout to `out`
// ({"index", "reward", "metrics"}, {"index", "request"} with `requests`, or {"index", "error"}).
// Returns how many rollouts could not be scored; `total` gets how many were read.
size_t score_lines(const Environment &environment,
                   const OrderedJson &args,
                   std::istream &in,
                   std::ostream &out,
                   bool requests,
                   const std::string &source,
                   size_t &total);

// Python float(text): surrounding whitespace, underscores between digits, nan/inf/infinity.
std::optional<double> python_float(std::string_view text);

// The Podman reward-file probe: stdout's first line must be the sentinel; the rest, trimmed,
// is a Python float clamped to [0, 1]. Non-finite values score 0 (docs/environments.md).
struct RewardFile {
  double value = 0.0;
  bool present = false;
  std::string error; // empty when none
};
inline constexpr std::string_view reward_file_sentinel = "__PRIMEBEAKER_REWARD_FILE__";
RewardFile parse_reward_probe(std::string_view stdout_text);

// Podman failure fields from an error detail "<Type>: <message>" (split at the first colon).
OrderedJson podman_failure_fields(std::string_view phase, std::string_view detail);
bool detail_mentions_oom(std::string_view detail);
// `echo <marker>` exactly, by POSIX shell splitting.
bool is_completion_command(std::string_view command, std::string_view marker);

// Expected rubric ids of a row (expected_rubric_ids, rubric_ids, indexed_rubrics keys or items,
// rubric_index), searched in the record's info/task/input and their info.
std::vector<std::string> expected_rubric_ids(const OrderedJson &rollout);

} // namespace pb::environments
