// SPDX-License-Identifier: MIT
// `primebeaker checkpoints list (--toml F [--working-dir W] [--run NAME] | --output-dir D
// --ranks N) [--json] [--latest]`.
#include <primebeaker/checkpoints/report.hpp>
#include <primebeaker/checkpoints/topology.hpp>
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/layout.hpp>
#include <primebeaker/toml/value.hpp>

#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <optional>

namespace pb::checkpoints {

namespace {

namespace fs = std::filesystem;

struct ListOptions {
  std::string toml;
  std::string output_dir;
  // --working-dir; nullopt: the launches' default (`config get working_dir`, docs/config.md).
  std::optional<std::string> working_dir;
  std::string run; // v0.9: the run directory when the TOML names none
  int ranks = 0;
  bool json = false;
  bool latest = false;
};

// The run directory of a v0.9 TOML that names none (the launch named it after its experiment):
// --run, else the one run directory its output_dir holds. "" for TOMLs that name their run.
std::string run_dir_of(const toml::Document &document,
                       const ListOptions &options,
                       const fs::path &working_dir) {
  if (!is_v0_9(document)) {
    if (!options.run.empty() && document.root().find("output_dir") != nullptr) {
      throw usage_error("--run names the run a launch placed under outputs/; " + options.toml +
                        " sets its own output_dir");
    }
    return "";
  }
  if (primerl::names_its_run(document)) {
    if (!options.run.empty() && options.run != primerl::run_dir_name(document, "")) {
      throw usage_error("--run " + options.run + " contradicts " + options.toml + ", whose run " +
                        "directory is " + primerl::run_dir_name(document, ""));
    }
    return "";
  }
  if (!options.run.empty()) {
    return options.run;
  }
  const fs::path output_dir = output_dir_from_toml(document, working_dir);
  const auto runs = find_run_dirs(output_dir);
  if (runs.size() == 1) {
    return runs.front();
  }
  std::string listed;
  for (const auto &name : runs) {
    listed += (listed.empty() ? "" : ", ") + name;
  }
  throw usage_error(options.toml + " sets neither run.dir nor run.name (the launch named the run " +
                    "after its experiment) and " + output_dir.string() +
                    (runs.empty() ? " holds no run directory"
                                  : " holds " + std::to_string(runs.size()) + " run directories (" +
                                        listed + ")") +
                    ": pass --run NAME");
}

// The working directory a launch of the TOML used: --working-dir, else the launches' own default
// (PRIMEBEAKER_WORKING_DIR, the project or user file, the built-in /weka), with its origin.
std::pair<std::string, std::string> working_dir_of(const ListOptions &options) {
  if (options.working_dir) {
    if (options.working_dir->empty()) {
      throw usage_error("--working-dir cannot be empty");
    }
    return {*options.working_dir, "--working-dir"};
  }
  const auto settings = config::Settings::load();
  const config::Setting *setting = settings.get("working_dir");
  return {setting->text(), setting->origin};
}

// Where to look, from the flags: pure apart from reading the TOML the user named and the config.
CheckpointSource resolve_source(const ListOptions &options, const fs::path &cwd) {
  if (options.toml.empty() == options.output_dir.empty()) {
    throw usage_error("checkpoints list needs exactly one of --toml FILE or --output-dir DIR");
  }
  if (!options.toml.empty()) {
    if (options.ranks != 0) {
      throw usage_error(
          "--ranks goes with --output-dir; with --toml the rank count comes from the TOML");
    }
    const auto [working_dir_text, origin] = working_dir_of(options);
    // A relative output_dir is relative to the run's working directory, as for previews.
    const fs::path working_dir = (cwd / working_dir_text).lexically_normal();
    const auto document = toml::Document::load(options.toml);
    CheckpointSource source =
        source_from_toml(document, working_dir, run_dir_of(document, options, working_dir));
    if (!is_v0_9(document) && document.root().find("output_dir") == nullptr) {
      // A launch gives a v0.8.0 TOML that names no output_dir its own outputs/<run name>
      // (docs/launch.md, "Output dir"): look where that launch wrote, not at Prime-RL's shared
      // default.
      const std::string name =
          options.run.empty() ? primerl::launch_run_name(document, "") : options.run;
      const std::string text = document.text();
      const auto placed = toml::Document::parse(
          "output_dir = " + nlohmann::json("outputs/" + name).dump() + "\n" + text,
          document.source_name());
      source = source_from_toml(placed, working_dir, "");
    }
    spdlog::info("working dir {} (from {})", working_dir.string(), origin);
    std::error_code ec;
    if (!fs::exists(source.output_dir, ec)) {
      // Not an error (a run may not have started), but not silent either: the place looked at
      // and where it came from, in case the TOML was launched with another working dir.
      spdlog::warn("{} does not exist (yet): output_dir of {} under the working dir {} (from {}; "
                   "--working-dir or `primebeaker config set working_dir` to look elsewhere)",
                   source.output_dir.string(),
                   options.toml,
                   working_dir.string(),
                   origin);
    }
    return source;
  }
  if (!options.run.empty()) {
    throw usage_error("--run goes with --toml; give --output-dir the run directory itself");
  }
  if (options.working_dir) {
    throw usage_error("--working-dir goes with --toml; --output-dir is a path on this machine");
  }
  if (options.ranks < 1) {
    throw usage_error("--output-dir needs --ranks N (trainer ranks per step, at least 1)");
  }
  fs::path output_dir(options.output_dir);
  if (output_dir.is_relative()) {
    output_dir = cwd / output_dir;
  }
  output_dir = output_dir.lexically_normal();
  if (output_dir.filename().empty() && output_dir.has_parent_path()) {
    output_dir = output_dir.parent_path();
  }
  // A run that has not checkpointed yet still has its output directory; a missing one is a
  // typo, which an empty listing would hide.
  std::error_code ec;
  if (!fs::exists(output_dir, ec)) {
    throw input_error("--output-dir " + output_dir.string() + ": no such directory");
  }
  if (!fs::is_directory(output_dir, ec)) {
    throw input_error("--output-dir " + output_dir.string() + ": not a directory");
  }
  return detect_source(output_dir, options.ranks);
}

void run_list(const ListOptions &options) {
  const CheckpointSource source = resolve_source(options, fs::current_path());
  const auto started = std::chrono::steady_clock::now();
  const TreeListing listing = options.latest ? list_latest(source) : list_steps(source);
  const auto statuses = evaluate(listing);
  const auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started);
  spdlog::info("scanned {} steps in {:.1f} ms: {} stat calls, {} directories read",
               listing.steps.size(),
               elapsed.count(),
               listing.stats.stat_calls,
               listing.stats.directories_read);
  if (options.json) {
    OrderedJson out = listing_json(listing, statuses);
    if (options.latest) {
      out["scope"] = "latest"; // steps older than the selected one were not read
    }
    print_json(std::cout, out);
  } else {
    std::cout << listing_table(listing, statuses);
    if (options.latest) {
      std::cout << "(--latest: steps older than the first complete one were not read)\n";
    }
  }
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"checkpoints"}, "Inspect Prime-RL checkpoint trees");
  cli::Command &list = tree.command(
      {"checkpoints", "list"},
      "List every checkpoint step, whether trainer and orchestrator both finished it, and the "
      "step a resume would pick");
  auto &options = tree.make_options<ListOptions>();
  list.add_option(cli::flag("toml"),
                  options.toml,
                  "Training TOML: output_dir and the trainer rank count come from it, as for "
                  "previews (give this or --output-dir)");
  list.add_option(cli::flag("working-dir"),
                  options.working_dir,
                  "With --toml: the run's --working-dir, which a relative output_dir is "
                  "relative to, as for previews [/weka; `config set working_dir`]");
  list.add_option(cli::flag("run"),
                  options.run,
                  "With a --toml whose run a launch named: for v0.9 without run.dir/run.name, "
                  "the run directory under output_dir (default: its only one); for v0.8.0 "
                  "without output_dir, the --name it was launched with (its outputs/NAME; "
                  "default: wandb.name, else the file's folder and stem)");
  list.add_option(cli::flag("output-dir"),
                  options.output_dir,
                  "The run's output directory, instead of --toml; needs --ranks");
  list.add_option(cli::flag("ranks"),
                  options.ranks,
                  "Trainer ranks (DCP shards) per step: required with --output-dir, refused "
                  "with --toml (the TOML gives it)");
  list.add_flag(cli::flag("json"), options.json, "Print one JSON object instead of a table");
  list.add_flag(cli::flag("latest"),
                options.latest,
                "Read newest first and stop at the step a resume would use (a few directory "
                "reads instead of the whole tree)");
  list.footer("Give either --toml FILE (the rank count and output_dir come from it; a relative "
              "output_dir is under --working-dir, default `config get working_dir`) or "
              "--output-dir DIR --ranks N. A run that has "
              "not written a checkpoint yet lists no steps (exit 0); an --output-dir that does "
              "not exist is an error (exit 3).");
  list.callback([&options] { run_list(options); });
}

} // namespace pb::checkpoints
