// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/services/launcher_config.hpp>

#include <gtest/gtest.h>

namespace pb::services {
namespace {

struct Failure {
  int code = 0;
  std::string message;
};

Failure failure_of(const std::function<void()> &body) {
  const auto error = test::thrown_error(body);
  return {error.code(), error.what()};
}

TEST(ConfigFromFlags, PassesEveryFieldThroughAsText) {
  const auto parsed = config_from_flags(Stack::base,
                                        {"--head-registry=/weka/registry",
                                         "--terminal_replicas",
                                         "3",
                                         "--omit-service-resources",
                                         "--min-runtime-hours",
                                         "-1",
                                         "--python",
                                         "/opt/py/bin/python3"});
  ASSERT_EQ(parsed.config.fields.size(), 4U);
  EXPECT_EQ(parsed.python, "/opt/py/bin/python3");
  const auto &f = parsed.config.fields;
  EXPECT_EQ(f[0].name, "head_registry");
  EXPECT_EQ(f[0].value, "/weka/registry");
  EXPECT_TRUE(f[0].from_text);
  EXPECT_EQ(f[0].origin, "--head-registry");
  EXPECT_EQ(f[1].name, "terminal_replicas");
  EXPECT_EQ(f[1].value, "3");
  EXPECT_EQ(f[1].origin, "--terminal_replicas");
  EXPECT_EQ(f[2].name, "omit_service_resources");
  EXPECT_EQ(f[2].value, true); // bare flag
  EXPECT_EQ(f[3].value, "-1");
}

TEST(ConfigFromFlags, ServiceClusterAliasSplitsAndAccumulates) {
  const auto parsed = config_from_flags(
      Stack::podman, {"--service-cluster", "ai2/jupiter, ai2/saturn,,", "--service-cluster=ai2/x"});
  ASSERT_EQ(parsed.config.fields.size(), 1U);
  const auto &field = parsed.config.fields.front();
  EXPECT_EQ(field.name, "service_clusters");
  EXPECT_EQ(field.value, OrderedJson::array({"ai2/jupiter", "ai2/saturn", "ai2/x"}));
  EXPECT_TRUE(field.as_tuple);
  EXPECT_FALSE(field.from_text);
}

TEST(ConfigFromFlags, RepeatsAccumulateForTheHelperToJudge) {
  const auto parsed = config_from_flags(Stack::base, {"--budget=a", "--budget", "b"});
  ASSERT_EQ(parsed.config.fields.size(), 1U);
  EXPECT_EQ(parsed.config.fields[0].value, OrderedJson::array({"a", "b"}));
}

TEST(ConfigFromFlags, Errors) {
  auto f = failure_of([] {
    config_from_flags(Stack::base, {"--service-cluster=a", "--service-clusters=b"});
  });
  EXPECT_EQ(f.code, 2);
  EXPECT_EQ(f.message, "supply only --service-cluster or --service-clusters, not both");
  f = failure_of([] { config_from_flags(Stack::base, {"stray"}); });
  EXPECT_EQ(f.code, 2);
  EXPECT_EQ(f.message,
            "unexpected argument 'stray': LiteRegistry fields are given as --field value or "
            "--field=value");
  f = failure_of([] { config_from_flags(Stack::base, {"--service-cluster"}); });
  EXPECT_EQ(f.message, "--service-cluster needs a comma-separated list of clusters");
}

yaml::YamlDocument doc(const std::string &text) {
  return yaml::parse_yaml(text, "s.yaml");
}

TEST(ServicesYaml, KeepsTypesListsAndPositions) {
  const auto config = load_services_yaml(Stack::base,
                                         doc("schema: primebeaker.services/v1\n"
                                             "services:\n"
                                             "  head_registry: sqlite:///weka/shared/s.sqlite3\n"
                                             "  terminal_replicas: 3\n"
                                             "  service_clusters: [ai2/jupiter]\n"),
                                         {});
  ASSERT_EQ(config.fields.size(), 3U);
  EXPECT_EQ(config.source, ConfigSource::file);
  EXPECT_EQ(config.fields[1].value, 3);
  EXPECT_FALSE(config.fields[1].from_text);
  EXPECT_EQ(config.fields[1].origin, "s.yaml:4:3");
  EXPECT_EQ(config.fields[1].path, "services.terminal_replicas");
  EXPECT_EQ(config.fields[2].value, OrderedJson::array({"ai2/jupiter"}));
  EXPECT_FALSE(config.fields[2].as_tuple);
}

TEST(ServicesYaml, ExpandsTheEnvironment) {
  const auto config =
      load_services_yaml(Stack::podman,
                         doc("schema: primebeaker.services/v1\nservices:\n  registry: ${REGISTRY}\n"
                             "  service_cluster: ai2/a,ai2/b\n"),
                         {{"REGISTRY", "redis://registry.internal:6379"}});
  EXPECT_EQ(config.string_value("registry"), "redis://registry.internal:6379");
  EXPECT_EQ(config.fields[1].name, "service_clusters");
  EXPECT_EQ(config.fields[1].value, OrderedJson::array({"ai2/a", "ai2/b"}));
  EXPECT_TRUE(config.fields[1].as_tuple);
}

TEST(ServicesYaml, EverySchemaErrorHasItsMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"- a\n",
       "s.yaml:1:1: a services YAML must be a mapping with schema: "
       "primebeaker.services/v1 and services:, not a list"},
      {"",
       "s.yaml: a services YAML must be a mapping with schema: primebeaker.services/v1 and "
       "services:, not null"},
      {"services: {}\n", "s.yaml: missing schema: primebeaker.services/v1"},
      {"schema: primebeaker.services/v2\nservices: {}\n",
       "s.yaml:1:9: schema must be 'primebeaker.services/v1', not 'primebeaker.services/v2'"},
      {"schema: primebeaker.services/v1\nservices: {}\nextra: 1\n",
       "s.yaml:3:1: unknown key 'extra' (a services YAML holds only schema and services)"},
      {"schema: primebeaker.services/v1\n",
       "s.yaml: missing services: (the LiteRegistry config fields)"},
      {"schema: primebeaker.services/v1\nservices: [a]\n",
       "s.yaml:2:11: services must be a mapping of LiteRegistry config fields, not a list"},
      {"schema: primebeaker.services/v1\nservices:\n  registry: ${NOPE}\n",
       "s.yaml:3:13: unresolved environment variable in services YAML value '${NOPE}'"},
      {"schema: primebeaker.services/v1\nservices:\n  service_clusters: [a]\n"
       "  service_cluster: b\n",
       "s.yaml:4:3: services: supply only service_cluster or service_clusters"},
      {"schema: primebeaker.services/v1\nservices:\n  service_cluster: [a]\n",
       "s.yaml:3:20: services.service_cluster: service_cluster must be a comma-separated string, "
       "not a list (use service_clusters for a list)"},
  };
  for (const auto &[text, message] : cases) {
    const auto f = failure_of([&] { load_services_yaml(Stack::base, doc(text), {}); });
    EXPECT_EQ(f.code, 3) << text;
    EXPECT_EQ(f.message, message) << text;
  }
}

TEST(Python, FlagThenEnvironmentThenDefault) {
  EXPECT_EQ(resolve_python(std::string("/x/py"), {{"PRIMEBEAKER_PYTHON", "/y/py"}}), "/x/py");
  EXPECT_EQ(resolve_python(std::nullopt, {{"PRIMEBEAKER_PYTHON", "/y/py"}}), "/y/py");
  EXPECT_EQ(resolve_python(std::nullopt, {}), "python3");
}

TEST(Request, CarriesFieldsInOrder) {
  const auto parsed =
      config_from_flags(Stack::podman, {"--podman-replicas=4", "--service-cluster=a"});
  const auto request = config_request("preview", parsed.config);
  EXPECT_EQ(request["stack"], "podman");
  EXPECT_EQ(request["action"], "preview");
  EXPECT_EQ(request["fields"][0]["name"], "podman_replicas");
  EXPECT_EQ(request["fields"][0]["value"], "4");
  EXPECT_EQ(request["fields"][0]["from_text"], true);
  EXPECT_EQ(request["fields"][1]["as_tuple"], true);
}

} // namespace
} // namespace pb::services
