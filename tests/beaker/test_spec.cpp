// SPDX-License-Identifier: MIT
#include <primebeaker/beaker/spec.hpp>

#include <gtest/gtest.h>

namespace pb::beaker {
namespace {

Experiment valid() {
  Experiment experiment;
  experiment.description = "d";
  Task task;
  task.name = "rl";
  task.image = Image::from_reference("beaker://01ID");
  task.command = {"primebeaker", "node", "rl"};
  task.replication = Replication{};
  task.env_vars = {EnvVar::plain("A", "1"), EnvVar::from_secret("B", "s")};
  task.datasets = {{"/weka", "oe-adapt-default"}};
  task.gpu_count = 8;
  task.clusters = {"ai2/jupiter"};
  experiment.tasks.push_back(task);
  return experiment;
}

std::vector<std::string> keys(const OrderedJson &object) {
  std::vector<std::string> out;
  for (const auto &[key, value] : object.items()) {
    out.push_back(key);
  }
  return out;
}

TEST(Spec, KeyOrderOfTheReference) {
  auto experiment = valid();
  auto json = to_json(experiment);
  EXPECT_EQ(keys(json), (std::vector<std::string>{"version", "description", "tasks"}));
  EXPECT_EQ(keys(json["tasks"][0]),
            (std::vector<std::string>{"name",
                                      "image",
                                      "command",
                                      "replicas",
                                      "leaderSelection",
                                      "synchronizedStartTimeout",
                                      "hostNetworking",
                                      "propagateFailure",
                                      "propagatePreemption",
                                      "envVars",
                                      "datasets",
                                      "result",
                                      "resources",
                                      "context",
                                      "constraints"}));
  EXPECT_EQ(json["tasks"][0]["envVars"][1], OrderedJson({{"name", "B"}, {"secret", "s"}}));
  EXPECT_EQ(json["tasks"][0]["datasets"][0],
            OrderedJson({{"mountPath", "/weka"}, {"source", {{"weka", "oe-adapt-default"}}}}));
  EXPECT_EQ(keys(json["tasks"][0]["context"]),
            (std::vector<std::string>{"priority", "minRuntime", "autoResume"}));
  experiment.budget = "ai2/oe-adapt";
  experiment.tasks[0].replication.reset();
  json = to_json(experiment);
  EXPECT_EQ(keys(json), (std::vector<std::string>{"version", "description", "tasks", "budget"}));
  EXPECT_EQ(keys(json["tasks"][0]),
            (std::vector<std::string>{"name",
                                      "image",
                                      "command",
                                      "envVars",
                                      "datasets",
                                      "result",
                                      "resources",
                                      "context",
                                      "constraints"}));
}

TEST(Spec, ImageReference) {
  EXPECT_EQ(Image::from_reference("beaker://user/name").kind, Image::Kind::beaker);
  EXPECT_EQ(Image::from_reference("beaker://user/name").ref, "user/name");
  EXPECT_EQ(Image::from_reference("ghcr.io/x:1").kind, Image::Kind::docker);
  EXPECT_EQ(to_json(valid())["tasks"][0]["image"], OrderedJson({{"beaker", "01ID"}}));
}

TEST(Spec, ValidSpecHasNoProblems) {
  EXPECT_TRUE(problems(valid()).empty());
}

TEST(Spec, ProblemsBeakerWouldReject) {
  const auto check = [](auto mutate, const std::string &expected) {
    auto experiment = valid();
    mutate(experiment);
    const auto found = problems(experiment);
    ASSERT_EQ(found.size(), 1u) << expected;
    EXPECT_NE(found[0].find(expected), std::string::npos) << found[0];
  };
  check([](Experiment &e) { e.tasks[0].env_vars.push_back(EnvVar::plain("A", "2")); },
        "environment variable A is set twice");
  check(
      [](Experiment &e) {
        e.tasks[0].datasets.push_back({"/weka/sub", "b"});
      },
      "mount paths /weka and /weka/sub overlap");
  check([](Experiment &e) { e.tasks[0].datasets.push_back({"/WEKA", "b"}); }, "overlap");
  check([](Experiment &e) { e.tasks[0].datasets[0].mount_path = "weka"; }, "must be absolute");
  check([](Experiment &e) { e.tasks[0].result_path = "out"; },
        "result path 'out' must be absolute");
  check([](Experiment &e) { e.tasks[0].context.priority = "asap"; }, "unknown priority 'asap'");
  check([](Experiment &e) { e.tasks[0].clusters = {}; }, "at least one non-empty Beaker cluster");
  check([](Experiment &e) { e.tasks[0].replication->replicas = 0; }, "replicas must be >= 1");
  check([](Experiment &e) { e.tasks[0].replication->synchronized_start_timeout = "49h"; },
        "synchronizedStartTimeout '49h'");
  check([](Experiment &e) { e.tasks[0].replication->synchronized_start_timeout = "soon"; },
        "synchronizedStartTimeout 'soon'");
  check([](Experiment &e) { e.tasks[0].command.clear(); }, "the command is empty");
  check([](Experiment &e) { e.tasks[0].image.ref.clear(); }, "the image reference is empty");
  check([](Experiment &e) { e.tasks[0].gpu_count = -1; }, "gpuCount must be >= 0");
  check([](Experiment &e) { e.tasks.push_back(e.tasks[0]); }, "task names must be unique");
  check([](Experiment &e) { e.tasks[0].replication->host_networking = false; },
        "leaderSelection needs hostNetworking");
  // Preemptible jobs may omit clusters.
  auto experiment = valid();
  experiment.tasks[0].clusters.clear();
  experiment.tasks[0].context.priority = "preemptible";
  EXPECT_TRUE(problems(experiment).empty());
}

TEST(Spec, WorkspaceNames) {
  EXPECT_TRUE(is_workspace_name("ai2/oe-agents"));
  EXPECT_FALSE(is_workspace_name("oe-agents"));
  EXPECT_FALSE(is_workspace_name("/x"));
  EXPECT_FALSE(is_workspace_name("a/b/c"));
  EXPECT_FALSE(is_workspace_name("a/"));
}

} // namespace
} // namespace pb::beaker
