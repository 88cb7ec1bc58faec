// SPDX-License-Identifier: MIT
// End to end: the real binary, the fake LiteRegistry packages on PYTHONPATH, a fake beaker.
#include "fake_literegistry.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pb::test {
namespace {

using nlohmann::json;

// How LiteRegistry's launchers create their experiment.
const std::vector<std::string> k_create = {"--format", "json", "experiment", "create"};

class ServicesE2E : public ::testing::Test {
protected:
  void SetUp() override {
    write_fake_literegistry(m_dir / "py");
    m_beaker
        .on(k_create,
            R"({"id": "01SERVICE", "jobs": [{"id": "01JOB"}]})"
            "\n")
        .on({"experiment", "stop"}, "");
    m_work = m_dir / "work";
    std::filesystem::create_directories(m_work);
  }

  RunResult run(const std::vector<std::string> &args, std::map<std::string, std::string> env = {}) {
    RunOptions options;
    options.env = {{"PYTHONPATH", (m_dir / "py").string()},
                   {"FAKE_LITEREGISTRY_RECORD", record_path().string()}};
    for (auto &[name, value] : env) {
      options.env[name] = value;
    }
    options.path_prepend = {m_fakes.bin()};
    options.cwd = m_work;
    return run_primebeaker(args, options);
  }

  std::filesystem::path record_path() const { return m_dir / "records.jsonl"; }
  std::vector<json> records() const { return fake_literegistry_records(record_path()); }
  json last_config() const {
    const auto all = records();
    return all.empty() ? json() : all.back()["config"];
  }

  TempDir m_dir;
  FakeBin m_fakes{m_dir.path() / "fakes"};
  FakeBeaker m_beaker{m_fakes};
  std::filesystem::path m_work;
};

TEST_F(ServicesE2E, PreviewPassesEveryFlagWithItsDeclaredType) {
  const auto before = tree_digest(m_dir.path());
  const auto result = run({"services",
                           "preview",
                           "--head-registry=/weka/registry",
                           "--service-cluster=ai2/jupiter,ai2/saturn",
                           "--terminal-replicas=3",
                           "--gateway_timeout",
                           "12.5",
                           "--omit-service-resources",
                           "--no-docker-mirror-soft-affinity",
                           "--hf-token-secret=None",
                           "--max-num-seqs",
                           "64",
                           "--name-prefix",
                           "with space"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto out = json::parse(result.out);
  EXPECT_EQ(out["experiment_name"], "with space-fake");
  EXPECT_EQ(out["config"]["terminal_replicas"], 3);
  EXPECT_EQ(result.out.find("upstream chatter"),
            std::string::npos); // upstream stdout kept off ours
  const auto config = last_config();
  EXPECT_EQ(config["head_registry"], json({{"type", "str"}, {"value", "/weka/registry"}}));
  EXPECT_EQ(config["service_clusters"],
            json({{"type", "tuple"}, {"value", {"ai2/jupiter", "ai2/saturn"}}}));
  EXPECT_EQ(config["terminal_replicas"], json({{"type", "int"}, {"value", 3}}));
  EXPECT_EQ(config["gateway_timeout"], json({{"type", "float"}, {"value", 12.5}}));
  EXPECT_EQ(config["omit_service_resources"], json({{"type", "bool"}, {"value", true}}));
  EXPECT_EQ(config["docker_mirror_soft_affinity"], json({{"type", "bool"}, {"value", false}}));
  EXPECT_EQ(config["hf_token_secret"], json({{"type", "NoneType"}, {"value", nullptr}}));
  EXPECT_EQ(config["max_num_seqs"], json({{"type", "int"}, {"value", 64}}));
  EXPECT_EQ(config["name_prefix"]["value"], "with space");
  EXPECT_EQ(config.size(), 9U);
  // Preview never runs beaker and changes nothing but the fake's own record.
  EXPECT_TRUE(m_beaker.calls().empty());
  std::filesystem::remove(record_path());
  EXPECT_EQ(tree_digest(m_dir.path()), before);
}

TEST_F(ServicesE2E, PodmanPreviewUsesThePodmanConfig) {
  const auto result = run(
      {"services", "podman", "preview", "--service_cluster=ai2/jupiter", "--podman-replicas=4"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(json::parse(result.out)["experiment_name"], "literegistry-podman-p4-fake");
  EXPECT_EQ(last_config(),
            json({{"podman_replicas", {{"type", "int"}, {"value", 4}}},
                  {"service_clusters", {{"type", "tuple"}, {"value", {"ai2/jupiter"}}}}}));
  EXPECT_TRUE(m_beaker.calls().empty());
}

TEST_F(ServicesE2E, LaunchSubmitsThroughTheUpstreamLauncher) {
  const auto result =
      run({"services", "launch", "--workspace", "ai2/test", "--terminal-replicas=2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_EQ(receipt["experiment_name"], "literegistry-base-fake");
  EXPECT_EQ(receipt["beaker"]["id"], "01SERVICE");
  const auto calls = m_beaker.calls();
  ASSERT_EQ(calls.size(), 1U);
  ASSERT_GE(calls[0].argv.size(), 9U);
  EXPECT_EQ(std::vector<std::string>(calls[0].argv.begin(), calls[0].argv.begin() + 8),
            (std::vector<std::string>{"beaker",
                                      "--format",
                                      "json",
                                      "experiment",
                                      "create",
                                      "-n",
                                      "literegistry-base-fake",
                                      "-w"}));
  EXPECT_EQ(calls[0].argv[8], "ai2/test");
}

TEST_F(ServicesE2E, LaunchReportsBeakerFailureAsToolFailure) {
  m_beaker.clear().on(k_create, "", 1, "quota exceeded\n");
  const auto result = run({"services", "launch"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("primebeaker: error: LiteRegistry launcher failed: RuntimeError: "
                            "Beaker could not create base deployment literegistry-base-fake: "
                            "quota exceeded"),
            std::string::npos)
      << result.err;
}

TEST_F(ServicesE2E, PrimebeakerBeakerReachesTheUpstreamLauncher) {
  // A beaker that is not on PATH at all, named by PRIMEBEAKER_BEAKER.
  FakeBin elsewhere(m_dir / "elsewhere");
  FakeBeaker(elsewhere).on(k_create, "{\"id\": \"01OTHER\"}\n");
  std::filesystem::remove(m_fakes.bin() / "beaker");
  const auto result =
      run({"services", "launch"}, {{"PRIMEBEAKER_BEAKER", (elsewhere.bin() / "beaker").string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["beaker"]["id"], "01OTHER");
  EXPECT_EQ(elsewhere.calls("beaker").size(), 1U);
}

TEST_F(ServicesE2E, StopRunsBeakerUnlessDryRun) {
  auto result = run({"services", "stop", "01SERVICE", "--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(json::parse(result.out),
            json({{"command", {"beaker", "experiment", "stop", "01SERVICE"}}, {"dry_run", true}}));
  EXPECT_TRUE(m_beaker.calls().empty());
  result = run({"services", "podman", "stop", "--experiment-id=01POD"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto calls = m_beaker.calls();
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].argv, (std::vector<std::string>{"beaker", "experiment", "stop", "01POD"}));
}

TEST_F(ServicesE2E, YamlFieldsReachTheLauncherUnchanged) {
  write_file(m_work / "services.yaml",
             "schema: primebeaker.services/v1\n"
             "services:\n"
             "  head_registry: sqlite:///weka/shared/search-agent.sqlite3\n"
             "  terminal_replicas: 3\n"
             "  service_clusters: [ai2/jupiter]\n"
             "  omit_service_resources: true\n"
             "  gateway_timeout: 30\n");
  const auto result = run({"services", "yaml", "preview", "--config", "services.yaml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(last_config(),
            json({{"head_registry",
                   {{"type", "str"}, {"value", "sqlite:///weka/shared/search-agent.sqlite3"}}},
                  {"terminal_replicas", {{"type", "int"}, {"value", 3}}},
                  {"service_clusters", {{"type", "list"}, {"value", {"ai2/jupiter"}}}},
                  {"omit_service_resources", {{"type", "bool"}, {"value", true}}},
                  {"gateway_timeout", {{"type", "int"}, {"value", 30}}}}));
  EXPECT_TRUE(m_beaker.calls().empty());
}

TEST_F(ServicesE2E, PodmanYamlExpandsRegistryAndLaunches) {
  write_file(m_work / "podman.yaml",
             "schema: primebeaker.services/v1\n"
             "services:\n"
             "  registry: ${REGISTRY}\n"
             "  podman_replicas: 6\n"
             "  service_clusters: [\"ai2/jupiter\"]\n");
  auto result = run({"services", "podman", "yaml", "preview", "podman.yaml"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("podman.yaml:3:13: unresolved environment variable in services YAML "
                            "value '${REGISTRY}'"),
            std::string::npos)
      << result.err;
  result = run({"services", "podman", "yaml", "launch", "--config=podman.yaml"},
               {{"REGISTRY", "redis://registry.internal:6379"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(last_config()["registry"]["value"], "redis://registry.internal:6379");
  EXPECT_EQ(last_config()["podman_replicas"]["value"], 6);
  EXPECT_EQ(m_beaker.calls().size(), 1U);
}

TEST_F(ServicesE2E, UnknownYamlFieldNamesItsLineAndColumn) {
  write_file(m_work / "services.yaml",
             "schema: primebeaker.services/v1\n"
             "services:\n"
             "  terminal_replicas: 3\n"
             "  terminl_replicas: 3\n");
  const auto result = run({"services", "yaml", "preview", "--config", "services.yaml"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.err,
            "primebeaker: error: services.yaml:4:3: services.terminl_replicas: unknown "
            "BaseDeploymentConfig field 'terminl_replicas' (did you mean terminal_replicas?)\n");
  EXPECT_TRUE(records().empty());
}

TEST_F(ServicesE2E, FlagErrorsAreUsageErrors) {
  auto result = run({"services", "preview", "--terminal-replicas=three"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "primebeaker: error: --terminal-replicas: expected an integer, got 'three'\n");
  result = run({"services", "preview", "--terminal-replicas=1", "--terminal-replicas=2"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "primebeaker: error: --terminal-replicas: given more than once\n");
  result = run({"services", "podman", "preview", "--service-priority=high"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "primebeaker: error: --service-priority: unknown PodmanStackConfig field "
            "'service_priority'\n");
  result = run({"services", "preview", "--service-priority=low"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "primebeaker: error: BaseDeploymentConfig rejected the configuration: ValueError: "
            "service_priority must be normal, high or urgent\n");
}

TEST_F(ServicesE2E, MissingPackageNamesThePipRequirement) {
  RunOptions options;
  options.path_prepend = {m_fakes.bin()};
  auto result = run_primebeaker({"services", "podman", "preview"}, options);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("install it with: python3 -m pip install literegistry-podman-beaker"),
            std::string::npos)
      << result.err;
  result = run({"services", "preview", "--python", "no-such-python"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("cannot run no-such-python"), std::string::npos) << result.err;
}

// A new user reads examples/README.md before the error: both must name the same package, the
// distribution of each stack's launcher (literegistry-base-deployment, literegistry-podman-beaker),
// not LiteRegistry's registry client package `literegistry`.
TEST_F(ServicesE2E, ExamplesReadmeNamesThePackagesTheMissingPackageErrorNames) {
  const std::string readme = read_file(source_dir() / "examples/README.md");
  const std::string docs = read_file(source_dir() / "docs/services.md");
  RunOptions options;
  options.path_prepend = {m_fakes.bin()};
  const std::string prefix = "install it with: ";
  for (const std::vector<std::string> &args :
       {std::vector<std::string>{"services", "preview"},
        std::vector<std::string>{"services", "podman", "preview"}}) {
    const auto result = run_primebeaker(args, options);
    EXPECT_EQ(result.exit_code, 4) << result.err;
    const auto at = result.err.find(prefix);
    ASSERT_NE(at, std::string::npos) << result.err;
    const auto end = result.err.find('\n', at);
    const std::string command = result.err.substr(at + prefix.size(), end - at - prefix.size());
    EXPECT_EQ(command.rfind("python3 -m pip install literegistry-", 0), 0U) << command;
    EXPECT_NE(readme.find(command), std::string::npos) << command << " not in examples/README.md";
    EXPECT_NE(docs.find(command), std::string::npos) << command << " not in docs/services.md";
  }
  EXPECT_EQ(readme.find("pip install literegistry`"), std::string::npos);
}

TEST_F(ServicesE2E, PythonComesFromTheEnvironment) {
  // A wrapper interpreter proves PRIMEBEAKER_PYTHON is the one that runs.
  write_file(m_dir / "mypython",
             "#!/bin/bash\ntouch \"" + (m_dir / "mypython.used").string() +
                 "\"\nexec python3 \"$@\"\n",
             0755);
  const auto result =
      run({"services", "preview"}, {{"PRIMEBEAKER_PYTHON", (m_dir / "mypython").string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::filesystem::exists(m_dir / "mypython.used"));
}

TEST_F(ServicesE2E, ExampleServiceFilesPreviewCleanly) {
  // The examples double as inputs, so a misspelt field in them cannot rot unnoticed.
  const auto examples = source_dir() / "examples";
  auto result = run({"services",
                     "yaml",
                     "preview",
                     "--config",
                     (examples / "search-agent-webterminal" / "services.yaml").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto config = last_config();
  EXPECT_EQ(config["terminal_replicas"]["value"], 32);
  EXPECT_EQ(config["local_search_service_name"]["value"], "localsearch:bc-rl-v1");
  EXPECT_TRUE(config["head_registry"]["value"].get<std::string>().starts_with("sqlite:///"));
  result = run({"services",
                "podman",
                "yaml",
                "preview",
                "--config",
                (examples / "podman-terminal" / "services.yaml").string()},
               {{"REGISTRY", "redis://registry-host:6379"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  config = last_config();
  EXPECT_EQ(config["registry"]["value"], "redis://registry-host:6379");
  EXPECT_EQ(config["podman_replicas"]["value"], 16);
  EXPECT_EQ(config["podman_session_idle_timeout"], json({{"type", "int"}, {"value", 7200}}));
  EXPECT_TRUE(m_beaker.calls().empty());
}

} // namespace
} // namespace pb::test
