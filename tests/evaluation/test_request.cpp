// SPDX-License-Identifier: MIT
// The request model, its constraints and the evaluator spec (docs/evaluation.md "The request").
#include "test_support.hpp"

#include <primebeaker/evaluation/request.hpp>

#include <gtest/gtest.h>

namespace pb::evaluation {
namespace {

// The request example of docs/evaluation.md.
OrderedJson example_request() {
  return OrderedJson::parse(R"({
    "module": "jtc.eval.worker",
    "arguments": ["run"],
    "image": "beaker://01EVAL",
    "run_dir": "/weka/evals/example",
    "services": {
      "generation_model": "Qwen/Qwen3.5-4B", "generation_replicas": 2,
      "terminal_replicas": 4, "python_replicas": 0, "web_search_replicas": 0,
      "service_clusters": ["ai2/jupiter"], "model_cluster": "ai2/holmes",
      "shared_dir": "/weka/shared"
    },
    "required_services": {"Qwen/Qwen3.5-4B": 1, "terminal": 1},
    "beaker_token_secret": "eval-token"
  })");
}

EvaluationRequest with(const std::string &key, const OrderedJson &value) {
  auto json = example_request();
  json[key] = value;
  return request_from_json(json, "req.json");
}

std::vector<std::string> env_names(const OrderedJson &spec) {
  std::vector<std::string> names;
  for (const auto &entry : spec["tasks"][0]["envVars"]) {
    names.push_back(entry["name"]);
  }
  return names;
}

TEST(EvaluationRequest, ExampleBuildsTheEvaluatorSpecInTheReferenceOrder) {
  const auto request = request_from_json(example_request(), "req.json");
  const auto config = service_config(request);
  EXPECT_EQ(config["workspace"], "ai2/oe-agents");
  EXPECT_EQ(config["budget"], "ai2/oe-omai");
  const auto root = coordination_root(config, "jtceval-py0-t4-20260101-abcdef1234");
  EXPECT_EQ(root, "/weka/shared/.literegistry-coop/jtceval-py0-t4-20260101-abcdef1234");
  EXPECT_EQ(evaluation_experiment_name(request, "jtceval-py0-t4-20260101-abcdef1234"),
            "jtceval-abcdef1234");
  const auto spec = evaluator_spec_json(evaluator_experiment(request, config, root, "01SVC"));
  std::vector<std::string> keys;
  for (const auto &[key, value] : spec.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"version", "description", "tasks", "budget"}));
  const auto &task = spec["tasks"][0];
  keys.clear();
  for (const auto &[key, value] : task.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(
      keys,
      (std::vector<std::string>{
          "name", "image", "command", "envVars", "datasets", "result", "context", "constraints"}));
  EXPECT_EQ(spec["description"], "PrimeBeaker managed Python evaluation: jtceval");
  EXPECT_EQ(task["image"], OrderedJson({{"beaker", "01EVAL"}}));
  EXPECT_EQ(task["command"], OrderedJson({"primebeaker", "evaluation", "worker"}));
  EXPECT_EQ(env_names(spec),
            (std::vector<std::string>{"PRIMEBEAKER_COORDINATION_ROOT",
                                      "PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON",
                                      "PRIMEBEAKER_EVALUATION_MODULE",
                                      "PRIMEBEAKER_KEEP_SERVICES",
                                      "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID",
                                      "PRIMEBEAKER_READINESS_TIMEOUT_SECONDS",
                                      "PRIMEBEAKER_REQUIRED_SERVICES_JSON",
                                      "PRIMEBEAKER_RUN_DIR",
                                      "BEAKER_TOKEN"}));
  const auto &env = task["envVars"];
  EXPECT_EQ(env[1]["value"], "[\"run\"]");
  EXPECT_EQ(env[3]["value"], "False");
  EXPECT_EQ(env[4]["value"], "01SVC");
  EXPECT_EQ(env[5]["value"], "7200.0");
  EXPECT_EQ(env[6]["value"], "{\"Qwen/Qwen3.5-4B\": 1, \"terminal\": 1}");
  EXPECT_EQ(env[8], OrderedJson({{"name", "BEAKER_TOKEN"}, {"secret", "eval-token"}}));
  EXPECT_EQ(
      task["datasets"],
      OrderedJson::parse(R"([{"mountPath": "/weka", "source": {"weka": "oe-adapt-default"}}])"));
  EXPECT_EQ(task["result"], OrderedJson({{"path", "/tmp/beaker-result"}}));
  EXPECT_EQ(task["context"],
            OrderedJson::parse(R"({"priority": "high", "minRuntime": "0h", "autoResume": true})"));
  EXPECT_EQ(task["constraints"], OrderedJson::parse(R"({"cluster": ["ai2/jupiter"]})"));
  EXPECT_EQ(spec["budget"], "ai2/oe-omai");
}

TEST(EvaluationRequest, RegistryAndUserEnvironmentAndSecretsAreOrdered) {
  auto json = example_request();
  json["services"]["registry"] = "redis://r:6379";
  json["environment"] = {{"ZED", "1"}, {"ALPHA", "2"}};
  json["secrets"] = {{"HF_TOKEN", "hf"}, {"A_KEY", "a"}};
  json["keep_services"] = true;
  json["budget"] = nullptr;
  json["readiness_timeout_seconds"] = 12.5;
  const auto request = request_from_json(json, "req.json");
  const auto config = service_config(request);
  EXPECT_FALSE(config.contains("budget"));
  const auto spec = evaluator_spec_json(evaluator_experiment(request, config, "/r", "<id>"));
  EXPECT_FALSE(spec.contains("budget"));
  const auto names = env_names(spec);
  EXPECT_EQ(names.front(), "ALPHA");
  EXPECT_EQ(std::vector<std::string>(names.end() - 2, names.end()),
            (std::vector<std::string>{"A_KEY", "HF_TOKEN"})); // no BEAKER_TOKEN with keep_services
  EXPECT_NE(std::find(names.begin(), names.end(), "PRIMEBEAKER_REGISTRY"), names.end());
  for (const auto &entry : spec["tasks"][0]["envVars"]) {
    if (entry["name"] == "PRIMEBEAKER_READINESS_TIMEOUT_SECONDS") {
      EXPECT_EQ(entry["value"], "12.5");
    }
    if (entry["name"] == "PRIMEBEAKER_KEEP_SERVICES") {
      EXPECT_EQ(entry["value"], "True");
    }
  }
}

TEST(EvaluationRequest, EveryConstraintHasItsMessage) {
  EXPECT_PB_ERROR(
      with("module", "bash -lc eval"), 3, "invalid Python module path: 'bash -lc eval'");
  EXPECT_PB_ERROR(with("module", "-m jtc"), 3, "invalid Python module path");
  EXPECT_PB_ERROR(with("module", "jtc/eval"), 3, "invalid Python module path");
  EXPECT_PB_ERROR(with("module", ""), 3, "invalid Python module path: ''");
  EXPECT_PB_ERROR(with("arguments", OrderedJson::array({"run", 3})),
                  3,
                  "Python module arguments must all be strings");
  EXPECT_PB_ERROR(with("run_dir", "/tmp/elsewhere"),
                  3,
                  "launch path must be under mounted path /weka: /tmp/elsewhere");
  EXPECT_PB_ERROR(with("run_dir", "/weka/../etc"), 3, "launch path must be under mounted path");
  EXPECT_PB_ERROR(with("required_services", {{"terminal", 0}}),
                  3,
                  "required services need names and positive counts");
  EXPECT_PB_ERROR(
      with("required_services", {{"", 1}}), 3, "required services need names and positive counts");
  EXPECT_PB_ERROR(with("beaker_token_secret", nullptr),
                  3,
                  "managed service cleanup requires a Beaker token secret");
  EXPECT_PB_ERROR(
      with("beaker_token_secret", ""), 3, "managed service cleanup requires a Beaker token secret");
  EXPECT_PB_ERROR(with("priority", "low"), 3, "priority must be one of normal, high, urgent");
  EXPECT_PB_ERROR(with("min_runtime_hours", -1), 3, "min_runtime_hours must be >= 0");
  EXPECT_PB_ERROR(with("readiness_timeout_seconds", 0), 3, "readiness_timeout_seconds must be > 0");
  EXPECT_PB_ERROR(with("workspace", ""), 3, "workspace must be a non-empty string");
  EXPECT_PB_ERROR(with("command", "rm -rf /"), 3, "unknown request field 'command'");
  EXPECT_PB_ERROR(with("modul", "x"), 3, "(did you mean module?)");
  EXPECT_PB_ERROR(with("keep_services", "yes"), 3, "keep_services must be true or false");

  auto json = example_request();
  json["services"]["workspace"] = "ai2/other";
  EXPECT_PB_ERROR(service_config(request_from_json(json, "req.json")),
                  3,
                  "services.workspace conflicts with evaluation scheduler value");
  json = example_request();
  json["services"]["budget"] = "ai2/other";
  EXPECT_PB_ERROR(service_config(request_from_json(json, "req.json")),
                  3,
                  "services.budget conflicts with evaluation scheduler value");
}

TEST(EvaluationRequest, EnvironmentCollisionsAreRefused) {
  const auto spec_of = [](const EvaluationRequest &request) {
    return evaluator_experiment(request, service_config(request), "/r", "<id>");
  };
  EXPECT_PB_ERROR(spec_of(with("environment", {{"PRIMEBEAKER_RUN_DIR", "/x"}})),
                  3,
                  "reserved evaluation environment names cannot be overridden: "
                  "['PRIMEBEAKER_RUN_DIR']");
  EXPECT_PB_ERROR(spec_of(with("environment", {{"PRIMEBEAKER_REGISTRY", "redis://x"}})),
                  3,
                  "reserved evaluation environment names cannot be overridden");
  EXPECT_PB_ERROR(spec_of(with("secrets", {{"BEAKER_TOKEN", "mine"}})),
                  3,
                  "evaluation secrets may not override managed BEAKER_TOKEN");
  auto json = example_request();
  json["environment"] = {{"HF_TOKEN", "plain"}};
  json["secrets"] = {{"HF_TOKEN", "hf-secret"}};
  EXPECT_PB_ERROR(spec_of(request_from_json(json, "req.json")),
                  3,
                  "environment names cannot be both values and secrets: ['HF_TOKEN']");
}

TEST(EvaluationRequest, ReceiptIdsFollowTheExtractionRules) {
  EXPECT_EQ(receipt_experiment_ids(OrderedJson::parse(R"({"beaker": [{"id": "01A"}]})")),
            (std::vector<std::string>{"01A"}));
  EXPECT_EQ(receipt_experiment_ids(
                OrderedJson::parse(R"({"beaker": {"experiment": {"experimentId": "01B"}}})")),
            (std::vector<std::string>{"01B"}));
  EXPECT_EQ(receipt_experiment_ids(
                OrderedJson::parse(R"([{"experiment_id": "01C", "id": "x"}, {"id": "01C"}])")),
            (std::vector<std::string>{"01C"}));
  EXPECT_PB_ERROR(
      single_experiment_id(OrderedJson::parse(R"({"beaker": [{"id": "a"}, {"id": "b"}]})")),
      4,
      "Beaker receipt did not contain exactly one experiment ID: ['a', 'b']");
  EXPECT_PB_ERROR(single_experiment_id(OrderedJson::parse(R"({"beaker": {}})")),
                  4,
                  "exactly one experiment ID: []");
}

TEST(EvaluationRequest, PythonFloatRepr) {
  EXPECT_EQ(python_float(7200), "7200.0");
  EXPECT_EQ(python_float(0.5), "0.5");
  EXPECT_EQ(python_float(5400.25), "5400.25");
  // Exactly repr(float), including where it switches to the exponent form.
  EXPECT_EQ(python_float(1e16), "1e+16");
  EXPECT_EQ(python_float(0.0001), "0.0001");
  EXPECT_EQ(python_float(0.00001), "1e-05");
}

} // namespace
} // namespace pb::evaluation
