// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/joint/joint.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

namespace pb::joint {
namespace {

struct Failure {
  int code = 0;
  std::string message;
  std::vector<std::string> context;
};

Failure failure_of(const std::function<void()> &body) {
  try {
    body();
  } catch (const Error &error) {
    return {error.code(), error.what(), error.context()};
  }
  ADD_FAILURE() << "no error";
  return {};
}

const std::string k_head = "schema: primebeaker.run/v1\n";

RunConfig load(const std::string &text, const std::map<std::string, std::string> &env = {}) {
  const auto document = yaml::parse_yaml(text, "run.yaml");
  return load_run_config(document, "/cfg/dir/run.yaml", env);
}

TEST(RunConfig, ConvertsAliasesAndResolvesTheToml) {
  const auto config = load(k_head + "service:\n"
                                    "  head_registry: sqlite:///weka/run.sqlite3\n"
                                    "  service_cluster: ai2/a, ai2/b\n"
                                    "  terminal_replicas: 4\n"
                                    "rl:\n"
                                    "  toml: sub/../rl.toml\n"
                                    "  clusters: [ai2/holmes]\n"
                                    "  environment: {FEATURE: enabled, COUNT: 3}\n"
                                    "  secrets: {HF_TOKEN: custom-hf-secret}\n"
                                    "  required_services: {terminal: 4, \"localsearch:x\": 2}\n"
                                    "  min_runtime_hours: 4\n"
                                    "  wandb_secret: null\n"
                                    "  write_spec: yes\n");
  EXPECT_EQ(config.rl.toml, "/cfg/dir/rl.toml");
  EXPECT_EQ(config.rl.clusters, std::vector<std::string>{"ai2/holmes"});
  EXPECT_EQ(config.rl.env, (std::vector<std::string>{"FEATURE=enabled", "COUNT=3"}));
  EXPECT_EQ(config.rl.secrets, std::vector<std::string>{"HF_TOKEN=custom-hf-secret"});
  EXPECT_EQ(config.rl.required_services,
            (std::vector<std::string>{"terminal=4", "localsearch:x=2"}));
  EXPECT_EQ(config.rl.min_runtime_hours, 4);
  EXPECT_EQ(config.rl.wandb_secret, std::optional<std::string>(""));
  EXPECT_TRUE(config.rl.write_spec);
  EXPECT_EQ(config.rl.registry, "head+sqlite:///weka/run.sqlite3");
  EXPECT_TRUE(config.cleanup_service_on_training_exit);
  EXPECT_EQ(config.beaker_token_secret, "BEAKER_TOKEN");
  ASSERT_EQ(config.service.fields.size(), 3U);
  EXPECT_EQ(config.service.fields[1].name, "service_clusters");
  EXPECT_EQ(config.service.fields[1].value, OrderedJson::array({"ai2/a", "ai2/b"}));
  EXPECT_EQ(config.service.fields[2].origin, "run.yaml:5:3");
  EXPECT_EQ(config.service.fields[2].path, "service.terminal_replicas");
}

TEST(RunConfig, CliStyleKeysWork) {
  const auto config = load(k_head + "service: {}\n"
                                    "rl:\n"
                                    "  toml: /abs/rl.toml\n"
                                    "  cluster: ai2/x\n"
                                    "  env: [A=1, B=2]\n"
                                    "  secret: S=s\n"
                                    "  required_service: [judge=1]\n"
                                    "  registry: redis://explicit:6379\n");
  EXPECT_EQ(config.rl.toml, "/abs/rl.toml");
  EXPECT_EQ(config.rl.clusters, std::vector<std::string>{"ai2/x"});
  EXPECT_EQ(config.rl.env, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(config.rl.required_services, std::vector<std::string>{"judge=1"});
  EXPECT_EQ(config.rl.registry, "redis://explicit:6379");
}

TEST(RunConfig, RegistryDerivation) {
  const std::vector<std::pair<std::string, std::optional<std::string>>> cases = {
      {"registry: redis://host:6379", "redis://host:6379"},
      {"head_registry: sqlite:///weka/run.sqlite3", "head+sqlite:///weka/run.sqlite3"},
      {"head_registry: file:///weka/shared/services", "head+file:///weka/shared/services"},
      {"head_registry: rediss://host:6380", "head+rediss://host:6380"},
      {"head_registry: head+sqlite:///x.sqlite3", "head+sqlite:///x.sqlite3"},
      {"head_registry: /weka/registries/x", "head+/weka/registries/x"},
      {"terminal_replicas: 1", std::nullopt},
  };
  for (const auto &[service, expected] : cases) {
    const auto config = load(k_head + "service: {" + service + "}\nrl: {toml: rl.toml}\n");
    EXPECT_EQ(derive_registry(config.service), expected) << service;
    EXPECT_EQ(config.rl.registry, expected.value_or("")) << service;
  }
  // An explicit rl.registry always wins.
  const auto config = load(
      k_head + "service: {registry: redis://a:1}\nrl: {toml: rl.toml, registry: redis://b:2}\n");
  EXPECT_EQ(config.rl.registry, "redis://b:2");
}

TEST(RunConfig, ExpandsTheEnvironmentAndRefusesAnyLeftoverDollar) {
  const auto config = load(k_head + "service: {registry: $REG}\nrl: {toml: '${DIR}/rl.toml'}\n",
                           {{"REG", "redis://r:1"}, {"DIR", "/data"}});
  EXPECT_EQ(config.rl.toml, "/data/rl.toml");
  EXPECT_EQ(config.rl.registry, "redis://r:1");
  const auto f = failure_of(
      [] { load(k_head + "service: {}\nrl: {toml: rl.toml, setup_command: 'echo $((1+1))'}\n"); });
  EXPECT_EQ(f.code, 3);
  EXPECT_EQ(f.message,
            "run.yaml:3:36: unresolved environment variable in run YAML value 'echo $((1+1))'");
}

TEST(RunConfig, EverySchemaErrorHasItsMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1]\n",
       "run.yaml:1:1: a run YAML must be a mapping with schema: primebeaker.run/v1, "
       "service:, rl: and an optional lifecycle:, not a list"},
      {k_head + "servce: {}\n",
       "run.yaml:2:1: unknown key 'servce' (a run YAML holds schema, service_stack, service, rl "
       "and lifecycle) (did you mean service?)"},
      {"service: {}\nrl: {}\n", "run.yaml: missing schema: primebeaker.run/v1"},
      {"schema: primebeaker.run/v2\n",
       "run.yaml:1:9: schema must be 'primebeaker.run/v1', not 'primebeaker.run/v2'"},
      {k_head + "rl: {toml: x}\n",
       "run.yaml: missing service: (a run YAML needs schema, service and rl)"},
      {k_head + "service: [a]\nrl: {toml: x}\n",
       "run.yaml:2:10: service must be a mapping, not a list"},
      {k_head + "service: {}\nrl: x\n", "run.yaml:3:5: rl must be a mapping, not a string"},
      {k_head + "service: {}\nrl: {}\n",
       "run.yaml: missing rl.toml (the Prime-RL training TOML, relative to this file)"},
      {k_head + "service: {}\nrl: {toml: '  '}\n",
       "run.yaml:3:12: rl.toml must be a non-empty path"},
      {k_head + "service: {}\nrl: {toml: x}\nlifecycle: [1]\n",
       "run.yaml:4:12: lifecycle must be a mapping, not a list"},
      {k_head + "service: {}\nrl: {toml: x}\nlifecycle: {cleanup: true}\n",
       "run.yaml:4:13: unknown key lifecycle.cleanup"},
      {k_head + "service: {}\nrl: {toml: x}\nlifecycle: {cleanup_service_on_training_exit: 1}\n",
       "run.yaml:4:47: lifecycle.cleanup_service_on_training_exit must be true or false"},
      {k_head + "service: {}\nrl: {toml: x}\nlifecycle: {beaker_token_secret: ' '}\n",
       "run.yaml:4:34: lifecycle.beaker_token_secret must be a non-empty secret name"},
      {k_head + "service: {}\nrl:\n  toml: x\n  cluster: a\n  clusters: [b]\n",
       "run.yaml:6:3: rl may supply only cluster or clusters"},
      {k_head + "service: {}\nrl:\n  toml: x\n  environment: {A: 1}\n  env: [A=2]\n",
       "run.yaml:6:3: rl may supply only env or environment"},
      {k_head + "service: {}\nrl:\n  toml: x\n  secret: [A=b]\n  secrets: {A: c}\n",
       "run.yaml:6:3: rl may supply only secret or secrets"},
      {k_head +
           "service: {}\nrl:\n  toml: x\n  required_services: {a: 1}\n  required_service: [a=1]\n",
       "run.yaml:6:3: rl may supply only required_service or required_services"},
      {k_head + "service: {}\nrl: {toml: x, environment: [A=1]}\n",
       "run.yaml:3:28: rl.environment must be a mapping of NAME: value, not a list"},
      {k_head + "service: {}\nrl: {toml: x, secrets: yes}\n",
       "run.yaml:3:24: rl.secrets must be a mapping of NAME: value, not a boolean"},
      {k_head + "service: {}\nrl: {toml: x, priorty: high}\n",
       "run.yaml:3:15: unknown key rl.priorty (did you mean priority?)"},
      {k_head + "service: {}\nrl: {toml: x, min_runtime_hours: four}\n",
       "run.yaml:3:15: rl.min_runtime_hours: --min-runtime-hours expects a whole number, got "
       "'four'"},
      {k_head + "service: {}\nrl: {toml: x, image: [a, b]}\n",
       "run.yaml:3:22: rl.image must be a single value, not a list"},
      {k_head + "service_stack: gpu\nservice: {}\nrl: {toml: x}\n",
       "run.yaml:2:16: service_stack must be base or podman"},
  };
  for (const auto &[text, message] : cases) {
    const auto f = failure_of([&] { load(text); });
    EXPECT_EQ(f.code, 3) << text;
    EXPECT_EQ(f.message, message) << text;
  }
}

toml::Document toml_of(const std::string &text) {
  return toml::Document::parse(text, "rl.toml");
}

TEST(Lifecycle, InjectsTheManagedIdAndToken) {
  auto config =
      load(k_head + "service: {}\nrl: {toml: x, environment: {FEATURE: enabled}, secrets: "
                    "{HF_TOKEN: custom-hf-secret}}\nlifecycle: {beaker_token_secret: ' "
                    "training-beaker-token '}\n");
  const auto options = rl_options_with_lifecycle(
      config, toml_of("[deployment]\ntype = \"multi_node\"\n"), "01SERVICE");
  EXPECT_EQ(options.env,
            (std::vector<std::string>{"FEATURE=enabled",
                                      "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID=01SERVICE"}));
  EXPECT_EQ(options.secrets,
            (std::vector<std::string>{"HF_TOKEN=custom-hf-secret",
                                      "BEAKER_TOKEN=training-beaker-token"}));
  // Without cleanup nothing is injected and single-node is fine.
  config.cleanup_service_on_training_exit = false;
  const auto plain = rl_options_with_lifecycle(
      config, toml_of("[deployment]\ntype = \"single_node\"\n"), "01SERVICE");
  EXPECT_EQ(plain.env, std::vector<std::string>{"FEATURE=enabled"});
}

TEST(Lifecycle, Errors) {
  const auto multi = toml_of("[deployment]\ntype = \"multi_node\"\n");
  auto f = failure_of([] {
    rl_options_with_lifecycle(load(k_head + "service: {}\nrl: {toml: x}\n"),
                              toml_of("[deployment]\ntype = \"single_node\"\n"),
                              "01S");
  });
  EXPECT_EQ(f.code, 3);
  EXPECT_EQ(f.message,
            "rl.toml:2:8: deployment.type is 'single_node': trainer-side service cleanup "
            "requires multi-node RL");
  ASSERT_EQ(f.context.size(), 1U);
  EXPECT_EQ(f.context[0],
            "set lifecycle.cleanup_service_on_training_exit: false in "
            "/cfg/dir/run.yaml for single-node RL (and stop the services yourself)");
  f = failure_of([] {
    rl_options_with_lifecycle(
        load(k_head + "service: {}\nrl: {toml: x}\n"), toml_of("x = 1\n"), "01S");
  });
  EXPECT_EQ(f.message,
            "rl.toml: the training TOML needs deployment.type; trainer-side service "
            "cleanup requires multi-node RL");
  f = failure_of([&] {
    rl_options_with_lifecycle(load(k_head +
                                   "service: {}\nrl: {toml: x, environment: "
                                   "{PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID: spoof}}\n"),
                              multi,
                              "01S");
  });
  EXPECT_EQ(f.message,
            "/cfg/dir/run.yaml: rl.environment may not set "
            "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID: run sets it to the service "
            "experiment it launched");
  f = failure_of([&] {
    rl_options_with_lifecycle(
        load(k_head + "service: {}\nrl: {toml: x, secret: [BEAKER_TOKEN=mine]}\n"), multi, "01S");
  });
  EXPECT_EQ(f.message,
            "/cfg/dir/run.yaml: rl.secrets may not set the managed BEAKER_TOKEN; name "
            "the secret with lifecycle.beaker_token_secret instead");
}

TEST(Receipt, FindsExactlyTheServiceExperiment) {
  const auto ids = [](const char *text) {
    return receipt_experiment_ids(OrderedJson::parse(text));
  };
  EXPECT_EQ(ids(R"({"beaker": {"id": "01SERVICE", "jobs": [{"id": "01JOB"}]}})"),
            std::vector<std::string>{"01SERVICE"});
  EXPECT_EQ(ids(R"({"beaker": {"experimentId": "01SERVICE"}})"),
            std::vector<std::string>{"01SERVICE"});
  EXPECT_EQ(ids(R"({"beaker": [{"experiment_id": "01A", "id": "x"}, {"id": "01A"}]})"),
            std::vector<std::string>{"01A"});
  EXPECT_EQ(ids(R"({"beaker": {"experiment": {"id": "01E"}}})"), std::vector<std::string>{"01E"});
  EXPECT_EQ(ids(R"({"beaker": {"experiments": [{"id": "01E"}, {"id": "01F"}]}})"),
            (std::vector<std::string>{"01E", "01F"}));
  EXPECT_EQ(ids(R"({"id": "01TOP"})"), std::vector<std::string>{"01TOP"});
  EXPECT_TRUE(ids(R"({"beaker": {"jobs": [{"id": "01JOB"}]}})").empty());
  EXPECT_TRUE(ids(R"({"experiment_name": "x", "beaker": {"id": ""}})").empty());
}

TEST(RunConfig, ShippedExampleLoadsAsDocumented) {
  const auto path =
      std::filesystem::path(PB_EXAMPLES_DIR) / "search-agent-webterminal" / "run.yaml";
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto config = load_run_config(yaml::parse_yaml(text, path.string()), path, {});
  EXPECT_TRUE(config.rl.registry.starts_with("head+sqlite:///")) << config.rl.registry;
  EXPECT_EQ(config.rl.required_services,
            (std::vector<std::string>{"terminal=32", "localsearch:bc-rl-v1=32", "judge=1"}));
  EXPECT_EQ(config.rl.toml, path.parent_path() / "multinode-rl.toml");
  EXPECT_TRUE(config.cleanup_service_on_training_exit);
  EXPECT_EQ(config.beaker_token_secret, "BEAKER_TOKEN");
  EXPECT_EQ(config.stack, services::Stack::base);
  const auto toml = toml::Document::load(config.rl.toml);
  const auto options = rl_options_with_lifecycle(config, toml, "01SERVICE");
  EXPECT_EQ(options.env.back(), "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID=01SERVICE");
}

} // namespace
} // namespace pb::joint
