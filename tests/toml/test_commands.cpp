// SPDX-License-Identifier: MIT
// `primebeaker toml get|set|unset|check` end to end through the real binary.
#include "test_support.hpp"

#include <primebeaker/core/json.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

namespace {

using pb::test::run_primebeaker;
using pb::test::TempDir;

const char *const sample = R"(# Build settings
title = "demo"
port = 0x1F  # hex
ratio = 8.0
when = 1979-05-27 07:32:00Z
tags = ["a", "b"]

[server]
host = "localhost"   # where
ports = [8001, 8002]

[[bin]]
name = "first"

[[bin]]
name = "second"
)";

class TomlCommands : public ::testing::Test {
protected:
  TempDir dir;
  std::string file = (dir / "f.toml").string();
  void SetUp() override { pb::test::write_file(file, sample); }
};

TEST_F(TomlCommands, GetValueForms) {
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "title"}).out, "demo\n");
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "port"}).out, "0x1F\n");
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "tags"}).out, "a\nb\n");
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "bin[-1].name"}).out, "second\n");
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "bin[*].name"}).out, "first\nsecond\n");
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "server . host"}).out, "localhost\n");
}

TEST_F(TomlCommands, GetJsonAndTaggedJson) {
  auto r = run_primebeaker({"toml", "get", file, "server", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\n  \"host\": \"localhost\",\n  \"ports\": [\n    8001,\n    8002\n  ]\n}\n");
  r = run_primebeaker({"toml", "get", file, "ratio", "--format=tagged-json"});
  EXPECT_EQ(pb::OrderedJson::parse(r.out),
            pb::OrderedJson::parse(R"({"type":"float","value":"8"})"));
  r = run_primebeaker({"toml", "get", file, "port", "--format", "json"});
  EXPECT_EQ(r.out, "31\n");
  r = run_primebeaker({"toml", "get", file, "when", "--format", "json"});
  EXPECT_EQ(r.out, "\"1979-05-27T07:32:00Z\"\n");
}

TEST_F(TomlCommands, GetTomlPrintsExactSourceBytes) {
  EXPECT_EQ(run_primebeaker({"toml", "get", file, ".", "--format", "toml"}).out, sample);
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "port", "--format", "toml"}).out, "0x1F\n");
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "server", "--format", "toml"}).out,
            "[server]\nhost = \"localhost\"   # where\nports = [8001, 8002]\n\n");
}

TEST_F(TomlCommands, GetErrors) {
  auto r = run_primebeaker({"toml", "get", file, "server.nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "primebeaker: error: key 'server.nope' not found in " + file + "\n");
  r = run_primebeaker({"toml", "get", file, "bin[7]"});
  EXPECT_EQ(r.exit_code, 1);
  r = run_primebeaker({"toml", "get", file, "server..host"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run_primebeaker({"toml", "get", (dir / "missing.toml").string(), "a"});
  EXPECT_EQ(r.exit_code, 3);
  pb::test::write_file(dir / "bad.toml", "a = 1\nb = [1,,2]\n");
  r = run_primebeaker({"toml", "get", (dir / "bad.toml").string(), "a"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "primebeaker: error: " + (dir / "bad.toml").string() +
                ":2:8: expected a value, found ','\n");
}

// A missing key names the existing path it most likely meant, in the same one line and exit 1:
// a close spelling at the level that misses it, or the same key deeper.
TEST_F(TomlCommands, GetMissingKeySuggestsTheClosestPath) {
  const std::string config = (dir / "config.toml").string();
  pb::test::write_file(config,
                       "[trainer]\nsteps = 10\n\n[trainer.optim]\nlr = 3e-4\n\n"
                       "[model]\nname = \"m\"\n");
  const std::string before = pb::test::tree_digest(dir.path());
  const auto suggestion = [&](const std::string &key) {
    const auto r = run_primebeaker({"toml", "get", config, key});
    EXPECT_EQ(r.exit_code, 1) << key;
    EXPECT_EQ(r.out, "");
    return r.err;
  };
  const std::string missing = "primebeaker: error: key ";
  EXPECT_EQ(suggestion("trainer.lr"),
            missing + "'trainer.lr' not found in " + config +
                "; did you mean 'trainer.optim.lr'?\n");
  EXPECT_EQ(suggestion("traner.steps"),
            missing + "'traner.steps' not found in " + config +
                "; did you mean 'trainer.steps'?\n");
  EXPECT_EQ(suggestion("model.nmae"),
            missing + "'model.nmae' not found in " + config + "; did you mean 'model.name'?\n");
  EXPECT_EQ(suggestion("traner.nothing"),
            missing + "'traner.nothing' not found in " + config + "; did you mean 'trainer'?\n");
  EXPECT_EQ(suggestion("model.x"), missing + "'model.x' not found in " + config + "\n");
  EXPECT_EQ(pb::test::tree_digest(dir.path()), before);
}

// Every error of every file, as one error: the first on the `primebeaker: error:` line, the
// others under it.
TEST_F(TomlCommands, CheckReportsEachInvalidFile) {
  pb::test::write_file(dir / "bad1.toml", "a = 1\na = 2\n");
  pb::test::write_file(dir / "bad2.toml", "[x\n");
  const auto r = run_primebeaker(
      {"toml", "check", file, (dir / "bad1.toml").string(), (dir / "bad2.toml").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "primebeaker: error: " + (dir / "bad1.toml").string() +
                ":2:1: key 'a' is already defined (at line 1, column 5)\n  " +
                (dir / "bad2.toml").string() + ":1:3: expected ']' to close the table header\n");
  EXPECT_EQ(r.out, "");
  const auto ok = run_primebeaker({"toml", "check", file});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.err, "");
}

// Issue 27: two syntax errors in one file are both reported, with their line and column.
TEST_F(TomlCommands, CheckReportsEveryErrorOfAFile) {
  const std::string bad = (dir / "two.toml").string();
  pb::test::write_file(bad, "[server]\nhost = \"a\nport = 80\n[[bin]\nname = \"x\"\n");
  const auto r = run_primebeaker({"toml", "check", bad});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "primebeaker: error: " + bad + ":2:10: newline in a single-line string\n  " + bad +
                ":4:6: expected ']]' to close the array-of-tables header\n");
}

// Issue 27: a file that cannot be read is reported like every other error.
TEST_F(TomlCommands, CheckMissingFileHasTheErrorPrefix) {
  const std::string missing = (dir / "missing.toml").string();
  auto r = run_primebeaker({"toml", "check", missing});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "primebeaker: error: cannot read " + missing + ": No such file or directory\n");
  pb::test::write_file(dir / "bad.toml", "a = \n");
  r = run_primebeaker({"toml", "check", (dir / "bad.toml").string(), missing, file});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err,
            "primebeaker: error: " + (dir / "bad.toml").string() +
                ":1:5: expected a value, found the end of the line\n  cannot read " + missing +
                ": No such file or directory\n");
}

TEST_F(TomlCommands, SetInPlaceKeepsEverythingElse) {
  auto r = run_primebeaker({"toml", "set", file, "server.host", "-s", "example.org"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  std::string expected = sample;
  expected.replace(expected.find("\"localhost\""), 11, "\"example.org\"");
  EXPECT_EQ(pb::test::read_file(file), expected);
  r = run_primebeaker({"toml", "set", file, "ratio", "-5", "--type", "integer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "ratio", "--format", "json"}).out, "-5\n");
}

TEST_F(TomlCommands, SetDryRunPrintsUnifiedDiff) {
  const auto r = run_primebeaker({"toml", "set", file, "server.timeout", "30", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "--- " + file + "\n+++ " + file +
                "\n@@ -8,6 +8,7 @@\n [server]\n host = \"localhost\"   # where\n ports = [8001, "
                "8002]\n+timeout = 30\n \n [[bin]]\n name = \"first\"\n");
  EXPECT_EQ(pb::test::read_file(file), sample);
}

TEST_F(TomlCommands, OutputToStdoutAndToAnotherFile) {
  auto r = run_primebeaker({"toml", "set", file, "title", "\"x\"", "-o", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expected = sample;
  expected.replace(expected.find("\"demo\""), 6, "\"x\"");
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(pb::test::read_file(file), sample);
  const std::string other = (dir / "other.toml").string();
  r = run_primebeaker({"toml", "unset", file, "bin[0]", "--output", other});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pb::test::read_file(file), sample);
  EXPECT_EQ(run_primebeaker({"toml", "get", other, "bin[0].name"}).out, "second\n");
}

TEST_F(TomlCommands, StdinAndValueFile) {
  pb::test::RunOptions in;
  in.stdin_data = "a = 1 # one\n";
  auto r = run_primebeaker({"toml", "set", "-", "a", "2"}, in);
  EXPECT_EQ(r.out, "a = 2 # one\n");
  pb::test::write_file(dir / "value.txt", "line one\nline two\n");
  r = run_primebeaker({"toml",
                       "set",
                       file,
                       "notes",
                       "-s",
                       "--value-file",
                       (dir / "value.txt").string(),
                       "-o",
                       "-"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tags = [\"a\", \"b\"]\nnotes = \"line one\\nline two\\n\"\n"),
            std::string::npos)
      << r.out;
  in.stdin_data = "[1, 2,\n 3]\n";
  r = run_primebeaker({"toml", "set", file, "list", "--value-file", "-", "-o", "-"}, in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tags = [\"a\", \"b\"]\nlist = [1, 2,\n 3]\n"), std::string::npos) << r.out;
}

TEST_F(TomlCommands, UnsetFlags) {
  auto r = run_primebeaker({"toml", "unset", file, "nope"});
  EXPECT_EQ(r.exit_code, 1);
  r = run_primebeaker({"toml", "unset", file, "nope", "--if-exists"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(pb::test::read_file(file), sample);
  r = run_primebeaker({"toml", "unset", file, "server.host", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("-host = \"localhost\"   # where\n"), std::string::npos) << r.out;
  EXPECT_EQ(pb::test::read_file(file), sample);
}

// Bad input changes nothing on disk: digest of the directory before and after.
TEST_F(TomlCommands, BadInputChangesNothing) {
  pb::test::write_file(dir / "invalid.toml", "a = 1\n[b\n");
  pb::test::write_file(dir / "readonly.toml", "a = 1\n", 0444);
  pb::test::write_file(dir / "not-a-dir", "x = 1\n");
  const std::string before = pb::test::tree_digest(dir.path());
  struct Attempt {
    std::vector<std::string> args;
    int code;
  };
  const std::string invalid = (dir / "invalid.toml").string();
  const std::vector<Attempt> attempts = {
      {{"toml", "set", invalid, "a", "2"}, 3}, // invalid TOML
      {{"toml", "unset", invalid, "a"}, 3},
      {{"toml", "set", file, "server..host", "1"}, 2}, // bad key path
      {{"toml", "set", file, "bin[x]", "1"}, 2},
      {{"toml", "set", file, "title", "hello"}, 2}, // bad value literal
      {{"toml", "set", file, "title", "0.2.0"}, 2},
      {{"toml", "set", file, "title", "1", "--type", "string"}, 2}, // --type mismatch
      {{"toml", "set", file, "port.x", "1"}, 2},                    // conflicting path
      {{"toml", "set", file, "tags.x", "1"}, 2},
      {{"toml", "set", (dir / "missing.toml").string(), "a", "1"}, 3},  // missing file
      {{"toml", "set", (dir / "readonly.toml").string(), "a", "2"}, 1}, // read-only file
      {{"toml", "unset", (dir / "readonly.toml").string(), "a"}, 1},
      // a directory that refuses the temporary file: its "parent" is a regular file
      {{"toml", "set", file, "title", "\"x\"", "-o", (dir / "not-a-dir" / "out.toml").string()}, 1},
  };
  for (const auto &a : attempts) {
    const auto r = run_primebeaker(a.args);
    EXPECT_EQ(r.exit_code, a.code) << a.args[2] << " " << a.args[3] << ": " << r.err;
    EXPECT_EQ(r.err.rfind("primebeaker: error: ", 0), 0U) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(pb::test::tree_digest(dir.path()), before) << a.args[3];
  }
  // A directory without write permission refuses the temporary file too; root ignores the mode
  // bits, so this part only runs as an ordinary user.
  if (::geteuid() != 0) {
    const auto locked = dir / "locked";
    pb::test::write_file(locked / "f.toml", "a = 1\n");
    std::filesystem::permissions(
        locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    const std::string locked_before = pb::test::tree_digest(locked);
    const auto r = run_primebeaker({"toml", "set", (locked / "f.toml").string(), "a", "2"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(pb::test::tree_digest(locked), locked_before);
  }
}

} // namespace
