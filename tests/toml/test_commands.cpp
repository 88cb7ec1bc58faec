// SPDX-License-Identifier: MIT
// `primebeaker toml get|set|unset|check` end to end through the real binary.
#include "test_support.hpp"

#include <primebeaker/core/json.hpp>

#include <gtest/gtest.h>

namespace {

using pb::test::run_primebeaker;
using pb::test::TempDir;

const char* const sample = R"(# Build settings
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
  EXPECT_EQ(pb::OrderedJson::parse(r.out), pb::OrderedJson::parse(R"({"type":"float","value":"8"})"));
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
  EXPECT_EQ(r.err, "primebeaker: error: " + (dir / "bad.toml").string() +
                       ":2:8: expected a value, found ','\n");
}

TEST_F(TomlCommands, CheckReportsEachInvalidFile) {
  pb::test::write_file(dir / "bad1.toml", "a = 1\na = 2\n");
  pb::test::write_file(dir / "bad2.toml", "[x\n");
  const auto r = run_primebeaker({"toml", "check", file, (dir / "bad1.toml").string(),
                                  (dir / "bad2.toml").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, (dir / "bad1.toml").string() +
                       ":2:1: key 'a' is already defined (at line 1, column 5)\n" +
                       (dir / "bad2.toml").string() +
                       ":1:3: expected ']' to close the table header\n");
  EXPECT_EQ(run_primebeaker({"toml", "check", file}).exit_code, 0);
}

} // namespace
