// SPDX-License-Identifier: MIT
// `primebeaker evaluation worker` end to end: the real binary against a real redis-server, a temp
// coordination root written in LiteRegistry's bytes, a loopback HTTP gateway, a fake `beaker` and
// a fake evaluation module on PYTHONPATH.
#include "../registry/backend_fixture.hpp"
#include "../registry/redis_server.hpp"
#include "test_support.hpp"

#include <primebeaker/core/subprocess.hpp>
#include <primebeaker/registry/records.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <atomic>
#include <fstream>
#include <thread>

// A readable failure: the whole text, not two npos numbers.
#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

namespace pb::evaluation_worker {
namespace {

using namespace std::chrono_literals;
using test::FakeBeaker;
using test::FakeBin;

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A loopback gateway whose /health status the test flips.
class Gateway {
public:
  explicit Gateway(int health_status = 200) : m_status(health_status) {
    m_server.Get("/health", [this](const httplib::Request &, httplib::Response &response) {
      double unset = 0;
      m_first_probe.compare_exchange_strong(unset, wall_seconds());
      response.status = m_status.load();
      response.set_content(R"({"status":"ok"})", "application/json");
    });
    m_port = m_server.bind_to_any_port("127.0.0.1");
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
    while (!m_server.is_running()) {
      std::this_thread::sleep_for(5ms);
    }
  }
  ~Gateway() {
    m_server.stop();
    m_thread.join();
  }
  void set_health(int status) { m_status = status; }
  // Wall-clock time of the first GET /health, 0 before it.
  double first_probe() const { return m_first_probe.load(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

private:
  httplib::Server m_server;
  std::atomic<int> m_status;
  std::atomic<double> m_first_probe{0};
  int m_port = 0;
  std::thread m_thread;
};

// One redis-server for the whole binary (starting one per test costs more than the test);
// every World empties it first.
test::RedisServer &shared_redis() {
  static test::RedisServer server;
  return server;
}

// Everything one worker run needs, with a helper per thing a test does.
class World {
public:
  // `stop_exit_code`: what the fake `beaker experiment stop` exits with.
  explicit World(int stop_exit_code = 0) : m_fakes(m_dir / "fakes"), m_beaker(m_fakes) {
    m_beaker.on({"experiment", "stop"}, "", stop_exit_code, stop_exit_code ? "not found" : "");
    test::write_file(m_dir / "py" / "fakeeval" / "__init__.py", "");
    test::write_file(
        m_dir / "py" / "fakeeval" / "__main__.py",
        test::read_file(test::source_dir() / "tests/evaluation_worker/fake_eval_module.py"));
    m_raw = test::raw_file_store(root());
    m_redis.cli({"FLUSHALL"});
  }

  std::filesystem::path root() const { return m_dir / "coop"; }
  std::filesystem::path record_path() const { return m_dir / "child.json"; }
  test::RedisServer &redis() { return m_redis; }
  Gateway &gateway() { return m_gateway; }

  // Publishes an endpoint record the way coop.endpoints does (30 s TTL); returns when.
  double publish(const std::string &name, const std::string &uri) {
    const double now = wall_seconds();
    registry::EndpointRecord record{name, uri, "stack-" + name, now, {}};
    m_raw->put_with_expiry(record.key(),
                           test::python_endpoint_record(name, uri, record.publisher_id, now),
                           now + 30,
                           now);
    return now;
  }
  void publish_redis() { publish("redis", m_redis.uri()); }
  void publish_gateway() { publish("gateway", m_gateway.url()); }
  void publish_stack() {
    publish_redis();
    publish_gateway();
  }

  // Registers one live server of `service` in the Redis roster; returns when.
  double register_server(const std::string &service) {
    auto raw = test::raw_redis_store(m_redis);
    const double now = wall_seconds();
    const std::string id = service + "-" + std::to_string(++m_servers);
    raw->put_server("server_" + id, test::python_server_record(id, service, now), now);
    return now;
  }

  std::map<std::string, std::string> env(const std::vector<std::string> &module_args = {}) const {
    std::string arguments = nlohmann::json(module_args).dump();
    return {{"PRIMEBEAKER_EVALUATION_MODULE", "fakeeval"},
            {"PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON", arguments},
            {"PRIMEBEAKER_COORDINATION_ROOT", root().string()},
            {"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", "01SERVICESTACK"},
            {"PRIMEBEAKER_KEEP_SERVICES", "False"},
            {"PRIMEBEAKER_READINESS_TIMEOUT_SECONDS", "10.0"},
            {"PRIMEBEAKER_EVALUATION_POLL_SECONDS", "0.05"},
            {"PRIMEBEAKER_EVALUATION_STOP_GRACE_SECONDS", "5"},
            {"BEAKER_TOKEN", "token-value"},
            {"PYTHONPATH", (m_dir / "py").string()},
            {"FAKE_EVAL_RECORD", record_path().string()}};
  }

  test::RunResult run(const std::map<std::string, std::string> &env) const {
    test::RunOptions options;
    options.env = env;
    options.path_prepend = {m_fakes.bin()};
    options.timeout_seconds = 30;
    return test::run_primebeaker({"evaluation", "worker"}, options);
  }

  // Starts the worker without waiting; its stdout/stderr go to files read by output().
  proc::Child start(const std::map<std::string, std::string> &env) const {
    proc::SpawnSpec spec;
    spec.argv = {test::binary_path().string(), "evaluation", "worker"};
    spec.env = {{"PATH", m_fakes.bin().string() + ":/usr/local/bin:/usr/bin:/bin"},
                {"LANG", "C.UTF-8"},
                {"HOME", m_dir.path().string()},
                {"NO_COLOR", "1"}};
    for (const auto &[name, value] : env) {
      spec.env[name] = value;
    }
    spec.out = proc::Output::truncate_to(m_dir / "worker.out");
    spec.err = proc::Output::truncate_to(m_dir / "worker.err");
    return proc::Child::spawn(spec);
  }
  std::string out() const { return test::read_file(m_dir / "worker.out"); }
  std::string err() const { return test::read_file(m_dir / "worker.err"); }

  // Waits (up to 20 s) until the worker's stderr shows `text`: the worker is at that point.
  void wait_for_stderr(const std::string &text) const {
    for (int i = 0; i < 2000; ++i) {
      if (std::filesystem::exists(m_dir / "worker.err") && err().find(text) != std::string::npos) {
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "the worker never printed '" << text << "': " << err();
  }

  bool child_started() const { return std::filesystem::exists(record_path()); }
  nlohmann::json child() const { return nlohmann::json::parse(test::read_file(record_path())); }
  // Waits (up to 20 s) for the fake module to record itself.
  nlohmann::json wait_for_child() const {
    for (int i = 0; i < 2000 && !child_started(); ++i) {
      std::this_thread::sleep_for(10ms);
    }
    return child();
  }
  size_t stop_calls() const { return m_beaker.calls_matching({"experiment", "stop"}).size(); }
  void expect_stopped_once() const {
    const auto calls = m_beaker.calls();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].argv,
              (std::vector<std::string>{"beaker", "experiment", "stop", "01SERVICESTACK"}));
    EXPECT_EQ(calls[0].env.at("BEAKER_TOKEN"), "token-value");
  }

private:
  test::TempDir m_dir;
  test::RedisServer &m_redis = shared_redis();
  Gateway m_gateway;
  FakeBin m_fakes;
  FakeBeaker m_beaker;
  std::unique_ptr<test::RawStore> m_raw;
  int m_servers = 0;
};

// Waits up to 20 s for a started worker to exit.
proc::ExitStatus wait_exit(proc::Child &worker) {
  for (int i = 0; i < 2000; ++i) {
    if (const auto status = worker.poll()) {
      return *status;
    }
    std::this_thread::sleep_for(10ms);
  }
  ADD_FAILURE() << "the worker did not exit";
  return worker.stop(1s);
}

// Gone, or a zombie about to be reaped by init.
bool process_gone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) {
    return true;
  }
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

TEST(Worker, SuccessPassesExitCodeAddsEnvAndStopsOnce) {
  World world;
  world.publish_stack();
  world.register_server("terminal");
  auto env = world.env({"run", "--exit", "3", "two words"});
  env["PRIMEBEAKER_REQUIRED_SERVICES_JSON"] = R"({"terminal": 1})";
  const auto result = world.run(env);
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_EQ(result.out, "STOPPED_EXPERIMENT_ID=01SERVICESTACK\n");
  world.expect_stopped_once();

  const auto child = world.child();
  EXPECT_EQ(child["args"], nlohmann::json({"run", "--exit", "3", "two words"}));
  const auto &child_env = child["env"];
  EXPECT_EQ(child_env["REGISTRY"], world.redis().uri());
  EXPECT_EQ(child_env["REGISTRY_URL"], world.redis().uri());
  EXPECT_EQ(child_env["LITEREGISTRY_GATEWAY_URL"], world.gateway().url());
  EXPECT_EQ(child_env["OPENAI_BASE_URL"], world.gateway().url() + "/v1");
  EXPECT_EQ(child_env["PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID"], "01SERVICESTACK");
  EXPECT_EQ(child["pgid"], child["pid"]) << "the child leads its own process group";
  EXPECT_CONTAINS(result.err, "registry ready");
}

TEST(Worker, ExitZeroAndExternalRegistrySkipsTheRedisWait) {
  World world;
  world.publish_gateway(); // no `redis` record: PRIMEBEAKER_REGISTRY replaces it
  auto env = world.env();
  env["PRIMEBEAKER_REGISTRY"] = world.redis().uri();
  const auto result = world.run(env);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(world.child()["env"]["REGISTRY"], world.redis().uri());
  world.expect_stopped_once();
}

// Publishes `name` once the worker is waiting for it; the worker must notice within one poll.
// The gateway's first GET /health marks the moment (for `redis`, the gateway is already
// published, so its probe follows the redis detection at once).
void expect_late_publication_seen(const std::string &name) {
  World world;
  if (name != "redis") {
    world.publish_redis();
  }
  if (name != "gateway") {
    world.publish_gateway();
  }
  auto env = world.env();
  env["PRIMEBEAKER_EVALUATION_POLL_SECONDS"] = "0.2";
  auto worker = world.start(env);
  world.wait_for_stderr("waiting for endpoint '" + name + "'");
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(world.child_started()) << "started before " << name << " was published";
  EXPECT_EQ(world.gateway().first_probe(), 0.0);
  const double published =
      world.publish(name, name == "redis" ? world.redis().uri() : world.gateway().url());
  world.wait_for_child();
  EXPECT_EQ(wait_exit(worker).code(), 0) << world.err();
  // One 0.2 s poll plus scheduling slack on a loaded machine (Python PrimeBeaker polled every 1 s).
  EXPECT_GT(world.gateway().first_probe(), published);
  EXPECT_LT(world.gateway().first_probe() - published, 0.2 + 0.8) << world.err();
  world.expect_stopped_once();
}

TEST(Worker, LateRedisPublicationIsSeenWithinOnePoll) {
  expect_late_publication_seen("redis");
}

TEST(Worker, LateGatewayPublicationIsSeenWithinOnePoll) {
  expect_late_publication_seen("gateway");
}

TEST(Worker, UnhealthyGatewayIsWaitedForUntilHealthy) {
  World world;
  world.gateway().set_health(503);
  world.publish_stack();
  auto worker = world.start(world.env());
  world.wait_for_stderr("is not healthy yet: GET /health answered HTTP 503");
  EXPECT_FALSE(world.child_started()) << "started against an unhealthy gateway";
  const double healthy = wall_seconds();
  world.gateway().set_health(200);
  const auto started = world.wait_for_child()["started"].get<double>();
  EXPECT_EQ(wait_exit(worker).code(), 0) << world.err();
  EXPECT_GT(started, healthy);
}

TEST(Worker, ShortRosterWaitsForALateRegistration) {
  World world;
  world.publish_stack();
  world.register_server("terminal");
  auto env = world.env();
  env["PRIMEBEAKER_REQUIRED_SERVICES_JSON"] = R"({"terminal": 2})";
  auto worker = world.start(env);
  world.wait_for_stderr("terminal 1/2");
  EXPECT_FALSE(world.child_started()) << "started with 1 of 2 terminals";
  const double registered = world.register_server("terminal");
  const auto started = world.wait_for_child()["started"].get<double>();
  EXPECT_EQ(wait_exit(worker).code(), 0) << world.err();
  EXPECT_GT(started, registered);
}

TEST(Worker, ReadinessTimeoutExitsOneStopsAndNamesTheEndpoint) {
  World world;
  world.gateway().set_health(503);
  world.publish_stack();
  auto env = world.env();
  env["PRIMEBEAKER_READINESS_TIMEOUT_SECONDS"] = "0.5";
  const auto result = world.run(env);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_CONTAINS(result.err, "timed out waiting for endpoint 'gateway' in file://");
  EXPECT_CONTAINS(result.err, "last published URI was " + world.gateway().url());
  EXPECT_EQ(result.out, "STOPPED_EXPERIMENT_ID=01SERVICESTACK\n");
  EXPECT_FALSE(world.child_started());
  world.expect_stopped_once();
}

TEST(Worker, SigtermMidRunKillsTheWholeChildGroupAndStopsOnce) {
  World world;
  world.publish_stack();
  auto worker = world.start(world.env({"--grandchild", "--sleep", "60"}));
  const auto child = world.wait_for_child();
  const int pid = child["pid"].get<int>();
  const int grandchild = child["grandchild"].get<int>();
  ASSERT_FALSE(process_gone(grandchild));
  ::kill(worker.pid(), SIGTERM);
  const auto status = wait_exit(worker);
  EXPECT_EQ(status.code(), 143) << world.err();
  EXPECT_TRUE(process_gone(pid));
  EXPECT_TRUE(process_gone(grandchild));
  EXPECT_EQ(world.out(), "STOPPED_EXPERIMENT_ID=01SERVICESTACK\n");
  EXPECT_CONTAINS(world.err(), "SIGTERM received: forwarding it to python3 -m fakeeval");
  world.expect_stopped_once();
}

TEST(Worker, ChildIgnoringSigtermIsKilledAfterTheGrace) {
  World world;
  world.publish_stack();
  auto env = world.env({"--ignore-signals", "--grandchild", "--sleep", "60"});
  env["PRIMEBEAKER_EVALUATION_STOP_GRACE_SECONDS"] = "0.3";
  auto worker = world.start(env);
  const auto child = world.wait_for_child();
  const auto signalled = std::chrono::steady_clock::now();
  ::kill(worker.pid(), SIGINT);
  EXPECT_EQ(wait_exit(worker).code(), 130) << world.err();
  EXPECT_GE(std::chrono::steady_clock::now() - signalled, 300ms) << "escalated before the grace";
  EXPECT_TRUE(process_gone(child["pid"].get<int>()));
  EXPECT_TRUE(process_gone(child["grandchild"].get<int>()));
  world.expect_stopped_once();
}

TEST(Worker, SigtermWhileWaitingStopsServicesAndExits143) {
  World world; // nothing published: the worker waits for `redis`
  auto worker = world.start(world.env());
  world.wait_for_stderr("waiting for endpoint 'redis'");
  ::kill(worker.pid(), SIGTERM);
  EXPECT_EQ(wait_exit(worker).code(), 143) << world.err();
  EXPECT_FALSE(world.child_started());
  world.expect_stopped_once();
}

// One run against a ready stack that must end with `code`, say each of `said` on stderr and
// stop the service experiment once.
struct Outcome {
  std::string name;
  std::vector<std::string> module_args;
  std::map<std::string, std::string> env;
  int code;
  std::vector<std::string> said;
};

class WorkerOutcome : public testing::TestWithParam<Outcome> {};

TEST_P(WorkerOutcome, ExitStatusMessageAndOneStop) {
  const Outcome &outcome = GetParam();
  World world;
  world.publish_stack();
  auto env = world.env(outcome.module_args);
  for (const auto &[name, value] : outcome.env) {
    env[name] = value;
  }
  const auto result = world.run(env);
  EXPECT_EQ(result.exit_code, outcome.code) << result.err;
  for (const auto &text : outcome.said) {
    EXPECT_CONTAINS(result.err, text);
  }
  world.expect_stopped_once();
}

INSTANTIATE_TEST_SUITE_P(
    Worker,
    WorkerOutcome,
    testing::Values(
        Outcome{
            "ChildKilledBySigkillGives137", {"--kill-self", "9"}, {}, 137, {"killed by signal 9"}},
        Outcome{"MissingInterpreterExitsFour",
                {},
                {{"PRIMEBEAKER_PYTHON", "/nonexistent/python3"}},
                4,
                {"/nonexistent/python3"}},
        Outcome{"RosterTimeoutNamesTheMissingService",
                {},
                {{"PRIMEBEAKER_READINESS_TIMEOUT_SECONDS", "0.3"},
                 {"PRIMEBEAKER_REQUIRED_SERVICES_JSON", R"({"judge": 1})"}},
                1,
                {"timed out waiting for LiteRegistry services: ",
                 R"({"judge": {"expected": 1, "observed": 0}})"}}),
    [](const testing::TestParamInfo<Outcome> &param) { return param.param.name; });

TEST(Worker, KeepServicesNeverStops) {
  World world;
  world.publish_stack();
  auto env = world.env({"--exit", "5"});
  env["PRIMEBEAKER_KEEP_SERVICES"] = "true";
  const auto result = world.run(env);
  EXPECT_EQ(result.exit_code, 5) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(world.stop_calls(), 0u);
  EXPECT_CONTAINS(result.err, "keep-services");
}

TEST(Worker, FailedStopWarnsWithoutChangingTheStatus) {
  World world(1);
  world.publish_stack();
  const auto result = world.run(world.env({"--exit", "0"}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_CONTAINS(result.err, "warning: could not stop managed service experiment 01SERVICESTACK");
}

TEST(Worker, BadEnvValuesExitOneAndStopNothing) {
  World world;
  world.publish_stack();
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Every rule has a unit test (test_env.cpp); these prove the binary stops nothing.
      {"PRIMEBEAKER_KEEP_SERVICES", "maybe"},
      {"PRIMEBEAKER_EVALUATION_MODULE", "os; rm -rf /"},
      {"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", ""},
  };
  for (const auto &[name, value] : cases) {
    SCOPED_TRACE(name + "=" + value);
    auto env = world.env();
    env[name] = value;
    const auto result = world.run(env);
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_CONTAINS(result.err, "primebeaker: error: ");
    EXPECT_EQ(result.out, "");
  }
  EXPECT_EQ(world.stop_calls(), 0u);
  EXPECT_FALSE(world.child_started());
}

} // namespace
} // namespace pb::evaluation_worker
