// SPDX-License-Identifier: MIT
// Suggestions, command-path matching and --noFLAG rewriting on small hand-built trees.
#include "test_support.hpp"

#include <primebeaker/cli/dispatch.hpp>
#include <primebeaker/core/command_tree.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using pb::cli::closest_name;

TEST(Suggest, OneEditAwayIsSuggested) {
  const std::vector<std::string> names = {"preview", "submit", "resume"};
  EXPECT_EQ(closest_name("prevew", names), "preview");
  EXPECT_EQ(closest_name("sumbit", names), "submit"); // transposition
  EXPECT_EQ(closest_name("pre", names), "preview");   // prefix
  EXPECT_EQ(closest_name("bogus", names), std::nullopt);
  EXPECT_EQ(closest_name("x", names), std::nullopt);
}

TEST(Suggest, ClosestWins) {
  EXPECT_EQ(closest_name("rn", {"run", "rl"}), "run"); // both one edit: the first is kept
  EXPECT_EQ(closest_name("rnu", {"rl", "run"}), "run");
}

struct Tree {
  CLI::App root{"test", "primebeaker"};
  pb::cli::CommandTree tree{root};
  bool write_spec = false;
  bool if_exists = false;
  std::string notes;
  std::string toml;
  Tree() {
    root.add_flag("-v,--verbose");
    auto &preview = tree.command({"rl", "preview"}, "Preview");
    preview.add_flag(
        pb::cli::flag("write-spec") + ",!--no-write-spec,!--no_write_spec", write_spec, "");
    preview.add_flag(pb::cli::flag("if-exists"), if_exists, "");
    preview.add_option("--notes", notes, "");
    preview.add_option("--toml", toml, "");
    tree.command({"rl", "submit"}, "Submit");
  }
};

TEST(MatchCommandPath, FindsTheLeafPastFlags) {
  Tree t;
  const auto path =
      pb::cli::match_command_path(t.root, {"-v", "rl", "preview", "--toml", "submit"});
  EXPECT_EQ(path.names, (std::vector<std::string>{"rl", "preview"}));
  EXPECT_FALSE(path.help_requested);
  EXPECT_TRUE(pb::cli::match_command_path(t.root, {"rl", "--help"}).help_requested);
}

TEST(MatchCommandPath, UnknownSubcommandIsUsageErrorWithSuggestion) {
  Tree t;
  EXPECT_PB_ERROR(pb::cli::match_command_path(t.root, {"rl", "sumbit"}),
                  pb::ExitCode::usage,
                  "unknown command 'rl sumbit'");
  EXPECT_PB_ERROR(pb::cli::match_command_path(t.root, {"rl", "sumbit"}),
                  pb::ExitCode::usage,
                  "did you mean 'rl submit'?");
  EXPECT_PB_ERROR(pb::cli::match_command_path(t.root, {"rl", "zzzzzz"}),
                  pb::ExitCode::usage,
                  "preview, submit");
}

// Which leaves of a small tree got their options, for the argv given to only_for (none: all).
std::vector<std::string> leaves_built(std::optional<std::vector<std::string>> args) {
  CLI::App root{"test", "primebeaker"};
  pb::cli::CommandTree tree{root};
  if (args) {
    tree.only_for(*args);
  }
  std::vector<std::string> built;
  for (const auto &[group, name] : std::vector<std::pair<std::string, std::string>>{
           {"rl", "preview"}, {"rl", "submit"}, {"sft", "preview"}}) {
    tree.leaf({group, name},
              group + " " + name,
              [&built, group = group, name = name](pb::cli::Command &command) {
                command.cli11().add_flag("--dry-run");
                built.push_back(group + " " + name);
              });
  }
  // Every leaf exists with its description, built or not (help listings, "did you mean").
  EXPECT_EQ(pb::cli::match_command_path(root, {"rl", "submit"}).names,
            (std::vector<std::string>{"rl", "submit"}));
  EXPECT_EQ(root.get_subcommand("rl")->get_subcommand("submit")->get_description(), "rl submit");
  return built;
}

TEST(CommandTreeLeaf, BuildsOnlyTheLeavesArgvNames) {
  using Names = std::vector<std::string>;
  EXPECT_EQ(leaves_built(std::nullopt), (Names{"rl preview", "rl submit", "sft preview"}));
  EXPECT_EQ(leaves_built(Names{"-v", "rl", "preview", "--toml", "x.toml"}), Names{"rl preview"});
  EXPECT_EQ(leaves_built(Names{"rl"}), Names{});
  // Names after "--" are arguments, never commands.
  EXPECT_EQ(leaves_built(Names{"rl", "--", "preview"}), Names{});
  // A value that spells a command builds that leaf too: more than needed is harmless.
  EXPECT_EQ(leaves_built(Names{"rl", "preview", "--name", "submit"}),
            (Names{"rl preview", "rl submit"}));
}

// Unknown flags are named with the command they follow, the closest flag of that command and
// its --help, before CLI11 parses (it would say "--toml is required" about "--tom").
TEST(CheckFlags, UnknownFlagIsNamedWithSuggestionAndHelp) {
  Tree t;
  using pb::cli::check_flags;
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "--tom", "rl.toml"}),
                  pb::ExitCode::usage,
                  "unknown flag '--tom' for 'rl preview'; did you mean '--toml'? Run "
                  "'primebeaker rl preview --help' for its flags");
  // A value-taking typo: the flag is named, not the value after it.
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "--toml", "x.toml", "--note", "n"}),
                  pb::ExitCode::usage,
                  "unknown flag '--note' for 'rl preview'; did you mean '--notes'?");
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "--tom=x.toml"}),
                  pb::ExitCode::usage,
                  "unknown flag '--tom' for 'rl preview'; did you mean '--toml'?");
  // Snake case, and a root flag misspelt after the command.
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "--write_spc"}),
                  pb::ExitCode::usage,
                  "did you mean '--write_spec'?");
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "--verbos"}),
                  pb::ExitCode::usage,
                  "did you mean '--verbose'?");
  // Nothing close: no suggestion, still the help.
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "--zzzzzz"}),
                  pb::ExitCode::usage,
                  "unknown flag '--zzzzzz' for 'rl preview'; run 'primebeaker rl preview --help' "
                  "for its flags");
  // A sibling's flag, a flag before the command, short flags.
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "submit", "--toml", "x"}),
                  pb::ExitCode::usage,
                  "unknown flag '--toml' for 'rl submit'");
  EXPECT_PB_ERROR(check_flags(t.root, {"--verbse", "rl", "preview"}),
                  pb::ExitCode::usage,
                  "unknown flag '--verbse' for 'primebeaker'; did you mean '--verbose'? Run "
                  "'primebeaker --help' for its flags");
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "-x"}),
                  pb::ExitCode::usage,
                  "unknown flag '-x' for 'rl'; run 'primebeaker rl --help'");
  EXPECT_PB_ERROR(
      check_flags(t.root, {"rl", "preview", "-vx"}), pb::ExitCode::usage, "unknown flag '-x'");
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "-toml", "x"}),
                  pb::ExitCode::usage,
                  "unknown flag '-toml' for 'rl preview'; did you mean '--toml'?");
  // Fire negations the command does not know stay unknown.
  EXPECT_PB_ERROR(check_flags(t.root, {"rl", "preview", "--nobogus"}),
                  pb::ExitCode::usage,
                  "unknown flag '--nobogus'");
}

TEST(CheckFlags, KnownFlagsAndValuesPass) {
  Tree t;
  // Values are skipped as CLI11 takes them, even when they look like flags; "-5" is a value;
  // nothing after "--" is looked at; stacked short flags are each known.
  EXPECT_NO_THROW(pb::cli::check_flags(t.root,
                                       {"-vv",
                                        "rl",
                                        "-v",
                                        "preview",
                                        "--toml",
                                        "--not-a-flag",
                                        "--notes=--x",
                                        "--write-spec",
                                        "--no_write_spec",
                                        "--if-exists=false",
                                        "-5",
                                        "--verbose",
                                        "--",
                                        "--anything"}));
  // A command that keeps unknown words (services field flags) is not checked.
  auto &extras = t.tree.command({"services", "preview"}, "Preview");
  extras.allow_extras();
  extras.fallthrough(false);
  EXPECT_NO_THROW(pb::cli::check_flags(t.root, {"services", "preview", "--any-field", "1"}));
}

TEST(FireNegation, RewritesOnlyWhatTheCommandKnows) {
  Tree t;
  CLI::App &preview = *t.root.get_subcommand("rl")->get_subcommand("preview");
  const auto out = pb::cli::rewrite_fire_negations(preview,
                                                   {"--nowrite-spec",
                                                    "--nowrite_spec",
                                                    "--noif-exists",
                                                    "--notes",
                                                    "n",
                                                    "--nobogus",
                                                    "--no-write-spec",
                                                    "--noverbose",
                                                    "--",
                                                    "--nowrite-spec"});
  EXPECT_EQ(out,
            (std::vector<std::string>{"--no-write-spec",
                                      "--no_write_spec",
                                      "--if-exists=false",
                                      "--notes",
                                      "n",
                                      "--nobogus",
                                      "--no-write-spec",
                                      "--verbose=false",
                                      "--",
                                      "--nowrite-spec"}));
}

TEST(FireNegation, RewrittenArgumentsParse) {
  Tree t;
  std::vector<std::string> args = {
      "rl", "preview", "--write-spec", "--if-exists", "--nowrite-spec", "--noif-exists"};
  CLI::App &preview = *t.root.get_subcommand("rl")->get_subcommand("preview");
  args = pb::cli::rewrite_fire_negations(preview, args);
  std::reverse(args.begin(), args.end());
  t.root.parse(args);
  EXPECT_FALSE(t.write_spec);
  EXPECT_FALSE(t.if_exists);
}

} // namespace
