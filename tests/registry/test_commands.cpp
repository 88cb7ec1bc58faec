// SPDX-License-Identifier: MIT
// End to end: the real primebeaker binary for every `registry` command.
#include "backend_fixture.hpp"

#include <primebeaker/registry/records.hpp>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <thread>

namespace pb::registry {
namespace {

using test::run_primebeaker;

nlohmann::json parse_json(const std::string &text) {
  return nlohmann::json::parse(text);
}

TEST(RegistryCommands, RegisterWritesLiteRegistryRecordsAndListShowsThem) {
  test::TempDir dir;
  const std::string reg = (dir / "reg").string();
  const auto first = run_primebeaker({"registry",
                                      "register",
                                      "--registry",
                                      reg,
                                      "--service",
                                      "python",
                                      "--uri",
                                      "http://node01.cluster:20306/",
                                      "--host",
                                      "node01"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto receipt = parse_json(first.out);
  const std::string key = receipt["key"];
  EXPECT_TRUE(std::regex_match(key, std::regex("server_node01-[0-9a-f]{32}"))) << key;
  // The stored bytes are exactly ServerRegistry's json.dumps output.
  const std::string stored = test::read_file(dir / "reg" / key);
  const auto heartbeat = receipt["last_heartbeat"].get<double>();
  ServerRecord expected = make_server_record(receipt["server_id"],
                                             "node01",
                                             20306,
                                             "http://node01.cluster:20306",
                                             heartbeat,
                                             {{"model_path", "python"}});
  EXPECT_EQ(stored, encode_server_record(expected));
  EXPECT_EQ(stored.rfind(R"({"server_id": "node01-)", 0), 0U) << stored;
  EXPECT_NE(stored.find(R"(, "port": 20306, "last_heartbeat": )"), std::string::npos);
  EXPECT_NE(
      stored.find(
          R"("metadata": {"model_path": "python"}, "status": "active", "uri": "http://node01.cluster:20306"})"),
      std::string::npos);

  ASSERT_EQ(run_primebeaker({"registry",
                             "register",
                             "--registry",
                             reg,
                             "--service",
                             "judge",
                             "--uri",
                             "http://node02:9000",
                             "--server-id",
                             "node02-fixed"})
                .exit_code,
            0);
  // 300 s old: registered, but not live.
  ASSERT_EQ(run_primebeaker({"registry",
                             "register",
                             "--registry",
                             reg,
                             "--service",
                             "judge",
                             "--uri",
                             "http://node03:9000",
                             "--heartbeat",
                             std::to_string(test::wall_now() - 300)})
                .exit_code,
            0);

  const auto listed =
      run_primebeaker({"registry", "list", "--registry", "file://" + reg, "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto groups = parse_json(listed.out);
  ASSERT_EQ(groups.size(), 2U);
  ASSERT_EQ(groups["python"].size(), 1U);
  EXPECT_EQ(groups["python"][0]["uri"], "http://node01.cluster:20306");
  EXPECT_EQ(groups["python"][0]["port"], 20306);
  ASSERT_EQ(groups["judge"].size(), 1U);
  EXPECT_EQ(groups["judge"][0]["server_id"], "node02-fixed");

  const auto text = run_primebeaker({"registry", "list", "--registry", reg});
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("judge (1)\n  http://node02:9000  node02-fixed  heartbeat "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("python (1)\n"), std::string::npos);
  EXPECT_EQ(text.err, "");

  const auto wide = run_primebeaker(
      {"registry", "list", "--registry", reg, "--json", "--heartbeat_window", "400"});
  EXPECT_EQ(parse_json(wide.out)["judge"].size(), 2U);
}

TEST(RegistryCommands, EveryBackendThroughTheBinary) {
  test::TempDir dir;
  test::RedisServer redis;
  // head+file whose `redis` record is published by our own publish-endpoint command.
  const auto published = run_primebeaker({"registry",
                                          "publish-endpoint",
                                          "--registry",
                                          (dir / "head").string(),
                                          "--name",
                                          "redis",
                                          "--uri",
                                          redis.uri(),
                                          "--ttl",
                                          "60"});
  ASSERT_EQ(published.exit_code, 0) << published.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "head" / ".literegistry_ttl"));
  for (const std::string &uri :
       std::vector<std::string>{"sqlite://" + (dir / "r.sqlite3").string(),
                                redis.uri() + "/1",
                                "head+file://" + (dir / "head").string(),
                                "head:///" + (dir / "head").string().substr(1)}) {
    const auto registered = run_primebeaker({"registry",
                                             "register",
                                             "--registry",
                                             uri,
                                             "--service",
                                             "terminal",
                                             "--uri",
                                             "http://t:1"});
    ASSERT_EQ(registered.exit_code, 0) << uri << ": " << registered.err;
    const auto listed = run_primebeaker({"registry", "list", "--registry", uri, "--json"});
    ASSERT_EQ(listed.exit_code, 0) << uri << ": " << listed.err;
    EXPECT_GE(parse_json(listed.out)["terminal"].size(), 1U) << uri;
  }
  // Both head spellings reach the same Redis db 0: two registrations there.
  const auto waited = run_primebeaker({"registry",
                                       "wait-services",
                                       "--registry",
                                       redis.uri(),
                                       "--require",
                                       "terminal=2",
                                       "--timeout",
                                       "5"});
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_EQ(waited.out, "{\n  \"terminal\": 2\n}\n");
  EXPECT_NE(redis.cli({"ZCARD", std::string(k_heartbeat_index)}), "0\n");
}

TEST(RegistryCommands, WaitServicesReturnsSoonAfterTheNthRegistration) {
  test::TempDir dir;
  test::RedisServer redis;
  ASSERT_EQ(run_primebeaker({"registry",
                             "publish-endpoint",
                             "--registry",
                             (dir / "head").string(),
                             "--name",
                             "redis",
                             "--uri",
                             redis.uri() + "/2",
                             "--ttl",
                             "120"})
                .exit_code,
            0);
  for (const std::string &reg :
       std::vector<std::string>{(dir / "reg").string(),
                                "sqlite://" + (dir / "reg.sqlite3").string(),
                                redis.uri(),
                                "head+file://" + (dir / "head").string()}) {
    std::thread late_writer([&] {
      for (int i = 0; i < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        run_primebeaker({"registry",
                         "register",
                         "--registry",
                         reg,
                         "--service",
                         "search",
                         "--uri",
                         "http://s:" + std::to_string(7000 + i)});
      }
    });
    const auto start = std::chrono::steady_clock::now();
    const auto result = run_primebeaker({"registry",
                                         "wait-services",
                                         "--registry",
                                         reg,
                                         "--require",
                                         "search=3",
                                         "--timeout",
                                         "30"});
    const auto elapsed = std::chrono::steady_clock::now() - start;
    late_writer.join();
    EXPECT_EQ(result.exit_code, 0) << reg << ": " << result.err;
    EXPECT_EQ(result.out, "{\n  \"search\": 3\n}\n") << reg;
    EXPECT_LT(elapsed, std::chrono::seconds(15)) << reg;
    EXPECT_EQ(result.err, "") << reg; // no progress line when stderr is not a terminal
  }
}

TEST(RegistryCommands, WaitServicesTimeoutAndStopFile) {
  test::TempDir dir;
  const std::string reg = (dir / "reg").string();
  run_primebeaker(
      {"registry", "register", "--registry", reg, "--service", "judge", "--uri", "http://j:1"});
  const auto timed_out = run_primebeaker({"registry",
                                          "wait-services",
                                          "--registry",
                                          reg,
                                          "--require",
                                          "judge=2",
                                          "--require",
                                          "terminal=1",
                                          "--timeout",
                                          "0.6"});
  EXPECT_EQ(timed_out.exit_code, 1);
  EXPECT_EQ(timed_out.out, "");
  EXPECT_NE(timed_out.err.find(R"(primebeaker: error: timed out after )"), std::string::npos)
      << timed_out.err;
  EXPECT_NE(
      timed_out.err.find(
          R"({"judge": {"expected": 2, "observed": 1}, "terminal": {"expected": 1, "observed": 0}})"),
      std::string::npos)
      << timed_out.err;

  test::write_file(dir / "shutdown.requested", "rank 2 failed\n");
  const auto stopped = run_primebeaker({"registry",
                                        "wait-services",
                                        "--registry",
                                        reg,
                                        "--require",
                                        "judge=2",
                                        "--timeout",
                                        "30",
                                        "--stop_file",
                                        (dir / "shutdown.requested").string()});
  EXPECT_EQ(stopped.exit_code, 92);
  EXPECT_NE(stopped.err.find("shutdown requested while waiting for services"), std::string::npos);
}

TEST(RegistryCommands, WaitServicesInputForms) {
  test::TempDir dir;
  const std::string reg = (dir / "reg").string();
  const auto empty = run_primebeaker(
      {"registry", "wait-services", "--registry", reg, "--requirements-json", "{}"});
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "{}\n");
  run_primebeaker(
      {"registry", "register", "--registry", reg, "--service", "a", "--uri", "http://a:1"});
  run_primebeaker(
      {"registry", "register", "--registry", reg, "--service", "b", "--uri", "http://b:1"});
  const auto list_literal = run_primebeaker({"registry",
                                             "wait-services",
                                             "--registry=" + reg,
                                             R"(--require=["a=1","b=1"])",
                                             "--timeout=2"});
  EXPECT_EQ(list_literal.exit_code, 0) << list_literal.err;
  EXPECT_EQ(list_literal.out, "{\n  \"a\": 1,\n  \"b\": 1\n}\n");
  const auto reference_spelling = run_primebeaker({"registry",
                                                   "wait-services",
                                                   "--registry",
                                                   reg,
                                                   "--requirements_json",
                                                   R"({"a": 1})",
                                                   "--timeout",
                                                   "2"});
  EXPECT_EQ(reference_spelling.exit_code, 0) << reference_spelling.err;

  for (const auto &bad :
       std::vector<std::vector<std::string>>{std::vector<std::string>{"--require", "a=0"},
                                             {"--require", "a"},
                                             {"--requirements-json", R"({"a": true})"}}) {
    std::vector<std::string> args = {"registry", "wait-services", "--registry", reg};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto result = run_primebeaker(args);
    EXPECT_EQ(result.exit_code, 2) << bad[1];
    EXPECT_EQ(result.err.rfind("primebeaker: error: ", 0), 0U) << result.err;
  }
  EXPECT_EQ(run_primebeaker({"registry", "wait-services", "--require", "a=1"}).exit_code,
            2); // no --registry
}

TEST(RegistryCommands, WaitRedis) {
  test::TempDir dir;
  test::RedisServer redis({"--requirepass", "pw123"});
  const std::string uri = "redis://:pw123@127.0.0.1:" + std::to_string(redis.port());
  const auto ok = run_primebeaker({"registry", "wait-redis", "--registry", uri, "--timeout", "5"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "redis://:***@127.0.0.1:" + std::to_string(redis.port()) + "\n");

  const auto file = run_primebeaker({"registry", "wait-redis", "--registry", (dir / "x").string()});
  EXPECT_EQ(file.exit_code, 0) << file.err;

  const int closed = test::free_tcp_port();
  const auto down = run_primebeaker({"registry",
                                     "wait-redis",
                                     "--registry",
                                     "redis://:pw123@127.0.0.1:" + std::to_string(closed),
                                     "--timeout",
                                     "0.5"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("timed out after"), std::string::npos) << down.err;
  EXPECT_EQ(down.err.find("pw123"), std::string::npos);

  std::filesystem::create_directories(dir / "head");
  const auto head = run_primebeaker({"registry",
                                     "wait-redis",
                                     "--registry",
                                     "head+file://" + (dir / "head").string(),
                                     "--timeout",
                                     "0.5"});
  EXPECT_EQ(head.exit_code, 1);
  EXPECT_NE(head.err.find("no live 'redis' endpoint record"), std::string::npos) << head.err;

  const auto tls = run_primebeaker({"registry", "wait-redis", "--registry", "rediss://h:6380"});
  EXPECT_EQ(tls.exit_code, 2);
  EXPECT_NE(tls.err.find("TLS"), std::string::npos);

  const auto bad = run_primebeaker({"registry", "list", "--registry", "http://x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unsupported scheme 'http'"), std::string::npos);
}

// A stand-in gateway with the routes PrimeBeaker's gateway exposes.
class FakeGateway {
public:
  explicit FakeGateway(int health_status = 200, int search_status = 200) {
    m_server.Get("/health", [health_status](const httplib::Request &, httplib::Response &response) {
      response.status = health_status;
      response.set_content(health_status == 200 ? R"({"status":"healthy"})"
                                                : R"({"status":"unhealthy","error":"redis down"})",
                           "application/json");
    });
    m_server.Options("/judge", [](const httplib::Request &, httplib::Response &response) {
      response.status = 405;
    });
    m_server.Options("/search", [](const httplib::Request &, httplib::Response &response) {
      response.status = 204;
    });
    m_server.Post(
        "/search",
        [this, search_status](const httplib::Request &request, httplib::Response &response) {
          {
            std::lock_guard lock(m_mutex);
            m_search_bodies.push_back(request.body);
          }
          response.status = search_status;
          response.set_content(R"({"status":"ok"})", "application/json");
        });
    m_port = m_server.bind_to_any_port("127.0.0.1");
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
    while (!m_server.is_running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~FakeGateway() {
    m_server.stop();
    m_thread.join();
  }
  FakeGateway(const FakeGateway &) = delete;
  FakeGateway &operator=(const FakeGateway &) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }
  std::vector<std::string> search_bodies() {
    std::lock_guard lock(m_mutex);
    return m_search_bodies;
  }

private:
  httplib::Server m_server;
  int m_port = 0;
  std::thread m_thread;
  std::mutex m_mutex;
  std::vector<std::string> m_search_bodies;
};

TEST(ProbeGateway, ReadyGateway) {
  FakeGateway gateway;
  const auto result = run_primebeaker({"registry",
                                       "probe-gateway",
                                       "--url",
                                       gateway.url() + "/",
                                       "--required-path",
                                       "/judge",
                                       "--required_path",
                                       "search",
                                       "--model-path",
                                       "search",
                                       "--model-paths-json",
                                       R"(["localsearch:wiki"])"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = parse_json(result.out);
  EXPECT_EQ(out["ready"], true);
  ASSERT_EQ(out["checks"].size(), 5U);
  EXPECT_EQ(out["checks"][0], parse_json(R"({"method":"GET","path":"/health","status":200})"));
  EXPECT_EQ(out["checks"][1], parse_json(R"({"method":"OPTIONS","path":"/judge","status":405})"));
  EXPECT_EQ(out["checks"][2], parse_json(R"({"method":"OPTIONS","path":"/search","status":204})"));
  const auto bodies = gateway.search_bodies();
  ASSERT_EQ(bodies.size(), 2U);
  EXPECT_EQ(parse_json(bodies[0]),
            parse_json(
                R"({"mode":"query","query":"PrimeBeaker readiness probe","model_path":"search"})"));
  EXPECT_EQ(parse_json(bodies[1])["model_path"], "localsearch:wiki");
}

TEST(ProbeGateway, Failures) {
  {
    FakeGateway unhealthy(503);
    const auto result = run_primebeaker({"registry", "probe-gateway", "--url", unhealthy.url()});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("gateway probe returned HTTP 503 for GET /health: "
                              R"({"status":"unhealthy","error":"redis down"})"),
              std::string::npos)
        << result.err;
  }
  {
    FakeGateway gateway;
    const auto missing_route = run_primebeaker(
        {"registry", "probe-gateway", "--url", gateway.url(), "--required-path", "/nope"});
    EXPECT_EQ(missing_route.exit_code, 1);
    EXPECT_NE(missing_route.err.find("HTTP 404 for OPTIONS /nope"), std::string::npos)
        << missing_route.err;
  }
  {
    FakeGateway broken_search(200, 500);
    const auto result = run_primebeaker(
        {"registry", "probe-gateway", "--url", broken_search.url(), "--model-path", "search"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_NE(result.err.find("HTTP 500 for POST /search (model_path search)"), std::string::npos)
        << result.err;
  }
  const auto unreachable =
      run_primebeaker({"registry",
                       "probe-gateway",
                       "--url",
                       "http://127.0.0.1:" + std::to_string(test::free_tcp_port()),
                       "--timeout",
                       "2"});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_NE(unreachable.err.find("gateway probe could not reach http://127.0.0.1:"),
            std::string::npos)
      << unreachable.err;
}

} // namespace
} // namespace pb::registry

namespace pb::registry {
namespace {

// Runs the binary with a pseudo-terminal as stdin/stdout/stderr, as a person at a shell would.
std::pair<int, std::string> run_on_terminal(const std::vector<std::string> &args) {
  std::vector<std::string> argv_storage = {test::binary_path().string()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (auto &arg : argv_storage) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    ::setenv("NO_COLOR", "1", 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string output;
  char buffer[4096];
  while (true) {
    const ssize_t got = ::read(master, buffer, sizeof buffer);
    if (got <= 0) {
      break; // EIO once the child has exited and the pty is closed
    }
    output.append(buffer, static_cast<size_t>(got));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

TEST(RegistryCommands, ProgressLineOnATerminal) {
  test::TempDir dir;
  const std::string reg = (dir / "reg").string();
  run_primebeaker(
      {"registry", "register", "--registry", reg, "--service", "judge", "--uri", "http://j:1"});
  const auto [code, output] = run_on_terminal(
      {"registry", "wait-services", "--registry", reg, "--require", "judge=2", "--timeout", "0.5"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(output.find("\r\033[Kwaiting for services in file://" + reg + ": judge 1/2 ("),
            std::string::npos)
      << output;
  // The progress line is cleared before the error is printed.
  EXPECT_NE(output.find("\r\033[Kprimebeaker: error: timed out"), std::string::npos) << output;
}

} // namespace
} // namespace pb::registry
