// SPDX-License-Identifier: MIT
// The single-node container command, run locally: the spec's command and env exactly as
// rendered, under bash, with fake Prime-RL `rl`/`sft` on PATH that record argv and env.
#include "launch_fixture.hpp"

#include <primebeaker/core/process.hpp>
#include <primebeaker/toml/value.hpp>

using nlohmann::json;

namespace pb::test {
namespace {

class NodeSingle : public LaunchFixture {
protected:
  NodeSingle() {
    m_fakes.add("rl", "exit 0");
    m_fakes.add("sft", "exit 0");
    std::filesystem::create_directories(m_tmp.path() / "container-tmp");
  }

  json preview(const std::vector<std::string> &args) {
    const auto result = run(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return json::parse(result.out);
  }

  // What Beaker would run: the task's command with exactly its envVars (secrets get a dummy
  // value), launched through bash like an image's shell would, plus PATH and test-only paths.
  proc::Result run_container(const json &task, std::map<std::string, std::string> extra = {}) {
    proc::Command command;
    provide_stage(task["command"][0].get<std::string>());
    command.argv = {"bash", "-c", "exec \"$@\"", "bash"};
    for (const auto &word : task["command"]) {
      command.argv.push_back(word);
    }
    command.clear_env = true;
    for (const auto &entry : task["envVars"]) {
      command.env_set[entry["name"]] =
          entry.contains("value") ? entry["value"].get<std::string>() : "dummy-secret";
    }
    command.env_set["PATH"] =
        m_fakes.bin().string() + ":" + binary_path().parent_path().string() + ":/usr/bin:/bin";
    command.env_set["PRIMEBEAKER_RESULT_DIR"] = (m_tmp.path() / "container-tmp/result").string();
    command.env_set["PRIMEBEAKER_RUNTIME_TOML"] =
        (m_tmp.path() / "container-tmp/runtime.toml").string();
    for (const auto &[name, value] : extra) {
      command.env_set[name] = value;
    }
    command.cwd = m_tmp.path();
    command.timeout = std::chrono::seconds(60);
    proc::SystemRunner runner;
    return runner.run(command);
  }
};

TEST_F(NodeSingle, RlExecsRlOnTheRewrittenRuntimeToml) {
  const auto out =
      preview({"rl", "preview", "--toml", "examples/rl/rl.toml", "--registry", "redis://r:1"});
  const auto result = run_container(out["spec"]["tasks"][0]);
  ASSERT_TRUE(result.ok()) << result.status() << "\n" << result.err;
  const auto calls = m_fakes.calls("rl");
  ASSERT_EQ(calls.size(), 1u);
  const std::string runtime = (m_tmp.path() / "container-tmp/runtime.toml").string();
  EXPECT_EQ(calls[0].argv, (std::vector<std::string>{"rl", "@", runtime}));
  EXPECT_EQ(calls[0].cwd, mount().string());
  const auto &env = calls[0].env;
  EXPECT_EQ(env.at("XDG_CACHE_HOME"), at(".cache"));
  EXPECT_EQ(env.at("HF_HOME"), at(".cache/huggingface"));
  EXPECT_EQ(env.at("TORCH_HOME"), at(".cache/torch"));
  EXPECT_EQ(env.at("TORCHINDUCTOR_CACHE_DIR"), at(".cache/torch/inductor"));
  EXPECT_EQ(env.at("TRITON_CACHE_DIR"), at(".cache/triton"));
  EXPECT_EQ(env.at("VLLM_CACHE_ROOT"), at(".cache/vllm"));
  EXPECT_EQ(env.at("TMPDIR"), at("tmp"));
  EXPECT_EQ(env.at("REGISTRY"), "redis://r:1");
  EXPECT_EQ(env.at("WANDB_API_KEY"), "dummy-secret");
  for (const char *dir : {".cache/huggingface", ".cache/torch", "tmp", "outputs/tiny-rl"}) {
    EXPECT_TRUE(std::filesystem::is_directory(mount() / dir)) << dir;
  }
  const std::string source = read("examples/rl/rl.toml");
  const std::string rewritten = read_file(runtime);
  EXPECT_NE(rewritten, source);
  EXPECT_NE(rewritten.find("id = \"primebeaker.environments.jtc_label_env\"\n"), std::string::npos);
  EXPECT_EQ(rewritten.find("jtc.environments.jtc_label_env\""), std::string::npos);
  EXPECT_NE(rewritten.find("# Older TOMLs name the environment"), std::string::npos);
  EXPECT_EQ(source, example_text("examples/rl/rl.toml")) << "the source TOML was edited";
}

// Issue 37, "an output dir belongs to one run": the first start claims output_dir for its W&B
// run; a variant that kept output_dir (toml set of another key) is refused at start and, where
// the mount is readable, at preview, in one line; the owner's restarts and a --wandb-run-id that
// continues it pass.
TEST_F(NodeSingle, ASecondRunOverAClaimedOutputDirIsRefusedAtPreviewAndAtStart) {
  const auto first = preview({"rl",
                              "preview",
                              "--toml",
                              "examples/rl/rl.toml",
                              "--registry",
                              "redis://r:1",
                              "--wandb-run-id",
                              "owner-run"});
  ASSERT_TRUE(run_container(first["spec"]["tasks"][0]).ok());
  const auto owner_file = mount() / "outputs/tiny-rl/primebeaker_recovery/owner.json";
  ASSERT_TRUE(std::filesystem::exists(owner_file));
  EXPECT_EQ(json::parse(read_file(owner_file))["run_id"], "owner-run");
  // A restart of the owner (Beaker's autoResume) passes.
  const auto again = run_container(first["spec"]["tasks"][0]);
  EXPECT_TRUE(again.ok()) << again.err;

  // A variant: another learning rate, the same output_dir, another run.
  const auto set =
      run({"toml", "set", "examples/rl/rl.toml", "trainer.optim.lr", "3e-6", "-o", "variant.toml"},
          false);
  ASSERT_EQ(set.exit_code, 0) << set.err;
  const auto refused = run({"rl",
                            "preview",
                            "--toml",
                            "variant.toml",
                            "--registry",
                            "redis://r:1",
                            "--wandb-run-id",
                            "variant-run"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(lines_of(refused.err).size(), 1u) << refused.err;
  EXPECT_NE(refused.err.find("belongs to run owner-run"), std::string::npos) << refused.err;
  // The fix that works for a v0.8.0 TOML, whose output dir a name does not choose.
  EXPECT_NE(refused.err.find("give this launch its own output dir (--set output_dir=" +
                             (mount() / "outputs/tiny-rl-2").string()),
            std::string::npos)
      << refused.err;
  // Started anyway (a spec rendered before the claim): refused on the node, before training.
  auto task = first["spec"]["tasks"][0];
  for (auto &var : task["envVars"]) {
    if (var["name"] == "WANDB_RUN_ID" || var["name"] == "WANDB_SHARED_RUN_ID") {
      var["value"] = "variant-run";
    }
  }
  const std::size_t trained = m_fakes.calls("rl").size();
  const auto started = run_container(task);
  EXPECT_EQ(started.exit_code, 3) << started.err;
  EXPECT_NE(started.err.find("belongs to run owner-run"), std::string::npos) << started.err;
  EXPECT_EQ(m_fakes.calls("rl").size(), trained) << "the second run trained";
  // The owner continuing (rl resume keeps its W&B run id) passes the preview.
  EXPECT_EQ(run({"rl",
                 "preview",
                 "--toml",
                 "variant.toml",
                 "--registry",
                 "redis://r:1",
                 "--wandb-run-id",
                 "owner-run"})
                .exit_code,
            0);
}

// Prime-RL v0.9 on one node (docs/launch.md "Prime-RL v0.9"): `rl` gets the W&B run id as
// PRL_RUN_ID (a restart continues the run) and a runtime TOML naming the run the launch named;
// the source TOML is never edited.
TEST_F(NodeSingle, PrimeRlV09RunsRlWithItsRunIdentity) {
  const std::string source =
      read_file(shared_dir() / "corpus/prime-rl/main-559b4477-examples-basic-wordle-rl.toml");
  write_file(mount() / "wordle.toml", source);
  const auto out = preview({"rl", "preview", "--toml", at("wordle.toml"), "--wandb-run-id", "w1"});
  const auto result = run_container(out["spec"]["tasks"][0]);
  ASSERT_TRUE(result.ok()) << result.status() << "\n" << result.err;
  const auto calls = m_fakes.calls("rl");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].env.at("PRL_RUN_ID"), "w1");
  EXPECT_EQ(calls[0].env.at("PRL_RUN_NAME"), "wordle");
  const auto runtime = toml::Document::load(m_tmp.path() / "container-tmp/runtime.toml");
  const toml::Value *name = runtime.root().find_path({"run", "name"});
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(*name->string(), "wordle");
  EXPECT_EQ(read_file(mount() / "wordle.toml"), source);
}

TEST_F(NodeSingle, ExistingCacheVariablesAreKept) {
  const auto out = preview(
      {"rl", "preview", "--toml", "examples/rl/rl.toml", "--env", "HF_HOME=" + at("my-hf")});
  const auto result = run_container(out["spec"]["tasks"][0]);
  ASSERT_TRUE(result.ok()) << result.err;
  const auto env = m_fakes.calls("rl").at(0).env;
  EXPECT_EQ(env.at("HF_HOME"), at("my-hf"));
  EXPECT_EQ(env.at("XDG_CACHE_HOME"), at(".cache"));
}

TEST_F(NodeSingle, SftChecksDataMovesIncompleteCheckpointsAsideAndRunsSft) {
  write("outputs/tiny-sft/checkpoints/step_1/trainer/__0_0.distcp", "x");
  write("outputs/tiny-sft/checkpoints/step_2/trainer/.metadata", "m");
  write("outputs/tiny-sft/checkpoints/step_3/trainer/__0_0.distcp", "x");
  const auto out = preview({"sft", "preview", "--toml", "examples/sft/sft.toml"});
  const auto result = run_container(out["spec"]["tasks"][0], {{"BEAKER_JOB_ID", "01JOB"}});
  ASSERT_TRUE(result.ok()) << result.err;
  const auto calls = m_fakes.calls("sft");
  ASSERT_EQ(calls.size(), 1u);
  // Prime-RL reads a container-local copy carrying the runtime's resume decision (none here:
  // no step is complete), never the user's TOML (docs/recovery.md).
  const std::string runtime = (m_tmp.path() / "container-tmp/runtime.toml").string();
  EXPECT_EQ(calls[0].argv, (std::vector<std::string>{"sft", "@", runtime}));
  EXPECT_EQ(read_file(runtime), example_text("examples/sft/sft.toml"));
  // Every incomplete step is moved aside (never deleted), so Prime-RL starts fresh.
  const auto checkpoints = mount() / "outputs/tiny-sft/checkpoints";
  for (const char *step : {"step_1", "step_2", "step_3"}) {
    EXPECT_FALSE(std::filesystem::exists(checkpoints / step)) << step;
  }
  int moved = 0;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(
           mount() / "outputs/tiny-sft/primebeaker_recovery/set_aside")) {
    const std::string name = entry.path().filename().string();
    moved += name.rfind("step_", 0) == 0 ? 1 : 0;
    if (name.rfind("step_", 0) == 0) {
      EXPECT_NE(entry.path().string().find("-01JOB/checkpoints/"), std::string::npos);
    }
  }
  EXPECT_EQ(moved, 3);
  EXPECT_NE(result.err.find("moved the incomplete step aside: "), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("attempt 1 (first_start): starting fresh"), std::string::npos)
      << result.err;
}

TEST_F(NodeSingle, SftUnreadableDataFailsBeforeTraining) {
  write("case.toml",
        replace_once(example_text("examples/sft/sft.toml"),
                     "name = \"examples/sft/data\"\nsplits = [\"train\"]",
                     "name = \"examples/sft/missing\"\nsplits = [\"train\"]"));
  const auto out = preview({"sft", "preview", "--toml", "case.toml"});
  const auto result = run_container(out["spec"]["tasks"][0]);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("data.name is not a readable path: examples/sft/missing"),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(m_fakes.calls("sft").empty());
}

TEST_F(NodeSingle, QuotingSurvivesEnvAndSetupCommand) {
  const std::string nasty = "it's \"quoted\" $(echo no) `echo no` $HOME \\ back\nnew line ünï 💡";
  const std::string setup =
      "printf '%s|' \"it's\" \"$(echo sub shell)\" `echo back tick` \"ünï\" \"$NASTY\" "
      "> \"$OUT_FILE\"\nprintf 'line two\\n' >> \"$OUT_FILE\"";
  const auto out = preview({"rl",
                            "preview",
                            "--toml",
                            "examples/rl/rl.toml",
                            "--env",
                            "NASTY=" + nasty,
                            "--env",
                            "OUT_FILE=" + at("setup.out"),
                            "--setup-command",
                            setup});
  const auto &task = out["spec"]["tasks"][0];
  const auto result = run_container(task);
  ASSERT_TRUE(result.ok()) << result.err;
  const auto env = m_fakes.calls("rl").at(0).env;
  EXPECT_EQ(env.at("NASTY"), nasty);
  EXPECT_EQ(env.at("PRIMEBEAKER_SETUP_COMMAND"), setup);
  // The setup command ran exactly as bash runs the same text directly.
  proc::Command direct;
  direct.argv = {"bash", "-c", setup};
  direct.env_set = {{"NASTY", nasty}, {"OUT_FILE", at("direct.out")}};
  proc::SystemRunner runner;
  ASSERT_TRUE(runner.run(direct).ok());
  EXPECT_EQ(read("setup.out"), read("direct.out"));
  EXPECT_EQ(read("setup.out"), "it's|sub shell|back|tick|ünï|" + nasty + "|line two\n");
}

TEST_F(NodeSingle, FailingSetupCommandStopsBeforeTraining) {
  const auto out = preview({"rl",
                            "preview",
                            "--toml",
                            "examples/rl/rl.toml",
                            "--setup-command",
                            "echo preparing; exit 7"});
  const auto result = run_container(out["spec"]["tasks"][0]);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("the setup command (PRIMEBEAKER_SETUP_COMMAND) failed (exit code 7)"),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(m_fakes.calls("rl").empty());
}

TEST_F(NodeSingle, MissingPrimeRlOrEnvIsReported) {
  const auto out = preview({"rl", "preview", "--toml", "examples/rl/rl.toml"});
  std::filesystem::remove(m_fakes.bin() / "rl");
  auto result = run_container(out["spec"]["tasks"][0]);
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("Prime-RL's `rl` command is not on PATH"), std::string::npos);

  RunOptions options;
  options.env = {{"CONFIG_PATH", "/x.toml"}, {"OUTPUT_DIR", "/o"}, {"SCRATCH", "/s"}};
  const auto missing = run_primebeaker({"node", "single", "rl"}, options);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err,
            "primebeaker: error: missing required environment variable: WORKING_DIR\n");
}

} // namespace
} // namespace pb::test
