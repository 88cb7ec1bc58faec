// SPDX-License-Identifier: MIT
// `primebeaker stage`: what every launch does before submitting, on its own (docs/staging.md).
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/staging/stage.hpp>

#include <iostream>

namespace pb::staging {

void register_commands(pb::cli::CommandTree &tree) {
  struct StageOptions {
    std::string scratch_dir = "/weka";
    bool dry_run = false;
  };
  tree.leaf({"stage"},
            "Copy this binary with its loader and libraries to <scratch>/primebeaker/bin, as "
            "every launch does, and print the program path",
            [&tree](cli::Command &command) {
              auto &options = tree.make_options<StageOptions>();
              command
                  .add_option(pb::cli::flag("scratch-dir"),
                              options.scratch_dir,
                              "Scratch root on the shared mount (as the launch flag)")
                  .capture_default_str();
              command.add_flag(pb::cli::flag("dry-run"),
                               options.dry_run,
                               "Print where the stage is, write nothing");
              command.callback([&options] {
                if (options.scratch_dir.empty() || options.scratch_dir.front() != '/') {
                  throw usage_error("--scratch-dir must be an absolute path, got '" +
                                    options.scratch_dir + "'");
                }
                const Identity &identity = current();
                const auto directory = stage_directory(options.scratch_dir, identity);
                std::string outcome = "planned";
                if (!options.dry_run) {
                  RealStager stager;
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
