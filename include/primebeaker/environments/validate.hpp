// SPDX-License-Identifier: MIT
// Argument validation of environment entries against the catalog (docs/environments.md
// "Validation"). Pure: no file is opened beyond the parsed document, except by
// check_dataset_files(), which looks for the dataset files the arguments name.
#pragma once

#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/toml/value.hpp>

#include <filesystem>
#include <string>
#include <string_view>
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

// Whether an argument value names a local file or directory rather than a hub dataset id: an
// absolute or ./ ../ path, or a name ending in .jsonl, .json, .parquet, .csv or .arrow. Pure.
bool names_local_file(std::string_view value);

// A local dataset file named by a bundled environment's `dataset` (or `dataset_path`,
// `data_path`) argument, as written.
struct DatasetFile {
  std::string key_path; // orchestrator.train.source[0].legacy.args.dataset
  toml::Position position;
  std::string path;
};
std::vector<DatasetFile> dataset_files(const toml::Document &document); // pure

// Where the run will look for its dataset files, as this machine sees them.
struct DatasetRoots {
  std::filesystem::path working_dir; // relative paths are relative to it
  std::filesystem::path mount = "/"; // what the run sees of this machine's filesystems
};

// Looks for every dataset_files() entry on this machine: a missing file is an error when the
// filesystem it would be on is visible here (its directory exists, or, below a mount other than
// "/", the directory right under the mount it sits in); a file this machine cannot see, or one
// outside the mount, is a warning (error = false) saying it was not checked. Reads the
// filesystem.
std::vector<Problem> check_dataset_files(const toml::Document &document,
                                         const DatasetRoots &roots,
                                         fs::FileSystem &files);

// TOML value -> JSON (integers stay integers, floats floats, dates as their spelling).
OrderedJson toml_to_json(const toml::Value &value);

} // namespace pb::environments
