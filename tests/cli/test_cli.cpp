// SPDX-License-Identifier: MIT
// The root command, end to end through the real binary: version, unknown commands, help over
// the lazily registered tree, completion scripts, the man page and Fire-style --noFLAG.
#include "test_support.hpp"

#include <primebeaker/core/process.hpp>

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using pb::test::run_primebeaker;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Runs a shell snippet with the real binary first on PATH.
pb::proc::Result run_shell(const std::string &shell, const std::string &script) {
  pb::proc::SystemRunner runner;
  pb::proc::Command command;
  command.argv = {shell, "-c", script};
  const auto bin_dir = pb::test::binary_path().parent_path().string();
  command.env_set["PATH"] = bin_dir + ":/usr/bin:/bin";
  command.env_set["ASAN_OPTIONS"] = "detect_leaks=0";
  command.timeout = std::chrono::seconds(60);
  return runner.run(command);
}

bool have(const std::string &program) {
  return pb::proc::find_executable(program, "/usr/local/bin:/usr/bin:/bin").has_value();
}

TEST(Cli, VersionAndShortVersionPrintTheCommit) {
  const auto long_form = run_primebeaker({"--version"});
  const auto short_form = run_primebeaker({"-V"});
  EXPECT_EQ(long_form.exit_code, 0);
  EXPECT_EQ(short_form.exit_code, 0);
  EXPECT_EQ(long_form.out, short_form.out);
  EXPECT_EQ(long_form.out.rfind(std::string("primebeaker ") + PB_VERSION, 0), 0U) << long_form.out;
  // Built from a git checkout, the commit is there ("(commit 0123abcd...)").
  if (std::filesystem::exists(pb::test::source_dir() / ".git")) {
    EXPECT_TRUE(contains(long_form.out, " (commit ")) << long_form.out;
  }
  EXPECT_EQ(long_form.out.back(), '\n');
}

TEST(Cli, HelpListsEveryTopLevelCommandFromEveryModule) {
  const auto r = run_primebeaker({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char *name : {"toml",
                           "sft",
                           "rl",
                           "checkpoints",
                           "run",
                           "services",
                           "registry",
                           "node",
                           "images",
                           "completion"}) {
    EXPECT_TRUE(contains(r.out, std::string("\n  ") + name + " ")) << name << "\n" << r.out;
  }
  EXPECT_FALSE(contains(r.out, "man-page")) << "hidden command listed";
}

// Root help is printed without CLI11's CallForHelp exception; every spelling prints the same.
TEST(Cli, RootHelpIsTheSameForEverySpelling) {
  const auto help = run_primebeaker({"--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_TRUE(contains(help.out, "Usage: primebeaker [OPTIONS] SUBCOMMAND\n")) << help.out;
  for (const auto &args : std::vector<std::vector<std::string>>{
           {"-h"}, {"-v", "--help"}, {"--help", "-v"}, {"--no-such-flag", "-h"}}) {
    const auto r = run_primebeaker(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, help.out) << args[0];
  }
  const auto all = run_primebeaker({"--help", "--help-all"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_TRUE(contains(all.out, "Print the Beaker spec of a Prime-RL RL run"))
      << "--help-all lists leaves";
}

TEST(Cli, SharedGroupHelpHasEveryModulesCommands) {
  // "rl" gets preview/submit from launch and resume from resume.
  const auto r = run_primebeaker({"rl", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char *name : {"preview", "submit", "resume"}) {
    EXPECT_TRUE(contains(r.out, name)) << name << "\n" << r.out;
  }
}

TEST(Cli, LazilyBuiltCommandsStillHaveTheirOptionsWhenNamed) {
  // Only the command argv names gets its options at start-up; every way of asking for a
  // command's options must still see them.
  const auto submit = run_primebeaker({"rl", "submit", "--help"});
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_TRUE(contains(submit.out, "--follow")) << submit.out;
  const auto group = run_primebeaker({"rl", "--help-all"});
  EXPECT_EQ(group.exit_code, 0) << group.err;
  for (const char *text : {"--follow", "--toml", "--resume-step"}) {
    EXPECT_TRUE(contains(group.out, text)) << text << "\n" << group.out;
  }
  // An option of a sibling command is still refused, not silently taken.
  const auto preview = run_primebeaker({"rl", "preview", "--toml", "x.toml", "--follow"});
  EXPECT_EQ(preview.exit_code, 2) << preview.err;
  EXPECT_TRUE(contains(preview.err, "--follow")) << preview.err;
}

TEST(Cli, HelpAllShowsTheWholeTree) {
  const auto r = run_primebeaker({"--help-all"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Every module's subcommands, e.g. those of the group two modules share.
  for (const char *line :
       {"\nrl\n", "    preview ", "    resume ", "    wait-services ", "    rewrite-envs "}) {
    EXPECT_TRUE(contains(r.out, line)) << line;
  }
}

TEST(Cli, UnknownCommandNamesItInsteadOfCli11sMessage) {
  const auto r = run_primebeaker({"bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("primebeaker: error: unknown command 'bogus'\n", 0), 0U) << r.err;
  EXPECT_FALSE(contains(r.err, "subcommand is required")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, TopLevelTypoSuggestsTheCommand) {
  const auto r = run_primebeaker({"tmol", "get", "x.toml", "a"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "unknown command 'tmol'")) << r.err;
  EXPECT_TRUE(contains(r.err, "did you mean 'toml'?")) << r.err;
}

TEST(Cli, SubcommandTypoSuggestsTheSubcommand) {
  const auto r = run_primebeaker({"rl", "prevew", "--toml", "x.toml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "primebeaker: error: unknown command 'rl prevew'")) << r.err;
  EXPECT_TRUE(contains(r.err, "did you mean 'rl preview'?")) << r.err;
  EXPECT_FALSE(contains(r.err, "subcommand is required")) << r.err;
}

// A misspelt flag is named, with the closest flag of that command and its --help, in one line
// (CLI11 said "--toml is required" about --tom, and "not expected: x --mountpath").
TEST(Cli, UnknownFlagNamesItAndSuggestsTheNearest) {
  const auto typo = run_primebeaker({"rl", "preview", "--tom", "rl.toml"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.err,
            "primebeaker: error: unknown flag '--tom' for 'rl preview'; did you mean '--toml'? "
            "Run 'primebeaker rl preview --help' for its flags\n");
  EXPECT_TRUE(typo.out.empty());
  const auto with_value =
      run_primebeaker({"rl", "preview", "--toml", "x.toml", "--mountpath", "x"});
  EXPECT_EQ(with_value.exit_code, 2);
  EXPECT_EQ(with_value.err,
            "primebeaker: error: unknown flag '--mountpath' for 'rl preview'; did you mean "
            "'--mount-path'? Run 'primebeaker rl preview --help' for its flags\n");
  // --help still wins over the typo.
  EXPECT_EQ(run_primebeaker({"rl", "preview", "--tom", "--help"}).exit_code, 0);
}

TEST(Cli, UnknownFlagIsReportedTheSameForEveryCommand) {
  pb::test::TempDir dir;
  pb::test::write_file(dir / "a.toml", "x = 1\n");
  const std::string file = (dir / "a.toml").string();
  struct Case {
    std::vector<std::string> args;
    std::string command;
    std::string flag;
    std::string suggestion;
  };
  const std::vector<Case> cases = {
      {{"checkpoints", "list", "--outputdir", "d", "--ranks", "1"},
       "checkpoints list",
       "--outputdir",
       "--output-dir"},
      {{"toml", "get", "--formt", "json", file, "x"}, "toml get", "--formt", "--format"},
      {{"environments", "show", "label", "--jsno"}, "environments show", "--jsno", "--json"},
      {{"-v", "sft", "preview", "--toml", file, "--dry_rn"}, "sft preview", "--dry_rn", ""},
      {{"rl", "submit", "--toml", file, "--folow"}, "rl submit", "--folow", "--follow"},
      {{"registry", "--verbos", "list"}, "registry", "--verbos", "--verbose"},
  };
  for (const auto &c : cases) {
    const auto r = run_primebeaker(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.command << ": " << r.err;
    const std::string start =
        "primebeaker: error: unknown flag '" + c.flag + "' for '" + c.command + "'";
    EXPECT_EQ(r.err.rfind(start, 0), 0U) << r.err;
    if (!c.suggestion.empty()) {
      EXPECT_TRUE(contains(r.err, "did you mean '" + c.suggestion + "'?")) << r.err;
    }
    EXPECT_TRUE(contains(r.err, "'primebeaker " + c.command + " --help' for its flags\n")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  // A value that looks like a flag is a value; a negative number is one too.
  const auto value = run_primebeaker({"toml", "set", file, "x", "-5", "--type", "integer"});
  EXPECT_EQ(value.exit_code, 0) << value.err;
  // services field flags are LiteRegistry's to judge, not refused here.
  const auto fields = run_primebeaker(
      {"services", "preview", "--no-such-field", "1", "--python", "/nonexistent/python3"});
  EXPECT_FALSE(contains(fields.err, "unknown flag")) << fields.err;
}

TEST(Cli, GroupWithoutSubcommandListsItsCommands) {
  const auto r = run_primebeaker({"rl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "'rl' needs a command: ")) << r.err;
  for (const char *name : {"preview", "submit", "resume"}) {
    EXPECT_TRUE(contains(r.err, name)) << r.err;
  }
}

TEST(Cli, NoCommandIsUsageError) {
  const auto r = run_primebeaker({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("primebeaker: error: no command given", 0), 0U) << r.err;
}

TEST(Cli, FlagValueThatLooksLikeACommandIsNotOne) {
  // "--format value" at a leaf: "value" is an argument, not an unknown command.
  pb::test::TempDir dir;
  pb::test::write_file(dir / "a.toml", "x = 1\n");
  const auto r =
      run_primebeaker({"-v", "toml", "get", "--format", "value", (dir / "a.toml").string(), "x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
}

TEST(Cli, BashCompletionLoadsAndCompletesSubcommands) {
  const auto r = run_shell("bash", R"(source <(primebeaker completion bash) || exit 9
complete -p primebeaker || exit 8
COMP_WORDS=(primebeaker rl pr); COMP_CWORD=2; _primebeaker; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(primebeaker to); COMP_CWORD=1; _primebeaker; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(primebeaker -v rl preview --write-s); COMP_CWORD=4; _primebeaker; echo "3:${COMPREPLY[*]}"
COMP_WORDS=(primebeaker rl preview --toml ''); COMP_CWORD=4; _primebeaker; echo "4:${COMPREPLY[*]}"
)");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "\n1:preview\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n2:toml\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n3:--write-spec\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n4:\n")) << "a flag's value falls back to files: " << r.out;
}

TEST(Cli, ZshAndFishCompletionsParse) {
  for (const std::string shell : {"zsh", "fish"}) {
    const auto script = run_primebeaker({"completion", shell});
    ASSERT_EQ(script.exit_code, 0) << script.err;
    EXPECT_TRUE(contains(script.out, "preview")) << shell;
    if (!have(shell)) {
      continue; // .ci/bootstrap installs both; a bare machine checks bash only
    }
    pb::test::TempDir dir;
    pb::test::write_file(dir / "script", script.out);
    const auto r = run_shell(shell, shell + " -n " + (dir / "script").string());
    EXPECT_EQ(r.exit_code, 0) << shell << ": " << r.err;
  }
}

TEST(Cli, FishCompletionCompletesSubcommands) {
  if (!have("fish")) {
    GTEST_SKIP() << "fish not installed";
  }
  const auto r =
      run_shell("fish", "primebeaker completion fish | source; complete -C 'primebeaker rl pr'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("preview", 0), 0U) << r.out;
}

TEST(Cli, CompletionRefusesUnknownShell) {
  const auto r = run_primebeaker({"completion", "tcsh"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, BuildTimeManPageRendersWithManL) {
  const auto page = pb::test::binary_path().parent_path() / "share/man/man1/primebeaker.1.gz";
  ASSERT_TRUE(std::filesystem::exists(page)) << page;
  if (!have("man")) {
    GTEST_SKIP() << "man-db not installed (.ci/bootstrap installs it)";
  }
  const auto r = run_shell("bash", "MANWIDTH=100 MANPAGER=cat man -l " + page.string() + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "PRIMEBEAKER(1)")) << r.out.substr(0, 500);
  // The footer names the program once, with its version: "primebeaker 0.1.0".
  EXPECT_TRUE(contains(r.out, std::string("primebeaker ") + PB_VERSION)) << r.out;
  EXPECT_FALSE(contains(r.out, "primebeaker primebeaker")) << r.out;
  const auto roff = run_shell("bash", "gzip -dc " + page.string() + " | sed -n 2p");
  EXPECT_EQ(roff.out,
            std::string(".TH PRIMEBEAKER 1 \"\" \"primebeaker ") + PB_VERSION +
                "\" \"User Commands\"\n");
  EXPECT_FALSE(contains(r.out, "min_runtime_hours")) << "snake_case aliases are not listed";
  EXPECT_TRUE(contains(r.out, "rl preview")) << "every command is described";
  EXPECT_TRUE(contains(r.out, "--write-spec"));
  EXPECT_TRUE(contains(r.out, "EXIT STATUS"));
  EXPECT_FALSE(contains(r.out, "warning")) << r.out.substr(0, 2000);
}

// Launch flags show their value's type, and their snake_case aliases (still accepted) are not
// listed: they doubled the help's length.
TEST(Cli, LaunchHelpShowsValueTypesWithoutSnakeCaseAliases) {
  const auto help = run_primebeaker({"rl", "preview", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_TRUE(contains(help.out, "  --min-runtime-hours INT ")) << help.out;
  EXPECT_TRUE(contains(help.out, "  --gateway-port INT ")) << help.out;
  EXPECT_TRUE(contains(help.out, "  --toml FILE REQUIRED ")) << help.out;
  EXPECT_TRUE(contains(help.out, "  --cluster TEXT ... ")) << help.out;
  EXPECT_TRUE(contains(help.out, "  --write-spec,--no-write-spec{false}\n")) << help.out;
  EXPECT_FALSE(contains(help.out, "--min_runtime_hours")) << help.out;
  EXPECT_FALSE(contains(help.out, "--no_write_spec")) << help.out;

  pb::test::TempDir dir;
  const auto toml = dir / "rl.toml";
  std::filesystem::copy_file(pb::test::source_dir() / "examples/rl/rl.toml", toml);
  const std::string root = dir.path().string();
  pb::test::RunOptions options;
  options.cwd = dir.path();
  const auto snake = run_primebeaker({"rl",
                                      "preview",
                                      "--toml",
                                      toml.string(),
                                      "--min_runtime_hours",
                                      "1",
                                      "--mount_path",
                                      root,
                                      "--working-dir",
                                      root,
                                      "--scratch-dir",
                                      root,
                                      "--home-dir",
                                      root},
                                     options);
  ASSERT_EQ(snake.exit_code, 0) << snake.err;
  EXPECT_TRUE(contains(snake.out, "\"minRuntime\": \"1h\"")) << snake.out;
}

TEST(Cli, FireStyleNegationOfAFlagWithoutNoSpelling) {
  pb::test::TempDir dir;
  pb::test::write_file(dir / "a.toml", "x = 1\n");
  const std::string file = (dir / "a.toml").string();
  // --if-exists has no --no- spelling: --noif-exists is --if-exists=false.
  EXPECT_EQ(run_primebeaker({"toml", "unset", file, "missing", "--if-exists"}).exit_code, 0);
  const auto negated = run_primebeaker({"toml", "unset", file, "missing", "--noif-exists"});
  EXPECT_EQ(negated.exit_code, run_primebeaker({"toml", "unset", file, "missing"}).exit_code)
      << negated.err;
  EXPECT_NE(negated.exit_code, 0);
  EXPECT_FALSE(contains(negated.err, "not expected")) << negated.err;
  const auto last_wins =
      run_primebeaker({"toml", "unset", file, "missing", "--noif-exists", "--if-exists"});
  EXPECT_EQ(last_wins.exit_code, 0) << last_wins.err;
}

TEST(Cli, FireStyleNegationOfABooleanLaunchFlag) {
  // rl preview writes the spec file only with --write-spec; a later negation cancels it.
  pb::test::TempDir dir;
  const auto toml = dir / "rl.toml";
  std::filesystem::copy_file(pb::test::source_dir() / "examples/multinode-rl/rl.toml", toml);
  const std::string root = dir.path().string();
  auto preview = [&](const std::vector<std::string> &extra) {
    std::vector<std::string> args = {"rl",
                                     "preview",
                                     "--toml",
                                     toml.string(),
                                     "--registry",
                                     "redis://registry:6379",
                                     "--mount-path",
                                     root,
                                     "--working-dir",
                                     root,
                                     "--scratch-dir",
                                     root,
                                     "--home-dir",
                                     root};
    args.insert(args.end(), extra.begin(), extra.end());
    pb::test::RunOptions options;
    options.cwd = dir.path(); // the example's relative output_dir lands under the mount
    return run_primebeaker(args, options);
  };
  const auto specs = dir / "primebeaker/beaker_experiments";
  const auto fire = preview({"--write-spec", "--nowrite-spec"});
  ASSERT_EQ(fire.exit_code, 0) << fire.err;
  EXPECT_FALSE(std::filesystem::exists(specs)) << "--nowrite-spec after --write-spec wrote";
  const auto snake = preview({"--write-spec", "--nowrite_spec"});
  ASSERT_EQ(snake.exit_code, 0) << snake.err;
  EXPECT_FALSE(std::filesystem::exists(specs));
  const auto positive = preview({"--write-spec"});
  ASSERT_EQ(positive.exit_code, 0) << positive.err;
  EXPECT_TRUE(std::filesystem::exists(specs)) << "the control: --write-spec writes";
  const auto unknown = preview({"--nobogus"});
  EXPECT_EQ(unknown.exit_code, 2) << "an unknown --noX stays unknown";
}

} // namespace
