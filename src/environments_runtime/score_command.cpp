// SPDX-License-Identifier: MIT
// `primebeaker environments score NAME --rollouts FILE|- [--args JSON] [--requests]`
// (docs/environments.md "Commands"): recorded rollouts scored for every environment, the judge
// and reward-model ones included, through tool_services::score_with_services, the scoring path
// serve uses. It lives here, not in src/environments, because environments sits below
// tool_services in the module graph (docs/ARCHITECTURE.md).
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/python.hpp>
#include <primebeaker/environments/scoring.hpp>
#include <primebeaker/environments/validate.hpp>
#include <primebeaker/tool_services/scoring.hpp>

#include <fmt/format.h>

#include <fstream>
#include <iostream>

namespace pb::environments_runtime {
namespace {

namespace py = environments::py;

struct ScoreOptions {
  std::string name;
  std::string args = "{}";
  std::string rollouts;
  bool requests = false;
};

// One rollout: {"index", "reward", "metrics"[, "info_update"]}, or {"index", "request"}.
OrderedJson score_one(const environments::Environment &environment,
                      const OrderedJson &args,
                      const OrderedJson &rollout,
                      bool requests) {
  OrderedJson result = OrderedJson::object();
  if (requests) {
    result["request"] = environments::service_request(environment, args, rollout);
    return result;
  }
  tool_services::ServiceScore scored =
      tool_services::score_with_services(environment, args, rollout);
  result["reward"] = scored.score.reward;
  OrderedJson metrics = std::move(scored.score.metrics);
  for (auto &[key, value] : scored.metrics.items()) {
    metrics[key] = std::move(value);
  }
  result["metrics"] = std::move(metrics);
  if (!scored.info_update.empty()) {
    result["info_update"] = std::move(scored.info_update);
  }
  return result;
}

// One JSON line per rollout; exit 1 if any could not be scored (a service that failed too).
void run_score(const ScoreOptions &o) {
  const environments::Environment &environment = environments::resolve(o.name);
  OrderedJson args;
  try {
    args = py::loads(o.args);
  } catch (const py::JsonError &error) {
    throw usage_error(fmt::format("--args is not valid JSON: {}", error.what()));
  }
  for (const auto &p : environments::validate_args(environment, args)) {
    // Scoring needs no dataset: only the arguments given are checked.
    if (p.error && !p.key_path.empty()) {
      throw usage_error(fmt::format("--args: {}: {}", p.key_path, p.message));
    }
  }
  std::ifstream file;
  std::istream *in = &std::cin;
  if (o.rollouts != "-") {
    file.open(o.rollouts, std::ios::binary);
    if (!file) {
      throw input_error(fmt::format("{}: cannot open the rollouts file", o.rollouts));
    }
    in = &file;
  }
  size_t index = 0;
  size_t failed = 0;
  for (std::string line; std::getline(*in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    OrderedJson result = {{"index", index}};
    try {
      result.update(score_one(environment, args, py::loads(line), o.requests));
    } catch (const py::JsonError &error) {
      result["error"] =
          fmt::format("{}: line {}: invalid JSON: {}", o.rollouts, index + 1, error.what());
    } catch (const tool_services::ServiceError &error) {
      result["error"] = error.what();
    } catch (const Error &error) {
      result["error"] = error.what();
    }
    failed += result.contains("error") ? 1 : 0;
    std::cout << py::dumps(result) << '\n'; // a line each, as it is scored: services are slow
    std::cout.flush();
    ++index;
  }
  if (failed > 0) {
    throw failure(fmt::format("{} of {} rollouts could not be scored", failed, index));
  }
}

} // namespace

void register_score_command(cli::CommandTree &tree) {
  auto &score = tree.make_options<ScoreOptions>();
  auto &score_cmd = tree.command({"environments", "score"},
                                 "Score recorded rollouts (JSON lines), calling the judge or "
                                 "reward model when the environment does: one JSON line each");
  score_cmd
      .add_option("NAME",
                  score.name,
                  "name, legacy alias, module or module path, as `environments resolve` takes")
      .required();
  score_cmd.add_option(cli::flag("args"), score.args, "load_environment arguments as JSON")
      .capture_default_str();
  score_cmd.add_option(cli::flag("rollouts"), score.rollouts, "JSON-lines file ('-' for stdin)")
      .required();
  score_cmd.add_flag(cli::flag("requests"),
                     score.requests,
                     "Print the judge/classify request each rollout needs instead of scoring");
  score_cmd.callback([&score] { run_score(score); });
}

} // namespace pb::environments_runtime
