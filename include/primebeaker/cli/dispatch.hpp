// SPDX-License-Identifier: MIT
// What the root command does before CLI11 parses (docs/ARCHITECTURE.md, "The root command"): find
// the command path in argv, refuse unknown commands with a suggestion, accept Fire-style --noFLAG,
// and generate shell completion and the man page from the command tree.
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
// A word that is nobody's value, given to a command that takes no positionals but a --toml,
// is refused as "a positional my.toml: pass it as --toml my.toml" (when it ends in .toml or no
// --toml is given). Call it after the command path matched (its leaves built) and Fire
// negations were rewritten.
void check_flags(CLI::App &root, const std::vector<std::string> &args);

// Rewrites Fire-style negations for the options `command` (or a parent it falls through to)
// knows: --noFLAG -> --no-FLAG (or --no_FLAG) when that option exists, else --FLAG=false when
// --FLAG is a flag. Anything the tree does not know is left for CLI11 to judge.
std::vector<std::string> rewrite_fire_negations(const CLI::App &command,
                                                std::vector<std::string> args);

// Whether `long_name` (without "--") is the snake_case spelling of another long name of
// `option` ("min_runtime_hours" beside "min-runtime-hours"): accepted, but not shown in help or
// the man page, which would otherwise list every launch flag twice.
bool is_snake_alias(const CLI::Option &option, const std::string &long_name);

// The formatter of every command's help: CLI11's, without the snake_case aliases.
class HelpFormatter : public CLI::Formatter {
public:
  std::string make_option_name(const CLI::Option *option, bool is_positional) const override;
};

// True when the option reads a value (`--toml FILE`), false for flags (`--dry-run`, `-v`).
inline bool takes_value(const CLI::Option &option) {
  return option.get_items_expected_max() > 0;
}

// Completion scripts and the man page, generated from the whole tree under `root`.
std::string completion_script(const CLI::App &root, std::string_view shell); // bash, zsh, fish
// `version` is the bare version ("0.1.0"): the page's header reads "primebeaker 0.1.0".
std::string man_page(const CLI::App &root, std::string_view version);

} // namespace pb::cli
