// SPDX-License-Identifier: MIT
// Every backend against real storage: directories, SQLite files, a real redis-server, and head+
// registries over each of them.
#include "backend_fixture.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/registry/registry.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace pb::registry {
namespace {

using test::RawStore;
using test::RedisServer;

// One parameterised world: `registry` is what the code under test opens; `data` writes the
// roster raw; `endpoints` writes endpoint records raw where the registry reads them.
class Backend : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    const std::string kind = GetParam();
    now = test::wall_now();
    if (kind == "file") {
      uri = (dir / "reg").string();
      data = test::raw_file_store(dir / "reg");
    } else if (kind == "file-uri") {
      uri = "file://" + (dir / "reg").string();
      data = test::raw_file_store(dir / "reg");
    } else if (kind == "sqlite") {
      uri = "sqlite://" + (dir / "reg.sqlite3").string();
      data = test::raw_sqlite_store(dir / "reg.sqlite3");
    } else if (kind == "redis") {
      redis = std::make_unique<RedisServer>();
      uri = redis->uri();
      data = test::raw_redis_store(*redis);
    } else {
      // head+file / head+sqlite / head+redis: the roster lives in `redis`, found through the head.
      redis = std::make_unique<RedisServer>();
      data = test::raw_redis_store(*redis);
      std::unique_ptr<RawStore> head;
      if (kind == "head+file") {
        head = test::raw_file_store(dir / "head");
        uri = "head+file://" + (dir / "head").string();
      } else if (kind == "head+sqlite") {
        head = test::raw_sqlite_store(dir / "head.sqlite3");
        uri = "head+sqlite://" + (dir / "head.sqlite3").string();
      } else {
        head_redis = std::make_unique<RedisServer>();
        head = test::raw_redis_store(*head_redis);
        uri = "head+" + head_redis->uri();
      }
      EndpointRecord record;
      record.name = "redis";
      record.publisher_id = "redis-node-b03-77-9a8b7c6d5e4f40312233445566778899";
      head->put_with_expiry(
          record.key(),
          test::python_endpoint_record("redis", redis->uri(), record.publisher_id, now - 5),
          now + 60,
          now);
      endpoints = std::move(head);
    }
    if (!endpoints) {
      endpoints_in_data = true;
    }
    registry = open_registry(uri);
  }

  RawStore &endpoint_store() { return endpoints_in_data ? *data : *endpoints; }

  test::TempDir dir;
  double now = 0;
  std::string uri;
  std::unique_ptr<RedisServer> redis;
  std::unique_ptr<RedisServer> head_redis;
  std::unique_ptr<RawStore> data;
  std::unique_ptr<RawStore> endpoints;
  bool endpoints_in_data = false;
  std::unique_ptr<Registry> registry;
};

TEST_P(Backend, ReadsLiteRegistryRecordsWithTheInclusiveWindow) {
  const double t = std::floor(now);
  data->put_server("server_a-1", test::python_server_record("a-1", "python", t - 10), t - 10);
  data->put_server("server_a-2", test::python_server_record("a-2", "python", t - 240), t - 240);
  data->put_server("server_b-1", test::python_server_record("b-1", "terminal", t - 400), t - 400);
  data->put_server("server_b-2", test::python_server_record("b-2", "terminal", t - 1), t - 1);
  data->put_server("server_bad", "{not json", t);
  data->put_server("notaserver_x", test::python_server_record("x", "python", t), t, false);

  const auto at_t = registry->live_servers(t, 240);
  EXPECT_EQ(count_by_service(at_t), (std::map<std::string, int>{{"python", 2}, {"terminal", 1}}));
  ASSERT_EQ(at_t.size(), 3U);
  EXPECT_EQ(at_t[0].server_id, "a-1");
  EXPECT_EQ(at_t[0].uri, "http://node-a17.cluster.example:20306");
  EXPECT_EQ(at_t[0].port, 20306);
  // One second later the record exactly 240 s old drops out; the edge itself was inclusive.
  EXPECT_EQ(count_by_service(registry->live_servers(t + 1, 240)),
            (std::map<std::string, int>{{"python", 1}, {"terminal", 1}}));
  // A wider window brings the stale terminal worker back (readers never delete records).
  EXPECT_EQ(count_by_service(registry->live_servers(t, 500)),
            (std::map<std::string, int>{{"python", 2}, {"terminal", 2}}));
}

TEST_P(Backend, WritesServerRecordsInLiteRegistryFormat) {
  nlohmann::ordered_json metadata = {{"model_path", "judge"}};
  const auto record = make_server_record("node-c-0123456789abcdef0123456789abcdef",
                                         "node-c",
                                         8123,
                                         "http://node-c.example:8123",
                                         1760000120.25,
                                         metadata);
  registry->put_server(record);
  EXPECT_EQ(
      data->get(record.key()).value_or("<missing>"),
      R"({"server_id": "node-c-0123456789abcdef0123456789abcdef", "host": "node-c", "port": 8123, "last_heartbeat": 1760000120.25, "metadata": {"model_path": "judge"}, "status": "active", "uri": "http://node-c.example:8123"})");
  if (redis) {
    EXPECT_EQ(redis->cli({"ZSCORE", std::string(k_heartbeat_index), record.key()}),
              "1760000120.25\n");
    EXPECT_EQ(redis->cli({"TTL", record.key()}), "-1\n"); // no expiry on server records
  }
  const auto live = registry->live_servers(1760000120.25 + 240, 240);
  ASSERT_EQ(live.size(), 1U);
  EXPECT_EQ(live[0].service, "judge");
  EXPECT_TRUE(registry->remove_server(record.server_id));
  EXPECT_FALSE(data->get(record.key()));
  EXPECT_TRUE(registry->live_servers(1760000120.25, 240).empty());
  if (redis) {
    EXPECT_EQ(redis->cli({"ZSCORE", std::string(k_heartbeat_index), record.key()}), "\n");
  }
}

TEST_P(Backend, HeartbeatRewritesTheSameKey) {
  auto record =
      make_server_record("w-1", "w", 1, "http://w:1", now - 300, {{"model_path", "search"}});
  registry->put_server(record);
  EXPECT_TRUE(registry->live_servers(now, 240).empty());
  record.last_heartbeat = now;
  registry->put_server(record);
  const auto live = registry->live_servers(now, 240);
  ASSERT_EQ(live.size(), 1U);
  EXPECT_EQ(live[0].last_heartbeat, now);
}

TEST_P(Backend, EndpointRecordsNewestLiveOneWins) {
  EndpointRecord older{"gateway", "http://old:1", "pub-old", now - 20, {}};
  EndpointRecord newer{"gateway", "http://new:2", "pub-new", now - 2, {}};
  EndpointRecord expired{"gateway", "http://gone:3", "pub-gone", now - 1, {}};
  endpoint_store().put_with_expiry(older.key(), encode_endpoint_record(older), now + 30, now);
  endpoint_store().put_with_expiry(newer.key(), encode_endpoint_record(newer), now + 30, now);
  // Already expired at `now` (Redis: expires almost at once, then we wait it out).
  endpoint_store().put_with_expiry(expired.key(), encode_endpoint_record(expired), now + 0.05, now);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  const double later = now + 1;
  const auto newest = newest_endpoint(*registry, "gateway", later);
  ASSERT_TRUE(newest);
  EXPECT_EQ(newest->uri, "http://new:2");
  EXPECT_EQ(registry->endpoint_records("gateway", later).size(), 2U);
  EXPECT_FALSE(newest_endpoint(*registry, "nothing", later));
}

TEST_P(Backend, PublishedEndpointsUseLiteRegistryBytesAndTtl) {
  EndpointRecord record{"gateway", "http://gw:1212/", "node-a-1-abc", now, {{"pid", 1}}};
  registry->put_endpoint(record, 30, now);
  EXPECT_EQ(endpoint_store().get(record.key()).value_or("<missing>"),
            encode_endpoint_record(record));
  EXPECT_EQ(newest_endpoint(*registry, "gateway", now + 1)->uri, "http://gw:1212");
  if (GetParam() == "file" || GetParam() == "file-uri") {
    const auto sidecar = dir / "reg" / ".literegistry_ttl" / sha256_hex(record.key());
    EXPECT_NEAR(std::stod(test::read_file(sidecar)), now + 30, 1e-3);
  }
  if (GetParam() == "file" || GetParam() == "file-uri" || GetParam() == "sqlite") {
    EXPECT_FALSE(newest_endpoint(*registry, "gateway", now + 30)); // expiry is exclusive
  }
  EXPECT_THROW(registry->put_endpoint(record, 0, now), Error);
}

TEST_P(Backend, ReachableOnceTheStoreExists) {
  EXPECT_NO_THROW(registry->check_reachable(now));
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds,
    Backend,
    ::testing::Values(
        "file", "file-uri", "sqlite", "redis", "head+file", "head+sqlite", "head+redis"),
    [](const auto &param_info) {
      std::string name = param_info.param;
      for (char &c : name) {
        if (c == '+' || c == '-') {
          c = '_';
        }
      }
      return name;
    });

int error_code_of(const std::function<void()> &action, std::string *message = nullptr) {
  try {
    action();
  } catch (const Error &error) {
    if (message != nullptr) {
      *message = error.what();
    }
    return error.code();
  }
  return 0;
}

TEST(BackendErrors, MissingDirectoryAndDatabaseAreRetryableFailures) {
  test::TempDir dir;
  std::string message;
  auto file = open_registry((dir / "later").string());
  EXPECT_EQ(error_code_of([&] { file->live_servers(0, 240); }, &message), 1);
  EXPECT_NE(message.find("does not exist"), std::string::npos);
  auto sqlite = open_registry("sqlite://" + (dir / "later.sqlite3").string());
  EXPECT_EQ(error_code_of([&] { sqlite->live_servers(0, 240); }, &message), 1);
  EXPECT_NE(message.find("does not exist"), std::string::npos);
  // A reader never creates anything.
  EXPECT_FALSE(std::filesystem::exists(dir / "later"));
  EXPECT_FALSE(std::filesystem::exists(dir / "later.sqlite3"));
}

TEST(BackendErrors, SqliteWithoutTableIsAFailureNotACrash) {
  test::TempDir dir;
  test::write_file(dir / "empty.sqlite3", "");
  auto sqlite = open_registry("sqlite://" + (dir / "empty.sqlite3").string());
  std::string message;
  EXPECT_EQ(error_code_of([&] { sqlite->live_servers(0, 240); }, &message), 1);
  EXPECT_NE(message.find("literegistry_kv"), std::string::npos);
}

TEST(BackendErrors, SqliteSchemaMatchesLiteRegistry) {
  test::TempDir dir;
  auto sqlite = open_registry("sqlite://" + (dir / "sub" / "r.sqlite3").string());
  sqlite->put_server(make_server_record("x", "h", 1, "http://h:1", 5, {}));
  proc::SystemRunner runner;
  proc::Command command;
  command.argv = {"sqlite3",
                  (dir / "sub" / "r.sqlite3").string(),
                  "SELECT name FROM sqlite_master ORDER BY name; PRAGMA journal_mode; "
                  "SELECT typeof(value), quote(expires_at) FROM literegistry_kv;"};
  const auto result = runner.run(command);
  EXPECT_EQ(
      result.out,
      "literegistry_affinity\nliteregistry_affinity_expires_at\nliteregistry_affinity_lookup\n"
      "literegistry_affinity_server\nliteregistry_kv\nliteregistry_kv_expires_at\ndelete\n"
      "blob|NULL\n");
}

TEST(BackendErrors, RedisDownIsAFailureNamingTheAddress) {
  const int port = test::free_tcp_port();
  auto redis = open_registry("redis://:hunter2@127.0.0.1:" + std::to_string(port));
  std::string message;
  EXPECT_EQ(error_code_of([&] { redis->live_servers(0, 240); }, &message), 1);
  EXPECT_NE(message.find("127.0.0.1:" + std::to_string(port)), std::string::npos);
  EXPECT_NE(message.find("not reachable"), std::string::npos);
  EXPECT_EQ(message.find("hunter2"), std::string::npos);
}

TEST(BackendErrors, RedissIsAClearUsageError) {
  std::string message;
  EXPECT_EQ(error_code_of([&] { open_registry("rediss://u:pw@h:6380"); }, &message), 2);
  EXPECT_NE(message.find("TLS"), std::string::npos);
  EXPECT_NE(message.find("hiredis"), std::string::npos);
  EXPECT_EQ(message.find("pw@"), std::string::npos);
  EXPECT_EQ(error_code_of([&] { open_registry("head+rediss://h:1"); }), 2);
}

TEST(Redis, OnlyTheHeartbeatIndexMakesRecordsVisible) {
  RedisServer server;
  auto raw = test::raw_redis_store(server);
  const double now = test::wall_now();
  raw->put_server("server_indexed", test::python_server_record("indexed", "python", now), now);
  raw->put_server("server_bypass", test::python_server_record("bypass", "python", now), now, false);
  server.cli({"ZADD", std::string(k_heartbeat_index), std::to_string(now), "server_vanished"});
  auto registry = open_registry(server.uri());
  const auto live = registry->live_servers(now, 240);
  ASSERT_EQ(live.size(), 1U);
  EXPECT_EQ(live[0].server_id, "indexed");
}

TEST(Redis, IndexScoreAndRecordAgeBothApply) {
  RedisServer server;
  auto raw = test::raw_redis_store(server);
  // Index says fresh, record says stale: the record's own heartbeat decides (docs/registry.md
  // counts()).
  raw->put_server("server_x", test::python_server_record("x", "python", 100), 5000);
  auto registry = open_registry(server.uri());
  EXPECT_TRUE(registry->live_servers(5000, 240).empty());
  // Exact inclusive edge through the index: score 1000, now 1240.
  raw->put_server("server_y", test::python_server_record("y", "python", 1000), 1000);
  EXPECT_EQ(registry->live_servers(1240, 240).size(), 1U);
  EXPECT_TRUE(registry->live_servers(1240.001, 240).empty());
}

TEST(Redis, AuthAndDatabaseSelection) {
  RedisServer server({"--requirepass", "s3cret"});
  auto good = open_registry("redis://:s3cret@127.0.0.1:" + std::to_string(server.port()) + "/3");
  good->put_server(make_server_record("a", "h", 1, "http://h:1", 100, {{"model_path", "p"}}));
  EXPECT_EQ(good->live_servers(100, 240).size(), 1U);
  EXPECT_EQ(server.cli({"-a", "s3cret", "--no-auth-warning", "-n", "3", "EXISTS", "server_a"}),
            "1\n");
  EXPECT_EQ(server.cli({"-a", "s3cret", "--no-auth-warning", "-n", "0", "EXISTS", "server_a"}),
            "0\n");
  auto bad = open_registry("redis://:wrong@127.0.0.1:" + std::to_string(server.port()));
  std::string message;
  EXPECT_EQ(error_code_of([&] { bad->check_reachable(0); }, &message), 1);
  EXPECT_NE(message.find("AUTH"), std::string::npos);
  EXPECT_EQ(message.find("wrong"), std::string::npos);
}

TEST(Head, WithoutARedisRecordSaysSo) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "head");
  auto registry = open_registry("head+file://" + (dir / "head").string());
  std::string message;
  EXPECT_EQ(error_code_of([&] { registry->live_servers(test::wall_now(), 240); }, &message), 1);
  EXPECT_NE(message.find("no live 'redis' endpoint record"), std::string::npos);
}

TEST(Head, FollowsANewerRedisRecordAfterTheRefreshInterval) {
  test::TempDir dir;
  RedisServer first;
  RedisServer second;
  const double now = test::wall_now();
  test::raw_redis_store(first)->put_server(
      "server_one", test::python_server_record("one", "a", now), now);
  test::raw_redis_store(second)->put_server(
      "server_two", test::python_server_record("two", "b", now), now);
  auto head = test::raw_file_store(dir / "head");
  EndpointRecord record{"redis", first.uri(), "publisher-1", now - 10, {}};
  head->put_with_expiry(record.key(), encode_endpoint_record(record), now + 600, now);
  auto registry = open_registry("head+file://" + (dir / "head").string());
  EXPECT_EQ(registry->live_servers(now, 240).at(0).server_id, "one");

  // Failover: a replacement Redis publishes a newer record under another publisher.
  EndpointRecord replacement{"redis", second.uri(), "publisher-2", now - 1, {}};
  head->put_with_expiry(replacement.key(), encode_endpoint_record(replacement), now + 600, now);
  EXPECT_EQ(registry->live_servers(now + 1, 240).at(0).server_id, "one"); // within 5 s: cached
  EXPECT_EQ(registry->live_servers(now + 6, 240).at(0).server_id, "two");

  // The current Redis dies: the next call fails, the one after re-reads the head.
  second.stop();
  EXPECT_EQ(error_code_of([&] { registry->live_servers(now + 7, 240); }), 1);
  std::filesystem::remove(dir / "head" / replacement.key());
  EXPECT_EQ(registry->live_servers(now + 8, 240).at(0).server_id, "one");
}

TEST(Head, BeakerHostGatewayRewrite) {
  test::TempDir dir;
  RedisServer server;
  const double now = test::wall_now();
  test::raw_redis_store(server)->put_server(
      "server_z", test::python_server_record("z", "a", now), now);
  auto head = test::raw_file_store(dir / "head");
  // Published with the node's own name, reachable only through the host gateway address.
  EndpointRecord record{
      "redis", "redis://beaker-node-xyz:" + std::to_string(server.port()), "p", now, {}};
  head->put_with_expiry(record.key(), encode_endpoint_record(record), now + 600, now);
  OpenOptions options = default_open_options();
  options.redis_timeout = std::chrono::milliseconds(500);
  options.beaker_node_hostname = "beaker-node-xyz";
  options.beaker_host_gateway = "127.0.0.1";
  auto registry = open_registry("head+file://" + (dir / "head").string(), options);
  EXPECT_EQ(registry->live_servers(now, 240).size(), 1U);
  options.beaker_host_gateway.reset();
  auto unrewritten = open_registry("head+file://" + (dir / "head").string(), options);
  EXPECT_EQ(error_code_of([&] { unrewritten->live_servers(now, 240); }), 1);
}

TEST(Head, PublishedTlsRedisIsAClearError) {
  test::TempDir dir;
  const double now = test::wall_now();
  auto head = test::raw_file_store(dir / "head");
  EndpointRecord record{"redis", "rediss://secure-host:6380", "p", now, {}};
  head->put_with_expiry(record.key(), encode_endpoint_record(record), now + 600, now);
  auto registry = open_registry("head+file://" + (dir / "head").string());
  std::string message;
  EXPECT_EQ(error_code_of([&] { registry->check_reachable(now); }, &message), 1);
  EXPECT_NE(message.find("TLS"), std::string::npos);
}

} // namespace
} // namespace pb::registry

namespace pb::registry {
namespace {

TEST(FileStore, SkipsTempFilesAndDirectoriesAndHonoursSidecars) {
  test::TempDir dir;
  const double now = test::wall_now();
  const auto root = dir / "reg";
  auto raw = test::raw_file_store(root);
  raw->put_server("server_plain", test::python_server_record("plain", "python", now), now);
  // A writer's in-flight temp file and a stray directory are not records.
  test::write_file(root / ".server_tmp.abcd1234.tmp",
                   test::python_server_record("tmp", "python", now));
  std::filesystem::create_directories(root / "server_subdir");
  // TTL sidecars apply to server records too when present (docs/registry.md).
  raw->put_with_expiry(
      "server_expired", test::python_server_record("expired", "python", now), now - 1, now);
  raw->put_with_expiry(
      "server_future", test::python_server_record("future", "python", now), now + 60, now);
  raw->put_server("server_badttl", test::python_server_record("badttl", "python", now), now);
  test::write_file(root / ".literegistry_ttl" / sha256_hex("server_badttl"), "not a number");
  auto registry = open_registry(root.string());
  std::vector<std::string> ids;
  for (const auto &server : registry->live_servers(now, 240)) {
    ids.push_back(server.server_id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"badttl", "future", "plain"}));
  // Reading deleted nothing.
  EXPECT_TRUE(std::filesystem::exists(root / "server_expired"));
}

} // namespace
} // namespace pb::registry
