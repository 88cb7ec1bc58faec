// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::cli {

// The command tree modules plug into. Each module with commands defines
//   void pb::<module>::register_commands(pb::cli::CommandTree&);
// which the build finds by itself (cmake/PbModules.cmake); no central list to edit.
class CommandTree {
public:
  explicit CommandTree(CLI::App &root) : m_root(root) {}

  // The command at `path` (e.g. {"toml", "get"}), creating missing levels. A group created here
  // requires one of its subcommands. `description` applies when the last level is created or
  // still has none, so two modules can share a group ("rl" gets preview/submit and resume).
  CLI::App &command(std::initializer_list<std::string_view> path, const std::string &description);

  // A command whose options and callback `build` adds, but only when this process may use them:
  // argv names the command, or the whole tree is wanted (no argv given: --help-all, completion,
  // the man page). Otherwise the command exists with its description alone, which is all help
  // listings and "did you mean" read; a command's options are most of what start-up builds.
  void leaf(std::initializer_list<std::string_view> path,
            const std::string &description,
            const std::function<void(CLI::App &)> &build);

  // The words of argv (without the program name). From then on, leaf() builds only the
  // commands whose names all appear in them, in order, before "--".
  void only_for(std::vector<std::string> args) { m_args = std::move(args); }

  // Storage for a command's options that lives as long as the tree (CLI11 binds by reference).
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
  std::optional<std::vector<std::string>> m_args; // unset: build every leaf
  std::vector<std::shared_ptr<void>> m_keep_alive;
  int m_verbosity = 0;
};

// "--min-runtime-hours,--min_runtime_hours": the kebab name plus its snake_case spelling, as
// CLI11 option names (docs/cli.md). Extra short names may follow: flag("string", "-s").
std::string flag(std::string_view kebab_name, std::string_view extra = {});

// Adds a list option that accumulates across repetitions and also takes one JSON list literal
// (`--cluster='["a","b"]'`), splitting it into elements after parsing.
CLI::Option *add_list_option(CLI::App &app,
                             std::string_view kebab_name,
                             std::vector<std::string> &target,
                             const std::string &help);

} // namespace pb::cli
