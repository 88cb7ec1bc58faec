// SPDX-License-Identifier: MIT
// The public launch API as other modules use it (rl resume, run): pure plans from a parsed
// document, the shared flag parser, execution against recording effects.
#include "multinode_rl_config.hpp"
#include "test_support.hpp"

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/staging/stage.hpp>
#include <primebeaker/toml/value.hpp>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <algorithm>

namespace pb::test {
namespace {

using launch::LaunchInputs;
using launch::LaunchOptions;

LaunchInputs inputs_for(const toml::Document &document) {
  LaunchInputs inputs;
  inputs.program = launch::Program::rl;
  inputs.document = &document;
  inputs.config_path = "/weka/runs/out/primebeaker_resume/configs/new.toml"; // need not exist
  inputs.cwd = "/weka";
  inputs.launch_id = "attempt1";
  return inputs;
}

class RecordingFiles final : public fs::FileSystem {
public:
  std::string read_file(const std::filesystem::path &) override { return {}; }
  void write_file_atomic(const std::filesystem::path &path, std::string_view content) override {
    writes.emplace_back(path.string(), std::string(content));
  }
  bool exists(const std::filesystem::path &) override { return false; }
  bool create_exclusive(const std::filesystem::path &path, std::string_view content) override {
    exclusive.emplace_back(path.string(), std::string(content));
    return true;
  }
  bool is_directory(const std::filesystem::path &) override { return true; }
  std::vector<std::string> list_directory(const std::filesystem::path &) override { return {}; }
  void remove(const std::filesystem::path &path) override { removed.push_back(path.string()); }
  void create_directories(const std::filesystem::path &) override {}
  void rename(const std::filesystem::path &from, const std::filesystem::path &to) override {
    renamed.push_back(from.string() + " -> " + to.string());
  }
  std::vector<std::string> renamed;
  std::vector<std::pair<std::string, std::string>> writes;
  std::vector<std::pair<std::string, std::string>> exclusive; // claims: the index, the owner
  std::vector<std::string> removed;
};

class RecordingRunner final : public proc::Runner {
public:
  proc::Result run(const proc::Command &command) override {
    calls.push_back(command.argv);
    proc::Result result;
    result.exit_code = 0;
    if (command.argv.size() > 2 && command.argv[1] == "secret") {
      result.out = secrets;
      return result;
    }
    const int created = static_cast<int>(std::count_if(
        calls.begin(), calls.end(), [](const proc::Argv &a) { return a[1] == "experiment"; }));
    result.out =
        created == 1 ? "Experiment 01NEW submitted.\n" : "Experiment 01CONTROL submitted.\n";
    return result;
  }
  std::vector<proc::Argv> calls;
  std::string secrets = R"([{"name": "BEAKER_TOKEN"}, {"name": "HF_TOKEN"}])";
};

// Records each stage and what had already happened when it was asked for.
class RecordingStager final : public staging::Stager {
public:
  RecordingStager(const RecordingFiles &files, const RecordingRunner &runner)
      : m_files(files), m_runner(runner) {}
  staging::Staged stage(const std::filesystem::path &directory) override {
    stages.push_back({directory, m_files.writes.size() + m_runner.calls.size()});
    return {directory, directory / "primebeaker", staging::Outcome::created};
  }
  staging::Staged stage_tool(const std::filesystem::path &directory,
                             const staging::Tool &tool) override {
    tools.push_back({directory, tool.local, tool.sha256});
    return {directory, directory / tool.name, staging::Outcome::created};
  }
  struct Tool {
    std::filesystem::path directory, local;
    std::string sha256;
  };
  std::vector<Tool> tools;
  struct Stage {
    std::filesystem::path directory;
    size_t effects_before = 0;
  };
  std::vector<Stage> stages;

private:
  const RecordingFiles &m_files;
  const RecordingRunner &m_runner;
};

const staging::Identity k_identity{"9.8.7", "0123456789abcdef0123456789abcdef01234567"};

TEST(PlanApi, ResumeStyleOverridesAndExtraEnv) {
  const auto document = toml::Document::parse(k_multinode_rl, "/weka/runs/new.toml");
  LaunchOptions options;
  options.registry = "redis://r:1";
  options.scratch_dir = "/weka/scratch";
  options.image = "beaker://01IMAGE";
  options.prime_rl = "v0.8.0"; // an image the catalog does not know says its Prime-RL
  options.wandb_run_id = "shared";
  options.wandb_secret = ""; // the source had none
  options.description = "PrimeBeaker whole-topology resume of 01SRC from common checkpoint step 20";
  options.env = {"PRIMEBEAKER_RESUME_PARENT_EXPERIMENT_ID=01SRC", "PRIMEBEAKER_RESUME_STEP=20"};
  options.secrets = {"BEAKER_TOKEN=training-token"};
  options.recover = "terminal"; // the relaunch alone; the controller has its own test below
  auto inputs = inputs_for(document);
  inputs.experiment_name = "source-run-resume-step20";
  inputs.stage_identity = &k_identity;
  const auto plan = launch::make_plan(options, inputs);
  EXPECT_EQ(plan.experiment_name, "source-run-resume-step20");
  EXPECT_EQ(plan.spec_path,
            "/weka/scratch/primebeaker/beaker_experiments/"
            "source-run-resume-step20-attempt1.json");
  const auto &task = plan.spec["tasks"][0];
  EXPECT_EQ(
      task["command"],
      OrderedJson::array(
          {"/weka/scratch/primebeaker/bin/9.8.7-0123456789abcdef/primebeaker", "node", "rl"}));
  EXPECT_EQ(plan.stage_dir, "/weka/scratch/primebeaker/bin/9.8.7-0123456789abcdef");
  std::map<std::string, std::string> values;
  std::map<std::string, std::string> secrets;
  for (const auto &e : task["envVars"]) {
    if (e.contains("secret")) {
      secrets[e["name"]] = e["secret"];
    } else {
      values[e["name"]] = e["value"];
    }
  }
  EXPECT_EQ(values["CONFIG_PATH"], "/weka/runs/out/primebeaker_resume/configs/new.toml");
  EXPECT_EQ(values["LAUNCH_ID"], "attempt1");
  EXPECT_EQ(values["RENDEZVOUS_DIR"],
            "/weka/scratch/primebeaker/rendezvous/source-run-resume-step20-attempt1");
  EXPECT_EQ(values["PRIMEBEAKER_RESUME_STEP"], "20");
  EXPECT_EQ(values["WANDB_SHARED_RUN_ID"], "shared");
  EXPECT_EQ(secrets,
            (std::map<std::string, std::string>{{"BEAKER_TOKEN", "training-token"},
                                                {"HF_TOKEN", "HF_TOKEN"}}));
  EXPECT_EQ(plan.spec["description"], options.description);
  EXPECT_EQ(plan.wandb_run["name"], "source-run-resume-step20");
  EXPECT_EQ(plan.preview_json()["launch_id"], "attempt1");

  RecordingFiles files;
  RecordingRunner runner;
  beaker::Client client(runner, "beaker");
  RecordingStager stager(files, runner);
  launch::LaunchEffects effects{files, client, stager};
  EXPECT_EQ(launch::execute_preview(plan, effects), plan.preview_json());
  EXPECT_TRUE(files.writes.empty());
  EXPECT_TRUE(runner.calls.empty());
  EXPECT_TRUE(stager.stages.empty()) << "preview staged";
  const auto receipt = launch::execute_submit(plan, effects);
  ASSERT_EQ(stager.stages.size(), 1u);
  EXPECT_EQ(stager.stages[0].directory, plan.stage_dir);
  EXPECT_EQ(stager.stages[0].effects_before, 0u) << "staged after writing the spec or submitting";
  EXPECT_EQ(receipt["staged_program"], plan.staged_program.string());
  // The spec, then this user's launch index entry completed with the experiment's id.
  ASSERT_EQ(files.writes.size(), 2u);
  EXPECT_EQ(files.writes[0].first, plan.spec_path.string());
  EXPECT_EQ(files.writes[0].second, plan.spec_text);
  EXPECT_EQ(files.writes[1].first, plan.ownership.index_path.string());
  EXPECT_EQ(OrderedJson::parse(files.writes[1].second)["experiment_id"], "01NEW");
  // The directory claimed through the same effects before beaker heard of the run: the index
  // entry, then the owner file on the mount (docs/recovery.md "One run per output dir").
  ASSERT_EQ(files.exclusive.size(), 2u);
  EXPECT_EQ(files.exclusive[0].first, plan.ownership.index_path.string());
  EXPECT_EQ(files.exclusive[1].first, plan.ownership.owner_path.string());
  EXPECT_EQ(OrderedJson::parse(files.exclusive[1].second)["run_id"], "shared");
  EXPECT_TRUE(files.removed.empty());
  ASSERT_EQ(runner.calls.size(), 1u);
  EXPECT_EQ(runner.calls[0], plan.submit_command);
  EXPECT_EQ(receipt["stdout"], "Experiment 01NEW submitted.\n");
  EXPECT_EQ(beaker::parse_created_experiment_id(receipt["stdout"].get<std::string>()), "01NEW");
}

TEST(PlanApi, AMultiNodeRunGetsARecoveryControllerStagedCheckedAndSubmittedAfterIt) {
  const auto document = toml::Document::parse(k_multinode_rl, "/weka/runs/new.toml");
  LaunchOptions options;
  options.registry = "redis://r:1";
  options.image = "beaker://01IMAGE";
  options.prime_rl = "v0.8.0";
  options.budget = "ai2/oe-adapt";
  launch::apply_setting(options, "controller-cluster", {"ai2/cpu-only"});
  auto inputs = inputs_for(document);
  inputs.stage_identity = &k_identity;
  inputs.beaker_cli = "/usr/local/bin/beaker";
  inputs.beaker_cli_sha256 = std::string(64, 'b');
  const auto plan = launch::make_plan(options, inputs);
  ASSERT_TRUE(plan.controller.has_value());
  EXPECT_EQ(plan.recover_mode, "controller");
  const auto &controller = *plan.controller;
  EXPECT_EQ(controller.experiment_name, plan.experiment_name + "-recovery");
  EXPECT_EQ(controller.beaker_stage, "/weka/primebeaker/tools/beaker-bbbbbbbbbbbbbbbb");
  // The run names its controller (stop finds it) and how it is recovered.
  std::map<std::string, std::string> run_env;
  for (const auto &e : plan.spec["tasks"][0]["envVars"]) {
    if (e.contains("value")) {
      run_env[e["name"]] = e["value"];
    }
  }
  EXPECT_EQ(run_env["PRIMEBEAKER_RECOVER"], "controller");
  EXPECT_EQ(run_env["PRIMEBEAKER_CONTROLLER_NAME"], controller.experiment_name);
  // One CPU, a small image, its own preemption resumed, the token from a secret, the mount.
  const auto expected = OrderedJson::parse(R"({
    "version": "v2",
    "description": "PrimeBeaker recovery controller of )" +
                                           plan.experiment_name + R"(",
    "tasks": [{
      "name": "recovery-controller",
      "image": {"docker": "alpine:3.20"},
      "command": ["/weka/primebeaker/bin/9.8.7-0123456789abcdef/primebeaker", "follow",
                  "<training experiment id>", "--controller", "--poll-interval", "30",
                  "--recover-backoff", "10"],
      "envVars": [
        {"name": "BEAKER_DEFAULT_WORKSPACE", "value": "ai2/oe-agents"},
        {"name": "HOME", "value": "/weka"},
        {"name": "PRIMEBEAKER_BEAKER",
         "value": "/weka/primebeaker/tools/beaker-bbbbbbbbbbbbbbbb/beaker"},
        {"name": "BEAKER_TOKEN", "secret": "BEAKER_TOKEN"}
      ],
      "datasets": [{"mountPath": "/weka", "source": {"weka": "oe-adapt-default"}}],
      "result": {"path": "/tmp/beaker-result"},
      "resources": {"gpuCount": 0, "cpuCount": 1.0, "memory": "2GiB"},
      "context": {"priority": "normal", "minRuntime": "0h", "autoResume": true},
      "constraints": {"cluster": ["ai2/cpu-only"]}
    }],
    "budget": "ai2/oe-adapt"
  })");
  EXPECT_EQ(controller.spec, expected) << controller.spec.dump(2);
  EXPECT_EQ(plan.preview_json()["controller"]["spec"], controller.spec); // preview shows it

  RecordingFiles files;
  RecordingRunner runner;
  beaker::Client client(runner, "beaker");
  RecordingStager stager(files, runner);
  launch::LaunchEffects effects{files, client, stager};
  const auto receipt = launch::execute_submit(plan, effects);
  // The secret checked first, both programs staged before anything is written or created.
  ASSERT_EQ(runner.calls.size(), 3u);
  EXPECT_EQ(runner.calls[0][1], "secret");
  ASSERT_EQ(stager.tools.size(), 1u);
  EXPECT_EQ(stager.tools[0].local, "/usr/local/bin/beaker");
  EXPECT_EQ(runner.calls[1], plan.submit_command);
  EXPECT_EQ(runner.calls[2][4], controller.experiment_name);
  ASSERT_EQ(files.writes.size(), 3u); // the run's spec, its index entry, the controller's spec
  EXPECT_EQ(files.writes[2].first, controller.spec_path.string());
  const auto submitted = OrderedJson::parse(files.writes[2].second);
  EXPECT_EQ(submitted["tasks"][0]["command"][2], "01NEW"); // the run it follows
  EXPECT_EQ(receipt["recovery"]["mode"], "controller");
  EXPECT_EQ(receipt["recovery"]["follow_recover"], false);
  EXPECT_EQ(receipt["recovery"]["controller"]["experiment_id"], "01CONTROL");
  EXPECT_FALSE(receipt["recovery"]["controller"].contains("spec"));

  // A workspace without the token secret: refused before anything is staged or created.
  RecordingFiles files2;
  RecordingRunner runner2;
  runner2.secrets = "[]";
  beaker::Client client2(runner2, "beaker");
  RecordingStager stager2(files2, runner2);
  launch::LaunchEffects effects2{files2, client2, stager2};
  try {
    launch::execute_submit(plan, effects2);
    ADD_FAILURE() << "submitted without the token secret";
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 3);
    EXPECT_NE(std::string(error.what())
                  .find("create it with `beaker secret write BEAKER_TOKEN --workspace "
                        "ai2/oe-agents`"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(runner2.calls.size(), 1u);
  EXPECT_TRUE(stager2.stages.empty());
  EXPECT_TRUE(files2.writes.empty());

  // --recover terminal / off: no controller; --no-stage falls back to terminal.
  for (const std::string mode : {"terminal", "off"}) {
    auto other = options;
    other.recover = mode;
    EXPECT_FALSE(launch::make_plan(other, inputs).controller) << mode;
    EXPECT_EQ(launch::make_plan(other, inputs).recover_mode, mode);
  }
  auto unstaged = options;
  launch::apply_setting(unstaged, "stage", {"false"});
  EXPECT_EQ(launch::make_plan(unstaged, inputs).recover_mode, "terminal");
  unstaged.recover = "controller";
  EXPECT_THROW(launch::make_plan(unstaged, inputs), Error);
}

TEST(PlanApi, NoStageRunsTheImagesOwnBinaryAndStagesNothing) {
  const auto document = toml::Document::parse(k_multinode_rl, "/weka/runs/new.toml");
  LaunchOptions options;
  options.registry = "redis://r:1";
  options.image = "beaker://01RUNTIME";
  options.prime_rl = "v0.7.1.dev83";
  launch::apply_setting(options, "stage", {"false"});
  auto inputs = inputs_for(document);
  inputs.stage_identity = &k_identity;
  const auto plan = launch::make_plan(options, inputs);
  EXPECT_EQ(plan.spec["tasks"][0]["command"], OrderedJson::array({"primebeaker", "node", "rl"}));
  EXPECT_TRUE(plan.stage_dir.empty());
  RecordingFiles files;
  RecordingRunner runner;
  beaker::Client client(runner, "beaker");
  RecordingStager stager(files, runner);
  launch::LaunchEffects effects{files, client, stager};
  const auto receipt = launch::execute_submit(plan, effects);
  EXPECT_TRUE(stager.stages.empty());
  EXPECT_TRUE(receipt["staged_program"].is_null());
}

TEST(PlanApi, ConfigPathIsReRootedAtASymlinkedMount) {
  const auto document = toml::Document::parse(k_multinode_rl, "/weka/runs/new.toml");
  LaunchOptions options;
  options.registry = "redis://r:1";
  auto inputs = inputs_for(document);
  inputs.config_path = "/weka/runs/new.toml";
  const auto symlinked_mount = [](const std::filesystem::path &p) {
    const std::string text = p.string();
    return text.rfind("/weka", 0) == 0 ? std::filesystem::path("/mnt/weka" + text.substr(5)) : p;
  };
  launch::resolve_launch_paths(options, inputs, symlinked_mount);
  const auto plan = launch::make_plan(options, inputs);
  for (const auto &e : plan.spec["tasks"][0]["envVars"]) {
    if (e["name"] == "CONFIG_PATH") {
      EXPECT_EQ(e["value"], "/weka/runs/new.toml");
    }
  }
  options.working_dir = "/mnt/other";
  launch::resolve_launch_paths(options, inputs, symlinked_mount);
  EXPECT_PB_ERROR(launch::make_plan(options, inputs), 2, "--working-dir");
}

TEST(PlanApi, PlansArePure) {
  const auto document = toml::Document::parse(k_multinode_rl, "/weka/runs/new.toml");
  LaunchOptions options;
  options.registry = "redis://r:1";
  const auto a = launch::make_plan(options, inputs_for(document));
  const auto b = launch::make_plan(options, inputs_for(document));
  EXPECT_EQ(a.spec_text, b.spec_text);
  EXPECT_EQ(a.preview_json(), b.preview_json());
}

TEST(PlanApi, SharedFlagParserForCliAndYaml) {
  LaunchOptions from_cli;
  CLI::App app;
  cli::Command command(app);
  launch::register_launch_flags(command, from_cli);
  app.parse("--toml x.toml --cluster a/b --cluster c/d --required-service terminal=2 "
            "--gateway_workers 3",
            false);
  LaunchOptions from_yaml;
  launch::apply_setting(from_yaml, "toml", {"x.toml"});
  launch::apply_setting(from_yaml, "cluster", {"a/b", "c/d"});
  launch::apply_setting(from_yaml, "required_service", {R"(["terminal=2"])"});
  launch::apply_setting(from_yaml, "gateway-workers", {"3"});
  EXPECT_EQ(from_cli.clusters, from_yaml.clusters);
  EXPECT_EQ(from_cli.required_services, from_yaml.required_services);
  EXPECT_EQ(from_cli.gateway_workers, 3);
  EXPECT_EQ(from_yaml.gateway_workers, 3);
  EXPECT_TRUE(from_cli.was_given("cluster"));
  EXPECT_FALSE(from_cli.was_given("image"));
  EXPECT_EQ(from_cli.given, from_yaml.given);
  EXPECT_THROW(launch::apply_setting(from_yaml, "colour", {"x"}), Error);
  try {
    launch::apply_setting(from_yaml, "min_runtime_hours", {"1.5"});
    FAIL();
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 2);
    EXPECT_STREQ(error.what(), "--min-runtime-hours expects a whole number, got '1.5'");
  }
}

TEST(PlanApi, OnlySomeFlagsForResumeOverrides) {
  LaunchOptions options;
  CLI::App app;
  cli::Command command(app);
  launch::register_launch_flags(command, options, {"image", "workspace", "cluster"}, false);
  EXPECT_NO_THROW(app.parse("--image beaker://x", false));
  EXPECT_EQ(options.image, "beaker://x");
  EXPECT_THROW(app.parse("--priority high", false), CLI::ParseError);
}

TEST(PlanApi, LaunchIdPinning) {
  EXPECT_EQ(launch::choose_launch_id({}, "random"), "random");
  EXPECT_EQ(launch::choose_launch_id({{"PRIMEBEAKER_LAUNCH_ID", "pinned-1"}}, "random"),
            "pinned-1");
  EXPECT_THROW(launch::choose_launch_id({{"PRIMEBEAKER_LAUNCH_ID", "../x"}}, "r"), Error);
  const auto id = launch::random_hex_id();
  EXPECT_EQ(id.size(), 32u);
  EXPECT_NE(id, launch::random_hex_id());
}

} // namespace
} // namespace pb::test
