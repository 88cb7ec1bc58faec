// SPDX-License-Identifier: MIT
// `primebeaker services ...`: delegation to LiteRegistry's launchers and `images install`.
#include "service_images.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/services/launcher.hpp>
#include <primebeaker/services/launcher_config.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>

namespace pb::services {
namespace {

struct YamlCommandOptions {
  std::string config_path;
  std::optional<std::string> python;
};

struct StopOptions {
  std::string experiment_id;
  bool dry_run = false;
  std::optional<std::string> python;
};

// PRIMEBEAKER_BEAKER applies to the upstream launchers' beaker calls too.
void use_beaker_from(LiteRegistry &launcher, const std::map<std::string, std::string> &env) {
  const auto path = env.find("PATH");
  launcher.use_beaker(beaker::program_from_environment(env),
                      path != env.end() ? path->second : "/usr/bin:/bin");
}

void add_python_option(cli::Command &command, std::optional<std::string> &target) {
  command.add_option(cli::flag("python"),
                     target,
                     "Python interpreter that has LiteRegistry's launchers "
                     "(default: $PRIMEBEAKER_PYTHON, else python3)");
}

void register_field_command(cli::CommandTree &tree,
                            std::initializer_list<std::string_view> path,
                            Stack stack,
                            bool submit) {
  const StackInfo &info = stack_info(stack);
  const std::string description =
      submit ? fmt::format("Launch a LiteRegistry {} stack on Beaker via {}",
                           info.name,
                           info.launcher_class)
             : fmt::format("Preview a LiteRegistry {} stack (no Beaker call, nothing written)",
                           info.name);
  cli::Command &command = tree.command(path, description);
  command.allow_extras();
  // Field flags are not ours to know, so they must not fall through to the root (which would
  // reject them); -v after the subcommand is honoured below instead.
  command.fallthrough(false);
  command.footer(fmt::format(
      "Every --field value, --field=value or bare --flag (booleans; --no-flag for false) becomes "
      "a field of {}.{}, its text converted to the field's declared type; --service-cluster a,b "
      "is read as service_clusters. --python selects the interpreter.",
      info.module,
      info.config_class));
  command.callback([&command, stack, submit] {
    std::vector<std::string> args;
    int verbosity = 0;
    for (const auto &arg : command.remaining()) {
      if (arg == "--verbose" || (arg.size() >= 2 && arg[0] == '-' && arg[1] == 'v' &&
                                 arg.find_first_not_of('v', 1) == std::string::npos)) {
        verbosity += arg == "--verbose" ? 1 : static_cast<int>(arg.size() - 1);
      } else {
        args.push_back(arg);
      }
    }
    if (verbosity > 0) {
      spdlog::set_level(verbosity >= 2 ? spdlog::level::debug : spdlog::level::info);
    }
    const auto parsed = config_from_flags(stack, args);
    const auto env = env::snapshot();
    proc::SystemRunner runner;
    LiteRegistry launcher(runner, resolve_python(parsed.python, env));
    use_beaker_from(launcher, env);
    print_json(std::cout,
               submit ? launcher.submit(parsed.config) : launcher.preview(parsed.config));
  });
}

std::filesystem::path expand_user(const std::string &path,
                                  const std::map<std::string, std::string> &env) {
  if (path == "~" || text::starts_with(path, "~/")) {
    if (const auto home = env.find("HOME"); home != env.end()) {
      return home->second + path.substr(1);
    }
  }
  return path;
}

void register_yaml_command(cli::CommandTree &tree,
                           std::initializer_list<std::string_view> path,
                           Stack stack,
                           bool submit) {
  const StackInfo &info = stack_info(stack);
  cli::Command &command =
      tree.command(path,
                   submit ? fmt::format("Launch the LiteRegistry {} stack described by a {} YAML",
                                        info.name,
                                        k_services_schema)
                          : fmt::format("Preview the LiteRegistry {} stack described by a {} YAML",
                                        info.name,
                                        k_services_schema));
  auto &options = tree.make_options<YamlCommandOptions>();
  command.add_option("config", options.config_path, "The services YAML").type_name("FILE");
  command.add_option(cli::flag("config"), options.config_path, "The services YAML")
      .type_name("FILE");
  add_python_option(command, options.python);
  command.callback([&options, stack, submit] {
    if (options.config_path.empty()) {
      throw usage_error("--config FILE is required");
    }
    const auto env = env::snapshot();
    const auto text = fs::read_file(expand_user(options.config_path, env));
    const auto document = yaml::parse_yaml(text, options.config_path);
    const auto config = load_services_yaml(stack, document, env);
    proc::SystemRunner runner;
    LiteRegistry launcher(runner, resolve_python(options.python, env));
    use_beaker_from(launcher, env);
    print_json(std::cout, submit ? launcher.submit(config) : launcher.preview(config));
  });
}

void register_stop_command(cli::CommandTree &tree,
                           std::initializer_list<std::string_view> path,
                           Stack stack) {
  cli::Command &command = tree.command(
      path,
      fmt::format("Stop a LiteRegistry {} stack (beaker experiment stop)", stack_info(stack).name));
  auto &options = tree.make_options<StopOptions>();
  command.add_option("experiment_id", options.experiment_id, "The service experiment ID")
      .type_name("ID");
  command.add_option(cli::flag("experiment-id"), options.experiment_id, "The service experiment ID")
      .type_name("ID");
  command.add_flag("--dry-run,--dry_run,!--no-dry-run",
                   options.dry_run,
                   "Print the stop command without running it");
  add_python_option(command, options.python);
  command.callback([&options, stack] {
    if (options.experiment_id.empty()) {
      throw usage_error("an experiment ID is required: services stop ID");
    }
    proc::SystemRunner runner;
    const auto env = env::snapshot();
    LiteRegistry launcher(runner, resolve_python(options.python, env));
    use_beaker_from(launcher, env);
    print_json(std::cout, launcher.stop(stack, options.experiment_id, options.dry_run));
  });
}

} // namespace

void register_commands(cli::CommandTree &tree) {
  tree.command({"services"}, "LiteRegistry service stacks, through LiteRegistry's own launchers");
  tree.command({"services", "podman"}, "LiteRegistry Podman + Docker mirror stacks");
  tree.command({"services", "yaml"}, "Base stacks from a primebeaker.services/v1 YAML");
  tree.command({"services", "podman", "yaml"}, "Podman stacks from a primebeaker.services/v1 YAML");
  register_field_command(tree, {"services", "preview"}, Stack::base, false);
  register_field_command(tree, {"services", "launch"}, Stack::base, true);
  register_stop_command(tree, {"services", "stop"}, Stack::base);
  register_yaml_command(tree, {"services", "yaml", "preview"}, Stack::base, false);
  register_yaml_command(tree, {"services", "yaml", "launch"}, Stack::base, true);
  register_field_command(tree, {"services", "podman", "preview"}, Stack::podman, false);
  register_field_command(tree, {"services", "podman", "launch"}, Stack::podman, true);
  register_stop_command(tree, {"services", "podman", "stop"}, Stack::podman);
  register_yaml_command(tree, {"services", "podman", "yaml", "preview"}, Stack::podman, false);
  register_yaml_command(tree, {"services", "podman", "yaml", "launch"}, Stack::podman, true);
  register_images_command(tree);
}

} // namespace pb::services
