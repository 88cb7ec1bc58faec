// SPDX-License-Identifier: MIT
// `primebeaker rl resume` end to end: the real binary, the table-driven fake `beaker` on PATH
// answering in the JSON shapes of docs/resume.md, checkpoint trees built on disk.
#include "../checkpoints/checkpoint_tree.hpp"
#include "test_support.hpp"

#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using pb::test::CheckpointTree;
using pb::test::FakeAnswer;
using pb::test::FakeBeaker;
using pb::test::FakeBin;
using pb::test::TempDir;

std::string toml_text(const fs::path &out) {
  return pb::test::multi_node_rl_toml(out);
}

const std::vector<std::string> k_image_get = {"image", "get", "jdoe/prime-rl-v0.8.0"};

// stderr from the error line on (warnings before it are checked separately).
std::string error_text(const std::string &err) {
  const auto at = err.find("primebeaker: error: ");
  return at == std::string::npos ? err : err.substr(at);
}

class ResumeE2E : public ::testing::Test {
protected:
  void SetUp() override {
    weka = tmp.path() / "weka";
    pb::test::write_file(toml_path(), toml_text(out()));
    tree.complete_step("step_10", 4);
    tree.complete_step("step_20", 4);
    // The newest step is half-written: the orchestrator never saved it.
    for (int rank = 0; rank < 4; ++rank) {
      tree.write_shard("step_30", rank);
    }
    tree.write_metadata("step_30");
    pb::test::write_file(out() / "run_default/broadcasts/step_29/STABLE", "");
    write_experiment("01PARENT", true, true);
    answers[{"secret", "list"}] = {
        R"([{"name": "WANDB_SECRET"}, {"name": "SOURCE_SECRET"}, {"name": "BEAKER_TOKEN"}, {"name": "OTHER"}])"};
    answers[k_image_get] = {
        R"([{"id": "01IMAGE", "fullName": "jdoe/prime-rl-v0.8.0", "workspaceRef": {"fullName": "ai2/oe-agents"},
                     "committed": "2026-08-01T10:00:00Z"}])"};
  }

  fs::path out() const { return weka / "out"; }
  fs::path toml_path() const { return weka / "configs/rl.toml"; }

  // The fake beaker's table for the next run, from what the test has set up so far; `experiment
  // create` keeps the spec and answers 01CHILD<n> for the n-th creation (or fails when asked).
  void answer_beaker() {
    beaker.clear();
    for (const auto &[prefix, answer] : answers) {
      beaker.on_sequence(prefix, {answer});
    }
    const auto n = std::to_string(beaker.calls_matching({"experiment", "create"}).size());
    // As the real CLI answers `experiment create --format json`: an array with the experiment.
    FakeAnswer created{R"([{"id": "01CHILD)" + n + R"(", "name": "child"}])" + "\n"};
    if (create_fails) {
      created = {"", 3, "Error: budget ai2/none has no quota left\n"};
    }
    created.keep_last_argument = true;
    beaker.on_sequence({"experiment", "create"}, {created});
    beaker.on({"experiment", "get"}, "", 1, "experiment not found\n");
  }

  // The source experiment in the shape of docs/resume.md; job 1 finished or not.
  void write_experiment(const std::string &id,
                        bool replica0_done,
                        bool replica1_done,
                        const std::string &name = "parent") {
    const std::string done =
        R"("created": "2026-08-10T09:14:04.001Z", "started": "2026-08-10T09:31:45.220Z",
                                "exited": "2026-08-11T02:07:30.004Z", "finalized": "2026-08-11T02:08:02.913Z", "exitCode": 0)";
    const std::string running =
        R"("created": "2026-08-10T09:14:04.001Z", "started": "2026-08-10T09:31:45.220Z",
                                   "exited": "0001-01-01T00:00:00Z")";
    const std::string w = weka.string();
    const std::string job0 = id == "01PARENT" ? "01JOB0" : id + "J0";
    const std::string job1 = id == "01PARENT" ? "01JOB1" : id + "J1";
    const std::string experiment = R"([{
      "id": ")" + id + R"(", "name": "jdoe/)" +
                                   name + R"(", "fullName": "jdoe/)" + name + R"(",
      "description": "primebeaker multi-node RL parent", "budget": "ai2/oe-adapt",
      "author": {"id": "01HAUTHOR", "name": "jdoe"},
      "workspaceRef": {"id": "01HWS", "name": "oe-agents", "fullName": "ai2/oe-agents"},
      "jobs": [
        {"id": ")" + job0 + R"(", "kind": "execution", "name": "prime-rl-multinode-replica-0",
         "status": {)" + (replica0_done ? done : running) +
                                   R"(},
         "execution": {"task": "01TASK", "experiment": ")" +
                                   id + R"(", "replicaRank": 0,
           "spec": {
             "name": "prime-rl-multinode",
             "image": {"beaker": "jdoe/prime-rl-v0.8.0"},
             "command": ["primebeaker", "node", "rl"],
             "envVars": [
               {"name": "CONFIG_PATH", "value": ")" +
                                   toml_path().string() + R"("},
               {"name": "CUSTOM_SETTING", "value": "kept"},
               {"name": "DATADEV_TOKEN_HINT", "value": "regenerated"},
               {"name": "GATEWAY_PORT", "value": "1313"},
               {"name": "GATEWAY_WORKERS", "value": "4"},
               {"name": "HOME", "value": ")" +
                                   w + R"("},
               {"name": "LAUNCH_ID", "value": "oldlaunch"},
               {"name": "OUTPUT_DIR", "value": ")" +
                                   out().string() + R"("},
               {"name": "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID", "value": "01SERVICE"},
               {"name": "PRIMEBEAKER_RESUME_STEP", "value": "5"},
               {"name": "REGISTRY", "value": "redis://registry:6379"},
               {"name": "RENDEZVOUS_TIMEOUT_SECONDS", "value": "900"},
               {"name": "REQUIRED_LITEREGISTRY_SERVICES", "value": "{\"terminal\":2}"},
               {"name": "SCRATCH", "value": ")" +
                                   w + R"(/scratch"},
               {"name": "WANDB_SHARED_RUN_ID", "value": "wandb-run"},
               {"name": "WORKING_DIR", "value": ")" +
                                   w + R"("},
               {"name": "BEAKER_TOKEN", "secret": "BEAKER_TOKEN"},
               {"name": "CUSTOM_SECRET", "secret": "SOURCE_SECRET"},
               {"name": "WANDB_API_KEY", "secret": "WANDB_SECRET"}
             ],
             "datasets": [{"mountPath": ")" +
                                   w + R"(", "source": {"weka": "oe-adapt-default"}}],
             "result": {"path": "/tmp/beaker-result"},
             "resources": {"gpuCount": 8},
             "context": {"priority": "urgent", "minRuntime": "4h"},
             "constraints": {"cluster": ["ai2/jupiter"]},
             "hostNetworking": true, "replicas": 2, "leaderSelection": true,
             "propagateFailure": true, "propagatePreemption": true,
             "synchronizedStartTimeout": 14400000000000}},
         "requests": {"gpuCount": 8}, "preemptible": false},
        {"id": ")" + job1 + R"(", "kind": "execution", "name": "prime-rl-multinode-replica-1",
         "status": {)" + (replica1_done ? done : running) +
                                   R"(},
         "execution": {"replicaRank": 1,
           "spec": {"name": "prime-rl-multinode", "image": {"beaker": "jdoe/prime-rl-v0.8.0"}, "replicas": 2}}}
      ]}])";
    answers[{"experiment", "get", id}] = {experiment};
    // `beaker job get` answers with the same job objects.
    const auto parsed = ordered_json::parse(experiment);
    answers[{"job", "get", job0}] = {parsed[0]["jobs"].dump()};
  }

  pb::test::RunResult resume(std::vector<std::string> extra,
                             const std::string &attempt = "unitattempt") {
    std::vector<std::string> args = {
        "rl", "resume", "--from-experiment", source_id, "--attempt-id", attempt};
    args.insert(args.end(), extra.begin(), extra.end());
    // The relaunch itself; the recovery controller a resume also submits by default has its
    // own tests (ResumeController).
    if (std::find(extra.begin(), extra.end(), "--recover") == extra.end() && with_terminal) {
      args.insert(args.end(), {"--recover", "terminal"});
    }
    answer_beaker();
    pb::test::RunOptions options;
    options.path_prepend = {fake.bin()};
    return pb::test::run_primebeaker(args, options);
  }

  std::vector<std::string> beaker_calls() const {
    std::vector<std::string> calls;
    for (const auto &call : beaker.calls()) {
      std::string line;
      for (std::size_t i = 1; i < call.argv.size(); ++i) {
        line += (i > 1 ? " " : "") + call.argv[i];
      }
      calls.push_back(line);
    }
    return calls;
  }

  std::string expected_resume_toml() const {
    std::string text = toml_text(out());
    text.replace(text.find("clean_output_dir = true"), 23, "clean_output_dir = false");
    text.replace(text.find("resume_step = -1"), 16, "resume_step = 20");
    return text;
  }

  TempDir tmp;
  fs::path weka;
  FakeBin fake{tmp.path() / "fake"};
  FakeBeaker beaker{fake};
  std::map<std::vector<std::string>, FakeAnswer> answers; // what beaker answers, by call
  bool create_fails = false;
  bool with_terminal = true;
  std::string source_id = "01PARENT"; // what resume() resumes
  CheckpointTree tree{tmp.path() / "weka/out"};
};

TEST_F(ResumeE2E, DryRunPrintsThePlanWritesNothingAndOnlyReads) {
  const std::string before = pb::test::tree_digest(weka);
  const auto result = resume({"--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(pb::test::tree_digest(weka), before);
  EXPECT_EQ(beaker_calls(),
            (std::vector<std::string>{
                "experiment get 01PARENT --format json",
                "job get 01JOB0 01JOB1 --format json",
                "secret list --workspace ai2/oe-agents --format json",
                "image get jdoe/prime-rl-v0.8.0 --format json",
            }));
  const auto json = ordered_json::parse(result.out);
  const auto &plan = json["resume"];
  EXPECT_EQ(plan["source_experiment_id"], "01PARENT");
  EXPECT_EQ(plan["source_experiment_name"], "parent");
  EXPECT_EQ(plan["experiment_name"], "parent-resume-step20-unitatte");
  EXPECT_EQ(plan["attempt_id"], "unitattempt");
  EXPECT_EQ(plan["checkpoint"]["step"], 20);
  EXPECT_EQ(plan["checkpoint"]["trainer_shards"].size(), 4U);
  EXPECT_EQ(plan["checkpoint"]["trainer_shards"][3]["path"], tree.shard("step_20", 3).string());
  EXPECT_EQ(plan["checkpoint"]["trainer_shards"][3]["size"], 7);
  EXPECT_EQ(plan["checkpoint"]["orchestrator_progress"], tree.progress("step_20").string());
  EXPECT_EQ(plan["source_config_path"], toml_path().string());
  EXPECT_EQ(plan["generated_config_path"],
            (out() / "primebeaker_resume/configs/parent-resume-step20-unitatte-unitattempt.toml")
                .string());
  EXPECT_EQ(plan["manifest_path"],
            (out() / "primebeaker_resume/attempts/unitattempt.json").string());
  EXPECT_EQ(plan["not_inherited"],
            ordered_json::parse(R"({"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID": "01SERVICE"})"));
  EXPECT_EQ(json["generated_config"], expected_resume_toml());
  EXPECT_EQ(json["refusals"], ordered_json::array());
  EXPECT_EQ(
      plan["launch"]["submit_command"],
      ordered_json::parse(
          R"(["beaker", "experiment", "create", "--name", "parent-resume-step20-unitatte",
                                    "--workspace", "ai2/oe-agents", "--format", "json", ")" +
          (weka /
           "scratch/primebeaker/beaker_experiments/parent-resume-step20-unitatte-unitattempt.json")
              .string() +
          R"("])"));
}

TEST_F(ResumeE2E, DryRunReportsWhatARealResumeWouldRefuse) {
  write_experiment("01PARENT", true, false);
  const auto result = resume({"--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = ordered_json::parse(result.out);
  ASSERT_EQ(json["refusals"].size(), 1U);
  EXPECT_NE(json["refusals"][0].get<std::string>().find(
                "Active jobs: prime-rl-multinode-replica-1 (01JOB1)"),
            std::string::npos);
}

TEST_F(ResumeE2E, ActiveSourceIsRefusedAndNothingChanges) {
  write_experiment("01PARENT", false, true);
  const std::string before = pb::test::tree_digest(weka);
  const auto result = resume({});
  EXPECT_EQ(result.exit_code, 75); // passes once Beaker finalizes the jobs: a follower retries
  EXPECT_EQ(
      error_text(result.err)
          .rfind("primebeaker: error: refusing to resume while the source topology is active; two "
                 "launches must not mutate one output directory. Active jobs: "
                 "prime-rl-multinode-replica-0 (01JOB0)\n",
                 0),
      0U)
      << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(pb::test::tree_digest(weka), before);
  for (const auto &call : beaker_calls()) {
    EXPECT_EQ(call.find("experiment create"), std::string::npos) << call;
  }
}

TEST_F(ResumeE2E, MissingSecretsAndImageAreAllListed) {
  answers[{"secret", "list"}] = {R"([{"name": "BEAKER_TOKEN"}])"};
  answers[k_image_get] = {"", 1, "image jdoe/prime-rl-v0.8.0 not found\n"};
  const std::string before = pb::test::tree_digest(weka);
  const auto result = resume({});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(
      error_text(result.err),
      "primebeaker: error: Beaker workspace preflight failed for ai2/oe-agents: missing secrets: "
      "SOURCE_SECRET, WANDB_SECRET; missing images: jdoe/prime-rl-v0.8.0\n");
  EXPECT_EQ(pb::test::tree_digest(weka), before);
}

TEST_F(ResumeE2E, ForeignAndUncommittedImagesAreRefused) {
  answers[k_image_get] = {
      R"({"id": "01IMAGE", "workspaceRef": {"fullName": "ai2/elsewhere"}, "committed": "2026-08-01T10:00:00Z"})"};
  auto result = resume({});
  EXPECT_EQ(
      error_text(result.err),
      "primebeaker: error: Beaker workspace preflight failed for ai2/oe-agents: images outside "
      "ai2/oe-agents: jdoe/prime-rl-v0.8.0 (owned by ai2/elsewhere)\n");
  answers[k_image_get] = {
      R"({"id": "01IMAGE", "workspaceRef": {"fullName": "ai2/oe-agents"}, "committed": "0001-01-01T00:00:00Z"})"};
  result = resume({});
  EXPECT_EQ(error_text(result.err),
            "primebeaker: error: Beaker workspace preflight failed for ai2/oe-agents: uncommitted "
            "images: jdoe/prime-rl-v0.8.0\n");
}

TEST_F(ResumeE2E, SubmitsTheSpecWritesTheTomlAndTheManifest) {
  const auto checkpoints_before = pb::test::tree_digest(out() / "checkpoints");
  const auto result = resume({});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = ordered_json::parse(result.out);
  EXPECT_EQ(json["child_experiment_id"], "01CHILD0");
  EXPECT_EQ(json["stdout"], "[{\"id\": \"01CHILD0\", \"name\": \"child\"}]\n");
  const auto &plan = json["resume"];

  // The beaker calls, in order: read, check, check, check, create.
  const auto calls = beaker_calls();
  ASSERT_EQ(calls.size(), 5U);
  const std::string spec_path =
      (weka /
       "scratch/primebeaker/beaker_experiments/parent-resume-step20-unitatte-unitattempt.json")
          .string();
  EXPECT_EQ(calls[4],
            "experiment create --name parent-resume-step20-unitatte --workspace ai2/oe-agents "
            "--format json " +
                spec_path);

  // The submitted spec, exactly.
  const std::string generated =
      (out() / "primebeaker_resume/configs/parent-resume-step20-unitatte-unitattempt.toml")
          .string();
  const std::string w = weka.string();
  // The resumed topology runs this build, staged under the scratch dir (docs/staging.md).
  const auto stage = pb::test::run_primebeaker(
      {"stage", "--dry-run", "--scratch-dir", (weka / "scratch").string()});
  ASSERT_EQ(stage.exit_code, 0) << stage.err;
  const std::string staged = nlohmann::json::parse(stage.out).at("program");
  EXPECT_TRUE(std::filesystem::exists(staged)) << "resume did not stage " << staged;
  const auto expected_spec = ordered_json::parse(
      R"({
    "version": "v2",
    "description": "PrimeBeaker whole-topology resume of 01PARENT from common checkpoint step 20",
    "tasks": [{
      "name": "prime-rl-multinode",
      "image": {"beaker": "jdoe/prime-rl-v0.8.0"},
      "command": [")" +
      staged + R"(", "node", "rl"],
      "replicas": 2,
      "leaderSelection": true,
      "synchronizedStartTimeout": "4h",
      "hostNetworking": true,
      "propagateFailure": true,
      "propagatePreemption": true,
      "envVars": [
        {"name": "CONFIG_PATH", "value": ")" +
      generated + R"("},
        {"name": "CUSTOM_SETTING", "value": "kept"},
        {"name": "GATEWAY_PORT", "value": "1313"},
        {"name": "GATEWAY_WORKERS", "value": "4"},
        {"name": "GPUS_PER_NODE", "value": "8"},
        {"name": "HOME", "value": ")" +
      w + R"("},
        {"name": "LAUNCH_ID", "value": "unitattempt"},
        {"name": "LOCAL_SEARCH_MODEL_PATHS_JSON", "value": "[]"},
        {"name": "MIXED_INFER_GPU_COUNT", "value": "4"},
        {"name": "OUTPUT_DIR", "value": ")" +
      out().string() + R"("},
        {"name": "PRIMEBEAKER_MAX_RECOVERIES", "value": "10"},
        {"name": "PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS", "value": "0"},
        {"name": "PRIMEBEAKER_RECOVER", "value": "terminal"},
        {"name": "PRIMEBEAKER_RESUME_PARENT_EXPERIMENT_ID", "value": "01PARENT"},
        {"name": "PRIMEBEAKER_RESUME_STEP", "value": "20"},
        {"name": "PRIME_RL_VERSION", "value": "v0.7.1.dev83"},
        {"name": "REGISTRY", "value": "redis://registry:6379"},
        {"name": "RENDEZVOUS_DIR", "value": ")" +
      w + R"(/scratch/primebeaker/rendezvous/parent-resume-step20-unitatte-unitattempt"},
        {"name": "RENDEZVOUS_TIMEOUT_SECONDS", "value": "900"},
        {"name": "REQUIRED_LITEREGISTRY_SERVICES", "value": "{\"terminal\":2}"},
        {"name": "SCRATCH", "value": ")" +
      w + R"(/scratch"},
        {"name": "TOTAL_INFER_RANKS", "value": "6"},
        {"name": "TOTAL_NODES", "value": "2"},
        {"name": "TRAINER_GPU_COUNT", "value": "4"},
        {"name": "WANDB_RESUME", "value": "allow"},
        {"name": "WANDB_RUN_ID", "value": "wandb-run"},
        {"name": "WANDB_SHARED_RUN_ID", "value": "wandb-run"},
        {"name": "WORKING_DIR", "value": ")" +
      w + R"("},
        {"name": "BEAKER_TOKEN", "secret": "BEAKER_TOKEN"},
        {"name": "CUSTOM_SECRET", "secret": "SOURCE_SECRET"},
        {"name": "WANDB_API_KEY", "secret": "WANDB_SECRET"}
      ],
      "datasets": [{"mountPath": ")" +
      w + R"(", "source": {"weka": "oe-adapt-default"}}],
      "result": {"path": "/tmp/beaker-result"},
      "resources": {"gpuCount": 8},
      "context": {"priority": "urgent", "minRuntime": "4h", "autoResume": false},
      "constraints": {"cluster": ["ai2/jupiter"]}
    }]
  })");
  ASSERT_EQ(beaker.kept_files().size(), 1U);
  const auto submitted = ordered_json::parse(beaker.kept_files().front());
  EXPECT_EQ(submitted, expected_spec) << submitted.dump(2);
  EXPECT_EQ(plan["launch"]["spec"], expected_spec);

  // The resume TOML: three... two keys changed, comments and everything else byte for byte.
  EXPECT_EQ(pb::test::read_file(generated), expected_resume_toml());
  EXPECT_EQ(pb::test::read_file(toml_path()), toml_text(out())); // the source TOML is untouched

  // The manifest: write-once, the plan plus status, child id and the broadcast archive.
  const auto manifest = ordered_json::parse(
      pb::test::read_file(out() / "primebeaker_resume/attempts/unitattempt.json"));
  EXPECT_TRUE(std::regex_match(manifest["created_at"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)")))
      << manifest["created_at"];
  ordered_json expected_manifest = ordered_json::object();
  expected_manifest["schema_version"] = 1;
  expected_manifest["created_at"] = manifest["created_at"];
  expected_manifest["status"] = "submitted";
  for (const auto &[key, value] : plan.items()) {
    expected_manifest[key] = value;
  }
  expected_manifest["child_experiment_id"] = "01CHILD0";
  const fs::path archive = out() / "primebeaker_resume/broadcast_archives/unitattempt";
  expected_manifest["broadcast_archive"] = archive.string();
  EXPECT_EQ(manifest, expected_manifest);
  EXPECT_EQ(manifest.dump(), expected_manifest.dump()); // key order too

  // Broadcast handshakes moved aside, not deleted; checkpoints untouched.
  EXPECT_FALSE(fs::exists(out() / "run_default/broadcasts"));
  EXPECT_TRUE(fs::exists(archive / "step_29/STABLE"));
  EXPECT_EQ(pb::test::tree_digest(out() / "checkpoints"), checkpoints_before);

  // The same attempt id again: nothing is overwritten.
  const auto again = resume({});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("refusing to overwrite resume artifact: " + generated),
            std::string::npos)
      << again.err;
}

TEST_F(ResumeE2E, BeakerFailingAfterTheTomlLeavesAManifestThenASecondResumeWorks) {
  create_fails = true;
  const auto failed = resume({}, "firstattempt");
  EXPECT_EQ(failed.exit_code, 4);
  EXPECT_NE(failed.err.find("budget ai2/none has no quota left"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("attempt manifest: " +
                            (out() / "primebeaker_resume/attempts/firstattempt.json").string()),
            std::string::npos)
      << failed.err;
  const fs::path first_toml =
      out() / "primebeaker_resume/configs/parent-resume-step20-firstatt-firstattempt.toml";
  EXPECT_EQ(pb::test::read_file(first_toml), expected_resume_toml());
  const fs::path first_manifest = out() / "primebeaker_resume/attempts/firstattempt.json";
  const auto manifest = ordered_json::parse(pb::test::read_file(first_manifest));
  EXPECT_EQ(manifest["status"], "submission_failed");
  EXPECT_FALSE(manifest.contains("child_experiment_id"));
  EXPECT_EQ(manifest["broadcast_archive"],
            (out() / "primebeaker_resume/broadcast_archives/firstattempt").string());
  EXPECT_NE(manifest["error"].get<std::string>().find("budget ai2/none has no quota left"),
            std::string::npos);
  EXPECT_EQ(manifest["generated_config_path"], first_toml.string());
  const std::string first_manifest_text = pb::test::read_file(first_manifest);

  create_fails = false;
  const auto second = resume({}, "secondattempt");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto json = ordered_json::parse(second.out);
  EXPECT_EQ(json["child_experiment_id"], "01CHILD1");
  EXPECT_EQ(json["resume"]["checkpoint"]["step"], 20);
  const auto second_manifest = ordered_json::parse(
      pb::test::read_file(out() / "primebeaker_resume/attempts/secondattempt.json"));
  EXPECT_EQ(second_manifest["status"], "submitted");
  EXPECT_FALSE(second_manifest.contains("broadcast_archive")); // already moved by the first attempt
  EXPECT_EQ(pb::test::read_file(first_manifest), first_manifest_text);
}

TEST_F(ResumeE2E, AResumeWhileAnEarlierResumeIsRunningIsRefused) {
  ASSERT_EQ(resume({}, "firstattempt").exit_code, 0);
  // Its child 01CHILD0 now runs in the same output directory.
  write_experiment("01CHILD0", true, false);
  const auto refused = resume({}, "secondattempt");
  EXPECT_EQ(refused.exit_code, 75); // the earlier child is active: passes later
  EXPECT_NE(
      refused.err.find("refusing to resume while 01CHILD0 (submitted by an earlier resume, "
                       "attempts/firstattempt.json) is active in the same output directory. Active "
                       "jobs: prime-rl-multinode-replica-1 (01CHILD0J1)"),
      std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(out() / "primebeaker_resume/attempts/secondattempt.json"));
  // Once it has finished, resuming again is fine.
  write_experiment("01CHILD0", true, true);
  EXPECT_EQ(resume({}, "thirdattempt").exit_code, 0);
}

// The receipt `rl submit` printed, kept as a file, names the run to resume, as it does for
// status, follow, logs and stop (docs/runs.md): beaker is asked for the experiment it holds.
// `rl resume` plans through the launch pipeline `rl preview` uses: of the same TOML, placed as
// its source was, the same topology (replicas, GPUs, what each runs, the replica contract's
// layout: a mixed trainer node and an inference node).
TEST_F(ResumeE2E, ADryRunOfAReceiptRendersTheTopologyRlPreviewRendersOfTheSameToml) {
  const fs::path receipt = tmp.path() / "receipt.json";
  pb::test::write_file(receipt, R"({"experiment_name": "parent", "experiment_id": "01PARENT"})");
  source_id = receipt.string();
  const auto resumed = resume({"--dry-run"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto resumed_task = ordered_json::parse(resumed.out)["resume"]["launch"]["spec"]["tasks"][0];

  pb::test::RunOptions options;
  options.path_prepend = {fake.bin()};
  options.env["PRIMEBEAKER_LAUNCH_ID"] = "unitattempt";
  const auto previewed = pb::test::run_primebeaker(
      {"rl", "preview", "--toml", toml_path().string(), "--image",
       "beaker://jdoe/prime-rl-v0.8.0", "--prime-rl", "v0.8.0", "--mount-path", weka.string(),
       "--working-dir",
       weka.string(), "--scratch-dir", (weka / "scratch").string(), "--home-dir", weka.string(),
       "--registry", "redis://registry:6379", "--recover", "terminal", "--cluster", "ai2/jupiter"},
      options);
  ASSERT_EQ(previewed.exit_code, 0) << previewed.err;
  const auto preview_task = ordered_json::parse(previewed.out)["spec"]["tasks"][0];

  EXPECT_EQ(resumed_task["replicas"], 2);
  EXPECT_EQ(resumed_task["replicas"], preview_task["replicas"]);
  EXPECT_EQ(resumed_task["resources"], preview_task["resources"]);
  EXPECT_EQ(resumed_task["command"], preview_task["command"]);
  EXPECT_EQ(resumed_task["image"], preview_task["image"]);
  const auto env_of = [](const ordered_json &task) {
    std::map<std::string, std::string> env;
    for (const auto &var : task["envVars"]) {
      if (var.contains("value")) {
        env[var["name"].get<std::string>()] = var["value"].get<std::string>();
      }
    }
    return env;
  };
  const auto resumed_env = env_of(resumed_task);
  const auto preview_env = env_of(preview_task);
  for (const char *name : {"TOTAL_NODES",
                           "GPUS_PER_NODE",
                           "TOTAL_INFER_RANKS",
                           "TRAINER_GPU_COUNT",
                           "MIXED_INFER_GPU_COUNT",
                           "OUTPUT_DIR",
                           "REGISTRY"}) {
    ASSERT_TRUE(preview_env.count(name)) << name;
    EXPECT_EQ(resumed_env.count(name) ? resumed_env.at(name) : "(unset)", preview_env.at(name))
        << name;
  }
}

TEST_F(ResumeE2E, AReceiptFileWrittenBySubmitResumesItsExperiment) {
  const fs::path receipt = tmp.path() / "receipt.json";
  pb::test::write_file(receipt, R"({
  "experiment_name": "parent",
  "launch_id": "oldlaunch",
  "experiment_id": "01PARENT",
  "experiment_url": "https://beaker.org/ex/01PARENT",
  "spec_path": "/weka/primebeaker/beaker_experiments/parent-oldlaunch.json",
  "stdout": "[{\"id\": \"01PARENT\", \"name\": \"parent\"}]\n",
  "wandb_run": null,
  "staged_program": null
}
)");
  source_id = receipt.string();
  const auto result = resume({"--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(ordered_json::parse(result.out)["resume"]["source_experiment_id"], "01PARENT");
  ASSERT_FALSE(beaker_calls().empty());
  EXPECT_EQ(beaker_calls().front(), "experiment get 01PARENT --format json");
  // A receipt path that is not there is named; beaker is not asked about a file name.
  source_id = (tmp.path() / "no-such-receipt.json").string();
  const auto missing = resume({"--dry-run"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(error_text(missing.err),
            "primebeaker: error: " + source_id + ": no such receipt file\n");
  EXPECT_EQ(beaker_calls().size(), 4u); // the dry run's calls only
}

// A chain of resumes: each new experiment is named from the run's base name, never from the
// previous attempt's full name, so suffixes do not stack (a recovery's "-recover<k>-<hex8>" and a
// resume's "-resume-step<N>-<attempt>" are both dropped).
TEST_F(ResumeE2E, AResumeOfAResumedOrRecoveredRunDoesNotStackSuffixes) {
  const auto first = resume({}, "743478d1-recover1");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto first_name = ordered_json::parse(first.out)["resume"]["experiment_name"];
  EXPECT_EQ(first_name, "parent-resume-step20-743478d1");
  // Its child, named so, has finished; resuming it again starts from "parent".
  write_experiment("01CHILD0", true, true, first_name);
  source_id = "01CHILD0";
  const auto second = resume({}, "0badc0de");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(ordered_json::parse(second.out)["resume"]["experiment_name"],
            "parent-resume-step20-0badc0de");
  // A run a recovery named, itself from a resumed run, resumed by hand.
  write_experiment("01CHILD1", true, true, "parent-resume-step20-0badc0de-recover2-5eed5eed");
  source_id = "01CHILD1";
  const auto third = resume({"--dry-run"}, "c0ffee00");
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(ordered_json::parse(third.out)["resume"]["experiment_name"],
            "parent-resume-step20-c0ffee00");
}

TEST_F(ResumeE2E, RequestedIncompleteStepFailsListingTheCompleteOnes) {
  const auto result = resume({"--resume-step", "30", "--dry-run"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(error_text(result.err),
            "primebeaker: error: step 30 is not a complete common checkpoint; available: 10, 20\n"
            "  missing: run_default/checkpoints/step_30/orchestrator/progress.pt\n");
  const auto ten = resume({"--resume-step", "10", "--dry-run"});
  ASSERT_EQ(ten.exit_code, 0) << ten.err;
  EXPECT_EQ(ordered_json::parse(ten.out)["resume"]["experiment_name"],
            "parent-resume-step10-unitatte");
}

TEST_F(ResumeE2E, ManagedServiceIdIsInheritedOnlyWhenAsked) {
  const auto result = resume({"--dry-run", "--inherit-managed-service"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto env =
      ordered_json::parse(result.out)["resume"]["launch"]["spec"]["tasks"][0]["envVars"];
  EXPECT_NE(env.dump().find(
                R"({"name":"PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID","value":"01SERVICE"})"),
            std::string::npos);
  const auto plain = resume({"--dry-run"});
  EXPECT_EQ(ordered_json::parse(plain.out)["resume"]["launch"]["spec"].dump().find("01SERVICE"),
            std::string::npos);
  EXPECT_NE(plain.err.find("not inheriting PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID=01SERVICE"),
            std::string::npos);
}

TEST_F(ResumeE2E, OverridesReplaceSourceValues) {
  const auto result = resume({"--dry-run",
                              "--workspace",
                              "ai2/other",
                              "--cluster",
                              "ai2/a",
                              "--cluster",
                              "ai2/b",
                              "--priority",
                              "normal",
                              "--min-runtime-hours",
                              "0",
                              "--budget",
                              "ai2/budget",
                              "--registry",
                              "redis://new:6379",
                              "--experiment-name",
                              "My Run!!"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto plan = ordered_json::parse(result.out)["resume"];
  EXPECT_EQ(plan["experiment_name"], "My-Run-resume-step20-unitatte");
  const auto &spec = plan["launch"]["spec"];
  EXPECT_EQ(spec["budget"], "ai2/budget");
  EXPECT_EQ(spec["tasks"][0]["constraints"]["cluster"],
            ordered_json::parse(R"(["ai2/a", "ai2/b"])"));
  EXPECT_EQ(spec["tasks"][0]["context"]["priority"], "normal");
  EXPECT_EQ(spec["tasks"][0]["context"]["minRuntime"], "0h");
  EXPECT_NE(spec.dump().find(R"({"name":"REGISTRY","value":"redis://new:6379"})"),
            std::string::npos);
  EXPECT_EQ(plan["launch"]["submit_command"][6], "ai2/other");
}

// --set on a resume: applied to the resume TOML (which the receipt names), refused for a key
// the resume writes itself, and a schema problem reported at its argument.
TEST_F(ResumeE2E, SetOverridesTheResumeTomlButNotTheKeysTheResumeWrites) {
  const auto result = resume({"--dry-run", "--set", "trainer.optim.lr=2e-6"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = ordered_json::parse(result.out);
  EXPECT_NE(json["generated_config"].get<std::string>().find("lr = 2e-6"), std::string::npos)
      << json["generated_config"];
  EXPECT_EQ(json["resume"]["launch"]["overrides"]["set"]["trainer.optim.lr"], "2e-6");
  const auto owned = resume({"--dry-run", "--set", "ckpt.resume_step=5"});
  EXPECT_EQ(owned.exit_code, 2);
  EXPECT_NE(owned.err.find("--set ckpt.resume_step=5: rl resume writes ckpt.resume_step itself"),
            std::string::npos)
      << owned.err;
  const auto unknown = resume({"--dry-run", "--set", "trainer.optim.warp_speed=9"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("--set trainer.optim.warp_speed=9:"), std::string::npos)
      << unknown.err;
}

TEST_F(ResumeE2E, SourceAndConfigErrors) {
  // Not a PrimeBeaker launch.
  answers[{"experiment", "get", "01PLAIN"}] = {
      R"([{"id": "01PLAIN", "jobs": [{"id": "J", "execution": {"spec": {"envVars": []}}}]}])"};
  answers[{"experiment", "get", "01MISSING"}] = {"", 1, "experiment 01MISSING not found\n"};
  answer_beaker();
  pb::test::RunOptions options;
  options.path_prepend = {fake.bin()};
  auto result = pb::test::run_primebeaker({"rl", "resume", "01PLAIN", "--dry-run"}, options);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("experiment 01PLAIN is not a PrimeBeaker/Prime-RL launch"),
            std::string::npos)
      << result.err;
  // beaker failing names the command.
  result = pb::test::run_primebeaker({"rl", "resume", "01MISSING", "--dry-run"}, options);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("experiment 01MISSING not found"), std::string::npos) << result.err;
  // A --config whose output_dir is elsewhere.
  pb::test::write_file(weka / "other.toml", toml_text(weka / "elsewhere"));
  result = resume({"--dry-run", "--config", (weka / "other.toml").string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("does not match source " + out().string()), std::string::npos)
      << result.err;
  // Step 20 at max_steps.
  std::string capped = toml_text(out());
  capped.replace(capped.find("max_steps = 100"), 15, "max_steps = 20");
  pb::test::write_file(weka / "capped.toml", capped);
  result = resume({"--dry-run", "--config", (weka / "capped.toml").string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("checkpoint step 20 already reached max_steps=20"), std::string::npos)
      << result.err;
  // A bad attempt id cannot escape the artifact directory.
  result = resume({"--dry-run"}, "../x");
  EXPECT_EQ(result.exit_code, 2);
}

} // namespace

namespace {

// A Prime-RL v0.9 source: the same experiment, its TOML and checkpoints in the v0.9 layout. The
// TOML names no run, so the launch named the run directory after the experiment ("parent").
class ResumeV09E2E : public ResumeE2E {
protected:
  void SetUp() override {
    ResumeE2E::SetUp();
    fs::remove_all(out());
    pb::test::write_file(toml_path(), pb::test::multi_node_rl_v0_9_toml(out(), ""));
    v0_9_tree.complete_step("step_10", 4);
    v0_9_tree.complete_step("step_20", 4);
    v0_9_tree.write_shard("step_30", 0);
    v0_9_tree.write_metadata("step_30");
    pb::test::write_file(run_dir() / "broadcasts/step_29/STABLE", "");
    pb::test::write_file(run_dir() / "rollouts/step_25/rank_0.bin", "r");
  }

  fs::path run_dir() const { return out() / "parent"; }

  // The plain values of the one spec `beaker experiment create` was given.
  std::map<std::string, std::string> submitted_env() {
    std::map<std::string, std::string> env;
    const auto spec = ordered_json::parse(beaker.kept_files().front());
    for (const auto &var : spec["tasks"][0]["envVars"]) {
      if (var.contains("value")) {
        env[var["name"]] = var["value"];
      }
    }
    return env;
  }

  CheckpointTree v0_9_tree{tmp.path() / "weka/out", "parent"};
};

} // namespace

// DEPENDS ON the v0.9 multi-node launch (src/launch): rl resume relaunches through it.
TEST_F(ResumeV09E2E, DryRunPlansTheV09RunDirectoryWithAnExplicitStep) {
  const std::string before = pb::test::tree_digest(weka);
  const auto result = resume({"--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(pb::test::tree_digest(weka), before);
  const auto json = ordered_json::parse(result.out);
  const auto &plan = json["resume"];
  EXPECT_EQ(plan["checkpoint"]["step"], 20);
  EXPECT_EQ(plan["checkpoint"]["trainer_dir"],
            (run_dir() / "checkpoints/step_20/trainer").string());
  EXPECT_EQ(plan["checkpoint"]["orchestrator_progress"],
            (run_dir() / "checkpoints/step_20/orchestrator/progress.pt").string());
  // The resume TOML: [resume] step = 20 (never "latest"), clean = false, and run.name pinned
  // to the source's run directory (the child's launch would name a new one); comments kept.
  const std::string generated = json["generated_config"];
  const auto document = pb::toml::Document::parse(generated, "resume.toml");
  EXPECT_EQ(document.root().find_path({"resume", "step"})->integer(), 20);
  EXPECT_EQ(document.root().find("clean")->boolean(), false);
  EXPECT_EQ(*document.root().find_path({"run", "name"})->string(), "parent");
  EXPECT_NE(generated.find("[resume] # latest\nstep = 20\n"), std::string::npos) << generated;
  EXPECT_NE(generated.find("clean = false # wipe on a fresh start\n"), std::string::npos);
  EXPECT_NE(generated.find("interval = 10 # every ten steps\n"), std::string::npos);
}

// DEPENDS ON the v0.9 multi-node launch (src/launch): rl resume relaunches through it.
TEST_F(ResumeV09E2E, SubmitsAndMovesTheV09BroadcastsAside) {
  const auto checkpoints_before = pb::test::tree_digest(run_dir() / "checkpoints");
  const auto result = resume({});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const fs::path archive = out() / "primebeaker_resume/broadcast_archives/unitattempt";
  EXPECT_FALSE(fs::exists(run_dir() / "broadcasts"));
  EXPECT_TRUE(fs::exists(archive / "step_29/STABLE"));
  EXPECT_EQ(pb::test::tree_digest(run_dir() / "checkpoints"), checkpoints_before);
  const auto written = pb::toml::Document::load(
      out() / "primebeaker_resume/configs/parent-resume-step20-unitatte-unitattempt.toml");
  EXPECT_EQ(written.root().find_path({"resume", "step"})->integer(), 20);
  EXPECT_EQ(pb::test::read_file(toml_path()), pb::test::multi_node_rl_v0_9_toml(out(), ""));
  // The child runs in the same run directory, whatever its own experiment is called.
  ASSERT_EQ(beaker.kept_files().size(), 1U);
  auto env = submitted_env();
  EXPECT_EQ(env["PRIME_RL_RUN_DIR"], "parent");
  EXPECT_EQ(env["PRIME_RL_GENERATION"], "v0.9");
  EXPECT_EQ(env["OUTPUT_DIR"], out().string());
}

// Issue 37: a v0.9 relaunch wires Prime-RL's own placement, so a source that recorded no
// LiteRegistry (PRIME_RL_GENERATION=v0.9, no REGISTRY) resumes; the source's PRIME_RL_VERSION is
// the relaunch's.
TEST_F(ResumeV09E2E, ASourceWithoutARegistryResumesOnItsRecordedPrimeRl) {
  auto &source = answers[{"experiment", "get", "01PARENT"}].out;
  const std::string registry = R"({"name": "REGISTRY", "value": "redis://registry:6379"},)";
  ASSERT_NE(source.find(registry), std::string::npos);
  source.replace(source.find(registry),
                 registry.size(),
                 R"({"name": "PRIME_RL_GENERATION", "value": "v0.9"},
               {"name": "PRIME_RL_VERSION", "value": "v0.8.1.dev67"},)");
  const auto result = resume({});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_EQ(beaker.kept_files().size(), 1U);
  auto env = submitted_env();
  EXPECT_EQ(env.count("REGISTRY"), 0u);
  EXPECT_EQ(env["PRIME_RL_VERSION"], "v0.8.1.dev67");
  EXPECT_EQ(env["PRIME_RL_GENERATION"], "v0.9");
}

// Independent of the launch: the checkpoint pick and its refusal read the v0.9 layout.
TEST_F(ResumeV09E2E, RequestedIncompleteStepNamesTheV09Paths) {
  const auto result = resume({"--resume-step", "30", "--dry-run"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("step 30 is not a complete common checkpoint; available: 10, 20"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("parent/checkpoints/step_30/orchestrator/progress.pt"),
            std::string::npos)
      << result.err;
}
