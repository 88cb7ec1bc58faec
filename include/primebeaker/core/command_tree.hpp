// SPDX-License-Identifier: MIT
// The command tree modules plug into, and the small interface through which they declare
// their options. CLI11 stays out of this header: its header-only validators are built by the
// static initialiser of every translation unit that includes it, which every command used to
// pay at start-up (docs/ARCHITECTURE.md, "The root command"). Only src/core/command_tree.cpp and
// the cli module include CLI11.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace pb::cli {

// One option of a command. Setters return the option, so they chain:
//   cmd.add_option(flag("port"), port, "Port").capture_default_str().in_range(1, 65535);
class Option {
public:
  explicit Option(CLI::Option &option) : m_option(&option) {}

  Option &required(bool value = true);
  Option &capture_default_str(); // help shows the target's value before parsing
  Option &default_str(const std::string &text);
  Option &description(const std::string &text);
  Option &type_name(const std::string &name); // FILE, ID, ... in help
  Option &one_of(std::vector<std::string> choices);
  Option &in_range(std::int64_t min, std::int64_t max);
  Option &take_all();  // every repetition is kept, one value per occurrence
  Option &take_last(); // a repetition replaces the earlier value

  CLI::Option &cli11() const { return *m_option; }

private:
  CLI::Option *m_option;
};

// One command of the tree. Owned by the CommandTree, so callbacks may keep references to it.
class Command {
public:
  explicit Command(CLI::App &app) : m_app(&app) {}
  Command(const Command &) = delete;
  Command &operator=(const Command &) = delete;

  // Positional when `names` has no leading '-'. Defined for the value types modules use
  // (src/core/command_tree.cpp lists them: strings, paths, int, double, lists of strings and
  // optionals); another type is a link error until it is added there.
  template <typename T>
  Option add_option(const std::string &names, T &target, const std::string &help = {});
  // Calls `apply` with the value once parsing has read it.
  Option add_option_function(const std::string &names,
                             std::function<void(const std::string &)> apply,
                             const std::string &help = {});
  Option add_list_option_function(const std::string &names,
                                  std::function<void(const std::vector<std::string> &)> apply,
                                  const std::string &help = {});
  // A flag sets a bool; "!--no-x" names set it false.
  Option add_flag(const std::string &names, bool &target, const std::string &help = {});
  Option add_flag_function(const std::string &names,
                           std::function<void(std::int64_t)> apply,
                           const std::string &help = {});

  void callback(std::function<void()> run);
  // Words this command does not know are kept for remaining() instead of refused.
  void allow_extras();
  // Whether options this command does not know may belong to its parents (on by default).
  void fallthrough(bool value);
  void footer(const std::string &text);
  void group(const std::string &name); // "" hides the command from help listings
  std::vector<std::string> remaining() const;
  std::optional<Option> find_option(const std::string &name) const;
  std::string name() const;

  CLI::App &cli11() const { return *m_app; }

private:
  CLI::App *m_app;
};

// Each module with commands defines
//   void pb::<module>::register_commands(pb::cli::CommandTree&);
// which the build finds by itself (cmake/PbModules.cmake); no central list to edit.
class CommandTree {
public:
  explicit CommandTree(CLI::App &root);
  ~CommandTree();
  CommandTree(const CommandTree &) = delete;
  CommandTree &operator=(const CommandTree &) = delete;

  // The command at `path` (e.g. {"toml", "get"}), creating missing levels. A group created here
  // requires one of its subcommands. `description` applies when the last level is created or
  // still has none, so two modules can share a group ("rl" gets preview/submit and resume).
  Command &command(std::initializer_list<std::string_view> path, const std::string &description);

  // A command whose options and callback `build` adds, but only when this process may use them:
  // argv names the command, or the whole tree is wanted (no argv given: --help-all, completion,
  // the man page). Otherwise the command exists with its description alone, which is all help
  // listings and "did you mean" read; a command's options are most of what start-up builds.
  void leaf(std::initializer_list<std::string_view> path,
            const std::string &description,
            const std::function<void(Command &)> &build);

  // The words of argv (without the program name). From then on, leaf() builds only the
  // commands whose names all appear in them, in order, before "--".
  void only_for(std::vector<std::string> args) { m_args = std::move(args); }

  // Storage for a command's options that lives as long as the tree (options bind by reference).
  template <typename T> T &make_options() {
    auto holder = std::make_shared<T>();
    T &ref = *holder;
    m_keep_alive.push_back(std::move(holder));
    return ref;
  }

  // Verbosity from -v, readable by commands when they run.
  int verbosity() const { return m_verbosity; }
  int &verbosity_storage() { return m_verbosity; }

private:
  bool named_in_args(std::initializer_list<std::string_view> path) const;

  CLI::App &m_root;
  std::vector<std::unique_ptr<Command>> m_commands; // one per CLI::App handed out
  std::optional<std::vector<std::string>> m_args;   // unset: build every leaf
  std::vector<std::shared_ptr<void>> m_keep_alive;
  int m_verbosity = 0;
};

// "--min-runtime-hours,--min_runtime_hours": the kebab name plus its snake_case spelling, as
// option names (docs/cli.md). Extra short names may follow: flag("string", "-s").
std::string flag(std::string_view kebab_name, std::string_view extra = {});

// Adds a list option that accumulates across repetitions and also takes one JSON list literal
// (`--cluster='["a","b"]'`), splitting it into elements after parsing.
Option add_list_option(Command &command,
                       std::string_view kebab_name,
                       std::vector<std::string> &target,
                       const std::string &help);

} // namespace pb::cli
