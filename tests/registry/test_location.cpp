// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/location.hpp>

#include <gtest/gtest.h>

namespace pb::registry {
namespace {

const ParseContext k_context{"/work/cwd", "/home/me"};

Location parse(const std::string &uri) {
  return parse_location(uri, k_context);
}

int parse_error_code(const std::string &uri) {
  try {
    parse(uri);
  } catch (const Error &error) {
    return error.code();
  }
  return 0;
}

std::string parse_error(const std::string &uri) {
  try {
    parse(uri);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

TEST(Location, PlainPathsAreDirectories) {
  EXPECT_EQ(parse("/shared/reg").kind, BackendKind::file);
  EXPECT_EQ(parse("/shared/reg").path, "/shared/reg");
  EXPECT_EQ(parse("/shared/reg/").path, "/shared/reg");
  EXPECT_EQ(parse("rel/dir").path, "/work/cwd/rel/dir");
  EXPECT_EQ(parse("~/reg").path, "/home/me/reg");
  EXPECT_EQ(parse("  /trimmed  ").path, "/trimmed");
}

TEST(Location, FileUris) {
  EXPECT_EQ(parse("file:///shared/reg").path, "/shared/reg");
  EXPECT_EQ(parse("file://localhost/shared/reg").path, "/shared/reg");
  EXPECT_EQ(parse("file:///a%20b/c").path, "/a b/c");
  EXPECT_EQ(parse("file:///a%20b").display(), "file:///a%20b");
  EXPECT_EQ(parse_error_code("file://otherhost/x"), 2);
  EXPECT_NE(parse_error("file://otherhost/x").find("otherhost"), std::string::npos);
  EXPECT_EQ(parse_error_code("file:///x?y=1"), 2);
  EXPECT_EQ(parse_error_code("file:///x#frag"), 2);
  EXPECT_EQ(parse_error_code("file:relative"), 2);
}

TEST(Location, SqliteUris) {
  const auto location = parse("sqlite:///data/reg.sqlite3");
  EXPECT_EQ(location.kind, BackendKind::sqlite);
  EXPECT_EQ(location.path, "/data/reg.sqlite3");
  EXPECT_EQ(location.display(), "sqlite:///data/reg.sqlite3");
  EXPECT_EQ(parse("sqlite://localhost/data/reg.sqlite3").path, "/data/reg.sqlite3");
  EXPECT_EQ(parse("sqlite:rel.sqlite3").path, "/work/cwd/rel.sqlite3");
  EXPECT_NE(parse_error("sqlite://db-host/x.sqlite3").find("sqlite:///absolute/path"),
            std::string::npos);
  EXPECT_NE(parse_error("sqlite:///:memory:").find("in-memory"), std::string::npos);
  EXPECT_NE(parse_error("sqlite::memory:").find("in-memory"), std::string::npos);
  EXPECT_EQ(parse_error_code("sqlite://"), 2);
  EXPECT_EQ(parse_error_code("sqlite:///x.db?mode=ro"), 2);
}

TEST(Location, RedisUris) {
  const auto location = parse("redis://user:p%40ss@redis-host:6380/2");
  EXPECT_EQ(location.kind, BackendKind::redis);
  EXPECT_EQ(location.redis.host, "redis-host");
  EXPECT_EQ(location.redis.port, 6380);
  EXPECT_EQ(location.redis.username, "user");
  EXPECT_EQ(location.redis.password, "p@ss");
  EXPECT_EQ(location.redis.database, 2);
  EXPECT_FALSE(location.redis.tls);
  EXPECT_EQ(location.display(), "redis://user:***@redis-host:6380/2");
  EXPECT_EQ(parse("redis://h").redis.port, 6379);
  EXPECT_EQ(parse("redis://h:1/").redis.database, 0);
  EXPECT_EQ(parse("redis://:secret@h").redis.password, "secret");
  EXPECT_EQ(parse("redis://[::1]:7000").redis.host, "::1");
  EXPECT_EQ(parse("redis://[::1]:7000").display(), "redis://[::1]:7000");
  EXPECT_TRUE(parse("rediss://h:1").redis.tls);
  EXPECT_EQ(parse_error_code("redis://:6379"), 2);
  EXPECT_EQ(parse_error_code("redis://h:99999"), 2);
  EXPECT_EQ(parse_error_code("redis://h:1/db"), 2);
  // A bad URI never shows its password.
  EXPECT_EQ(parse_error("redis://u:hunter2@h:notaport").find("hunter2"), std::string::npos);
}

TEST(Location, HeadUris) {
  // The canonicalisation table of docs/registry.md.
  EXPECT_EQ(parse("head:///shared/coop/EXP1").display(), "head+file:///shared/coop/EXP1");
  EXPECT_EQ(parse("head+file:///shared/coop/EXP1").display(), "head+file:///shared/coop/EXP1");
  EXPECT_EQ(parse("head+/shared/coop/EXP1").display(), "head+file:///shared/coop/EXP1");
  EXPECT_EQ(parse("head+sqlite:///shared/head.sqlite3").display(),
            "head+sqlite:///shared/head.sqlite3");
  EXPECT_EQ(parse("head+redis://stable-head:6379/").display(), "head+redis://stable-head:6379");
  const auto head = parse("head+sqlite:///shared/head.sqlite3");
  EXPECT_EQ(head.kind, BackendKind::head);
  EXPECT_EQ(head.head_backend->kind, BackendKind::sqlite);
  EXPECT_NE(parse_error("head+http://x")
                .find("endpoint registry must use file://, sqlite://, or redis://"),
            std::string::npos);
  EXPECT_EQ(parse_error_code("head+"), 2);
}

TEST(Location, RejectsOtherSchemes) {
  EXPECT_NE(parse_error("http://x/y").find("unsupported scheme 'http'"), std::string::npos);
  EXPECT_NE(parse_error("redis+sentinel://x").find("unsupported scheme"), std::string::npos);
  EXPECT_EQ(parse_error_code(""), 2);
  EXPECT_EQ(parse_error_code("   "), 2);
}

TEST(Location, Redaction) {
  EXPECT_EQ(redact_uri("redis://:pw@h:1/0"), "redis://:***@h:1/0");
  EXPECT_EQ(redact_uri("head+rediss://u:pw@h:1"), "head+rediss://u:***@h:1");
  EXPECT_EQ(redact_uri("at redis://u:pw@a:1 and redis://b:2"),
            "at redis://u:***@a:1 and redis://b:2");
  EXPECT_EQ(redact_uri("redis://h:1"), "redis://h:1");
  EXPECT_EQ(redact_uri("file:///x@y"), "file:///x@y");
}

TEST(Location, FileUriEncodesLikePython) {
  EXPECT_EQ(file_uri("/a b/ü~_.-"), "file:///a%20b/%C3%BC~_.-");
}

TEST(Location, BeakerRewrite) {
  const std::optional<std::string> node = "node-7";
  EXPECT_EQ(beaker_rewrite("redis://node-7:20000", node, std::string("10.0.0.1")),
            "redis://10.0.0.1:20000");
  EXPECT_EQ(beaker_rewrite("redis://u:p@node-7:20000/3", node, std::string("10.0.0.1")),
            "redis://u:p@10.0.0.1:20000/3");
  EXPECT_EQ(beaker_rewrite("redis://node-7:20000", node, std::string("fd00::1")),
            "redis://[fd00::1]:20000");
  EXPECT_EQ(beaker_rewrite("redis://node-8:20000", node, std::string("10.0.0.1")),
            "redis://node-8:20000");
  EXPECT_EQ(beaker_rewrite("redis://node-7:20000", node, std::nullopt), "redis://node-7:20000");
  EXPECT_EQ(beaker_rewrite("redis://node-7:20000", std::nullopt, std::string("10.0.0.1")),
            "redis://node-7:20000");
}

} // namespace
} // namespace pb::registry
