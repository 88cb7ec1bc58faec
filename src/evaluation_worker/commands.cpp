// SPDX-License-Identifier: MIT
// `primebeaker evaluation worker`: what the evaluator task of a managed evaluation runs.
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/evaluation_worker/worker.hpp>

#include <cmath>
#include <optional>

namespace pb::evaluation_worker {
namespace {

struct Options {
  std::optional<double> poll_interval;
  std::optional<double> stop_grace;
};

std::chrono::milliseconds seconds_flag(double seconds, const std::string &name) {
  if (!std::isfinite(seconds) || seconds < 0) {
    throw usage_error("--" + name + " must be a non-negative number of seconds");
  }
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000.0)));
}

void run(const Options &options) {
  const EnvMap env = pb::env::snapshot();
  Tuning tuning = parse_tuning(env);
  if (options.poll_interval) {
    tuning.poll_interval = seconds_flag(*options.poll_interval, "poll-interval");
  }
  if (options.stop_grace) {
    tuning.stop_grace = seconds_flag(*options.stop_grace, "stop-grace");
  }
  const int status = run_worker(env, tuning);
  if (status != 0) {
    throw Error(status, ""); // the child's own status; it already said why
  }
}

} // namespace

void register_commands(pb::cli::CommandTree &tree) {
  tree.command({"evaluation"}, "Managed evaluations on Beaker");
  auto &worker = tree.command(
      {"evaluation", "worker"},
      "In-container evaluation worker: wait for the service stack, run the evaluation module, "
      "stop the stack on every way out (reads the PRIMEBEAKER_* environment the evaluator spec "
      "sets; docs/evaluation-worker.md)");
  auto &options = tree.make_options<Options>();
  worker.add_option(pb::cli::flag("poll-interval"),
                    options.poll_interval,
                    "Seconds between readiness polls (default 0.2; env "
                    "PRIMEBEAKER_EVALUATION_POLL_SECONDS)");
  worker.add_option(pb::cli::flag("stop-grace"),
                    options.stop_grace,
                    "Seconds between SIGTERM and SIGKILL for the child's process group (default "
                    "20; env PRIMEBEAKER_EVALUATION_STOP_GRACE_SECONDS)");
  worker.callback([&options] { run(options); });
}

} // namespace pb::evaluation_worker
