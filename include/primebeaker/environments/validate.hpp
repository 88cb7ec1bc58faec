// SPDX-License-Identifier: MIT
// Argument validation of environment entries against the catalog (docs/environments.md
// "Validation"). Pure: no file is opened beyond the parsed document.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/toml/value.hpp>

#include <string>
#include <vector>

namespace pb::environments {

struct Problem {
  bool error = true;       // false: a warning (an argument forwarded or ignored by the factory)
  std::string key_path;    // e.g. orchestrator.train.source[0].legacy.args.max_turns
  toml::Position position; // {0, 0} when unknown
  std::string message;
};

// "FILE:LINE:COL: error: KEY: message" (LINE:COL left out when unknown).
std::string format_problem(const Problem &problem, const std::string &source_name);

// Checks keyword arguments (a JSON object) against one environment. Key paths are the argument
// names (empty for problems with the whole set, such as a missing required argument).
std::vector<Problem> validate_args(const Environment &environment, const OrderedJson &args);

// Every environment entry of a Prime-RL TOML: orchestrator.{train,eval}.{source,env}[] with a
// `legacy` table {id, args} or {id, args} directly, and [[orchestrator.env]]. Ids that name no
// bundled environment (third-party) are skipped. `path` is how messages name the file (it is
// not opened). Problems come in document order.
std::vector<Problem> validate_toml(const toml::Document &document, const std::string &path);

// TOML value -> JSON (integers stay integers, floats floats, dates as their spelling).
OrderedJson toml_to_json(const toml::Value &value);

} // namespace pb::environments
