// SPDX-License-Identifier: MIT
// `sft|rl preview|submit`, `toml rewrite-envs`.

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/release.hpp>
#include <primebeaker/primerl/rewrite_envs.hpp>
#include <primebeaker/primerl/schema.hpp>
#include <primebeaker/runs/runs.hpp>
#include <primebeaker/staging/stage.hpp>
#include <primebeaker/toml/check.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <iostream>
#include <string>

namespace pb::launch {

namespace {

// A create that succeeded but names no experiment leaves the run unfollowable: an error naming
// what beaker printed and where the spec is, instead of a receipt with a null id.
void require_experiment_id(const LaunchPlan &plan, const OrderedJson &receipt) {
  const auto id = receipt.find("experiment_id");
  if (id != receipt.end() && id->is_string()) {
    return;
  }
  const std::string printed(text::trim(receipt.value("stdout", std::string())));
  Error error = tool_error(
      fmt::format("beaker experiment create succeeded but named no experiment id; it printed: {}",
                  printed.empty() ? "(nothing)" : printed));
  error.add_context("the spec it submitted: " + plan.spec_path.string());
  error.add_context(fmt::format("look for experiment {} in workspace {} before submitting again",
                                plan.experiment_name,
                                plan.workspace));
  throw error;
}

void add_launch_command(pb::cli::CommandTree &tree, Program program, bool submit) {
  const std::string name(program_name(program));
  const std::string what = program == Program::sft ? "SFT" : "RL";
  const std::string description =
      submit ? "Write the Beaker spec of a Prime-RL " + what + " run and submit it"
             : "Print the Beaker spec of a Prime-RL " + what +
                   " run as JSON; touches nothing unless --write-spec";
  tree.leaf(
      {name, submit ? "submit" : "preview"},
      description,
      [&tree, program, submit](cli::Command &command) {
        auto &options = tree.make_options<LaunchOptions>();
        register_launch_flags(command, options);
        bool &follow = tree.make_options<bool>();
        bool &card_only = tree.make_options<bool>();
        bool &yes = tree.make_options<bool>();
        if (!submit) {
          command.add_flag("--card",
                           card_only,
                           "Print the launch card (a short human summary of what the launch "
                           "will hold and run) on stdout instead of the JSON");
        }
        if (submit) {
          command.add_flag("--yes",
                           yes,
                           "Submit without asking: on a terminal, submit shows the launch "
                           "card and asks y/N first (no terminal on stdin: never asks)");
          command.add_flag(
              "--follow",
              follow,
              "After submitting, stream every replica's logs to stderr until the run "
              "ends and exit with its outcome (as `primebeaker follow`, docs/runs.md)");
        }
        command.callback([&options, &follow, &card_only, &yes, program, submit] {
          if (options.recover == "terminal" && submit && !follow) {
            spdlog::warn("--recover terminal: this run is resubmitted after a preemption "
                         "only while `primebeaker follow RUN --recover` runs (or pass "
                         "--follow)");
          }
          apply_config(options, config::Settings::load());
          const LaunchPlan plan = plan_from_options(program, options);
          for (const auto &note : plan.notes) {
            spdlog::info("{}", note);
          }
          for (const auto &taken : plan.defaulted) {
            spdlog::info("defaulted: {}", taken);
          }
          if (!submit && !plan.submit_refusal.empty()) {
            spdlog::warn("`{} submit` would refuse this launch: {}",
                         program_name(program),
                         plan.submit_refusal);
          }
          const auto environment = env::snapshot();
          const std::string beaker_program = beaker::program_from_environment(environment);
          if (submit) {
            beaker::require_program(beaker_program, environment);
            confirm_submit(
                launch_card(plan),
                fmt::format("Submit {} to Beaker ({})?", plan.experiment_name, plan.workspace),
                yes);
          } else if (!card_only && ::isatty(STDERR_FILENO) == 1) {
            std::cerr << launch_card(plan);
          }
          proc::SystemRunner runner;
          fs::RealFileSystem files;
          beaker::Client client(runner, beaker_program);
          staging::RealStager stager(options.verify_stage ? staging::Verify::full
                                                          : staging::Verify::cached);
          LaunchEffects effects{files, client, stager};
          const OrderedJson result =
              submit ? execute_submit(plan, effects) : execute_preview(plan, effects);
          if (submit) {
            require_experiment_id(plan, result);
          }
          if (card_only) {
            std::cout << launch_card(plan);
            return;
          }
          print_json(std::cout, result);
          const auto controller = result.value("recovery", OrderedJson::object())
                                      .value("controller", OrderedJson::object());
          if (controller.contains("error")) {
            throw failure(
                fmt::format("the run {} is submitted, but its recovery controller is not: {}; "
                            "until one runs, recover it with `primebeaker follow {} --recover`",
                            result.value("experiment_id", std::string("(unknown id)")),
                            controller["error"].get<std::string>(),
                            result.value("experiment_id", std::string("RUN"))));
          }
          if (!follow) {
            return;
          }
          // stdout stays the one JSON receipt; the logs go to stderr.
          std::cout.flush();
          const auto id_field = result.find("experiment_id");
          if (id_field == result.end() || !id_field->is_string()) {
            throw failure(
                "--follow: submitted, but beaker's output names no experiment id to follow");
          }
          runs::FollowOptions follow_options;
          // Beside a controller the terminal follower recovers too: the ledger's claims
          // let exactly one of them resubmit each preemption.
          follow_options.recover.enabled =
              plan.recover_mode == "controller" || plan.recover_mode == "terminal";
          const int code =
              runs::follow(id_field->get<std::string>(), follow_options, runner, std::cerr);
          if (code != 0) {
            throw Error(code, ""); // follow already said how the run ended
          }
        });
      });
}

} // namespace

void register_commands(pb::cli::CommandTree &tree) {
  tree.command({"sft"}, "Prime-RL SFT on Beaker: preview or submit");
  tree.command({"rl"}, "Prime-RL RL on Beaker: preview, submit (and resume)");
  for (const Program program : {Program::sft, Program::rl}) {
    add_launch_command(tree, program, false);
    add_launch_command(tree, program, true);
  }

  struct RewriteOptions {
    std::string source;
    std::string destination;
  };
  // `toml check --prime-rl` (docs/primerl-schema.md): the schema previews check, on any file.
  toml::provide_prime_rl_check(
      [](const toml::Document &document, const std::string &root, const std::string &version) {
        std::optional<primerl::ConfigRoot> entrypoint;
        if (root != "auto") {
          entrypoint = primerl::parse_config_root(root).value();
        }
        std::optional<primerl::PrimeRl> release;
        if (!version.empty()) {
          release = primerl::require_prime_rl(version, "--prime-rl");
        }
        const primerl::Reading reading = primerl::read_prime_rl_file(document, entrypoint, release);
        toml::ExtraCheckResult result;
        const std::string read_as = fmt::format("{}: read as {}'s `{}` entrypoint",
                                                document.source_name(),
                                                primerl::display_name(reading.prime_rl),
                                                primerl::root_name(reading.root));
        for (const auto &found : reading.problems) {
          (found.severity == primerl::SchemaProblem::Severity::note ? result.notes : result.errors)
              .push_back(found.message);
        }
        if (reading.errors != 0) {
          result.errors.push_back(read_as + " (the reading with the fewest problems; --prime-rl "
                                            "VERSION and --root R choose another)");
        } else {
          result.notes.push_back(read_as);
        }
        return result;
      });
  // `toml set|unset` of a Prime-RL config (docs/toml.md "Edits of Prime-RL configs").
  toml::provide_prime_rl_edit_check(
      [](const toml::Document &before, const std::string &version) -> toml::EditCheck {
        std::optional<primerl::PrimeRl> release;
        if (!version.empty()) {
          release = primerl::require_prime_rl(version, "--prime-rl");
        }
        auto reading = primerl::read_prime_rl_config(before, release);
        if (!reading) {
          return {};
        }
        return [reading = std::move(*reading)](const toml::Document &after) {
          toml::ExtraCheckResult result;
          for (const auto &found : primerl::introduced_problems(reading, after)) {
            result.errors.push_back(found.message);
          }
          result.notes.push_back(fmt::format("{} reads as {}'s `{}` entrypoint",
                                             after.source_name(),
                                             primerl::display_name(reading.prime_rl),
                                             primerl::root_name(reading.root)));
          return result;
        };
      });
  tree.leaf(
      {"toml", "rewrite-envs"},
      "Write SRC to DST with legacy environment ids pointed at "
      "primebeaker.environments.* (comments and layout kept)",
      [&tree](cli::Command &command) {
        auto &rewrite = tree.make_options<RewriteOptions>();
        command.add_option("SRC", rewrite.source, "Source training TOML (never edited)").required();
        command.add_option("DST", rewrite.destination, "Where to write the runtime TOML")
            .required();
        command.callback([&rewrite] {
          const auto document = toml::Document::load(rewrite.source);
          const auto rewrites = primerl::plan_environment_rewrites(document);
          const std::string text = primerl::rewrite_environment_ids(document);
          for (const auto &item : rewrites) {
            spdlog::info("{}: {} -> {}", item.location, item.from, item.to);
          }
          pb::fs::write_file_atomic(rewrite.destination, text);
        });
      });
}

} // namespace pb::launch
