// SPDX-License-Identifier: MIT
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace pb::cli {

CLI::App &CommandTree::command(std::initializer_list<std::string_view> path,
                               const std::string &description) {
  CLI::App *current = &m_root;
  size_t depth = 0;
  for (const auto name : path) {
    ++depth;
    const std::string key(name);
    CLI::App *next = nullptr;
    for (CLI::App *sub : current->get_subcommands([](CLI::App *) { return true; })) {
      if (sub->get_name() == key) {
        next = sub;
        break;
      }
    }
    const bool last = depth == path.size();
    if (next == nullptr) {
      next = current->add_subcommand(key, last ? description : std::string());
      next->fallthrough(true); // root flags such as -v work after any subcommand
      current->require_subcommand(1);
    } else if (last && next->get_description().empty()) {
      next->description(description);
    }
    current = next;
  }
  return *current;
}

void CommandTree::leaf(std::initializer_list<std::string_view> path,
                       const std::string &description,
                       const std::function<void(CLI::App &)> &build) {
  CLI::App &app = command(path, description);
  if (named_in_args(path)) {
    build(app);
  }
}

bool CommandTree::named_in_args(std::initializer_list<std::string_view> path) const {
  if (!m_args) {
    return true;
  }
  auto word = m_args->begin();
  for (const auto name : path) {
    word = std::find_if(
        word, m_args->end(), [name](const std::string &arg) { return arg == name || arg == "--"; });
    if (word == m_args->end() || *word == "--") {
      return false;
    }
    ++word;
  }
  return true;
}

std::string flag(std::string_view kebab_name, std::string_view extra) {
  std::string names;
  if (!extra.empty()) {
    names = std::string(extra) + ",";
  }
  names += "--" + std::string(kebab_name);
  const std::string snake = text::snake_case(kebab_name);
  if (snake != kebab_name) {
    names += ",--" + snake;
  }
  return names;
}

CLI::Option *add_list_option(CLI::App &app,
                             std::string_view kebab_name,
                             std::vector<std::string> &target,
                             const std::string &help) {
  auto *option = app.add_option_function<std::vector<std::string>>(
      flag(kebab_name),
      [&target, name = std::string(kebab_name)](const std::vector<std::string> &values) {
        target = list_values(name, values);
      },
      help);
  option->allow_extra_args(false);
  option->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return option;
}

} // namespace pb::cli
