// SPDX-License-Identifier: MIT
// `primebeaker images list` and `primebeaker images default [--toml T] --workspace WS`.
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/images/catalog.hpp>
#include <primebeaker/images/choose.hpp>
#include <primebeaker/toml/value.hpp>

#include <spdlog/spdlog.h>

#include <iostream>

namespace pb::images {

void register_commands(pb::cli::CommandTree &tree) {
  tree.command({"images"}, "The Prime-RL image catalog built into primebeaker");

  auto &list = tree.command({"images", "list"},
                            "Print the cataloged images, with the Prime-RL each holds, as a JSON "
                            "array (launch roles first)");
  list.callback(
      [] { print_json(std::cout, list_json(Catalog::from_environment(env::snapshot()))); });

  struct DefaultOptions {
    std::string workspace; // empty: the user's default workspace (docs/config.md)
    std::string role;
    std::string toml;
    std::string prime_rl;
    bool no_stage = false;
  };
  auto &options = tree.make_options<DefaultOptions>();
  auto &fallback = tree.command({"images", "default"},
                                "Print the image `sft|rl submit` runs for a workspace when "
                                "--image is not given (beaker://ID or a registry reference)");
  fallback.add_option(pb::cli::flag("workspace"),
                      options.workspace,
                      "Beaker workspace (default: `config get workspace`)");
  fallback.add_option(pb::cli::flag("toml"),
                      options.toml,
                      "The training TOML: the image whose Prime-RL reads it (docs/launch.md)");
  fallback.add_option(pb::cli::flag("prime-rl"),
                      options.prime_rl,
                      "Only images that hold this Prime-RL version (e.g. v0.8.0; default: "
                      "`config get prime_rl`)");
  fallback.add_option(pb::cli::flag("role"),
                      options.role,
                      "Catalog role (default: the role a launch takes its image from)");
  fallback.add_flag(pb::cli::flag("no-stage"),
                    options.no_stage,
                    "The image of a launch with --no-stage (the primebeaker-runtime role)");
  fallback.callback([&options] {
    const auto settings = config::Settings::load();
    if (options.workspace.empty()) {
      options.workspace = settings.text("workspace");
    }
    if (options.prime_rl.empty()) {
      options.prime_rl = settings.text("prime_rl"); // as a launch without --image takes it
      if (const auto *pinned = settings.get("prime_rl"); pinned != nullptr) {
        spdlog::info("--prime-rl {} from {}", options.prime_rl, pinned->origin);
      }
    }
    const Catalog catalog = Catalog::from_environment(env::snapshot());
    if (!options.toml.empty()) {
      const auto document = toml::Document::load(options.toml);
      // The entrypoint the launch would read it as: `rl` with [orchestrator], `sft` with [data].
      const bool sft = document.root().find("orchestrator") == nullptr &&
                       document.root().find("data") != nullptr;
      const ImageChoice choice =
          choose_image(catalog,
                       {"", options.prime_rl, options.workspace, !options.no_stage, {}},
                       document,
                       sft ? primerl::ConfigRoot::sft : primerl::ConfigRoot::rl);
      if (!choice.missing.empty()) {
        throw usage_error(choice.missing + ": pass --image");
      }
      spdlog::info("{} ({}): {}", choice.name, primerl::display_name(choice.prime_rl), choice.why);
      std::cout << choice.reference << '\n';
      return;
    }
    const std::string_view role =
        options.role.empty() ? catalog.launch_role(!options.no_stage) : options.role;
    std::cout << catalog.default_location(options.workspace, role).reference() << '\n';
  });
}

} // namespace pb::images
