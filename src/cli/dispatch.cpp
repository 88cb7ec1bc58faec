// SPDX-License-Identifier: MIT
// Finding the command path in argv before CLI11 parses, and Fire-style --noFLAG.
#include <primebeaker/cli/dispatch.hpp>
#include <primebeaker/core/error.hpp>

namespace pb::cli {

namespace {

std::vector<CLI::App *> subcommands_of(CLI::App &app) {
  return app.get_subcommands([](CLI::App *) { return true; });
}

bool has_positionals(const CLI::App &app) {
  return !app.get_options([](const CLI::Option *o) { return o->get_positional(); }).empty();
}

// The option `token` names in `app` or a parent it falls through to ("--toml=F" names --toml).
const CLI::Option *find_option(const CLI::App &app, const std::string &token) {
  const std::string name = token.substr(0, token.find('='));
  for (const CLI::App *at = &app; at != nullptr; at = at->get_parent()) {
    if (const CLI::Option *option = at->get_option_no_throw(name)) {
      return option;
    }
    if (!at->get_fallthrough()) {
      break;
    }
  }
  return nullptr;
}

std::string joined(const std::vector<std::string> &names, std::string_view separator) {
  std::string out;
  for (const auto &name : names) {
    out += (out.empty() ? "" : std::string(separator)) + name;
  }
  return out;
}

} // namespace

CommandPath match_command_path(CLI::App &root, const std::vector<std::string> &args) {
  CommandPath path;
  path.command = &root;
  bool at_leaf = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &token = args[i];
    if (token == "--") {
      break;
    }
    if (token == "-h" || token == "--help" || token == "--help-all") {
      path.help_requested = true;
      continue;
    }
    if (at_leaf) {
      continue; // the command's own arguments: only looking for a help flag
    }
    if (token.size() > 1 && token[0] == '-') {
      const CLI::Option *option = find_option(*path.command, token);
      const bool value_attached =
          token.find('=') != std::string::npos || (token[1] != '-' && token.size() > 2);
      if (option != nullptr && takes_value(*option) && !value_attached) {
        ++i; // "--flag value": the value is not a command
      }
      continue;
    }
    const auto subcommands = subcommands_of(*path.command);
    CLI::App *next = nullptr;
    for (CLI::App *sub : subcommands) {
      if (sub->check_name(token)) {
        next = sub;
        break;
      }
    }
    if (next != nullptr) {
      path.command = next;
      path.names.push_back(next->get_name());
      continue;
    }
    if (!subcommands.empty() && path.command->get_require_subcommand_min() > 0 &&
        !has_positionals(*path.command)) {
      std::vector<std::string> names;
      for (const CLI::App *sub : subcommands) {
        if (!sub->get_group().empty()) {
          names.push_back(sub->get_name());
        }
      }
      const std::string prefix = path.names.empty() ? "" : joined(path.names, " ") + " ";
      Error error = usage_error("unknown command '" + prefix + token + "'");
      if (const auto suggestion = closest_name(token, names)) {
        error.add_context("did you mean '" + prefix + *suggestion + "'?");
      }
      error.add_context("run 'primebeaker " + prefix + "--help' for the commands" +
                        (names.empty() ? "" : ": " + joined(names, ", ")));
      throw error;
    }
    at_leaf = true;
  }
  return path;
}

std::vector<std::string> rewrite_fire_negations(const CLI::App &command,
                                                std::vector<std::string> args) {
  for (auto &token : args) {
    if (token == "--") {
      break;
    }
    // Only --noFLAG: "--no-" and "--no_" are already the spellings CLI11 knows.
    if (token.size() <= 4 || token.rfind("--no", 0) != 0 || token[4] == '-' || token[4] == '_' ||
        token.find('=') != std::string::npos || find_option(command, token) != nullptr) {
      continue;
    }
    const std::string flag = token.substr(4);
    for (const std::string &candidate : {"--no-" + flag, "--no_" + flag}) {
      if (find_option(command, candidate) != nullptr) {
        token = candidate;
        break;
      }
    }
    if (token.rfind("--no", 0) == 0 && token.size() > 4 && token[4] != '-' && token[4] != '_') {
      const CLI::Option *positive = find_option(command, "--" + flag);
      if (positive != nullptr && !takes_value(*positive)) {
        token = "--" + flag + "=false";
      }
    }
  }
  return args;
}

} // namespace pb::cli
