// SPDX-License-Identifier: MIT
// `watcher serve`: every route against a real server on a loopback port, live metrics against a
// fake W&B GraphQL server, and the page in a real headless Chromium.
#include "provenance_tree.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/process.hpp>
#include <primebeaker/watcher/server.hpp>
#include <primebeaker/watcher/watcher.hpp>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

namespace pb::test {
namespace {

using nlohmann::json;
namespace stdfs = std::filesystem;

// A fake W&B GraphQL endpoint: runs answer from a table; "broken" answers HTTP 500.
class FakeWandb {
public:
  FakeWandb() {
    m_server.Post("/graphql", [this](const httplib::Request &request, httplib::Response &response) {
      {
        std::lock_guard lock(m_mutex);
        m_authorizations.push_back(request.get_header_value("Authorization"));
      }
      const json body = json::parse(request.body);
      const json &vars = body["variables"];
      const std::string run = vars["name"];
      if (run == "broken") {
        response.status = 500;
        response.set_content("upstream exploded", "text/plain");
        return;
      }
      json answer;
      if (!vars.contains("specs")) {
        answer["data"]["project"]["run"]["state"] = run == "rlrun1" ? "finished" : "crashed";
      } else {
        const json spec = json::parse(vars["specs"][0].get<std::string>());
        const std::string metric = spec["keys"][1];
        json rows = json::array();
        if (run == "rlrun1" && metric.rfind("eval/", 0) == 0) {
          rows = json::array({{{"step", 1}, {metric, 0.2}},
                              {{"step", 2}, {metric, 0.1}},
                              {{"step", 2}, {metric, 0.3}},
                              {{"step", 3}, {metric, true}}});
        } else if (run == "rlrun2" && metric.rfind("eval/", 0) == 0) {
          rows = json::array({{{"step", 2}, {metric, 0.5}}, {{"step", 4}, {metric, 0.6}}});
        } else if (run == "sft1" && metric == "val/loss") {
          rows = json::array({{{"step", 10}, {metric, 1.5}}, {{"step", 20}, {metric, 1.25}}});
        }
        answer["data"]["project"]["run"]["sampledHistory"] = json::array({rows});
      }
      response.set_content(answer.dump(), "application/json");
    });
    m_port = m_server.bind_to_any_port("127.0.0.1");
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
  }
  ~FakeWandb() {
    m_server.stop();
    m_thread.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }
  std::vector<std::string> authorizations() {
    std::lock_guard lock(m_mutex);
    return m_authorizations;
  }

private:
  httplib::Server m_server;
  int m_port = 0;
  std::thread m_thread;
  std::mutex m_mutex;
  std::vector<std::string> m_authorizations;
};

class WatcherServer : public ::testing::Test {
protected:
  void SetUp() override {
    watcher::Settings settings;
    settings.database = tree.database();
    settings.repo_root = tree.repo();
    settings.roots.train_config_roots = {tree.path("examples/configs/train")};
    settings.roots.eval_config_roots = {tree.path("evals")};
    settings.roots.launch_spec_roots = {tree.path("beaker_experiments")};
    settings.roots.manifest_roots = {tree.path("data")};
    watcher::update(settings, {});
    watcher::IndexOptions extra;
    extra.model = "outputs/rl_a/weights/step_20";
    extra.rl_wandb_run_id = "broken"; // a third RL attempt whose W&B answers fail
    watcher::index_model(settings, extra);
  }

  std::unique_ptr<watcher::Server> start(std::function<std::string()> key = [] {
    return "sekrit";
  }) {
    watcher::ServerConfig config;
    config.database = tree.database();
    config.port = 0;
    config.wandb_base_url = wandb.url();
    config.wandb_api_key = std::move(key);
    config.wandb_timeout = std::chrono::seconds(10);
    auto server = std::make_unique<watcher::Server>(config);
    port = server->start();
    return server;
  }

  json get(const std::string &path, int expected_status, std::string *content_type = nullptr) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(20, 0);
    const auto response = client.Get(path.c_str());
    EXPECT_TRUE(response) << path;
    if (!response) {
      return nullptr;
    }
    EXPECT_EQ(response->status, expected_status) << path << ": " << response->body;
    if (content_type) {
      *content_type = response->get_header_value("Content-Type");
    }
    return json::parse(response->body, nullptr, false);
  }

  std::int64_t model_id(const std::string &relative) {
    const json list = get("/api/models?limit=1000", 200);
    for (const auto &row : list["models"]) {
      if (row["model_path"] == tree.path(relative)) {
        return row["id"];
      }
    }
    ADD_FAILURE() << relative << " not listed";
    return -1;
  }

  ProvenanceTree tree;
  FakeWandb wandb;
  int port = 0;
};

TEST_F(WatcherServer, PageScriptAndHealth) {
  auto server = start();
  httplib::Client client("127.0.0.1", port);
  const auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("cache-control"), "no-store");
  EXPECT_NE(page->body.find("<h1>PrimeBeaker Watcher</h1>"), std::string::npos);
  EXPECT_NE(page->body.find("<script src=\"/watcher.js\"></script>"), std::string::npos);
  const auto script = client.Get("/watcher.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->get_header_value("cache-control"), "no-store");
  EXPECT_EQ(script->get_header_value("Content-Type").rfind("text/javascript", 0), 0u);
  EXPECT_NE(script->body.find("/api/models?q="), std::string::npos);
  EXPECT_EQ(get("/health", 200), json({{"ok", true}, {"database", tree.database().string()}}));
  EXPECT_EQ(get("/nope", 404)["detail"], "Not Found");
}

TEST_F(WatcherServer, ModelsListIsGroupedByRunFilteredAndValidated) {
  auto server = start();
  const json list = get("/api/models", 200);
  EXPECT_EQ(list["count"], 2);
  EXPECT_EQ(list["query"], "");
  const json &rl = list["models"][0];
  EXPECT_EQ(rl["name"], "rl_a");
  EXPECT_EQ(rl["stage"], "rl");
  EXPECT_EQ(rl["checkpoint_count"], 2);
  // step_20: complete, failed, pending, missing; step_10: unconfigured, search, legacy; the SFT
  // predecessor's evaluation counts for the RL run.
  EXPECT_EQ(rl["evaluation_count"], 8);
  EXPECT_EQ(rl["model_path"], tree.path("outputs/rl_a/weights/step_20")); // evaluated, highest step
  EXPECT_EQ(rl["has_evaluations"], true);
  EXPECT_EQ(rl["wandb_count"], 7); // 4 on step_20 (with "broken") + 3 on step_10
  EXPECT_EQ(rl["dataset_count"], 2);
  EXPECT_EQ(list["models"][1]["stage"], "sft");
  EXPECT_EQ(list["models"][1]["evaluation_count"], 1);

  const json filtered = get("/api/models?q=sft_a&limit=5", 200);
  EXPECT_EQ(filtered["count"], 1);
  EXPECT_EQ(filtered["query"], "sft_a");
  EXPECT_EQ(get("/api/models?limit=1", 200)["count"], 1);
  EXPECT_EQ(get("/api/models?limit=0", 422)["detail"][0]["loc"], json({"query", "limit"}));
  EXPECT_EQ(get("/api/models?limit=1001", 422)["detail"][0]["loc"], json({"query", "limit"}));
  EXPECT_EQ(get("/api/models?limit=ten", 422)["detail"][0]["loc"], json({"query", "limit"}));
  EXPECT_EQ(get("/api/models?q=" + std::string(301, 'x'), 422)["detail"][0]["loc"],
            json({"query", "q"}));
  EXPECT_EQ(get("/api/models?q=" + std::string(300, 'x'), 200)["count"], 0);
}

TEST_F(WatcherServer, ModelDetail) {
  auto server = start();
  const auto id = model_id("outputs/rl_a/weights/step_20");
  const json detail = get("/api/models/" + std::to_string(id), 200);
  EXPECT_EQ(detail["model"]["name"], "rl_a");
  EXPECT_EQ(detail["model"]["stage"], "rl");
  ASSERT_EQ(detail["checkpoints"].size(), 2u);
  EXPECT_EQ(detail["checkpoints"][0]["checkpoint_step"], 20);
  EXPECT_EQ(detail["checkpoints"][0]["evaluation_count"], 4);
  ASSERT_EQ(detail["training_runs"].size(), 2u);
  EXPECT_EQ(detail["training_runs"][0]["stage"], "rl");
  EXPECT_EQ(detail["training_runs"][0]["hyperparameters"],
            json({{"learning_rate", 1e-6},
                  {"max_steps", 40},
                  {"sequence_length", 8192},
                  {"batch_size", 128}}));
  EXPECT_EQ(detail["training_runs"][1]["hyperparameters"]["learning_rate"], 2e-5);
  EXPECT_EQ(detail["training_runs"][0]["wandb_runs"].size(), 3u);
  EXPECT_EQ(detail["training_runs"][0]["wandb_runs"][0]["run_id"], "broken");
  ASSERT_EQ(detail["datasets"].size(), 3u);
  EXPECT_EQ(detail["datasets"][0]["stage"], "rl");
  EXPECT_EQ(detail["datasets"][2]["stage"], "sft");
  EXPECT_EQ(detail["datasets"][2]["role"], "sft");
  const json &evaluations = detail["evaluations"];
  ASSERT_EQ(evaluations.size(), 8u);
  EXPECT_EQ(evaluations[0]["checkpoint_step"], 20);
  EXPECT_EQ(evaluations[0]["config_path"], tree.path("evals/complete.yaml"));
  EXPECT_EQ(evaluations[0]["benchmarks"].size(), 2u);
  EXPECT_EQ(evaluations[4]["checkpoint_step"], 10);
  EXPECT_EQ(evaluations[7]["stage"], "sft");
  EXPECT_EQ(evaluations[7]["model_path"], tree.path("outputs/sft_a/weights/step_100"));
  EXPECT_EQ(get("/api/models/999999", 404)["detail"], "Unknown model id 999999");
  EXPECT_EQ(get("/api/models/abc", 422)["detail"][0]["loc"], json({"path", "model_id"}));
  EXPECT_EQ(get("/api/models/999999/metrics", 404)["detail"], "Unknown model id 999999");
}

TEST_F(WatcherServer, MissingDatabaseIs503) {
  auto server = start();
  stdfs::remove(tree.database());
  stdfs::remove(tree.database().string() + "-wal");
  stdfs::remove(tree.database().string() + "-shm");
  const std::string detail = "Watcher database does not exist: " + tree.database().string();
  EXPECT_EQ(get("/api/models", 503)["detail"], detail);
  EXPECT_EQ(get("/api/models/1", 503)["detail"], detail);
  EXPECT_EQ(get("/api/models/1/metrics", 503)["detail"], detail);
  EXPECT_EQ(get("/health", 200)["ok"], false);
  EXPECT_FALSE(stdfs::exists(tree.database())); // read-only: never created by a request
}

TEST_F(WatcherServer, LiveMetricsAggregateAttemptsAndSurviveAFailingOne) {
  auto server = start();
  const auto id = model_id("outputs/rl_a/weights/step_20");
  const json metrics = get("/api/models/" + std::to_string(id) + "/metrics", 200);
  ASSERT_EQ(metrics["sources"].size(), 4u); // broken, rlrun1, rlrun2 (rl), sft1 (sft)
  EXPECT_EQ(metrics["sources"][0]["run_id"], "broken");
  EXPECT_NE(metrics["sources"][0]["error"].get<std::string>().find("HTTP 500"), std::string::npos);
  // Ordered by entity, project, run id: rlrun2 is a local run, so it keeps the TOML's project.
  EXPECT_EQ(metrics["sources"][1]["path"], "team/rl-proj/rlrun2");
  EXPECT_EQ(metrics["sources"][1]["state"], "crashed");
  EXPECT_EQ(metrics["sources"][2]["path"], "team/rl-proj-override/rlrun1");
  EXPECT_EQ(metrics["sources"][2]["state"], "finished");
  EXPECT_EQ(metrics["sources"][2]["metrics"], json::array({"eval_accuracy"}));
  EXPECT_TRUE(metrics["sources"][2]["error"].is_null());
  EXPECT_EQ(metrics["sources"][3]["metrics"], json::array({"sft_validation_loss"}));
  ASSERT_EQ(metrics["charts"].size(), 2u);
  const json &sft = metrics["charts"][0];
  EXPECT_EQ(sft["id"], "sft_validation_loss");
  EXPECT_EQ(sft["points"].size(), 2u);
  const json &eval = metrics["charts"][1];
  EXPECT_EQ(eval["id"], "eval_accuracy");
  EXPECT_EQ(eval["format"], "percent");
  EXPECT_EQ(eval["requested_metric"],
            "val/jtc-tool-label-terminal-eval/all/metrics/correct_final_label/mean");
  EXPECT_EQ(
      eval["metrics_used"],
      json::array({"eval/jtc-tool-label-terminal-eval/all/metrics/correct_final_label/mean"}));
  EXPECT_EQ(eval["attempt_count"], 2);
  EXPECT_EQ(eval["source_count"], 3);
  // rlrun1: 1 -> 0.2, 2 -> 0.3 (its last value wins), the boolean at 3 is ignored; rlrun2: 2 ->
  // 0.5, 4 -> 0.6.
  const json &points = eval["points"];
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0],
            json({{"step", 1},
                  {"value", 0.2},
                  {"min", 0.2},
                  {"max", 0.2},
                  {"samples", 1},
                  {"attempts", {"team/rl-proj-override/rlrun1"}}}));
  EXPECT_EQ(points[1]["step"], 2);
  EXPECT_DOUBLE_EQ(points[1]["value"].get<double>(), 0.4);
  EXPECT_EQ(points[1]["min"], 0.3);
  EXPECT_EQ(points[1]["max"], 0.5);
  EXPECT_EQ(points[1]["samples"], 2);
  EXPECT_EQ(points[1]["attempts"], json({"team/rl-proj-override/rlrun1", "team/rl-proj/rlrun2"}));
  EXPECT_EQ(points[2]["step"], 4);
  for (const auto &authorization : wandb.authorizations()) {
    EXPECT_EQ(authorization, "Basic YXBpOnNla3JpdA=="); // api:sekrit
  }
}

TEST_F(WatcherServer, MetricsWithoutAKeyAre503) {
  auto server = start([]() -> std::string {
    throw tool_error("W&B authentication is unavailable; could not read Beaker secret 'w'");
  });
  const auto id = model_id("outputs/rl_a/weights/step_20");
  EXPECT_EQ(get("/api/models/" + std::to_string(id) + "/metrics", 503)["detail"],
            "W&B authentication is unavailable; could not read Beaker secret 'w'");
}

// The real binary: WANDB_API_KEY absent, the key comes from `beaker secret read`.
TEST_F(WatcherServer, ServeCommandReadsTheKeyFromBeakerAndStopsOnSigterm) {
  auto server = start(); // only to look up the model id
  TempDir fake_root;
  FakeBin bin(fake_root.path());
  FakeBeaker beaker(bin);
  beaker.on({"secret", "read", "my_secret"}, "from-beaker\n");
  // Run in the background: the command serves until SIGTERM.
  proc::Command command;
  const stdfs::path log = fake_root.path() / "serve.log";
  command.argv = {
      "bash",
      "-c",
      "\"$0\" watcher serve --database \"$1\" --port 0 --wandb-secret my_secret 2>\"$2\" & "
      "pid=$!; for i in $(seq 200); do grep -q 'serving' \"$2\" && break; sleep 0.05; done; "
      "port=$(sed -n 's/.*127.0.0.1:\\([0-9]*\\).*/\\1/p' \"$2\"); "
      "curl -s --noproxy '*' \"http://127.0.0.1:$port/api/models/$3/metrics\"; "
      "kill -TERM $pid; wait $pid; echo \" exit=$?\"",
      binary_path().string(),
      tree.database().string(),
      log.string(),
      std::to_string(model_id("outputs/rl_a/weights/step_20"))};
  command.env_set = {{"PATH", bin.bin().string() + ":/usr/bin:/bin"},
                     {"WANDB_BASE_URL", wandb.url()}};
  command.env_unset = {"WANDB_API_KEY"};
  command.timeout = std::chrono::seconds(30);
  const auto result = proc::SystemRunner().run(command);
  ASSERT_TRUE(result.ok()) << result.err;
  const auto space = result.out.rfind(' ');
  const json metrics = json::parse(result.out.substr(0, space));
  EXPECT_EQ(metrics["charts"][1]["attempt_count"], 2);
  EXPECT_EQ(result.out.substr(space), " exit=143\n");
  EXPECT_EQ(beaker.calls_matching({"secret", "read", "my_secret"}).size(), 1u);
  EXPECT_EQ(wandb.authorizations().back(), "Basic YXBpOmZyb20tYmVha2Vy"); // api:from-beaker
}

// The page in a real headless Chromium: run list, detail pane and a rendered SVG chart.
TEST_F(WatcherServer, PageRendersInHeadlessChromium) {
  const auto chromium = proc::find_executable("chromium", "/usr/bin:/usr/local/bin:/bin");
  if (!chromium) {
    GTEST_SKIP()
        << "chromium is not installed (Debian package `chromium`; .ci/bootstrap installs it)";
  }
  auto server = start();
  TempDir profile;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  auto browser = [&](const std::string &mode) {
    proc::Command command;
    command.argv = {chromium->string(),
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-dev-shm-usage",
                    "--user-data-dir=" + profile.path().string(),
                    "--virtual-time-budget=10000",
                    "--window-size=1400,1800",
                    mode,
                    url};
    command.env_set = {{"HOME", profile.path().string()}, {"no_proxy", "127.0.0.1"}};
    command.timeout = std::chrono::seconds(40);
    return proc::SystemRunner().run(command);
  };
  const auto dom = browser("--dump-dom");
  ASSERT_TRUE(dom.ok()) << dom.status() << "\n" << dom.err;
  EXPECT_NE(dom.out.find("class=\"run-card evaluated selected\""), std::string::npos) << dom.out;
  EXPECT_NE(dom.out.find(">rl_a</div>"), std::string::npos);
  EXPECT_NE(dom.out.find(">sft_a</div>"), std::string::npos);
  EXPECT_NE(dom.out.find("<h2 id=\"detail-title\">rl_a</h2>"), std::string::npos);
  EXPECT_NE(dom.out.find("benchmark outcomes across lineage"), std::string::npos);
  EXPECT_NE(dom.out.find("incomplete evals"), std::string::npos);
  EXPECT_NE(dom.out.find("data-chart=\"eval_accuracy\""), std::string::npos);
  EXPECT_NE(dom.out.find("<path class=\"band\" d=\"M"), std::string::npos);
  EXPECT_NE(dom.out.find("<path class=\"line\" d=\"M"), std::string::npos);
  // The screenshot stays in the build directory as a test artifact.
  const stdfs::path artifact = stdfs::current_path() / "watcher-page.png";
  const auto shot = browser("--screenshot=" + artifact.string());
  EXPECT_TRUE(shot.ok()) << shot.err;
  EXPECT_GT(stdfs::file_size(artifact), 10000u);
}

} // namespace
} // namespace pb::test
