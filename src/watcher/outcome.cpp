// SPDX-License-Identifier: MIT
#include "outcome.hpp"

#include "indexer_internal.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>

#include <algorithm>
#include <cmath>
#include <regex>

namespace pb::watcher::detail {

using nlohmann::json;

std::optional<std::string> launcher_log_model(const std::string &text) {
  static const std::regex pattern(
      R"re((?:^|[\s{,])(?:--)?"?model(?:_path)?"?\s*(?:[:=]|\s)\s*"?([^\s",}]+))re");
  for (const auto &line : text::split(text, '\n')) {
    std::smatch match;
    if (std::regex_search(line, match, pattern)) {
      return match[1].str();
    }
  }
  return std::nullopt;
}

MossOutcome parse_moss_outcome(const std::string &run_dir) {
  std::string file = run_dir + "/averages.jsonl";
  auto text = try_read(file);
  if (!text) {
    file = run_dir + "/summary.jsonl";
    text = try_read(file);
  }
  if (!text) {
    throw input_error(run_dir + ": no averages.jsonl or summary.jsonl");
  }
  MossOutcome parsed;
  parsed.outcome = json::object();
  json benchmarks = json::object();
  size_t line_number = 0;
  for (const auto &line : text::split(*text, '\n')) {
    ++line_number;
    if (text::trim(line).empty()) {
      continue;
    }
    const std::string where = file + ":" + std::to_string(line_number) + ": ";
    const auto row = json::parse(line, nullptr, false);
    if (!row.is_object()) {
      throw input_error(where + "not a JSON object");
    }
    Benchmark benchmark;
    if (!row.contains("dataset") || !row["dataset"].is_string() ||
        row["dataset"].get_ref<const std::string &>().empty()) {
      throw input_error(where + "'dataset' must be a non-empty string");
    }
    benchmark.dataset = row["dataset"].get<std::string>();
    if (!row.contains("runs") || !row["runs"].is_number_integer()) {
      throw input_error(where + "'runs' must be an integer");
    }
    benchmark.runs = row["runs"].get<std::int64_t>();
    const std::pair<const char *, double *> fields[] = {
        {"mean_accuracy", &benchmark.mean_accuracy},
        {"stdev_accuracy", &benchmark.stdev_accuracy},
        {"min_accuracy", &benchmark.min_accuracy},
        {"max_accuracy", &benchmark.max_accuracy}};
    for (const auto &[key, target] : fields) {
      if (!row.contains(key) || !row[key].is_number() || !std::isfinite(row[key].get<double>())) {
        throw input_error(where + "'" + key + "' must be a finite number");
      }
      *target = row[key].get<double>();
    }
    benchmarks[benchmark.dataset] = {{"dataset", benchmark.dataset},
                                     {"runs", benchmark.runs},
                                     {"mean_accuracy", benchmark.mean_accuracy},
                                     {"stdev_accuracy", benchmark.stdev_accuracy},
                                     {"min_accuracy", benchmark.min_accuracy},
                                     {"max_accuracy", benchmark.max_accuracy}};
    // One row per dataset: a repeated dataset keeps its last line.
    std::erase_if(parsed.benchmarks,
                  [&](const Benchmark &other) { return other.dataset == benchmark.dataset; });
    parsed.benchmarks.push_back(std::move(benchmark));
  }
  if (parsed.benchmarks.empty()) {
    throw input_error(file + ": no benchmark results");
  }
  if (const auto log = try_read(run_dir + "/launcher.log")) {
    parsed.model = launcher_log_model(*log);
  }
  parsed.outcome["benchmarks"] = benchmarks;
  parsed.outcome["model"] = parsed.model ? json(*parsed.model) : json();
  parsed.outcome["run_dir"] = run_dir;
  parsed.outcome["source"] = file.substr(file.rfind('/') + 1);
  return parsed;
}

Evaluation evaluation_outcome(const std::optional<std::string> &run_dir) {
  Evaluation evaluation;
  evaluation.run_dir = run_dir;
  if (!run_dir) {
    evaluation.status = "unconfigured";
    evaluation.error = "evaluation config has no run_dir";
    return evaluation;
  }
  if (!is_dir(*run_dir)) {
    evaluation.status = "not_started";
    return evaluation;
  }
  if (is_file(*run_dir + "/averages.jsonl") || is_file(*run_dir + "/summary.jsonl")) {
    try {
      MossOutcome parsed = parse_moss_outcome(*run_dir);
      evaluation.status = "complete";
      evaluation.outcome = parsed.outcome;
      evaluation.benchmarks = std::move(parsed.benchmarks);
    } catch (const Error &error) {
      evaluation.status = "incomplete";
      evaluation.error = error.what();
    }
    return evaluation;
  }
  const std::string failure_path = *run_dir + "/failure.json";
  if (is_file(failure_path)) {
    const std::string text = try_read(failure_path).value_or("");
    auto parsed = json::parse(text, nullptr, false);
    evaluation.status = "failed";
    evaluation.outcome = parsed.is_discarded() ? json{{"raw", text}} : parsed;
    return evaluation;
  }
  json artifacts = json::object();
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto &entry : stdfs::directory_iterator(*run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto &name : files) {
    auto parsed = json::parse(try_read(*run_dir + "/" + name).value_or(""), nullptr, false);
    if (!parsed.is_discarded()) {
      artifacts[name] = std::move(parsed);
    }
  }
  if (!artifacts.empty()) {
    evaluation.status = "complete";
    evaluation.outcome = json{{"artifacts", artifacts}};
    return evaluation;
  }
  evaluation.status = "incomplete";
  evaluation.error = "run directory exists but has no recognized outcome files";
  return evaluation;
}

} // namespace pb::watcher::detail
