// SPDX-License-Identifier: MIT
// `primebeaker stage`: what every launch does before submitting, on its own (docs/staging.md).
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/staging/stage.hpp>

#include <spdlog/spdlog.h>

#include <iostream>
#include <optional>

namespace pb::staging {

void register_commands(pb::cli::CommandTree &tree) {
  struct StageOptions {
    // nullopt: the launches' own (`config get scratch_dir`: PRIMEBEAKER_SCRATCH_DIR, the
    // project or user file, else /weka; docs/config.md), so this stages where they look.
    std::optional<std::string> scratch_dir;
    bool dry_run = false;
    bool verify_stage = false;
  };
  tree.leaf({"stage"},
            "Copy this binary with its loader and libraries to <scratch>/primebeaker/bin, as "
            "every launch does, and print the program path",
            [&tree](cli::Command &command) {
              auto &options = tree.make_options<StageOptions>();
              command.add_option(pb::cli::flag("scratch-dir"),
                                 options.scratch_dir,
                                 "Scratch root on the shared mount, as the launch flag [/weka; "
                                 "`config set scratch_dir`]");
              command.add_flag(pb::cli::flag("dry-run"),
                               options.dry_run,
                               "Print where the stage is, write nothing");
              command.add_flag(pb::cli::flag("verify-stage"),
                               options.verify_stage,
                               "On a stage already there, hash every file, not only those "
                               "changed since this machine last verified them");
              command.callback([&options] {
                std::string scratch_dir;
                if (options.scratch_dir) {
                  scratch_dir = *options.scratch_dir;
                  if (scratch_dir.empty() || scratch_dir.front() != '/') {
                    throw usage_error("--scratch-dir must be an absolute path, got '" +
                                      scratch_dir + "'");
                  }
                } else {
                  const auto settings = config::Settings::load();
                  const config::Setting *setting = settings.get("scratch_dir");
                  scratch_dir = setting->text(); // checked absolute when read
                  spdlog::info("scratch dir {} (from {})", scratch_dir, setting->origin);
                }
                const Identity &identity = current();
                const auto directory = stage_directory(scratch_dir, identity);
                std::string outcome = "planned";
                if (!options.dry_run) {
                  RealStager stager(options.verify_stage ? Verify::full : Verify::cached);
                  outcome =
                      stager.stage(directory).outcome == Outcome::created ? "created" : "reused";
                }
                OrderedJson out = OrderedJson::object();
                out["program"] = (directory / k_wrapper).string();
                out["directory"] = directory.string();
                out["version"] = identity.version;
                out["build_id"] = identity.build_id;
                out["outcome"] = outcome;
                print_json(std::cout, out);
              });
            });
}

} // namespace pb::staging
