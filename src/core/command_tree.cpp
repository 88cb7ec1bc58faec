// SPDX-License-Identifier: MIT
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>

namespace pb::cli {

Option &Option::required(bool value) {
  m_option->required(value);
  return *this;
}

Option &Option::capture_default_str() {
  m_option->capture_default_str();
  return *this;
}

Option &Option::default_str(const std::string &text) {
  m_option->default_str(text);
  return *this;
}

Option &Option::description(const std::string &text) {
  m_option->description(text);
  return *this;
}

Option &Option::type_name(const std::string &name) {
  m_option->type_name(name);
  return *this;
}

Option &Option::one_of(std::vector<std::string> choices) {
  m_option->check(CLI::IsMember(std::move(choices)));
  return *this;
}

Option &Option::in_range(std::int64_t min, std::int64_t max) {
  m_option->check(CLI::Range(min, max));
  return *this;
}

Option &Option::take_all() {
  m_option->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return *this;
}

Option &Option::take_last() {
  m_option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return *this;
}

template <typename T>
Option Command::add_option(const std::string &names, T &target, const std::string &help) {
  return Option(*m_app->add_option(names, target, help));
}

// The value types modules bind options to; a new one is one more line here.
template Option Command::add_option(const std::string &, std::string &, const std::string &);
template Option Command::add_option(const std::string &, int &, const std::string &);
template Option Command::add_option(const std::string &, double &, const std::string &);
template Option
Command::add_option(const std::string &, std::filesystem::path &, const std::string &);
template Option
Command::add_option(const std::string &, std::vector<std::string> &, const std::string &);
template Option
Command::add_option(const std::string &, std::optional<std::string> &, const std::string &);
template Option Command::add_option(const std::string &, std::optional<int> &, const std::string &);
template Option
Command::add_option(const std::string &, std::optional<std::int64_t> &, const std::string &);
template Option
Command::add_option(const std::string &, std::optional<double> &, const std::string &);

Option Command::add_option_function(const std::string &names,
                                    std::function<void(const std::string &)> apply,
                                    const std::string &help) {
  return Option(*m_app->add_option_function<std::string>(names, std::move(apply), help));
}

Option
Command::add_list_option_function(const std::string &names,
                                  std::function<void(const std::vector<std::string> &)> apply,
                                  const std::string &help) {
  CLI::Option *option =
      m_app->add_option_function<std::vector<std::string>>(names, std::move(apply), help);
  option->allow_extra_args(false); // one value per occurrence: `--env A=1 CMD` keeps CMD apart
  return Option(*option).take_all();
}

Option Command::add_flag(const std::string &names, bool &target, const std::string &help) {
  return Option(*m_app->add_flag(names, target, help));
}

Option Command::add_flag_function(const std::string &names,
                                  std::function<void(std::int64_t)> apply,
                                  const std::string &help) {
  return Option(*m_app->add_flag_function(names, std::move(apply), help));
}

void Command::callback(std::function<void()> run) {
  m_app->callback(std::move(run));
}

void Command::allow_extras() {
  m_app->allow_extras();
}

void Command::fallthrough(bool value) {
  m_app->fallthrough(value);
}

void Command::footer(const std::string &text) {
  m_app->footer(text);
}

void Command::group(const std::string &name) {
  m_app->group(name);
}

std::vector<std::string> Command::remaining() const {
  return m_app->remaining();
}

std::optional<Option> Command::find_option(const std::string &name) const {
  if (CLI::Option *option = m_app->get_option_no_throw(name)) {
    return Option(*option);
  }
  return std::nullopt;
}

std::string Command::name() const {
  return m_app->get_name();
}

CommandTree::CommandTree(CLI::App &root) : m_root(root) {}

CommandTree::~CommandTree() = default;

Command &CommandTree::command(std::initializer_list<std::string_view> path,
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
  for (const auto &command : m_commands) {
    if (&command->cli11() == current) {
      return *command;
    }
  }
  return *m_commands.emplace_back(std::make_unique<Command>(*current));
}

void CommandTree::leaf(std::initializer_list<std::string_view> path,
                       const std::string &description,
                       const std::function<void(Command &)> &build) {
  Command &command = this->command(path, description);
  if (named_in_args(path)) {
    build(command);
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

Option add_list_option(Command &command,
                       std::string_view kebab_name,
                       std::vector<std::string> &target,
                       const std::string &help) {
  return command.add_list_option_function(
      flag(kebab_name),
      [&target, name = std::string(kebab_name)](const std::vector<std::string> &values) {
        target = list_values(name, values);
      },
      help);
}

} // namespace pb::cli
