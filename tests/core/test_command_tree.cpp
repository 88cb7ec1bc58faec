// SPDX-License-Identifier: MIT
// pb::cli::Command and Option: what modules declare through them parses as CLI11 would.
#include <primebeaker/core/command_tree.hpp>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <algorithm>

namespace {

// Parses `args` (argv without the program name) with `root`.
void parse(CLI::App &root, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end()); // CLI11 takes the vector back to front
  root.parse(args);
}

struct Fixture {
  CLI::App root{"test", "primebeaker"};
  pb::cli::CommandTree tree{root};
};

TEST(CommandTree, OnePathIsOneCommand) {
  Fixture f;
  pb::cli::Command &get = f.tree.command({"toml", "get"}, "Get");
  EXPECT_EQ(&f.tree.command({"toml", "get"}, "ignored"), &get);
  EXPECT_NE(&f.tree.command({"toml", "set"}, "Set"), &get);
  EXPECT_EQ(get.name(), "get");
  EXPECT_EQ(f.root.get_subcommand("toml")->get_subcommand("get")->get_description(), "Get");
  // A group that was created without a description takes the first one given.
  f.tree.command({"toml"}, "TOML");
  EXPECT_EQ(f.root.get_subcommand("toml")->get_description(), "TOML");
}

TEST(CommandTree, TypedOptionsBindTheirTargets) {
  Fixture f;
  pb::cli::Command &cmd = f.tree.command({"run"}, "Run");
  std::string text;
  int count = 0;
  double ratio = 0;
  std::optional<std::int64_t> step;
  std::optional<std::string> python;
  std::vector<std::string> names;
  bool dry_run = true;
  bool called = false;
  cmd.add_option("NAME", text, "positional").required();
  cmd.add_option(pb::cli::flag("count"), count, "");
  cmd.add_option(pb::cli::flag("ratio"), ratio, "");
  cmd.add_option(pb::cli::flag("step"), step, "");
  cmd.add_option(pb::cli::flag("python"), python, "");
  cmd.add_option(pb::cli::flag("name"), names, "");
  cmd.add_flag(pb::cli::flag("dry-run") + ",!--no-dry-run", dry_run, "");
  cmd.callback([&called] { called = true; });
  parse(f.root,
        {"run",
         "x",
         "--count",
         "3",
         "--ratio=0.5",
         "--step",
         "12",
         "--name",
         "a",
         "--name",
         "b",
         "--no-dry-run"});
  EXPECT_EQ(text, "x");
  EXPECT_EQ(count, 3);
  EXPECT_DOUBLE_EQ(ratio, 0.5);
  EXPECT_EQ(step, 12);
  EXPECT_EQ(python, std::nullopt); // not given: stays unset
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(dry_run);
  EXPECT_TRUE(called);
}

TEST(CommandTree, ChecksRefuseWhatTheyShould) {
  Fixture f;
  pb::cli::Command &cmd = f.tree.command({"serve"}, "Serve");
  int port = 8080;
  std::string format = "value";
  cmd.add_option(pb::cli::flag("port"), port, "").capture_default_str().in_range(0, 65535);
  cmd.add_option(pb::cli::flag("format"), format, "").one_of({"value", "json"});
  EXPECT_THROW(parse(f.root, {"serve", "--port", "70000"}), CLI::ValidationError);
  EXPECT_THROW(parse(f.root, {"serve", "--format", "yaml"}), CLI::ValidationError);
  parse(f.root, {"serve", "--port", "1", "--format", "json"});
  EXPECT_EQ(port, 1);
  EXPECT_EQ(format, "json");
  // capture_default_str: help shows the value the target had when declared.
  EXPECT_NE(f.root.get_subcommand("serve")->help().find("8080"), std::string::npos);
}

TEST(CommandTree, FunctionsSeeValuesAndListsTakeOnePerOccurrence) {
  Fixture f;
  pb::cli::Command &cmd = f.tree.command({"launch"}, "Launch");
  std::string last;
  std::vector<std::string> envs;
  std::vector<std::string> positionals;
  cmd.add_option_function(
         pb::cli::flag("image"), [&last](const std::string &value) { last = value; }, "")
      .take_last();
  cmd.add_list_option_function(
      pb::cli::flag("env"), [&envs](const std::vector<std::string> &values) { envs = values; }, "");
  cmd.add_option("ARGS", positionals, "");
  parse(f.root, {"launch", "--image", "a", "--env", "A=1", "CMD", "--image=b", "--env=B=2"});
  EXPECT_EQ(last, "b");
  EXPECT_EQ(envs, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(positionals, std::vector<std::string>{"CMD"}); // not swallowed by --env
}

TEST(CommandTree, ListOptionAcceptsAJsonListLiteral) {
  Fixture f;
  pb::cli::Command &cmd = f.tree.command({"launch"}, "Launch");
  std::vector<std::string> clusters;
  pb::cli::add_list_option(cmd, "cluster", clusters, "");
  parse(f.root, {"launch", "--cluster", R"(["a/b","c/d"])", "--cluster", "e/f"});
  EXPECT_EQ(clusters, (std::vector<std::string>{"a/b", "c/d", "e/f"}));
}

TEST(CommandTree, FoundOptionsCanBeRedescribed) {
  Fixture f;
  pb::cli::Command &cmd = f.tree.command({"resume"}, "Resume");
  std::string workspace = "ai2/oe-agents";
  cmd.add_option(pb::cli::flag("workspace"), workspace, "Workspace").capture_default_str();
  ASSERT_TRUE(cmd.find_option("--workspace"));
  EXPECT_FALSE(cmd.find_option("--bogus"));
  cmd.find_option("--workspace")->default_str("").description("Destination workspace");
  const std::string help = f.root.get_subcommand("resume")->help();
  EXPECT_NE(help.find("Destination workspace"), std::string::npos);
  EXPECT_EQ(help.find("ai2/oe-agents"), std::string::npos);
}

TEST(CommandTree, ExtrasAreKeptForTheCommand) {
  Fixture f;
  pb::cli::Command &cmd = f.tree.command({"services", "preview"}, "Preview");
  cmd.allow_extras();
  cmd.fallthrough(false);
  std::vector<std::string> seen;
  cmd.callback([&cmd, &seen] { seen = cmd.remaining(); });
  parse(f.root, {"services", "preview", "--field", "x", "--flag"});
  EXPECT_EQ(seen, (std::vector<std::string>{"--field", "x", "--flag"}));
}

} // namespace
