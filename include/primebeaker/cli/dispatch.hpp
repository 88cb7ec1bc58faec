// SPDX-License-Identifier: MIT
// What the root command does before CLI11 parses (docs/cli.md): find the command path in argv,
// refuse unknown commands with a suggestion, accept Fire-style --noFLAG, and generate shell
// completion and the man page from the command tree.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::cli {

// The candidate closest to `typed` (edit distance with transpositions, a prefix counts as
// close), if one is close enough to be what the user meant.
std::optional<std::string> closest_name(std::string_view typed,
                                        const std::vector<std::string> &candidates);

// Where argv's command path ends in `root`'s tree.
struct CommandPath {
  CLI::App *command = nullptr;    // the deepest command named in args (root when none)
  std::vector<std::string> names; // its path, e.g. {"rl", "preview"}
  bool help_requested = false;    // -h, --help or --help-all appears before "--"
};

// Walks `args` (argv without the program name) down `root`'s subcommands. Throws a usage error
// "unknown command '<path> X'" (with "did you mean" when one is close) where a group that needs
// a subcommand meets a word that is none of them.
CommandPath match_command_path(CLI::App &root, const std::vector<std::string> &args);

// Throws a usage error for the first flag in `args` that the command it follows (with the
// parents that command falls through to) does not know: "unknown flag '--tom' for 'rl preview';
// did you mean '--toml'? Run 'primebeaker rl preview --help' for its flags". Words CLI11 takes
// as a flag's value are skipped as CLI11 skips them, "-5" is a value as for CLI11, nothing after
// "--" is looked at, and a command that keeps unknown words (allow_extras) is not checked.
// Call it after the command path matched (its leaves built) and Fire negations were rewritten.
void check_flags(CLI::App &root, const std::vector<std::string> &args);

// Rewrites Fire-style negations for the options `command` (or a parent it falls through to)
// knows: --noFLAG -> --no-FLAG (or --no_FLAG) when that option exists, else --FLAG=false when
// --FLAG is a flag. Anything the tree does not know is left for CLI11 to judge.
std::vector<std::string> rewrite_fire_negations(const CLI::App &command,
                                                std::vector<std::string> args);

// True when the option reads a value (`--toml FILE`), false for flags (`--dry-run`, `-v`).
inline bool takes_value(const CLI::Option &option) {
  return option.get_items_expected_max() > 0;
}

// Completion scripts and the man page, generated from the whole tree under `root`.
std::string completion_script(const CLI::App &root, std::string_view shell); // bash, zsh, fish
std::string man_page(const CLI::App &root, std::string_view version);

} // namespace pb::cli
