// SPDX-License-Identifier: MIT
// The pure half of the worker: the env contract, the child's argv/env, the exit-status rule, and
// the endpoint wait under a fake clock.
#include "../registry/backend_fixture.hpp"
#include "test_support.hpp"

#include <primebeaker/evaluation_worker/worker.hpp>
#include <primebeaker/registry/records.hpp>

#include <signal.h>

namespace pb::evaluation_worker {
namespace {

EnvMap good_env() {
  return {{"PRIMEBEAKER_EVALUATION_MODULE", " jtc.eval.worker "},
          {"PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON", R"(["run", "--x=1"])"},
          {"PRIMEBEAKER_REQUIRED_SERVICES_JSON", R"({"terminal": 2, "Qwen/Qwen3.5-4B": "1"})"},
          {"PRIMEBEAKER_COORDINATION_ROOT", "/weka/shared/.literegistry-coop/stack"},
          {"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", "01SERVICE"},
          {"PRIMEBEAKER_KEEP_SERVICES", "False"},
          {"PRIMEBEAKER_READINESS_TIMEOUT_SECONDS", "7200.0"}};
}

TEST(WorkerEnv, ParsesTheContract) {
  const auto worker = parse_worker_env(good_env());
  EXPECT_EQ(worker.module, "jtc.eval.worker");
  EXPECT_EQ(worker.arguments, (std::vector<std::string>{"run", "--x=1"}));
  EXPECT_EQ(worker.required_services,
            (std::map<std::string, int>{{"terminal", 2}, {"Qwen/Qwen3.5-4B", 1}}));
  EXPECT_EQ(worker.coordination_root, "/weka/shared/.literegistry-coop/stack");
  EXPECT_EQ(worker.service_experiment_id, "01SERVICE");
  EXPECT_FALSE(worker.keep_services);
  EXPECT_EQ(worker.readiness_timeout, std::chrono::seconds(7200));
  EXPECT_FALSE(worker.registry);
  EXPECT_EQ(worker.python, "python3");
  EXPECT_EQ(worker.beaker, "beaker");
  EXPECT_EQ(child_argv(worker), (proc::Argv{"python3", "-m", "jtc.eval.worker", "run", "--x=1"}));
}

TEST(WorkerEnv, DefaultsAndOverrides) {
  EnvMap env = {{"PRIMEBEAKER_EVALUATION_MODULE", "m"},
                {"PRIMEBEAKER_COORDINATION_ROOT", "/c"},
                {"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", "01S"},
                {"PRIMEBEAKER_KEEP_SERVICES", "YES"},
                {"PRIMEBEAKER_REGISTRY", "redis://10.0.0.5:6379"},
                {"PRIMEBEAKER_PYTHON", "/opt/py/bin/python3.11"},
                {"PRIMEBEAKER_BEAKER", "/usr/local/bin/beaker"}};
  const auto worker = parse_worker_env(env);
  EXPECT_TRUE(worker.arguments.empty());
  EXPECT_TRUE(worker.required_services.empty());
  EXPECT_TRUE(worker.keep_services);
  EXPECT_EQ(worker.readiness_timeout, std::chrono::seconds(7200));
  EXPECT_EQ(worker.registry.value_or(""), "redis://10.0.0.5:6379");
  EXPECT_EQ(child_argv(worker), (proc::Argv{"/opt/py/bin/python3.11", "-m", "m"}));
  EXPECT_EQ(worker.beaker, "/usr/local/bin/beaker");
  env["PRIMEBEAKER_KEEP_SERVICES"] = "0";
  EXPECT_FALSE(parse_worker_env(env).keep_services);
}

struct BadValue {
  std::string name;
  std::optional<std::string> value; // nullopt: unset
  std::string message;
};

TEST(WorkerEnv, RejectsBadValuesWithExitOne) {
  const std::vector<BadValue> cases = {
      {"PRIMEBEAKER_EVALUATION_MODULE",
       std::nullopt,
       "missing required environment variable PRIMEBEAKER_EVALUATION_MODULE"},
      {"PRIMEBEAKER_EVALUATION_MODULE",
       "   ",
       "missing required environment variable PRIMEBEAKER_EVALUATION_MODULE"},
      {"PRIMEBEAKER_EVALUATION_MODULE", "-c", "invalid Python module path: '-c'"},
      {"PRIMEBEAKER_EVALUATION_MODULE", "a b", "invalid Python module path: 'a b'"},
      {"PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON",
       "[1]",
       "PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON must encode strings"},
      {"PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON",
       "run",
       "PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON must encode strings"},
      {"PRIMEBEAKER_REQUIRED_SERVICES_JSON",
       "[]",
       "PRIMEBEAKER_REQUIRED_SERVICES_JSON must encode an object"},
      {"PRIMEBEAKER_REQUIRED_SERVICES_JSON",
       R"({"terminal": 0})",
       "positive integer counts, got 'terminal': 0"},
      {"PRIMEBEAKER_REQUIRED_SERVICES_JSON", R"({"terminal": true})", "positive integer counts"},
      {"PRIMEBEAKER_COORDINATION_ROOT",
       std::nullopt,
       "missing required environment variable PRIMEBEAKER_COORDINATION_ROOT"},
      {"PRIMEBEAKER_COORDINATION_ROOT", "http://x/y", "PRIMEBEAKER_COORDINATION_ROOT: "},
      {"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID",
       std::nullopt,
       "missing required environment variable PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID"},
      {"PRIMEBEAKER_KEEP_SERVICES", "maybe", "invalid boolean value: 'maybe'"},
      {"PRIMEBEAKER_READINESS_TIMEOUT_SECONDS", "soon", "must be a positive number of seconds"},
      {"PRIMEBEAKER_READINESS_TIMEOUT_SECONDS", "0", "must be a positive number of seconds"},
      {"PRIMEBEAKER_READINESS_TIMEOUT_SECONDS", "nan", "must be a positive number of seconds"},
      {"PRIMEBEAKER_REGISTRY", "rediss://", "PRIMEBEAKER_REGISTRY: "},
      {"PRIMEBEAKER_REGISTRY", "rediss://cache:6380", "PRIMEBEAKER_REGISTRY: "},
  };
  for (const auto &bad : cases) {
    SCOPED_TRACE(bad.name + "=" + bad.value.value_or("<unset>"));
    EnvMap env = good_env();
    if (bad.value) {
      env[bad.name] = *bad.value;
    } else {
      env.erase(bad.name);
    }
    EXPECT_PB_ERROR(parse_worker_env(env), 1, bad.message);
  }
}

TEST(WorkerEnv, TuningFromEnvironment) {
  const auto defaults = parse_tuning({});
  EXPECT_EQ(defaults.poll_interval, std::chrono::milliseconds(200));
  EXPECT_EQ(defaults.stop_grace, std::chrono::seconds(20));
  const auto tuned = parse_tuning({{"PRIMEBEAKER_EVALUATION_POLL_SECONDS", "0.05"},
                                   {"PRIMEBEAKER_EVALUATION_STOP_GRACE_SECONDS", "1.5"}});
  EXPECT_EQ(tuned.poll_interval, std::chrono::milliseconds(50));
  EXPECT_EQ(tuned.stop_grace, std::chrono::milliseconds(1500));
  EXPECT_PB_ERROR(parse_tuning({{"PRIMEBEAKER_EVALUATION_POLL_SECONDS", "-1"}}),
                  1,
                  "PRIMEBEAKER_EVALUATION_POLL_SECONDS must be a non-negative number");
}

TEST(ChildEnvironment, AddsRegistryAndGatewayVariables) {
  const auto env =
      child_environment({{"KEEP", "1"}, {"REGISTRY", "old"}}, "redis://r:6379", "http://g:1212/");
  EXPECT_EQ(env.at("KEEP"), "1");
  EXPECT_EQ(env.at("REGISTRY"), "redis://r:6379");
  EXPECT_EQ(env.at("REGISTRY_URL"), "redis://r:6379");
  EXPECT_EQ(env.at("LITEREGISTRY_GATEWAY_URL"), "http://g:1212/");
  EXPECT_EQ(env.at("OPENAI_BASE_URL"), "http://g:1212/v1");
}

TEST(ExitStatus, SignalsBecome128PlusN) {
  EXPECT_EQ(exit_status_of({3, 0}), 3);
  EXPECT_EQ(exit_status_of({0, 0}), 0);
  EXPECT_EQ(exit_status_of({0, SIGKILL}), 137);
  EXPECT_EQ(exit_status_of({0, SIGTERM}), 143);
}

// A clock that only moves when the wait sleeps: hours of timeout take no real time.
class FakeClock final : public Clock {
public:
  std::chrono::system_clock::time_point now() override { return m_now; }
  void advance(std::chrono::milliseconds by) { m_now += by; }

private:
  std::chrono::system_clock::time_point m_now =
      std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
};

struct EndpointWorld {
  test::TempDir dir;
  FakeClock clock;
  std::unique_ptr<test::RawStore> raw = test::raw_file_store(dir.path());
  std::unique_ptr<registry::Registry> endpoints = registry::open_registry(dir.path().string());
  std::vector<std::string> probed;
  std::vector<std::string> progress;

  double now() { return registry::epoch_seconds(clock.now()); }
  void publish(const std::string &name,
               const std::string &uri,
               const std::string &publisher,
               double published_at,
               double ttl = 30) {
    registry::EndpointRecord record{name, uri, publisher, published_at, {}};
    raw->put_with_expiry(record.key(),
                         test::python_endpoint_record(name, uri, publisher, published_at),
                         now() + ttl,
                         now());
  }
  EndpointWait wait(const std::string &name, std::function<void(const std::string &)> health) {
    EndpointWait w;
    w.name = name;
    w.timeout = std::chrono::seconds(60);
    w.poll_interval = std::chrono::seconds(1);
    w.clock = &clock;
    w.health = [this, health](const std::string &uri) {
      probed.push_back(uri);
      health(uri);
    };
    w.progress = [this](const std::string &line) { progress.push_back(line); };
    return w;
  }
};

TEST(WaitForEndpoint, NewestHealthyRecordWins) {
  EndpointWorld world;
  world.publish("gateway", "http://old:1", "a", world.now() - 20);
  world.publish("gateway", "http://new:2", "b", world.now() - 5);
  world.publish("gateway", "http://expired:3", "c", world.now(), -1); // TTL already passed
  // Newer, but schema version 2: ignored, as coop.endpoints ignores it.
  registry::EndpointRecord future{"gateway", "http://v2:4", "d", world.now(), {}};
  std::string v2 = test::python_endpoint_record("gateway", "http://v2:4", "d", world.now());
  v2.replace(v2.find("\"schema_version\":1"), 18, "\"schema_version\":2");
  world.raw->put_with_expiry(future.key(), v2, world.now() + 30, world.now());
  auto wait = world.wait("gateway", [](const std::string &) {});
  wait.sleep = [&](std::chrono::milliseconds) { FAIL() << "ready at the first poll"; };
  EXPECT_EQ(wait_for_endpoint(*world.endpoints, wait), "http://new:2");
  EXPECT_EQ(world.probed, (std::vector<std::string>{"http://new:2"}));
}

TEST(WaitForEndpoint, LatePublicationIsSeenAtTheNextPoll) {
  EndpointWorld world;
  int polls = 0;
  auto wait = world.wait("redis", [](const std::string &) {});
  wait.sleep = [&](std::chrono::milliseconds pause) {
    ++polls;
    world.clock.advance(pause);
    if (polls == 3) {
      world.publish("redis", "redis://r:6379", "stack", world.now());
    }
  };
  EXPECT_EQ(wait_for_endpoint(*world.endpoints, wait), "redis://r:6379");
  EXPECT_EQ(polls, 3);
  ASSERT_FALSE(world.progress.empty());
  EXPECT_NE(world.progress.front().find("waiting for endpoint 'redis'"), std::string::npos);
  EXPECT_EQ(world.progress.size(), 1u) << "one progress line per change of state";
}

TEST(WaitForEndpoint, TimeoutNamesEndpointLastUriAndHealthError) {
  EndpointWorld world;
  world.publish("gateway", "http://gw:1212", "stack", world.now(), 3600);
  auto wait = world.wait(
      "gateway", [](const std::string &) { throw failure("GET /health answered HTTP 503"); });
  wait.sleep = [&](std::chrono::milliseconds pause) { world.clock.advance(pause); };
  EXPECT_PB_ERROR(wait_for_endpoint(*world.endpoints, wait),
                  1,
                  "timed out waiting for endpoint 'gateway' in file://");
  EXPECT_PB_ERROR(
      wait_for_endpoint(*world.endpoints, wait), 1, "; last published URI was http://gw:1212");
  EXPECT_PB_ERROR(wait_for_endpoint(*world.endpoints, wait), 1, "HTTP 503");
  EXPECT_GE(world.probed.size(), 60u); // one probe per one-second poll of the minute
}

TEST(WaitForEndpoint, MissingRootIsRetriedNotFatal) {
  test::TempDir dir;
  FakeClock clock;
  auto endpoints = registry::open_registry((dir.path() / "later").string());
  EndpointWait wait;
  wait.name = "gateway";
  wait.timeout = std::chrono::seconds(5);
  wait.clock = &clock;
  int polls = 0;
  wait.sleep = [&](std::chrono::milliseconds pause) {
    clock.advance(pause);
    if (++polls == 2) {
      auto raw = test::raw_file_store(dir.path() / "later");
      const double now = registry::epoch_seconds(clock.now());
      registry::EndpointRecord record{"gateway", "http://gw:1", "p", now, {}};
      raw->put_with_expiry(record.key(),
                           test::python_endpoint_record("gateway", "http://gw:1", "p", now),
                           now + 30,
                           now);
    }
  };
  EXPECT_EQ(wait_for_endpoint(*endpoints, wait), "http://gw:1");
}

} // namespace
} // namespace pb::evaluation_worker
