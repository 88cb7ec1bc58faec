// SPDX-License-Identifier: MIT
// `primebeaker environments describe|serve|rollout|score` (docs/environments-runtime.md).
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/environments_runtime/engine.hpp>
#include <primebeaker/environments_runtime/rollout.hpp>

#include <sys/prctl.h>

#include <csignal>
#include <iostream>

namespace pb::environments_runtime {
namespace {

struct DescribeOptions {
  std::string name;
  std::string args = "{}";
};

struct ServeCommandOptions {
  bool stdio = false;
};

} // namespace

void register_score_command(cli::CommandTree &tree); // score_command.cpp

void register_commands(cli::CommandTree &tree) {
  auto &describe_options = tree.make_options<DescribeOptions>();
  auto &describe_cmd =
      tree.command({"environments", "describe"},
                   "Print what the Python entry point needs to build an environment, as JSON");
  describe_cmd.add_option("NAME", describe_options.name, "environment name, alias or module stem")
      .required();
  describe_cmd.add_option(
      cli::flag("args"), describe_options.args, "load_environment arguments as a JSON object");
  describe_cmd.callback([&describe_options] {
    OrderedJson args;
    try {
      args = OrderedJson::parse(describe_options.args);
    } catch (const nlohmann::json::parse_error &error) {
      throw usage_error(std::string("--args is not JSON: ") + error.what());
    }
    print_json(std::cout, describe(describe_options.name, args));
  });

  auto &serve_options = tree.make_options<ServeCommandOptions>();
  auto &serve_cmd = tree.command(
      {"environments", "serve"},
      "Serve environment sessions to the Python package over JSON lines on stdin/stdout");
  serve_cmd.add_flag("--stdio", serve_options.stdio, "speak the protocol on stdin/stdout")
      .required();
  serve_cmd.callback([] {
    // The Verifiers worker that started us may die without closing our stdin.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    EnvironmentEngine engine; // the tool_services clients
    serve(0, 1, engine, {std::string("primebeaker ") + PB_VERSION});
  });

  auto &rollout_options = tree.make_options<RolloutOptions>();
  auto &rollout_cmd = tree.command(
      {"environments", "rollout"},
      "Drive one rollout against an OpenAI-compatible endpoint and the tool services; print the "
      "transcript, state and reward as JSON");
  rollout_cmd.add_option("NAME", rollout_options.name, "environment name, alias or module stem")
      .required();
  rollout_cmd.add_option(
      cli::flag("args"), rollout_options.args, "load_environment arguments as a JSON object");
  rollout_cmd.add_option(cli::flag("row"), rollout_options.row, "the dataset row as a JSON object")
      .required();
  rollout_cmd
      .add_option(cli::flag("endpoint"),
                  rollout_options.endpoint,
                  "OpenAI-compatible base URL (POST <endpoint>/chat/completions)")
      .required();
  rollout_cmd.add_option(cli::flag("model"), rollout_options.model, "model name to request")
      .required();
  rollout_cmd.add_option(
      cli::flag("timeout"), rollout_options.timeout, "seconds per model call (default 600)");
  rollout_cmd.add_option(cli::flag("max-total-completion-tokens"),
                         rollout_options.max_total_completion_tokens,
                         "the rollout's budget of generated tokens, counted from each answer's "
                         "usage (Verifiers' max_total_completion_tokens; default none)");
  rollout_cmd.callback([&rollout_options] {
    ServiceToolBackend tools;
    print_json(std::cout, run_rollout(rollout_options, tools));
  });

  register_score_command(tree);
}

} // namespace pb::environments_runtime
