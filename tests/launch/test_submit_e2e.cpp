// SPDX-License-Identifier: MIT
// submit: the spec is written atomically, then `beaker experiment create` runs by argv; the
// receipt is printed only when beaker succeeded and carries the experiment's id and URL.
#include "launch_fixture.hpp"

#include <unistd.h>

#include <algorithm>
#include <regex>
#include <tuple>

using nlohmann::json;

namespace pb::test {
namespace {

class Submit : public LaunchFixture {};

// `beaker experiment get` of a single-node SFT experiment `id` whose one job exited 3.
json finished_experiment(const std::string &id) {
  const std::string zero = "0001-01-01T00:00:00Z";
  const json status = {{"created", "2026-08-10T10:00:00Z"},
                       {"scheduled", "2026-08-10T10:01:00Z"},
                       {"started", "2026-08-10T10:02:00Z"},
                       {"exited", "2026-08-10T10:09:00Z"},
                       {"failed", zero},
                       {"finalized", "2026-08-10T10:09:30Z"},
                       {"canceled", zero},
                       {"canceledCode", 0},
                       {"exitCode", 3}};
  const json job = {{"id", "01JOBFOLLOW"},
                    {"kind", "execution"},
                    {"name", "sft"},
                    {"node", "node-0"},
                    {"status", status},
                    {"execution",
                     {{"task", "01TASK"},
                      {"experiment", id},
                      {"spec",
                       {{"name", "primebeaker-example-sft"},
                        {"command", {"primebeaker", "node", "single", "sft"}}}}}}};
  const json experiment = json::array({{{"id", id},
                                        {"name", "primebeaker-example-sft"},
                                        {"fullName", "jdoe/primebeaker-example-sft"},
                                        {"author", {{"name", "jdoe"}}},
                                        {"created", "2026-08-10T10:00:00Z"},
                                        {"jobs", json::array({job})}}});
  return experiment;
}

TEST_F(Submit, SuccessWritesSpecRunsBeakerAndPrintsReceipt) {
  beaker_creates();
  // The recovery controller's token secret is checked before anything is submitted.
  m_beaker.on({"secret", "list"}, R"([{"name": "BEAKER_TOKEN"}])");
  const std::vector<std::string> args = {"--toml",
                                         "examples/multinode-rl/rl.toml",
                                         "--registry",
                                         "redis://r:1",
                                         "--workspace",
                                         "ai2/oe-agents-holmes"};
  std::vector<std::string> preview_args = {"rl", "preview"};
  preview_args.insert(preview_args.end(), args.begin(), args.end());
  const auto preview = run(preview_args);
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  std::vector<std::string> submit_args = {"rl", "submit"};
  submit_args.insert(submit_args.end(), args.begin(), args.end());
  const auto result = run(submit_args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::regex_match(result.err, staged_line("copied [0-9]+ MB in [0-9]+\\.[0-9] s")))
      << result.err;
  expect_golden("rl-multi-node-submit.json", normalized(result.out));
  const auto receipt = json::parse(result.out);
  const auto planned = json::parse(preview.out);
  EXPECT_EQ(receipt["spec_path"], planned["spec_path"]);
  EXPECT_EQ(receipt["experiment_id"], "01FAKEEXPERIMENT0000000000");
  EXPECT_EQ(receipt["experiment_url"], "https://beaker.org/ex/01FAKEEXPERIMENT0000000000");
  EXPECT_FALSE(receipt.contains("spec"));
  EXPECT_EQ(json::parse(read_file(receipt["spec_path"].get<std::string>())), planned["spec"]);
  const auto all_calls = m_beaker.calls();
  ASSERT_EQ(all_calls.size(), 3u);
  EXPECT_EQ(all_calls[0].argv[1], "secret");
  const std::vector<pb::test::FakeCall> calls(all_calls.begin() + 1, all_calls.end());
  std::vector<std::string> expected = planned["submit_command"];
  EXPECT_EQ(calls[0].argv, expected);
  // Then the controller, following the run just created, running the staged beaker CLI.
  const auto &controller = planned["controller"];
  EXPECT_EQ(calls[1].argv[4], controller["experiment_name"]);
  const auto controller_spec = json::parse(read_file(controller["spec_path"].get<std::string>()));
  EXPECT_EQ(controller_spec["tasks"][0]["command"][2], "01FAKEEXPERIMENT0000000000");
  std::string staged_beaker;
  for (const auto &var : controller_spec["tasks"][0]["envVars"]) {
    if (var["name"] == "PRIMEBEAKER_BEAKER") {
      staged_beaker = var["value"];
    }
  }
  EXPECT_EQ(read_file(staged_beaker), read_file(m_fakes.bin() / "beaker"));
  EXPECT_EQ(receipt["recovery"]["controller"]["experiment_id"], "01FAKEEXPERIMENT0000000000");
  EXPECT_EQ(calls[0].argv,
            (std::vector<std::string>{"beaker",
                                      "experiment",
                                      "create",
                                      "--name",
                                      "primebeaker-example-multinode-rl",
                                      "--workspace",
                                      "ai2/oe-agents-holmes",
                                      "--format",
                                      "json",
                                      planned["spec_path"]}));
  EXPECT_EQ(receipt["stdout"], k_created_stdout);
}

// Staging copies ~100 MB to the mount on a first submit: said in one line at the default
// verbosity, how much and how long; a later submit of the same build says it reused the stage.
// With --no-stage there is nothing to say.
TEST_F(Submit, StagingSaysOneLineWithoutVerbose) {
  beaker_creates();
  const auto first = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(std::regex_match(first.err, staged_line("copied [1-9][0-9]* MB in [0-9]+\\.[0-9] s")))
      << first.err;
  const auto again = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(std::regex_match(again.err, staged_line("reused"))) << again.err;
  // Another launch (a spec of its own: per-launch files are written once, docs/launch.md).
  // The same run (its W&B run id), which owns its output dir.
  const auto unstaged = run({"sft",
                             "submit",
                             "--toml",
                             "examples/sft/sft.toml",
                             "--no-stage",
                             "--wandb-run-id",
                             "0123456789abcdef0123456789abcdef"},
                            true,
                            {{"PRIMEBEAKER_LAUNCH_ID", "fedcba9876543210fedcba9876543210"}});
  ASSERT_EQ(unstaged.exit_code, 0) << unstaged.err;
  EXPECT_EQ(unstaged.err, "");
}

TEST_F(Submit, SingleNodeSftSubmit) {
  beaker_creates();
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_FALSE(receipt.contains("launch_id"));
  EXPECT_EQ(receipt["spec_path"],
            at("primebeaker/beaker_experiments/primebeaker-example-sft-0123456789abcdef0123456789abcdef.json"));
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);
}

// The recovery policy (docs/recovery.md): range-checked flags, in the spec where Beaker acts on
// it (single-node autoResume and retries), in every replica's env, and in the receipt.
TEST_F(Submit, RecoveryPolicyReachesTheSpecTheReplicasAndTheReceipt) {
  for (const auto &[flag, value, message] :
       {std::tuple{"--max-recoveries", "1001", "--max-recoveries must be in 0..1000, got 1001"},
        std::tuple{
            "--max-restarts-on-errors", "11", "--max-restarts-on-errors must be in 0..10, got 11"},
        std::tuple{"--max-recoveries", "-1", "--max-recoveries must be in 0..1000, got -1"}}) {
    const auto bad = run({"sft", "submit", "--toml", "examples/sft/sft.toml", flag, value});
    EXPECT_EQ(bad.exit_code, 2) << flag << value;
    EXPECT_EQ(bad.err, std::string("primebeaker: error: ") + message + "\n");
  }
  EXPECT_TRUE(m_beaker.calls_matching({"experiment", "create"}).empty());

  m_beaker.on({"experiment", "create"}, "Experiment 01RECOVERY0000000000000000 submitted.\n");
  const auto result = run({"sft",
                           "submit",
                           "--toml",
                           "examples/sft/sft.toml",
                           "--max-recoveries=3",
                           "--max_restarts_on_errors",
                           "2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_EQ(receipt["recovery"]["max_recoveries"], 3);
  EXPECT_EQ(receipt["recovery"]["max_restarts_on_errors"], 2);
  EXPECT_EQ(receipt["recovery"]["beaker"],
            json({{"auto_resume", true}, {"allowed_task_retries", 2}}));
  EXPECT_EQ(receipt["recovery"]["follow_recover"], false);
  const auto spec = json::parse(read_file(receipt["spec_path"].get<std::string>()));
  EXPECT_EQ(spec["retry"], json({{"allowedTaskRetries", 2}}));
  EXPECT_EQ(spec["tasks"][0]["context"]["autoResume"], true);
  std::map<std::string, std::string> env;
  for (const auto &var : spec["tasks"][0]["envVars"]) {
    if (var.contains("value")) {
      env[var["name"]] = var["value"];
    }
  }
  EXPECT_EQ(env.at("PRIMEBEAKER_MAX_RECOVERIES"), "3");
  EXPECT_EQ(env.at("PRIMEBEAKER_MAX_RESTARTS_ON_ERRORS"), "2");

  // 0 = off: Beaker does not resume the task after a preemption.
  const auto off = run({"sft",
                        "submit",
                        "--toml",
                        "examples/sft/sft.toml",
                        "--max-recoveries",
                        "0",
                        "--name",
                        "tiny-sft-off"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const auto off_spec =
      json::parse(read_file(json::parse(off.out)["spec_path"].get<std::string>()));
  EXPECT_EQ(off_spec["tasks"][0]["context"]["autoResume"], false);
  EXPECT_FALSE(off_spec.contains("retry"));
}

TEST_F(Submit, NameRenamesTheExperimentAndReceiptsCarryIdUrlAndSpecPath) {
  m_beaker.on({"experiment", "create"},
              "\x1b[32mExperiment 01NAMED000000000000000000 submitted.\x1b[0m See progress at "
              "https://beaker.example/ex/01NAMED000000000000000000\n");
  const auto result =
      run({"sft", "submit", "--toml", "examples/sft/sft.toml", "--name", "tiny-sft-retry2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = nlohmann::ordered_json::parse(result.out);
  EXPECT_EQ(receipt["experiment_name"], "tiny-sft-retry2");
  EXPECT_EQ(receipt["experiment_id"], "01NAMED000000000000000000");
  EXPECT_EQ(receipt["experiment_url"], "https://beaker.example/ex/01NAMED000000000000000000");
  EXPECT_EQ(receipt["spec_path"], at("primebeaker/beaker_experiments/tiny-sft-retry2-0123456789abcdef0123456789abcdef.json"));
  std::vector<std::string> keys;
  for (const auto &[key, value] : receipt.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys,
            (std::vector<std::string>{"experiment_name",
                                      "experiment_id",
                                      "experiment_url",
                                      "spec_path",
                                      "stdout",
                                      "wandb_run",
                                      "staged_program",
                                      "recovery"}));
  // Submit staged this build where the spec's command points.
  const std::string staged = receipt["staged_program"];
  EXPECT_EQ(staged.rfind(at("primebeaker/bin/"), 0), 0u) << staged;
  EXPECT_TRUE(std::filesystem::exists(staged)) << staged;
  const auto calls = m_beaker.calls_matching({"experiment", "create"});
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].argv[4], "tiny-sft-retry2");
  EXPECT_TRUE(std::filesystem::exists(receipt["spec_path"].get<std::string>()));
  // The W&B run keeps the TOML's name: --name only renames the Beaker experiment.
  EXPECT_EQ(receipt["wandb_run"]["name"], "tiny-sft-retry2");

  // Output beaker did not shape as expected: never a guess; an error naming what it printed and
  // the spec, no receipt (exit 4).
  FakeBin other(m_tmp.path() / "other");
  FakeBeaker odd(other);
  odd.on({"experiment", "create"}, "created\n");
  const auto unparsed = run({"sft", "submit", "--toml", "examples/sft/sft.toml"},
                            true,
                            {{"PRIMEBEAKER_BEAKER", (other.bin() / "beaker").string()}});
  EXPECT_EQ(unparsed.exit_code, 4) << unparsed.err;
  EXPECT_EQ(unparsed.out, "");
  EXPECT_NE(unparsed.err.find("named no experiment id; it printed: created"), std::string::npos)
      << unparsed.err;

  const auto bad = run({"sft", "submit", "--toml", "examples/sft/sft.toml", "--name", "a/b"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--name 'a/b' cannot be a Beaker experiment name"), std::string::npos)
      << bad.err;
}

TEST_F(Submit, ReceiptIsWhatTheRunsCommandsTakeAsRun) {
  beaker_creates();
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  write("receipt.json", result.out);
  m_beaker.on({"experiment", "get", "01FAKEEXPERIMENT0000000000"},
              finished_experiment("01FAKEEXPERIMENT0000000000").dump());
  const auto status = run({"status", "receipt.json", "--json"}, false);
  EXPECT_EQ(status.exit_code, 0) << status.err;
  const auto shown = json::parse(status.out);
  EXPECT_EQ(shown["experiment_id"], "01FAKEEXPERIMENT0000000000");
  EXPECT_EQ(shown["url"], "https://beaker.org/ex/01FAKEEXPERIMENT0000000000");
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "get", "01FAKEEXPERIMENT0000000000"}).size(),
            1u);
}

TEST_F(Submit, FollowStreamsTheRunToStderrAndExitsWithItsOutcome) {
  const json experiment = finished_experiment("01FOLLOW");
  m_beaker
      .on({"experiment", "create"},
          "Experiment 01FOLLOW submitted. See progress at https://beaker.org/ex/01FOLLOW\n")
      .on({"experiment", "get", "01FOLLOW"}, experiment.dump())
      .on({"job", "logs", "01JOBFOLLOW"}, "loss 0.5\nTraceback: out of memory\n");
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml", "--follow"});
  EXPECT_EQ(result.exit_code, 10) << result.err; // failed (docs/runs.md)
  EXPECT_EQ(json::parse(result.out)["experiment_name"], "primebeaker-example-sft");
  EXPECT_EQ(json::parse(result.out)["experiment_id"], "01FOLLOW");
  EXPECT_NE(result.err.find("Traceback: out of memory"), std::string::npos) << result.err;
  EXPECT_TRUE(m_beaker.calls_matching({"experiment", "stop"}).empty());
}

TEST_F(Submit, BeakerFailingExits4WithItsStderrAndNoReceipt) {
  m_beaker.on(
      {"experiment", "create"}, "some progress\n", 3, "Error: workspace ai2/oe-agents not found\n");
  const auto result = run({"rl", "submit", "--toml", "examples/rl/rl.toml"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("primebeaker: error: beaker could not create experiment "
                            "primebeaker-example-rl (exit code 3): Error: workspace "
                            "ai2/oe-agents not found"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(m_beaker.calls().size(), 1u);
  // The spec was written first (submit always writes it).
  EXPECT_TRUE(std::filesystem::exists(
      mount() / "primebeaker/beaker_experiments/primebeaker-example-rl-0123456789abcdef0123456789abcdef.json"));
}

// Beaker refuses a name its workspace already holds (a second submit of the same TOML): the
// error says so and names the flag that renames the run.
TEST_F(Submit, ANameAlreadyInUseGetsAHintToPassName) {
  for (const std::string said :
       {"Error: experiment name \"primebeaker-example-rl\" is already in use\n",
        "Error: Conflict: experiment \"jdoe/primebeaker-example-rl\" already exists\n"}) {
    m_beaker.clear();
    m_beaker.on({"experiment", "create"}, "", 1, said);
    const auto result = run({"rl", "submit", "--toml", "examples/rl/rl.toml"});
    EXPECT_EQ(result.exit_code, 5) << result.err; // the name is taken (docs/cli.md)
    EXPECT_EQ(result.out, "");
    EXPECT_NE(result.err.find("primebeaker: error: beaker could not create experiment "
                              "primebeaker-example-rl (exit code 1): " +
                              said.substr(0, said.size() - 1) +
                              "\n  an experiment named primebeaker-example-rl already exists in "
                              "workspace ai2/oe-agents: pass --name NEW to submit this run under "
                              "another name, or --if-exists adopt to take that one as this "
                              "submit's\n"),
              std::string::npos)
        << result.err;
  }
  // Another failure gets no such hint.
  m_beaker.clear();
  m_beaker.on({"experiment", "create"}, "", 3, "Error: workspace ai2/oe-agents not found\n");
  const auto other = run({"rl", "submit", "--toml", "examples/rl/rl.toml"});
  EXPECT_EQ(other.exit_code, 4);
  EXPECT_EQ(other.err.find("--name NEW"), std::string::npos) << other.err;
}

// A scratch dir submit cannot write under (a read-only mount; here a path under a regular file,
// which fails for root too) is refused before anything is staged, written or run, with a hint
// naming --scratch-dir, and --no-stage when only the stage directory is in the way.
TEST_F(Submit, AnUnwritableScratchDirGetsAHintNamingTheFlags) {
  beaker_creates();
  write("not-a-dir", "a file");
  const std::string scratch = at("not-a-dir/scratch");
  const std::string hint = ": pass --scratch-dir DIR, a writable directory on the mount";
  const std::string before = tree_digest(m_tmp.path());
  const auto result =
      run({"sft", "submit", "--toml", "examples/sft/sft.toml", "--scratch-dir", scratch});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("primebeaker: error: cannot stage primebeaker under " + scratch +
                            "/primebeaker/bin: Not a directory\n  " + at("not-a-dir") +
                            " is not a directory" + hint + "\n"),
            std::string::npos)
      << result.err;
  // With --no-stage the spec directory is what cannot be created.
  const auto unstaged = run(
      {"sft", "submit", "--toml", "examples/sft/sft.toml", "--scratch-dir", scratch, "--no-stage"});
  EXPECT_EQ(unstaged.exit_code, 1) << unstaged.err;
  EXPECT_NE(unstaged.err.find("primebeaker: error: cannot create " + scratch +
                              "/primebeaker/beaker_experiments: Not a directory\n  " +
                              at("not-a-dir") + " is not a directory" + hint + "\n"),
            std::string::npos)
      << unstaged.err;
  EXPECT_EQ(tree_digest(m_tmp.path()), before);
  EXPECT_TRUE(m_beaker.calls().empty());

  // Only the stage directory is in the way (another user's bin/, here a file): --no-stage helps.
  write("primebeaker/bin", "a file");
  const auto taken = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  EXPECT_EQ(taken.exit_code, 1) << taken.err;
  EXPECT_NE(taken.err.find("  " + at("primebeaker/bin") + " is not a directory" + hint +
                           ", or --no-stage to run the image's own primebeaker instead of staging "
                           "this one\n"),
            std::string::npos)
      << taken.err;

  // A read-only directory, where permissions are enforced (not for root).
  if (::geteuid() != 0) {
    std::filesystem::create_directories(mount() / "read-only");
    std::filesystem::permissions(mount() / "read-only",
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::owner_exec);
    const auto denied =
        run({"sft", "submit", "--toml", "examples/sft/sft.toml", "--scratch-dir", at("read-only")});
    std::filesystem::permissions(mount() / "read-only", std::filesystem::perms::owner_all);
    EXPECT_EQ(denied.exit_code, 1) << denied.err;
    EXPECT_NE(denied.err.find("  " + at("read-only") + " is not writable (Permission denied)" +
                              hint + "\n"),
              std::string::npos)
        << denied.err;
  }
}

TEST_F(Submit, BeakerMissingExits4) {
  RunOptions options;
  options.cwd = mount();
  options.env = {{"PATH", "/nonexistent"}, {"PRIMEBEAKER_IMAGE_CATALOG", runtime_catalog()}};
  std::vector<std::string> args = {"rl", "submit", "--toml", "examples/rl/rl.toml"};
  for (const auto &flag : mount_flags()) {
    args.push_back(flag);
  }
  const std::string before = tree_digest(m_tmp.path());
  const auto result = run_primebeaker(args, options);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.out, "");
  // Found missing first: no stage, no spec file left behind (issue 27).
  EXPECT_EQ(tree_digest(m_tmp.path()), before);
  EXPECT_NE(result.err.find("primebeaker: error: cannot run beaker: not found on PATH"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("PRIMEBEAKER_BEAKER"), std::string::npos);
}

TEST_F(Submit, PrimebeakerBeakerNamesTheProgram) {
  FakeBin other(m_tmp.path() / "other");
  other.add("my-beaker", "echo 'Experiment 01OTHER submitted.'");
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml"},
                          true,
                          {{"PRIMEBEAKER_BEAKER", (other.bin() / "my-beaker").string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(m_beaker.calls().empty());
  ASSERT_EQ(other.calls("my-beaker").size(), 1u);
  EXPECT_EQ(other.calls("my-beaker")[0].argv[1], "experiment");
  EXPECT_EQ(json::parse(result.out)["experiment_id"], "01OTHER");
}

TEST_F(Submit, InvalidLaunchWritesNothingAndRunsNothing) {
  const std::string before = tree_digest(m_tmp.path());
  const auto result = run({"rl", "submit", "--toml", "examples/rl/rl.toml", "--priority", "low"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(tree_digest(m_tmp.path()), before);
  EXPECT_TRUE(m_beaker.calls().empty());
}

// --write-spec is a preview flag: submit always writes the spec, so on submit the flag (either
// spelling, Fire's --nowrite-spec included) is a usage error before anything is written or run.
TEST_F(Submit, WriteSpecIsRefusedBeforeAnythingHappens) {
  beaker_creates();
  const std::string before = tree_digest(m_tmp.path());
  for (const std::string flag :
       {"--write-spec", "--no-write-spec", "--nowrite-spec", "--write_spec"}) {
    for (const std::string program : {"sft", "rl"}) {
      const std::string toml = program == "sft" ? "examples/sft/sft.toml" : "examples/rl/rl.toml";
      const auto result = run({program, "submit", "--toml", toml, flag});
      EXPECT_EQ(result.exit_code, 2) << program << " " << flag << ": " << result.err;
      EXPECT_EQ(result.out, "");
      EXPECT_NE(result.err.find("primebeaker: error: --write-spec and --no-write-spec apply to "
                                "preview only: submit always writes the spec file"),
                std::string::npos)
          << result.err;
      EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    }
  }
  EXPECT_EQ(tree_digest(m_tmp.path()), before) << "a refused submit wrote something";
  EXPECT_TRUE(m_beaker.calls().empty()) << "a refused submit reached beaker";
  // The control: the same submit without the flag writes the spec and creates the experiment.
  const auto submitted = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_TRUE(
      std::filesystem::exists(at("primebeaker/beaker_experiments/primebeaker-example-sft-0123456789abcdef0123456789abcdef.json")));
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);
}

} // namespace
} // namespace pb::test
