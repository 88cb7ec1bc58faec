// SPDX-License-Identifier: MIT
// Evaluation outcome files (docs/watcher.md "Outcome files"): `averages.jsonl` or
// `summary.jsonl`, one JSON object per line with dataset, runs, mean/stdev/min/max accuracy;
// a legacy archive names its model in `launcher.log`. Also an evaluation's status from its run
// directory.
#pragma once

#include "indexer.hpp"

namespace pb::watcher::detail {

struct MossOutcome {
  std::optional<std::string> model;
  std::vector<Benchmark> benchmarks;
  nlohmann::json outcome; // {"benchmarks": {dataset: {...}}, "model", "run_dir", "source"}
};

// Parses `run_dir`'s outcome file (averages.jsonl preferred). Throws pb::Error (exit 3)
// "FILE:LINE: reason" on a malformed line, a missing field or a file without results.
MossOutcome parse_moss_outcome(const std::string &run_dir);

// The model named in a launcher log: the first `model: X`, `model=X`, `--model X`,
// `--model=X` or `"model": "X"` (also `model_path`), or nullopt.
std::optional<std::string> launcher_log_model(const std::string &text);

// An evaluation's status from its run directory: unconfigured (no run_dir), not_started,
// complete (outcome files, else its *.json artifacts), failed (failure.json) or incomplete.
Evaluation evaluation_outcome(const std::optional<std::string> &run_dir);

} // namespace pb::watcher::detail
