// SPDX-License-Identifier: MIT
// `primebeaker images list` and `primebeaker images default --workspace WS`.
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/images/catalog.hpp>

#include <iostream>

namespace pb::images {

void register_commands(pb::cli::CommandTree &tree) {
  tree.command({"images"}, "The Prime-RL image catalog built into primebeaker");

  auto &list =
      tree.command({"images", "list"}, "Print the default role's cataloged images as a JSON array");
  list.callback(
      [] { print_json(std::cout, list_json(Catalog::from_environment(env::snapshot()))); });

  struct DefaultOptions {
    std::string workspace = "ai2/oe-agents";
    std::string role;
    bool no_stage = false;
  };
  auto &options = tree.make_options<DefaultOptions>();
  auto &fallback = tree.command({"images", "default"},
                                "Print the image `sft|rl submit` runs for a workspace when "
                                "--image is not given (beaker://ID)");
  fallback.add_option(pb::cli::flag("workspace"), options.workspace, "Beaker workspace")
      .capture_default_str();
  fallback.add_option(pb::cli::flag("role"),
                      options.role,
                      "Catalog role (default: the role a launch takes its image from)");
  fallback.add_flag(pb::cli::flag("no-stage"),
                    options.no_stage,
                    "The image of a launch with --no-stage (the primebeaker-runtime role)");
  fallback.callback([&options] {
    const Catalog catalog = Catalog::from_environment(env::snapshot());
    const std::string_view role =
        options.role.empty() ? catalog.launch_role(!options.no_stage) : options.role;
    std::cout << catalog.default_location(options.workspace, role).immutable_uri << '\n';
  });
}

} // namespace pb::images
