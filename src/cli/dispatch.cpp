// SPDX-License-Identifier: MIT
// Finding the command path in argv before CLI11 parses, and Fire-style --noFLAG.
#include <primebeaker/cli/dispatch.hpp>
#include <primebeaker/core/error.hpp>

#include <algorithm>

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

CLI::App *subcommand_named(CLI::App &app, const std::string &token) {
  for (CLI::App *sub : subcommands_of(app)) {
    if (sub->check_name(token)) {
      return sub;
    }
  }
  return nullptr;
}

// Whether CLI11 reads `token` as an option of `app` (its _recognize): "--name..." or "-x...",
// the name starting with a valid character; "-5" is a value unless `app` has an option "-5".
bool reads_as_flag(const CLI::App &app, const std::string &token) {
  if (token.size() < 2 || token[0] != '-') {
    return false;
  }
  const bool long_form = token[1] == '-';
  if (long_form && token.size() < 3) {
    return false; // "--" ends the options
  }
  const char first = token[long_form ? 2 : 1];
  if (first == '-' || first == '!' || first == ' ' || first == '\n') {
    return false;
  }
  if (!long_form && first >= '0' && first <= '9') {
    return app.get_option_no_throw(token.substr(0, 2)) != nullptr;
  }
  return true;
}

// How many following words CLI11 takes as the option's value whatever they look like.
std::size_t values_taken(const CLI::Option &option) {
  return static_cast<std::size_t>(
      std::max(0, std::min(option.get_type_size_min(), option.get_items_expected_min())));
}

// Whether CLI11 goes on taking the words after the option's values until the next flag (a list
// option such as `--set A=1 B=2`), as its _parse_arg does.
bool takes_more_words(const CLI::Option &option) {
  const int most = option.get_items_expected_max();
  const bool capped = most >= CLI::detail::expected_max_vector_size / 16; // one value per flag
  return option.get_allow_extra_args() ||
         (!capped && most > static_cast<int>(values_taken(option)));
}

bool names_toml_flag(const std::vector<std::string> &args) {
  return std::any_of(args.begin(), args.end(), [](const std::string &arg) {
    return arg == "--toml" || arg.rfind("--toml=", 0) == 0;
  });
}

// `rl preview my.toml`: the file of a command that takes it as --toml, given as a positional,
// which CLI11 reports as "--toml is required" or as an argument it did not expect.
void refuse_positional_toml(const CLI::App &command,
                            const std::string &word,
                            const std::vector<std::string> &args) {
  if (has_positionals(command) || command.get_allow_extras() ||
      find_option(command, "--toml") == nullptr) {
    return;
  }
  if (word.ends_with(".toml") || !names_toml_flag(args)) {
    throw usage_error("a positional " + word + ": pass it as --toml " + word);
  }
}

// The long names (without "--") of the options `app` accepts: its own and those of the
// parents it falls through to, as listed in its help.
std::vector<std::string> long_flag_names(const CLI::App &app) {
  std::vector<std::string> names;
  for (const CLI::App *at = &app; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option *option : at->get_options()) {
      if (option->get_group().empty()) {
        continue; // hidden
      }
      for (const auto &name : option->get_lnames()) {
        names.push_back(name);
      }
    }
    if (!at->get_fallthrough()) {
      break;
    }
  }
  return names;
}

Error unknown_flag(const CLI::App &command,
                   const std::vector<std::string> &names,
                   const std::string &flag) {
  const std::string path = joined(names, " ");
  std::string message =
      "unknown flag '" + flag + "' for '" + (path.empty() ? "primebeaker" : path) + "'";
  const std::string typed = flag.substr(flag.find_first_not_of('-'));
  const auto suggestion =
      typed.size() > 1 ? closest_name(typed, long_flag_names(command)) : std::nullopt;
  message += suggestion ? "; did you mean '--" + *suggestion + "'? Run" : "; run";
  message += " 'primebeaker " + (path.empty() ? "" : path + " ") + "--help' for its flags";
  return usage_error(message);
}

} // namespace

bool is_snake_alias(const CLI::Option &option, const std::string &long_name) {
  if (long_name.find('_') == std::string::npos) {
    return false;
  }
  std::string kebab = long_name;
  std::replace(kebab.begin(), kebab.end(), '_', '-');
  const auto &names = option.get_lnames();
  return std::find(names.begin(), names.end(), kebab) != names.end();
}

std::string HelpFormatter::make_option_name(const CLI::Option *option, bool is_positional) const {
  const std::string names = CLI::Formatter::make_option_name(option, is_positional);
  if (is_positional) {
    return names;
  }
  // CLI11 joins "-s", "--long" and "--no-flag{false}" with ','; drop the aliases from that list.
  std::string shown;
  for (const auto &name : CLI::detail::split(names, ',')) {
    const std::string bare = name.substr(0, name.find('{'));
    if (bare.rfind("--", 0) == 0 && is_snake_alias(*option, bare.substr(2))) {
      continue;
    }
    shown += (shown.empty() ? "" : ",") + name;
  }
  return shown;
}

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
    CLI::App *next = subcommand_named(*path.command, token);
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

void check_flags(CLI::App &root, const std::vector<std::string> &args) {
  CLI::App *command = &root;
  std::vector<std::string> names;
  bool at_leaf = false;
  bool option_takes_more = false; // the words up to the next flag are the last option's values
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string &token = args[i];
    if (token == "--") {
      break;
    }
    if (!reads_as_flag(*command, token)) {
      if (!at_leaf) {
        if (CLI::App *next = subcommand_named(*command, token)) {
          command = next;
          names.push_back(next->get_name());
          continue;
        }
      }
      if (!option_takes_more) {
        at_leaf = true; // a positional argument
        refuse_positional_toml(*command, token, args);
      }
      continue;
    }
    option_takes_more = false;
    if (command->get_allow_extras()) {
      continue; // the command keeps the words it does not know (services field flags)
    }
    if (token[1] == '-') {
      const std::size_t equals = token.find('=');
      const std::string name = token.substr(0, equals);
      const CLI::Option *option = find_option(*command, name);
      if (option == nullptr) {
        throw unknown_flag(*command, names, name);
      }
      if (takes_value(*option)) {
        i += equals == std::string::npos ? values_taken(*option) : 0;
        option_takes_more = takes_more_words(*option);
      }
      continue;
    }
    // "-v", "-vv" (flags stacked), "-o FILE", "-oFILE".
    for (std::size_t j = 1; j < token.size(); ++j) {
      const CLI::Option *option = find_option(*command, std::string{'-', token[j]});
      if (option == nullptr) {
        throw unknown_flag(*command, names, j == 1 ? token : std::string{'-', token[j]});
      }
      if (takes_value(*option)) {
        if (j + 1 == token.size()) {
          i += values_taken(*option);
        }
        option_takes_more = takes_more_words(*option);
        break;
      }
    }
  }
}

} // namespace pb::cli
