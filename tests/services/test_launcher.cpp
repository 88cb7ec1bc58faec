// SPDX-License-Identifier: MIT
// How LiteRegistry helper answers become errors, with a scripted Runner (no Python).
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/services/launcher.hpp>
#include <primebeaker/services/launcher_config.hpp>

#include <gtest/gtest.h>

namespace pb::services {
namespace {

class ScriptedRunner : public proc::Runner {
public:
  explicit ScriptedRunner(proc::Result result) : m_result(std::move(result)) {}
  proc::Result run(const proc::Command &command) override {
    commands.push_back(command);
    return m_result;
  }
  std::vector<proc::Command> commands;

private:
  proc::Result m_result;
};

proc::Result answer(const std::string &json, int exit_code = 0, const std::string &err = "") {
  proc::Result result;
  result.exit_code = exit_code;
  result.out = json;
  result.err = err;
  return result;
}

Error error_of(ScriptedRunner &runner, const LauncherConfig &config) {
  LiteRegistry launcher(runner, "/opt/py/bin/python3");
  return test::thrown_error([&] { launcher.preview(config); });
}

LauncherConfig yaml_config() {
  const auto document =
      yaml::parse_yaml("schema: primebeaker.services/v1\nservices:\n  budget: x\n", "s.yaml");
  return load_services_yaml(Stack::base, document, {});
}

TEST(LiteRegistryHelper, RunsThePythonWithTheRequestOnStdin) {
  ScriptedRunner runner(answer(R"({"ok": true, "result": {"experiment_name": "n"}})"));
  LiteRegistry launcher(runner, "/opt/py/bin/python3");
  const auto result = launcher.preview(config_from_flags(Stack::base, {"--budget=b"}).config);
  EXPECT_EQ(result["experiment_name"], "n");
  ASSERT_EQ(runner.commands.size(), 1U);
  const auto &command = runner.commands[0];
  ASSERT_EQ(command.argv.size(), 3U);
  EXPECT_EQ(command.argv[0], "/opt/py/bin/python3");
  EXPECT_EQ(command.argv[1], "-c");
  EXPECT_EQ(command.argv[2], helper_source());
  EXPECT_EQ(command.env_set.at("PYTHONDONTWRITEBYTECODE"), "1");
  const auto request = OrderedJson::parse(*command.stdin_data);
  EXPECT_EQ(request["action"], "preview");
  EXPECT_EQ(request["fields"][0]["name"], "budget");
  EXPECT_EQ(command.env_set.count("PATH"), 0U);
}

TEST(LiteRegistryHelper, RelocatedBeakerGoesFirstOnThePath) {
  ScriptedRunner runner(answer(R"({"ok": true, "result": {}})"));
  LiteRegistry launcher(runner, "python3");
  launcher.use_beaker("/opt/beaker/bin/beaker", "/usr/bin:/bin");
  launcher.stop(Stack::base, "01X", true);
  EXPECT_EQ(runner.commands[0].env_set.at("PATH"), "/opt/beaker/bin:/usr/bin:/bin");
}

TEST(LiteRegistryHelper, ACrashIsAToolFailureWithItsStderr) {
  ScriptedRunner runner(answer("", 1, "Traceback...\nSyntaxError: nope\n"));
  const auto error = error_of(runner, yaml_config());
  EXPECT_EQ(error.code(), 4);
  EXPECT_STREQ(error.what(),
               "/opt/py/bin/python3 could not run the LiteRegistry helper (exit code 1)");
  ASSERT_EQ(error.context().size(), 1U);
  EXPECT_EQ(error.context()[0], "Traceback...\nSyntaxError: nope");
}

TEST(LiteRegistryHelper, AnswersMapToExitCodes) {
  {
    ScriptedRunner runner(answer(
        R"({"ok": false, "error": "missing_package", "module": "literegistry_base_deployment",
            "requirement": "literegistry-base-deployment", "message": "ModuleNotFoundError: x"})"));
    const auto error = error_of(runner, yaml_config());
    EXPECT_EQ(error.code(), 4);
    EXPECT_STREQ(error.what(),
                 "LiteRegistry's literegistry_base_deployment package is not "
                 "importable by /opt/py/bin/python3 (ModuleNotFoundError: x)");
    EXPECT_EQ(error.context().at(0),
              "install it with: /opt/py/bin/python3 -m pip install literegistry-base-deployment");
  }
  {
    ScriptedRunner runner(answer(R"({"ok": false, "error": "invalid_config",
        "config_class": "BaseDeploymentConfig", "message": "ValueError: bad"})"));
    EXPECT_EQ(error_of(runner, yaml_config()).code(), 3);                             // from a file
    EXPECT_EQ(error_of(runner, config_from_flags(Stack::base, {}).config).code(), 2); // flags
  }
  {
    ScriptedRunner runner(
        answer(R"({"ok": false, "error": "unknown_fields", "fields": ["budgte", "zzz"],
        "known": ["budget"], "config_class": "BaseDeploymentConfig"})"));
    auto config = yaml_config();
    config.fields.push_back({"budgte", "x", false, false, "s.yaml:4:3", "services.budgte"});
    const auto error = error_of(runner, config);
    EXPECT_EQ(error.code(), 3);
    EXPECT_STREQ(error.what(),
                 "s.yaml:4:3: services.budgte: unknown BaseDeploymentConfig field "
                 "'budgte' (did you mean budget?)");
    EXPECT_EQ(error.context().at(0), "zzz: unknown BaseDeploymentConfig field 'zzz'");
  }
  {
    ScriptedRunner runner(
        answer(R"({"ok": false, "error": "launcher_failed", "message": "RuntimeError: b"})"));
    LiteRegistry launcher(runner, "python3");
    const auto error = test::thrown_error([&] { launcher.submit(yaml_config()); });
    EXPECT_EQ(error.code(), 4);
    EXPECT_STREQ(error.what(), "LiteRegistry launcher failed: RuntimeError: b");
  }
}

} // namespace
} // namespace pb::services
