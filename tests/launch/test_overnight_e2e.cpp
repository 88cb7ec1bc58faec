// SPDX-License-Identifier: MIT
// What a run left overnight relies on (docs/launch.md "Output dir", "Files a launch writes",
// "--if-exists"): no two runs share an output dir, a launch never overwrites another launch's
// files, a rerun Beaker refuses is told apart, and launches that need nothing else do not ask for
// it (a registry) or misread what they were given (a component TOML).
#include "launch_fixture.hpp"

#include <algorithm>

using nlohmann::json;

namespace pb::test {
namespace {

class Overnight : public LaunchFixture {
protected:
  // The bundled single-node example, as many TOMLs are written: no output_dir, no W&B name.
  std::string unnamed_rl() const {
    std::string text = example_text("examples/rl/rl.toml");
    text = replace_line(text, "output_dir = ", "");
    return replace_line(text, "name = \"primebeaker-example-rl\"", "");
  }

  // The bundled example writing to `output_dir`.
  std::string rl_into(const std::string &output_dir) const {
    return replace_line(example_text("examples/rl/rl.toml"),
                        "output_dir = ",
                        "output_dir = \"" + output_dir + "\"");
  }

  RunResult launch(const std::string &verb,
                   const std::string &toml,
                   const std::string &launch_id,
                   std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"rl", verb, "--toml", toml};
    args.insert(args.end(), more.begin(), more.end());
    return run(args, true, {{"PRIMEBEAKER_LAUNCH_ID", launch_id}});
  }

  static std::map<std::string, std::string> env_of(const json &spec) {
    std::map<std::string, std::string> out;
    for (const auto &task : spec.at("tasks")) {
      for (const auto &var : task.at("envVars")) {
        if (var.contains("value")) {
          out[var.at("name").get<std::string>()] = var.at("value").get<std::string>();
        }
      }
    }
    return out;
  }
};

const std::string k_first = "11111111111111111111111111111111";
const std::string k_second = "22222222222222222222222222222222";

TEST_F(Overnight, TwoTomlsThatNameNoOutputDirGetTheirOwn) {
  write("wordle/rl.toml", unnamed_rl());
  write("reverse-text/rl.toml", unnamed_rl());
  const auto wordle = launch("preview", "wordle/rl.toml", k_first);
  const auto reverse = launch("preview", "reverse-text/rl.toml", k_second);
  ASSERT_EQ(wordle.exit_code, 0) << wordle.err;
  ASSERT_EQ(reverse.exit_code, 0) << reverse.err;
  const auto first = json::parse(wordle.out);
  const auto second = json::parse(reverse.out);
  EXPECT_EQ(env_of(first["spec"])["OUTPUT_DIR"], "outputs/wordle-rl");
  EXPECT_EQ(env_of(second["spec"])["OUTPUT_DIR"], "outputs/reverse-text-rl");
  // The copy the container reads names the run as the TOML does, and is per launch.
  EXPECT_EQ(first["experiment_name"], "wordle-rl");
  EXPECT_EQ(env_of(first["spec"])["CONFIG_PATH"],
            at("primebeaker/beaker_experiments/" + k_first + "-" +
               env_of(first["spec"])["CONFIG_PATH"].substr(
                   at("primebeaker/beaker_experiments/" + k_first + "-").size(), 8) +
               "/wordle/rl.toml"));
  // The card says where and why.
  const auto card = launch("preview", "wordle/rl.toml", k_first, {"--card"});
  ASSERT_EQ(card.exit_code, 0) << card.err;
  EXPECT_NE(card.out.find("output     " + at("outputs/wordle-rl") +
                          " (outputs/<run name>: the TOML names none)"),
            std::string::npos)
      << card.out;
  EXPECT_NE(card.out.find("claimed for W&B run " + k_first + " at submit"), std::string::npos)
      << card.out;
  // `checkpoints list --toml` looks where the launch put the run, not at Prime-RL's `outputs`.
  const auto listed = run({"checkpoints",
                           "list",
                           "--toml",
                           "wordle/rl.toml",
                           "--working-dir",
                           mount().string(),
                           "--json"},
                          false);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(json::parse(listed.out).at("output_dir"), at("outputs/wordle-rl")) << listed.out;
}

TEST_F(Overnight, ASecondRunIntoAClaimedDirIsRefusedBeforeBeakerHearsOfIt) {
  beaker_creates();
  write("a/rl.toml", rl_into("outputs/shared"));
  write("b/rl.toml", rl_into("outputs/shared"));
  const auto first = launch("submit", "a/rl.toml", k_first);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto receipt = json::parse(first.out);
  // The receipt holds the real ledger, not a template.
  EXPECT_EQ(receipt["recovery"]["ledger"],
            at("outputs/shared/primebeaker_recovery/ledger/" + k_first));
  ASSERT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);

  // The first run has not started: this user's launch index knows it.
  const auto preview = launch("preview", "b/rl.toml", k_second);
  EXPECT_EQ(preview.exit_code, 3);
  EXPECT_EQ(preview.out, "");
  EXPECT_NE(preview.err.find("belongs to run " + k_first), std::string::npos) << preview.err;
  EXPECT_NE(preview.err.find("--set output_dir=" + at("outputs/shared-2")), std::string::npos) << preview.err;
  const auto submit = launch("submit", "b/rl.toml", k_second);
  EXPECT_EQ(submit.exit_code, 3) << submit.err;
  EXPECT_NE(submit.err.find("belongs to run " + k_first), std::string::npos) << submit.err;
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);
  EXPECT_EQ(std::count(submit.err.begin(), submit.err.end(), '\n'), 1) << submit.err;

  // Another user (another scratch dir, no index of theirs): the owner file the submit wrote on
  // the mount refuses it just the same.
  std::filesystem::create_directories(at("elsewhere"));
  const auto other = run({"rl", "submit", "--toml", "b/rl.toml", "--scratch-dir", at("elsewhere")},
                         true,
                         {{"PRIMEBEAKER_LAUNCH_ID", k_second}});
  EXPECT_EQ(other.exit_code, 3) << other.err;
  EXPECT_NE(other.err.find(at("outputs/shared/primebeaker_recovery/owner.json")),
            std::string::npos)
      << other.err;
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);

  // The owner's own relaunch passes (its W&B run id), and so does a run given its own dir.
  EXPECT_EQ(launch("preview", "a/rl.toml", k_first).exit_code, 0);
  const auto moved =
      launch("preview", "b/rl.toml", k_second, {"--set", "output_dir=\"outputs/shared-2\""});
  EXPECT_EQ(moved.exit_code, 0) << moved.err;
}

TEST_F(Overnight, ARunStartedBeforeIndexesExistedIsKnownByItsLedger) {
  write("b/rl.toml", rl_into("outputs/old"));
  // A v0.8.0 run whose node runtime kept a ledger there, and no index or owner file.
  write("outputs/old/primebeaker_recovery/ledger/oldrun/1.json", "{}\n");
  const auto preview = launch("preview", "b/rl.toml", k_second);
  EXPECT_EQ(preview.exit_code, 3);
  EXPECT_NE(preview.err.find("belongs to run oldrun"), std::string::npos) << preview.err;
}

TEST_F(Overnight, ARerunBeakerRefusesLeavesTheFirstRunsFilesAndExitsFive) {
  beaker_creates();
  write("a/rl.toml", rl_into("outputs/a"));
  const auto first = launch("submit", "a/rl.toml", k_first);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string spec_path = json::parse(first.out)["spec_path"];
  EXPECT_NE(spec_path.find(k_first), std::string::npos) << spec_path;
  const std::string spec = read_file(spec_path);

  // The same name again, into its own dir: Beaker refuses the name.
  m_beaker.clear().on({"experiment", "create"},
                      "",
                      1,
                      "Error: experiment name \"primebeaker-example-rl\" already in use\n");
  const auto rerun =
      launch("submit", "a/rl.toml", k_second, {"--set", "output_dir=\"outputs/a-2\""});
  EXPECT_EQ(rerun.exit_code, 5) << rerun.err;
  EXPECT_NE(rerun.err.find("already in use"), std::string::npos) << rerun.err;
  EXPECT_NE(rerun.err.find("--if-exists adopt"), std::string::npos) << rerun.err;
  EXPECT_EQ(read_file(spec_path), spec);
  // What the refused launch claimed is given back: the dir is free for a later launch.
  EXPECT_EQ(launch("preview",
                   "a/rl.toml",
                   "33333333333333333333333333333333",
                   {"--set", "output_dir=\"outputs/a-2\""})
                .exit_code,
            0);

  // With --if-exists adopt, the rerun returns the existing experiment and submits nothing.
  m_beaker.clear()
      .on({"account", "whoami"}, R"([{"name": "jdoe"}])")
      .on({"experiment", "get", "jdoe/primebeaker-example-rl"},
          R"([{"id": "01EXISTING", "name": "primebeaker-example-rl"}])");
  const auto adopted = launch("submit", "a/rl.toml", k_second, {"--if-exists", "adopt"});
  ASSERT_EQ(adopted.exit_code, 0) << adopted.err;
  const auto receipt = json::parse(adopted.out);
  EXPECT_EQ(receipt["experiment_id"], "01EXISTING");
  EXPECT_EQ(receipt["adopted"], true);
  EXPECT_TRUE(receipt["spec_path"].is_null());
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 2u); // the two above
  EXPECT_EQ(read_file(spec_path), spec);
}

TEST_F(Overnight, AV08MultiNodeRunNeedsNoRegistry) {
  const auto preview = launch("preview", "examples/multinode-rl/rl.toml", k_first);
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  const std::string registry = env_of(json::parse(preview.out)["spec"])["REGISTRY"];
  EXPECT_TRUE(registry.starts_with("file://" + at("primebeaker/rendezvous/")) &&
              registry.ends_with("/registry"))
      << registry;
  const auto card = launch("preview", "examples/multinode-rl/rl.toml", k_first, {"--card"});
  ASSERT_EQ(card.exit_code, 0) << card.err;
  EXPECT_NE(card.out.find("registry   " + registry + " (a file registry on the mount"),
            std::string::npos)
      << card.out;
  // --recover off: the card does not promise recoveries.
  const auto off = launch(
      "preview", "examples/multinode-rl/rl.toml", k_first, {"--card", "--recover", "off"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out.find("up to 10 recoveries"), std::string::npos) << off.out;
  EXPECT_NE(off.out.find("recovery   off"), std::string::npos) << off.out;
}

TEST_F(Overnight, AComponentTomlIsNamedNotEdited) {
  const std::string pd = (shared_dir() / "corpus/prime-rl-repo/v0.8.0/examples/advanced/glm-5.2/"
                                         "infer/pd.toml")
                             .string();
  const auto preview = launch("preview", pd, k_first);
  EXPECT_EQ(preview.exit_code, 3);
  EXPECT_EQ(preview.out, "");
  EXPECT_EQ(preview.err.rfind("primebeaker: error: " + pd + ": this is a Prime-RL ", 0), 0u)
      << preview.err;
  EXPECT_NE(preview.err.find(" inference config"), std::string::npos) << preview.err;
  EXPECT_EQ(preview.err.find("add this"), std::string::npos) << preview.err;
  EXPECT_EQ(std::count(preview.err.begin(), preview.err.end(), '\n'), 1) << preview.err;
}

TEST_F(Overnight, TheCardCountsInTheRightNumber) {
  std::string one_gpu = replace_line(example_text("examples/sft/sft.toml"), "num_gpus = ", "num_gpus = 1");
  write("examples/sft/one.toml", replace_line(one_gpu, "gpus_per_node = ", "gpus_per_node = 1"));
  const auto card = run({"sft", "preview", "--toml", "examples/sft/one.toml", "--card"});
  ASSERT_EQ(card.exit_code, 0) << card.err;
  EXPECT_NE(card.out.find("cost       1 GPU-hour per hour of run time"), std::string::npos)
      << card.out;
}

} // namespace
} // namespace pb::test
