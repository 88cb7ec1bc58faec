// SPDX-License-Identifier: MIT
// submit: the spec is written atomically, then `beaker experiment create` runs by argv; the
// receipt is printed only when beaker succeeded.
#include "launch_fixture.hpp"

using nlohmann::json;

namespace pb::test {
namespace {

class Submit : public LaunchFixture {};

TEST_F(Submit, SuccessWritesSpecRunsBeakerAndPrintsReceipt) {
  const auto preview = run({"rl",
                            "preview",
                            "--toml",
                            "examples/multinode-rl/rl.toml",
                            "--registry",
                            "redis://r:1",
                            "--workspace",
                            "ai2/oe-agents-holmes"});
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  const auto result = run({"rl",
                           "submit",
                           "--toml",
                           "examples/multinode-rl/rl.toml",
                           "--registry",
                           "redis://r:1",
                           "--workspace",
                           "ai2/oe-agents-holmes"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  expect_golden("rl-multi-node-submit.json", normalized(result.out));
  const auto receipt = json::parse(result.out);
  const auto planned = json::parse(preview.out);
  EXPECT_EQ(receipt["spec_path"], planned["spec_path"]);
  EXPECT_FALSE(receipt.contains("spec"));
  EXPECT_EQ(json::parse(read_file(receipt["spec_path"].get<std::string>())), planned["spec"]);
  const auto calls = m_fakes.calls("beaker");
  ASSERT_EQ(calls.size(), 1u);
  std::vector<std::string> expected = planned["submit_command"];
  EXPECT_EQ(calls[0].argv, expected);
  EXPECT_EQ(calls[0].argv,
            (std::vector<std::string>{"beaker",
                                      "experiment",
                                      "create",
                                      "--name",
                                      "primebeaker-example-multinode-rl",
                                      "--workspace",
                                      "ai2/oe-agents-holmes",
                                      planned["spec_path"]}));
  EXPECT_EQ(receipt["stdout"].get<std::string>().rfind("Experiment 01FAKEEXPERIMENT", 0), 0u);
}

TEST_F(Submit, SingleNodeSftSubmit) {
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_FALSE(receipt.contains("launch_id"));
  EXPECT_EQ(receipt["spec_path"],
            at("primebeaker/beaker_experiments/primebeaker-example-sft.json"));
  EXPECT_EQ(m_fakes.calls("beaker").size(), 1u);
}

TEST_F(Submit, FollowStreamsTheRunToStderrAndExitsWithItsOutcome) {
  FakeBeaker beaker(m_fakes);
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
                      {"experiment", "01FOLLOW"},
                      {"spec",
                       {{"name", "primebeaker-example-sft"},
                        {"command", {"primebeaker", "node", "single", "sft"}}}}}}};
  const json experiment = json::array({{{"id", "01FOLLOW"},
                                        {"name", "primebeaker-example-sft"},
                                        {"fullName", "jdoe/primebeaker-example-sft"},
                                        {"author", {{"name", "jdoe"}}},
                                        {"created", "2026-08-10T10:00:00Z"},
                                        {"jobs", json::array({job})}}});
  beaker
      .on({"experiment", "create"},
          "Experiment 01FOLLOW submitted. See progress at https://beaker.org/ex/01FOLLOW\n")
      .on({"experiment", "get", "01FOLLOW"}, experiment.dump())
      .on({"job", "logs", "01JOBFOLLOW"}, "loss 0.5\nTraceback: out of memory\n");
  const auto result = run({"sft", "submit", "--toml", "examples/sft/sft.toml", "--follow"});
  EXPECT_EQ(result.exit_code, 10) << result.err; // failed (docs/runs.md)
  EXPECT_EQ(json::parse(result.out)["experiment_name"], "primebeaker-example-sft");
  EXPECT_NE(result.err.find("Traceback: out of memory"), std::string::npos) << result.err;
  EXPECT_TRUE(beaker.calls_matching({"experiment", "stop"}).empty());
}

TEST_F(Submit, BeakerFailingExits4WithItsStderrAndNoReceipt) {
  m_fakes.add("beaker",
              "echo 'some progress'; echo 'Error: workspace ai2/oe-agents not found' >&2; exit 3");
  const auto result = run({"rl", "submit", "--toml", "examples/rl/rl.toml"});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("primebeaker: error: beaker could not create experiment "
                            "primebeaker-example-rl (exit code 3): Error: workspace "
                            "ai2/oe-agents not found"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(m_fakes.calls("beaker").size(), 1u);
  // The spec was written first (submit always writes it).
  EXPECT_TRUE(std::filesystem::exists(
      mount() / "primebeaker/beaker_experiments/primebeaker-example-rl.json"));
}

TEST_F(Submit, BeakerMissingExits4) {
  RunOptions options;
  options.cwd = mount();
  options.env = {{"PATH", "/nonexistent"}};
  std::vector<std::string> args = {"rl", "submit", "--toml", "examples/rl/rl.toml"};
  for (const auto &flag : mount_flags()) {
    args.push_back(flag);
  }
  const auto result = run_primebeaker(args, options);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_EQ(result.out, "");
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
  EXPECT_TRUE(m_fakes.calls("beaker").empty());
  ASSERT_EQ(other.calls("my-beaker").size(), 1u);
  EXPECT_EQ(other.calls("my-beaker")[0].argv[1], "experiment");
}

TEST_F(Submit, InvalidLaunchWritesNothingAndRunsNothing) {
  const std::string before = tree_digest(m_tmp.path());
  const auto result = run({"rl", "submit", "--toml", "examples/rl/rl.toml", "--priority", "low"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(tree_digest(m_tmp.path()), before);
  EXPECT_TRUE(m_fakes.calls("beaker").empty());
}

} // namespace
} // namespace pb::test
