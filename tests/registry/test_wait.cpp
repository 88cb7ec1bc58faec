// SPDX-License-Identifier: MIT
// The barriers with a fake clock: a 30-minute timeout takes no real time.
#include "backend_fixture.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/wait.hpp>

#include <gtest/gtest.h>

namespace pb::registry {
namespace {

class FakeClock final : public Clock {
public:
  explicit FakeClock(double epoch)
      : m_now(std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                std::chrono::duration<double>(epoch)))) {}
  std::chrono::system_clock::time_point now() override { return m_now; }
  void advance(std::chrono::milliseconds by) { m_now += by; }

private:
  std::chrono::system_clock::time_point m_now;
};

constexpr double k_t0 = 1760000000.0;

class Wait : public ::testing::Test {
protected:
  Wait() : clock(k_t0) {
    options.clock = &clock;
    options.timeout = std::chrono::minutes(30);
    options.poll_interval = std::chrono::seconds(2);
    options.sleep = [this](std::chrono::milliseconds interval) {
      ++sleeps;
      clock.advance(interval);
      if (on_sleep) {
        on_sleep(sleeps);
      }
    };
  }

  void add_server(const std::string &id, const std::string &service, double heartbeat) {
    test::write_file(dir / "reg" / ("server_" + id),
                     test::python_server_record(id, service, heartbeat));
  }

  double now() { return epoch_seconds(clock.now()); }

  test::TempDir dir;
  FakeClock clock;
  WaitOptions options;
  int sleeps = 0;
  std::function<void(int)> on_sleep;
};

TEST_F(Wait, ReadyAtOnceWhenEnoughAreLive) {
  add_server("a", "python", k_t0 - 5);
  add_server("b", "python", k_t0 - 240); // the inclusive edge counts
  add_server("c", "terminal", k_t0);
  auto registry = open_registry((dir / "reg").string());
  const auto result = wait_for_services(*registry, {{"python", 2}, {"terminal", 1}}, options);
  EXPECT_EQ(result.status, WaitStatus::ready);
  EXPECT_EQ(result.polls, 1);
  EXPECT_EQ(sleeps, 0);
  EXPECT_EQ(result.observed, (std::map<std::string, int>{{"python", 2}, {"terminal", 1}}));
}

TEST_F(Wait, ReturnsOnThePollAfterTheNthRegistration) {
  add_server("a", "judge", k_t0);
  auto registry = open_registry((dir / "reg").string());
  on_sleep = [this](int n) {
    if (n == 3) {
      add_server("b", "judge", now());
    }
  };
  const auto result = wait_for_services(*registry, {{"judge", 2}}, options);
  EXPECT_EQ(result.status, WaitStatus::ready);
  EXPECT_EQ(result.polls, 4);
  EXPECT_EQ(result.elapsed, std::chrono::seconds(6));
}

TEST_F(Wait, TimesOutNamingExpectedAndObserved) {
  add_server("a", "python", k_t0);
  add_server("old", "terminal", k_t0 - 400); // 400 s old: not counted
  auto registry = open_registry((dir / "reg").string());
  options.timeout = std::chrono::seconds(30);
  const auto result =
      wait_for_services(*registry, {{"python", 1}, {"terminal", 4}, {"judge", 1}}, options);
  EXPECT_EQ(result.status, WaitStatus::timed_out);
  EXPECT_EQ(result.elapsed, std::chrono::seconds(30));
  EXPECT_EQ(result.polls, 16); // t = 0, 2, ..., 30
  EXPECT_NE(
      result.message.find(
          R"({"judge": {"expected": 1, "observed": 0}, "terminal": {"expected": 4, "observed": 0}})"),
      std::string::npos)
      << result.message;
  EXPECT_EQ(result.message.find("python"), std::string::npos); // satisfied ones are not listed
  EXPECT_NE(result.message.find("30.0s"), std::string::npos);
}

TEST_F(Wait, ARecordAgesOutWhileWaiting) {
  add_server("a", "python", k_t0 - 200);
  add_server("b", "python", k_t0 - 200);
  auto registry = open_registry((dir / "reg").string());
  options.timeout = std::chrono::seconds(60);
  // Needs 3; by the time a third appears the first two are more than 240 s old.
  on_sleep = [this](int n) {
    if (n == 25) {
      add_server("c", "python", now());
    }
  };
  const auto result = wait_for_services(*registry, {{"python", 3}}, options);
  EXPECT_EQ(result.status, WaitStatus::timed_out);
  EXPECT_EQ(result.observed.at("python"), 1);
}

TEST_F(Wait, ARegistryThatAppearsLate) {
  auto registry = open_registry((dir / "reg").string());
  on_sleep = [this](int n) {
    if (n == 5) {
      add_server("a", "search", now());
    }
  };
  const auto result = wait_for_services(*registry, {{"search", 1}}, options);
  EXPECT_EQ(result.status, WaitStatus::ready);
  EXPECT_EQ(result.polls, 6);
  EXPECT_FALSE(result.last_error);
}

TEST_F(Wait, ALateSqliteRegistryAndTheLastErrorOnTimeout) {
  const auto db = dir / "late.sqlite3";
  auto registry = open_registry("sqlite://" + db.string());
  options.timeout = std::chrono::seconds(10);
  const auto missing = wait_for_services(*registry, {{"x", 1}}, options);
  EXPECT_EQ(missing.status, WaitStatus::timed_out);
  EXPECT_NE(missing.message.find("does not exist"), std::string::npos) << missing.message;
  on_sleep = [&](int n) {
    if (n == sleeps && n == 7) {
      auto writer = open_registry("sqlite://" + db.string());
      writer->put_server(
          make_server_record("w", "h", 1, "http://h:1", now(), {{"model_path", "x"}}));
    }
  };
  sleeps = 0;
  options.timeout = std::chrono::minutes(1);
  EXPECT_EQ(wait_for_services(*registry, {{"x", 1}}, options).status, WaitStatus::ready);
}

TEST_F(Wait, StopFileEndsTheWait) {
  auto registry = open_registry((dir / "reg").string());
  const auto stop = dir / "shutdown.requested";
  options.stop_file = stop;
  on_sleep = [&](int n) {
    if (n == 2) {
      std::filesystem::create_directories(stop); // a directory is not a stop request
    }
    if (n == 4) {
      std::filesystem::remove(stop);
      test::write_file(stop, "rank 1 failed\n");
    }
  };
  const auto result = wait_for_services(*registry, {{"x", 1}}, options);
  EXPECT_EQ(result.status, WaitStatus::stopped);
  EXPECT_EQ(result.polls, 4);
  EXPECT_EQ(result.message, "shutdown requested while waiting for services: " + stop.string());
}

TEST_F(Wait, EmptyRequirementsNeverTouchTheRegistry) {
  auto registry = open_registry((dir / "does-not-exist").string());
  const auto result = wait_for_services(*registry, {}, options);
  EXPECT_EQ(result.status, WaitStatus::ready);
  EXPECT_EQ(result.polls, 0);
}

TEST_F(Wait, ProgressIsReportedEveryPoll) {
  add_server("a", "python", k_t0);
  auto registry = open_registry((dir / "reg").string());
  options.timeout = std::chrono::seconds(4);
  std::vector<std::string> lines;
  options.progress = [&](const std::string &line) { lines.push_back(line); };
  wait_for_services(*registry, {{"python", 2}, {"judge", 1}}, options);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_NE(lines[0].find("judge 0/1, python 1/2"), std::string::npos) << lines[0];
}

TEST_F(Wait, RedisWaitIsImmediateForFileAndSqlite) {
  auto file = open_registry((dir / "nothing-yet").string());
  EXPECT_EQ(wait_for_redis(*file, options).status, WaitStatus::ready);
  auto sqlite = open_registry("sqlite://" + (dir / "x.sqlite3").string());
  EXPECT_EQ(wait_for_redis(*sqlite, options).status, WaitStatus::ready);
}

TEST_F(Wait, RedisThatStartsLate) {
  const int port = test::free_tcp_port();
  auto registry = open_registry("redis://127.0.0.1:" + std::to_string(port));
  std::unique_ptr<test::RedisServer> server;
  on_sleep = [&](int n) {
    if (n == 3) {
      server = std::make_unique<test::RedisServer>(std::vector<std::string>{}, port);
    }
  };
  const auto result = wait_for_redis(*registry, options);
  EXPECT_EQ(result.status, WaitStatus::ready);
  EXPECT_EQ(result.polls, 4);
}

TEST_F(Wait, RedisTimeoutAndStop) {
  const int port = test::free_tcp_port();
  auto registry = open_registry("redis://127.0.0.1:" + std::to_string(port));
  options.timeout = std::chrono::seconds(5);
  const auto timed_out = wait_for_redis(*registry, options);
  EXPECT_EQ(timed_out.status, WaitStatus::timed_out);
  EXPECT_NE(timed_out.message.find("timed out after 5.0s waiting for Redis at redis://127.0.0.1:" +
                                   std::to_string(port)),
            std::string::npos)
      << timed_out.message;
  EXPECT_NE(timed_out.message.find("not reachable"), std::string::npos);
  test::write_file(dir / "stop", "x");
  options.stop_file = dir / "stop";
  const auto stopped = wait_for_redis(*registry, options);
  EXPECT_EQ(stopped.status, WaitStatus::stopped);
  EXPECT_EQ(stopped.polls, 0);
}

TEST_F(Wait, HeadRedisPublishedLate) {
  test::RedisServer server;
  auto head = test::raw_file_store(dir / "head");
  auto registry = open_registry("head+file://" + (dir / "head").string());
  on_sleep = [&](int n) {
    if (n == 2) {
      EndpointRecord record{"redis", server.uri(), "pub", now(), {}};
      head->put_with_expiry(record.key(), encode_endpoint_record(record), now() + 60, now());
    }
  };
  const auto result = wait_for_redis(*registry, options);
  EXPECT_EQ(result.status, WaitStatus::ready);
  EXPECT_EQ(result.polls, 3);
}

TEST(Requirements, ParsesNameEqualsCount) {
  EXPECT_EQ(parse_requirements({"terminal=4", " judge = 1 ", R"({"python": 2})"}),
            (Requirements{{"terminal", 4}, {"judge", 1}, {"python", 2}}));
  EXPECT_EQ(parse_requirements({"a=1", "a=3"}), (Requirements{{"a", 3}}));
  EXPECT_EQ(parse_requirements({"localsearch:wiki=2"}), (Requirements{{"localsearch:wiki", 2}}));
  EXPECT_TRUE(parse_requirements({}).empty());
}

TEST(Requirements, RejectsBadEntriesWithUsageErrors) {
  for (const std::string bad : {"terminal", "=2", "a=0", "a=-1", "a=x", "a=1.5", "a="}) {
    try {
      parse_requirements({bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error &error) {
      EXPECT_EQ(error.code(), 2) << bad;
      EXPECT_NE(std::string(error.what()).find(bad), std::string::npos) << error.what();
    }
  }
  for (const std::string bad :
       {R"({"a": true})", R"({"a": 1.0})", R"({"a": "2"})", R"({"": 1})", R"(["a"])", "{oops"}) {
    EXPECT_THROW(parse_requirements_json(bad), Error) << bad;
  }
  EXPECT_TRUE(parse_requirements_json("{}").empty());
}

TEST(Requirements, ThrowUnlessReadyCodes) {
  EXPECT_NO_THROW(throw_unless_ready(WaitStatus::ready, ""));
  try {
    throw_unless_ready(WaitStatus::timed_out, "late");
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 1);
  }
  try {
    throw_unless_ready(WaitStatus::stopped, "stop");
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 92);
  }
}

} // namespace
} // namespace pb::registry
