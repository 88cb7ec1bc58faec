// SPDX-License-Identifier: MIT
#include "../checkpoints/checkpoint_tree.hpp"
#include "execute.hpp"
#include "plan.hpp"
#include "source.hpp"
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using namespace pb::resume;
using pb::OrderedJson;

TEST(ResumeName, SanitisedTruncatedAndSuffixed) {
  EXPECT_EQ(resume_experiment_name("parent", 20, "unitattempt"), "parent-resume-step20-unitatte");
  EXPECT_EQ(resume_experiment_name("--My run//x..", 7, "abc"), "My-run-x-resume-step7-abc");
  EXPECT_EQ(resume_experiment_name("!!!", 1, "0123456789"), "primebeaker-resume-step1-01234567");
  const std::string long_name =
      resume_experiment_name(std::string(200, 'a') + "-b", 123, "ffffffffffff");
  EXPECT_EQ(long_name.size(), 128U);
  EXPECT_EQ(long_name, std::string(104, 'a') + "-resume-step123-ffffffff");
  // Truncation never leaves a dash or dot before the suffix.
  const std::string cut = resume_experiment_name(std::string(105, 'a') + "-.x", 1, "abcdefgh");
  EXPECT_EQ(cut, std::string(105, 'a') + "-resume-step1-abcdefgh");
}

TEST(ResumeSource, ParsesTheReferenceEvidence) {
  // docs/resume.md test evidence.
  const auto payload = OrderedJson::parse(R"([{"id": "01PARENT", "name": "user/parent", "jobs": [
    {"id": "J0", "execution": {"spec": {"image": {"beaker": "img"},
      "context": {"priority": "urgent", "minRuntime": "4h"},
      "envVars": [{"name": "CONFIG_PATH", "value": "/weka/config.toml"},
                  {"name": "OUTPUT_DIR", "value": "/weka/out"},
                  {"name": "REGISTRY", "value": "redis://registry:6379"},
                  {"name": "REQUIRED_LITEREGISTRY_SERVICES", "value": "{\"terminal\":2}"},
                  {"name": "CUSTOM_SETTING", "value": "kept"},
                  {"name": "WANDB_API_KEY", "secret": "WANDB_SECRET"}]}}}]}])");
  const auto source = parse_source("01PARENT", payload, false);
  EXPECT_EQ(source.name, "parent");
  EXPECT_EQ(source.workspace, "ai2/oe-agents");
  EXPECT_EQ(source.image, "beaker://img");
  EXPECT_EQ(source.registry, "redis://registry:6379");
  EXPECT_EQ(source.required_services, (std::map<std::string, std::int64_t>{{"terminal", 2}}));
  EXPECT_EQ(source.min_runtime_hours, 4);
  EXPECT_EQ(source.priority, "urgent");
  EXPECT_EQ(source.env,
            (std::vector<std::pair<std::string, std::string>>{{"CUSTOM_SETTING", "kept"}}));
  EXPECT_EQ(source.wandb_secret, "WANDB_SECRET");
  EXPECT_EQ(source.clusters, std::vector<std::string>{"ai2/holmes"});
  EXPECT_EQ(source.mount_path, "/weka");
  EXPECT_EQ(source.job_ids, std::vector<std::string>{"J0"});
}

std::string error_of(const std::string &json) {
  return pb::test::thrown_error([&] { parse_source("01X", OrderedJson::parse(json), false); })
      .what();
}

TEST(ResumeSource, Errors) {
  EXPECT_EQ(error_of("[]"), "Beaker did not return experiment 01X");
  EXPECT_EQ(error_of("[1]"), "Beaker did not return experiment 01X");
  EXPECT_EQ(error_of(R"({"jobs": []})"), "experiment 01X has no jobs");
  EXPECT_EQ(
      error_of(
          R"({"jobs": [{"execution": {"spec": {"envVars": [{"name": "CONFIG_PATH", "value": "a"}]}}}]})"),
      "experiment 01X is not a PrimeBeaker/Prime-RL launch (no job sets CONFIG_PATH and "
      "OUTPUT_DIR)");
  const std::string base =
      R"({"jobs": [{"execution": {"spec": {IMAGE "envVars": [{"name": "CONFIG_PATH", "value": "a"},
                              {"name": "OUTPUT_DIR", "value": "b"} EXTRA]}}}]})";
  const auto with = [&](const std::string &image, const std::string &extra) {
    std::string text = base;
    text.replace(text.find("IMAGE"), 5, image);
    text.replace(text.find("EXTRA"), 5, extra);
    return text;
  };
  EXPECT_EQ(error_of(with("", "")), "experiment 01X has no image");
  EXPECT_EQ(error_of(with(R"("image": {"beaker": ""},)", "")), "experiment 01X has no image");
  const std::string image = R"("image": {"beaker": "i"},)";
  EXPECT_EQ(error_of(with(image, R"(, {"name": "GATEWAY_PORT", "value": "0"})")),
            "source experiment has invalid GATEWAY_PORT=0");
  EXPECT_EQ(error_of(with(image, R"(, {"name": "GATEWAY_WORKERS", "value": "many"})")),
            "source experiment has invalid GATEWAY_WORKERS=many");
  EXPECT_EQ(error_of(with(image, R"(, {"name": "REQUIRED_LITEREGISTRY_SERVICES", "value": "{"})")),
            "source experiment has invalid REQUIRED_LITEREGISTRY_SERVICES: expected a JSON object "
            "of service name to count, got {");
  EXPECT_EQ(
      error_of(with(image, R"(, {"name": "REQUIRED_LITEREGISTRY_SERVICES", "value": "[1]"})")),
      "source experiment has invalid REQUIRED_LITEREGISTRY_SERVICES: expected a JSON object of "
      "service name to count, got [1]");
  // Older launchers wrote string counts; a count that is no number is refused, not a crash.
  EXPECT_EQ(
      error_of(
          with(image, R"(, {"name": "REQUIRED_LITEREGISTRY_SERVICES", "value": "{\"j\":\"x\"}"})")),
      "source experiment has invalid REQUIRED_LITEREGISTRY_SERVICES: 'j' needs a positive "
      "integer count (at most 1000000), got \"x\"");
  // 30m is not whole hours: 0, as the reference.
  const auto source = parse_source(
      "01X",
      OrderedJson::parse(
          with(R"("image": {"beaker": "beaker://i"}, "context": {"minRuntime": "30m"},)", "")),
      false);
  EXPECT_EQ(source.min_runtime_hours, 0);
  EXPECT_EQ(source.image, "beaker://i");
}

TEST(ResumeSource, RegeneratedAndManagedNamesAreNotCarried) {
  EXPECT_TRUE(is_regenerated_env_name("LAUNCH_ID"));
  EXPECT_TRUE(is_regenerated_env_name("DATADEV_X"));
  EXPECT_TRUE(is_regenerated_env_name("PRIMEBEAKER_RESUME_STEP"));
  EXPECT_FALSE(is_regenerated_env_name("CUSTOM"));
  const auto payload =
      OrderedJson::parse(R"({"jobs": [{"execution": {"spec": {"image": {"beaker": "i"}, "envVars": [
    {"name": "CONFIG_PATH", "value": "a"}, {"name": "OUTPUT_DIR", "value": "b"},
    {"name": "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", "value": "01SVC"}, {"name": "TOTAL_NODES", "value": "9"}]}}}]})");
  auto source = parse_source("01X", payload, false);
  EXPECT_TRUE(source.env.empty());
  EXPECT_EQ(source.not_inherited.size(), 1U);
  source = parse_source("01X", payload, true);
  EXPECT_EQ(source.env,
            (std::vector<std::pair<std::string, std::string>>{
                {"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", "01SVC"}}));
}

TEST(ResumeSource, V09RunDirectoryIsReadNotCarried) {
  // The launch names a v0.9 run directory (PRIME_RL_RUN_DIR); the relaunch pins it in the TOML
  // and its own launch writes every PRIME_RL_* name again.
  EXPECT_TRUE(is_regenerated_env_name("PRIME_RL_RUN_DIR"));
  EXPECT_TRUE(is_regenerated_env_name("PRIME_RL_GENERATION"));
  const auto payload =
      OrderedJson::parse(R"({"jobs": [{"execution": {"spec": {"image": {"beaker": "i"}, "envVars": [
    {"name": "CONFIG_PATH", "value": "a"}, {"name": "OUTPUT_DIR", "value": "b"},
    {"name": "PRIME_RL_GENERATION", "value": "v0.9"}, {"name": "PRIME_RL_RUN_DIR", "value": "exp-1"}]}}}]})");
  const auto source = parse_source("01X", payload, false);
  EXPECT_EQ(source.run_dir_name, "exp-1");
  EXPECT_TRUE(source.env.empty());
  EXPECT_TRUE(parse_source("01X",
                           OrderedJson::parse(R"({"jobs": [{"execution": {"spec": {"image":
    {"beaker": "i"}, "envVars": [{"name": "CONFIG_PATH", "value": "a"},
    {"name": "OUTPUT_DIR", "value": "b"}]}}}]})"),
                           false)
                  .run_dir_name.empty());
}

TEST(ResumeJobs, FinishedOnlyWithARealExitedOrFinalizedTimestamp) {
  const auto payload = OrderedJson::parse(R"([
    {"id": "A", "name": "a", "status": {"exited": "2026-08-11T02:07:30Z"}},
    {"id": "B", "name": "b", "status": {"finalized": "2026-08-11T02:07:30Z"}},
    {"id": "C", "name": "c", "status": {"started": "2026-08-11T02:07:30Z", "exited": "0001-01-01T00:00:00Z"}},
    {"id": "D", "name": "d"},
    7
  ])");
  const auto jobs = parse_jobs(payload, {"A", "B", "C", "D", "E"});
  ASSERT_EQ(jobs.size(), 5U);
  EXPECT_FALSE(jobs[0].active);
  EXPECT_FALSE(jobs[1].active);
  EXPECT_TRUE(jobs[2].active);
  EXPECT_TRUE(jobs[3].active);
  EXPECT_EQ(jobs[4].id, "E"); // asked for but not answered: unknown, so active
  EXPECT_TRUE(jobs[4].active);
  EXPECT_FALSE(
      parse_jobs(OrderedJson::parse(R"({"id": "A", "status": {"exited": "x"}})"), {"A"})[0].active);
}

TEST(ResumeReverify, AChangedCheckpointIsRefused) {
  pb::test::TempDir tmp;
  pb::test::CheckpointTree tree(tmp / "out");
  tree.complete_step("step_20", 2);
  ResumePlan plan;
  plan.checkpoints.output_dir = tmp / "out";
  plan.checkpoints.trainer_root = tmp / "out/checkpoints";
  plan.checkpoints.orchestrator_root = tmp / "out/run_default/checkpoints";
  plan.checkpoints.expected_ranks = 2;
  plan.step_name = "step_20";
  const auto listing = pb::checkpoints::list_steps(plan.checkpoints);
  plan.record = pb::checkpoints::make_record(listing.steps.at(0), plan.checkpoints);
  EXPECT_NO_THROW(reverify_checkpoint(plan));
  tree.write_shard("step_20", 1, "a different size");
  EXPECT_STREQ(pb::test::thrown_error([&] { reverify_checkpoint(plan); }).what(),
               "selected checkpoint changed while preparing the resume attempt: step 20 "
               "files or sizes differ from the plan");
  fs::remove(tree.progress("step_20"));
  const auto incomplete = pb::test::thrown_error([&] { reverify_checkpoint(plan); });
  EXPECT_STREQ(incomplete.what(),
               "selected checkpoint changed while preparing the resume attempt: step 20 "
               "is no longer complete");
  EXPECT_EQ(incomplete.context(),
            std::vector<std::string>{
                "missing: run_default/checkpoints/step_20/orchestrator/progress.pt"});
}

TEST(ResumeManifest, TimestampFormat) {
  const auto when =
      std::chrono::system_clock::time_point(std::chrono::microseconds(1786000000123456LL));
  EXPECT_EQ(manifest_timestamp(when), "2026-08-06T07:06:40.123456+00:00");
}

} // namespace
