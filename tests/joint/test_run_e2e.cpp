// SPDX-License-Identifier: MIT
// `run preview|launch` end to end: the real binary, the fake LiteRegistry on PYTHONPATH and a
// fake beaker that tells the upstream service create (`beaker --format json experiment create`)
// from the RL create (`beaker experiment create --name ...`) and records every call.
#include "../services/fake_literegistry.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>

namespace pb::test {
namespace {

using nlohmann::json;

const char *k_fake_beaker = R"SH(
case "$1 $2 $3" in
  "--format json experiment")
    if [ -n "$FAKE_SERVICE_RECEIPT" ]; then echo "$FAKE_SERVICE_RECEIPT";
    else echo '{"id": "01SERVICE", "jobs": [{"id": "01JOB"}]}'; fi ;;
  "experiment create --name")
    if [ -n "$FAKE_RL_CREATE_INTERRUPT" ]; then kill -INT "$PPID"; exit 130; fi
    if [ -n "$FAKE_RL_CREATE_FAIL" ]; then echo "workspace quota exceeded" >&2; exit 1; fi
    echo "Experiment 01RL submitted" ;;
  "experiment stop "*)
    if [ -n "$FAKE_STOP_FAIL" ]; then echo "permission denied" >&2; exit 1; fi ;;
  "secret list --workspace")
    echo '[{"name": "BEAKER_TOKEN"}]' ;;
  *) echo "unexpected beaker call: $*" >&2; exit 97 ;;
esac
)SH";

// Does `spec` hold an env var entry {name: NAME, <field>: VALUE} anywhere?
bool has_env(const json &value,
             const std::string &name,
             const std::string &field,
             const std::string &expected) {
  if (value.is_object()) {
    if (value.value("name", "") == name && value.contains(field) && value[field] == expected) {
      return true;
    }
    for (const auto &[key, nested] : value.items()) {
      if (has_env(nested, name, field, expected)) {
        return true;
      }
    }
  } else if (value.is_array()) {
    for (const auto &item : value) {
      if (has_env(item, name, field, expected)) {
        return true;
      }
    }
  }
  return false;
}

class RunE2E : public ::testing::Test {
protected:
  void SetUp() override {
    write_fake_literegistry(m_dir / "py");
    m_fakes.add("beaker", k_fake_beaker);
    // The search-agent example, with every /weka path moved under this test's own mount.
    const auto example = source_dir() / "examples" / "search-agent-webterminal";
    write_file(
        m_dir / "weka" / "cfg" / "multinode-rl.toml",
        std::regex_replace(read_file(example / "multinode-rl.toml"), std::regex("/weka"), mount()));
    write_file(m_dir / "weka" / "cfg" / "run.yaml",
               std::regex_replace(read_file(example / "run.yaml"), std::regex("/weka"), mount()));
  }

  std::string mount() const { return (m_dir / "weka").string(); }

  RunResult run(const std::vector<std::string> &args, std::map<std::string, std::string> env = {}) {
    RunOptions options;
    options.env = {{"PYTHONPATH", (m_dir / "py").string()},
                   {"FAKE_LITEREGISTRY_RECORD", (m_dir / "records.jsonl").string()},
                   {"PRIMEBEAKER_LAUNCH_ID", "testlaunch"},
                   {"PRIMEBEAKER_IMAGE_CATALOG",
                    (source_dir() / "tests/launch/data/runtime-catalog.json").string()}};
    for (auto &[name, value] : env) {
      options.env[name] = value;
    }
    options.path_prepend = {m_fakes.bin()};
    options.cwd = m_dir.path();
    return run_primebeaker(args, options);
  }

  std::vector<std::vector<std::string>> beaker_calls() const {
    std::vector<std::vector<std::string>> calls;
    for (const auto &call : m_fakes.calls("beaker")) {
      calls.push_back(call.argv);
    }
    return calls;
  }

  static bool is_service_create(const std::vector<std::string> &argv) {
    return argv.size() > 4 && argv[1] == "--format" && argv[3] == "experiment" &&
           argv[4] == "create";
  }
  static bool is_rl_create(const std::vector<std::string> &argv) {
    return argv.size() > 3 && argv[1] == "experiment" && argv[2] == "create" && argv[3] == "--name";
  }

  TempDir m_dir;
  FakeBin m_fakes{m_dir.path() / "fakes"};
};

TEST_F(RunE2E, PreviewShowsBothLaunchesAndTouchesNothing) {
  const auto before = tree_digest(m_dir.path());
  const auto result = run({"run", "preview", "--config", "weka/cfg/run.yaml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  std::vector<std::string> keys;
  const auto ordered = nlohmann::ordered_json::parse(result.out);
  for (const auto &[key, value] : ordered.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"service", "rl"}));
  EXPECT_EQ(out["service"]["experiment_name"], "primebeaker-search-agent-webterminal-fake");
  EXPECT_EQ(out["service"]["config"]["terminal_replicas"], 32);
  EXPECT_TRUE(has_env(out["rl"]["spec"],
                      "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID",
                      "value",
                      "${service_experiment_id}"));
  EXPECT_TRUE(has_env(out["rl"]["spec"], "BEAKER_TOKEN", "secret", "BEAKER_TOKEN"));
  EXPECT_TRUE(
      has_env(out["rl"]["spec"],
              "REGISTRY",
              "value",
              "head+sqlite://" + mount() +
                  "/oe-adapt-default/primebeaker/registries/search-agent-webterminal.sqlite3"));
  EXPECT_TRUE(beaker_calls().empty());
  std::filesystem::remove(m_dir / "records.jsonl");
  EXPECT_EQ(tree_digest(m_dir.path()), before);
}

// What neither a flag nor the YAML's rl: says comes from the user's config, as for `rl preview`
// (docs/config.md); the YAML beats the config and a flag beats the YAML.
TEST_F(RunE2E, PreviewTakesTheConfiguredWorkingDir) {
  const std::string yaml = read_file(m_dir / "weka" / "cfg" / "run.yaml");
  const std::string line = "  working_dir: " + mount() + "/oe-adapt-default/primebeaker\n";
  ASSERT_NE(yaml.find(line), std::string::npos);
  std::string unset = yaml;
  unset.erase(unset.find(line), line.size());
  write_file(m_dir / "weka" / "cfg" / "run-nowd.yaml", unset);
  write_file(m_dir / "xdg" / "primebeaker" / "config.toml",
             "working_dir = \"" + mount() + "/configured\"\n");
  const std::map<std::string, std::string> env = {{"XDG_CONFIG_HOME", (m_dir / "xdg").string()}};
  const auto configured = run({"run", "preview", "--config", "weka/cfg/run-nowd.yaml"}, env);
  ASSERT_EQ(configured.exit_code, 0) << configured.err;
  EXPECT_TRUE(has_env(
      json::parse(configured.out)["rl"]["spec"], "WORKING_DIR", "value", mount() + "/configured"))
      << configured.out;
  const auto from_yaml = run({"run", "preview", "--config", "weka/cfg/run.yaml"}, env);
  ASSERT_EQ(from_yaml.exit_code, 0) << from_yaml.err;
  EXPECT_TRUE(has_env(json::parse(from_yaml.out)["rl"]["spec"],
                      "WORKING_DIR",
                      "value",
                      mount() + "/oe-adapt-default/primebeaker"));
  const auto flagged = run(
      {"run", "preview", "--config", "weka/cfg/run-nowd.yaml", "--working-dir", mount() + "/flag"},
      env);
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_TRUE(
      has_env(json::parse(flagged.out)["rl"]["spec"], "WORKING_DIR", "value", mount() + "/flag"));
}

// A joint run lives in one workspace: with `config set workspace` and a YAML that names none,
// both the services and the RL run go there, not to LiteRegistry's own default.
TEST_F(RunE2E, PreviewTakesTheConfiguredWorkspaceForBothLaunches) {
  std::string yaml = read_file(m_dir / "weka" / "cfg" / "run.yaml");
  const std::string line = "  workspace: ai2/oe-agents\n";
  for (int i = 0; i < 2; ++i) {
    ASSERT_NE(yaml.find(line), std::string::npos);
    yaml.erase(yaml.find(line), line.size());
  }
  write_file(m_dir / "weka" / "cfg" / "run-nows.yaml", yaml);
  write_file(m_dir / "xdg" / "primebeaker" / "config.toml",
             "workspace = \"ai2/my-team\"\nbudget = \"ai2/my-budget\"\n");
  const std::map<std::string, std::string> env = {{"XDG_CONFIG_HOME", (m_dir / "xdg").string()}};
  const auto result = run({"run", "preview", "--config", "weka/cfg/run-nows.yaml"}, env);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  EXPECT_EQ(out["service"]["config"]["workspace"], "ai2/my-team") << result.out;
  const auto submit = out["rl"]["submit_command"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(submit.begin(), submit.end(), "ai2/my-team"), submit.end()) << result.out;
  // The YAML's own budget: for the services still wins over the configured one.
  EXPECT_EQ(out["service"]["config"]["budget"], "ai2/oe-omai");
  EXPECT_EQ(out["rl"]["spec"]["budget"], "ai2/my-budget");
  // Without the config, LiteRegistry's default would have been the RL default as well.
  const auto unconfigured = run({"run", "preview", "--config", "weka/cfg/run-nows.yaml"});
  ASSERT_EQ(unconfigured.exit_code, 0) << unconfigured.err;
  EXPECT_EQ(json::parse(unconfigured.out)["service"]["config"]["workspace"], "ai2/oe-agents");
}

TEST_F(RunE2E, WithoutACatalogedImageLaunchRefusesBeforeTheServices) {
  // A catalog whose Prime-RL image lives in another workspace only.
  TempDir elsewhere;
  write_file(elsewhere / "catalog.json", R"({"schema_version": 1,
    "default_base_role": "prime_rl_training_base",
    "roles": {"prime_rl_training_base": {"purpose": "test", "prime_rl": "v0.7.1.dev83",
      "locations": [
      {"immutable_uri": "beaker://01TESTPRIMERLELSEWHERE0000", "name": "test/prime-rl",
       "workspace": "ai2/elsewhere"}]}}})");
  const auto before = tree_digest(m_dir.path());
  const auto result = run({"run", "launch", "weka/cfg/run.yaml"},
                          {{"PRIMEBEAKER_IMAGE_CATALOG", (elsewhere / "catalog.json").string()}});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("no Prime-RL v0.7.1.dev83 image (prime_rl_training_base) is "
                            "cataloged for "
                            "workspace 'ai2/oe-agents'"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("nothing was launched"), std::string::npos);
  EXPECT_TRUE(beaker_calls().empty());
  EXPECT_FALSE(std::filesystem::exists(m_dir / "records.jsonl")) << "the services were asked";
  EXPECT_EQ(tree_digest(m_dir.path()), before) << "a refused launch wrote (or staged) something";
}

TEST_F(RunE2E, LaunchStartsServicesThenRl) {
  const auto result = run({"run", "launch", "weka/cfg/run.yaml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  EXPECT_EQ(out["service_experiment_id"], "01SERVICE");
  EXPECT_EQ(out["service"]["beaker"]["id"], "01SERVICE");
  const auto calls = beaker_calls();
  // Services, the controller's token secret checked, RL, then RL's recovery controller.
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_TRUE(is_service_create(calls[0]));
  EXPECT_EQ(calls[1][1] + " " + calls[1][2], "secret list");
  EXPECT_TRUE(is_rl_create(calls[2]));
  EXPECT_TRUE(is_rl_create(calls[3]));
  EXPECT_TRUE(calls[3][4].ends_with("-recovery")) << calls[3][4];
  // The submitted spec carries the real service ID and the managed token secret.
  const auto spec = json::parse(read_file(calls[2].back()));
  EXPECT_TRUE(has_env(spec, "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", "value", "01SERVICE"));
  EXPECT_TRUE(has_env(spec, "BEAKER_TOKEN", "secret", "BEAKER_TOKEN"));
  EXPECT_EQ(out["rl"]["spec_path"], calls[2].back());
}

TEST_F(RunE2E, FailedRlSubmissionStopsTheServiceExperiment) {
  const auto result = run({"run", "launch", "weka/cfg/run.yaml"}, {{"FAKE_RL_CREATE_FAIL", "1"}});
  EXPECT_EQ(result.exit_code, 4) << result.err;
  EXPECT_NE(result.err.find("workspace quota exceeded"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("stopped service experiment 01SERVICE (rollback)"), std::string::npos)
      << result.err;
  const auto calls = beaker_calls(); // service, secret list, RL, stop
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[3], (std::vector<std::string>{"beaker", "experiment", "stop", "01SERVICE"}));
  EXPECT_TRUE(result.out.empty());
}

TEST_F(RunE2E, InterruptedRlSubmissionStillRollsBack) {
  // The terminal's Ctrl-C reaches beaker and primebeaker alike; the fake beaker plays both.
  const auto result =
      run({"run", "launch", "weka/cfg/run.yaml"}, {{"FAKE_RL_CREATE_INTERRUPT", "1"}});
  EXPECT_EQ(result.exit_code, 130) << result.err;
  EXPECT_NE(result.err.find("primebeaker: error: interrupted while submitting RL"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("stopped service experiment 01SERVICE (rollback)"), std::string::npos)
      << result.err;
  const auto calls = beaker_calls(); // service, secret list, RL, stop
  ASSERT_EQ(calls.size(), 4U);
  EXPECT_EQ(calls[3], (std::vector<std::string>{"beaker", "experiment", "stop", "01SERVICE"}));
}

TEST_F(RunE2E, FailedStopIsReportedWithTheOriginalError) {
  const auto result = run({"run", "launch", "weka/cfg/run.yaml"},
                          {{"FAKE_RL_CREATE_FAIL", "1"}, {"FAKE_STOP_FAIL", "1"}});
  EXPECT_EQ(result.exit_code, 4) << result.err;
  EXPECT_NE(result.err.find("workspace quota exceeded"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("also failed to stop service experiment 01SERVICE: "),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("permission denied"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("it is still running: beaker experiment stop 01SERVICE"),
            std::string::npos);
  EXPECT_EQ(beaker_calls().size(), 4U);
}

TEST_F(RunE2E, UnreadableReceiptIsAnErrorNamingTheLaunch) {
  const auto result = run({"run", "launch", "weka/cfg/run.yaml"},
                          {{"FAKE_SERVICE_RECEIPT", R"({"jobs": [{"id": "01JOB"}]})"}});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("LiteRegistry launch receipt did not contain exactly one service "
                            "experiment ID (found none); RL was not submitted"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("service experiment primebeaker-search-agent-webterminal-fake was "
                            "launched and is NOT stopped"),
            std::string::npos)
      << result.err;
  const auto calls = beaker_calls();
  ASSERT_EQ(calls.size(), 1U); // no RL create, no stop of a guessed ID
  EXPECT_TRUE(is_service_create(calls[0]));
}

TEST_F(RunE2E, BadRlSettingsLaunchNothing) {
  auto text = read_file(m_dir / "weka" / "cfg" / "run.yaml");
  text = std::regex_replace(text,
                            std::regex("priority: high\n  min_runtime_hours: 4\n  mount"),
                            "priority: low\n  min_runtime_hours: 4\n  mount");
  write_file(m_dir / "weka" / "cfg" / "run.yaml", text);
  const auto result = run({"run", "launch", "weka/cfg/run.yaml"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("--priority must be normal, high, or urgent, got 'low'"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("in the rl: section of "), std::string::npos) << result.err;
  EXPECT_TRUE(beaker_calls().empty());
  EXPECT_FALSE(std::filesystem::exists(m_dir / "records.jsonl"));
}

TEST_F(RunE2E, PodmanStackRunsThroughThePodmanLauncher) {
  const auto example = source_dir() / "examples" / "podman-terminal";
  write_file(
      m_dir / "weka" / "pod" / "multinode-rl.toml",
      std::regex_replace(read_file(example / "multinode-rl.toml"), std::regex("/weka"), mount()));
  write_file(m_dir / "weka" / "pod" / "run.yaml",
             std::regex_replace(read_file(example / "run.yaml"), std::regex("/weka"), mount()) +
                 "  # test mount\n");
  auto text = read_file(m_dir / "weka" / "pod" / "run.yaml");
  text = std::regex_replace(
      text, std::regex("  working_dir:"), "  mount_path: " + mount() + "\n  working_dir:");
  write_file(m_dir / "weka" / "pod" / "run.yaml", text);
  auto result = run({"run", "preview", "weka/pod/run.yaml"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("unresolved environment variable in run YAML value '${REGISTRY}'"),
            std::string::npos)
      << result.err;
  result =
      run({"run", "launch", "weka/pod/run.yaml"}, {{"REGISTRY", "redis://registry-host:6379"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  EXPECT_EQ(out["service"]["experiment_name"], "primebeaker-podman-terminal-p16-fake");
  const auto records = fake_literegistry_records(m_dir / "records.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back()["config"]["podman_replicas"]["value"], 16);
  const auto calls = beaker_calls(); // service, secret list, RL, RL's recovery controller
  ASSERT_EQ(calls.size(), 4U);
  const auto spec = json::parse(read_file(calls[2].back()));
  EXPECT_TRUE(has_env(spec, "REGISTRY", "value", "redis://registry-host:6379"));
}

} // namespace
} // namespace pb::test
