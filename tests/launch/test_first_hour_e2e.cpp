// SPDX-License-Identifier: MIT
// What a new user meets in the first hour (docs/launch.md): without --image the binary is
// staged and runs on the catalog's Prime-RL image, or submit refuses before beaker; every problem
// of a Prime-RL v0.8.0 TOML in one run with the keys that fix it; relative TOML paths against
// --working-dir; flags the topology would ignore, out-of-range numbers and comma lists.
#include "launch_fixture.hpp"

#include <primebeaker/core/process.hpp>

#include <fmt/format.h>

using nlohmann::json;

namespace pb::test {
namespace {

class FirstHour : public LaunchFixture {
protected:
  // Runs with the built-in catalog (no primebeaker-runtime image, no ai2/elsewhere).
  RunResult run_builtin_catalog(const std::vector<std::string> &args, bool with_mount = true) {
    return run(args, with_mount, {{"PRIMEBEAKER_IMAGE_CATALOG", ""}});
  }
  static std::string image_of(const RunResult &result) {
    return json::parse(result.out)["spec"]["tasks"][0]["image"].dump();
  }
};

// The first submit of a new user: no --image, no Docker, no image build. The binary is staged on
// the mount and the spec runs it on the catalog's Prime-RL image (docs/staging.md).
TEST_F(FirstHour, WithoutAnImageTheStagedBinaryRunsOnThePrimeRlImage) {
  beaker_creates();
  const auto preview = run_builtin_catalog(
      {"rl", "preview", "--toml", "examples/rl/rl.toml", "--workspace", "ai2/oe-agents-holmes"});
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  EXPECT_EQ(preview.err, "");
  EXPECT_FALSE(std::filesystem::exists(mount() / "primebeaker" / "bin")) << "preview staged";
  const auto submitted = run_builtin_catalog(
      {"rl", "submit", "--toml", "examples/rl/rl.toml", "--workspace", "ai2/oe-agents-holmes"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const auto receipt = json::parse(submitted.out);
  const auto spec = json::parse(read_file(receipt["spec_path"].get<std::string>()));
  const auto &task = spec["tasks"][0];
  EXPECT_EQ(task["image"], json({{"beaker", "01M0E15WYCV7T0J1CMCFPBQ21P"}}));
  EXPECT_EQ(task["command"], json::parse(preview.out)["spec"]["tasks"][0]["command"]);
  const std::string program = task["command"][0];
  EXPECT_EQ(receipt["staged_program"], program);
  EXPECT_EQ(std::filesystem::path(program).parent_path().parent_path(),
            mount() / "primebeaker" / "bin");
  EXPECT_EQ(task["command"], json::array({program, "node", "single", "rl"}));
  // What the container will run is this build.
  const auto version = run_primebeaker({"--version"});
  proc::SystemRunner runner;
  proc::Command staged_version;
  staged_version.argv = {program, "--version"};
  EXPECT_EQ(runner.run(staged_version).out, version.out);
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 1u);
  // `images default` names the image submit ran.
  const auto image =
      run_builtin_catalog({"images", "default", "--workspace", "ai2/oe-agents-holmes"}, false);
  EXPECT_EQ(image.out, "beaker://01M0E15WYCV7T0J1CMCFPBQ21P\n");
}

TEST_F(FirstHour, WithoutACatalogedImageSubmitRefusesBeforeStagingAndPreviewWarns) {
  beaker_creates();
  const std::string before = tree_digest(m_tmp.path());
  // A TOML only the cataloged fork reads (trainer.loss.aggregation), in a workspace without the
  // fork's Beaker images: refused, naming the Prime-RL it needs.
  const std::string fork_only = "examples/podman-terminal/rl.toml";
  const auto refused = run_builtin_catalog({"rl",
                                            "submit",
                                            "--toml",
                                            fork_only,
                                            "--workspace",
                                            "ai2/elsewhere",
                                            "--registry",
                                            "redis://registry:6379"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err,
            "primebeaker: error: no Prime-RL v0.7.1.dev83 image (prime_rl_training_base) is "
            "cataloged for workspace 'ai2/elsewhere': pass --image (`primebeaker images list` "
            "shows the cataloged images)\n");
  EXPECT_TRUE(m_beaker.calls().empty()) << "submit reached beaker";
  EXPECT_EQ(tree_digest(m_tmp.path()), before) << "a refused submit wrote (or staged) something";

  const auto preview = run_builtin_catalog({"rl",
                                            "preview",
                                            "--toml",
                                            fork_only,
                                            "--workspace",
                                            "ai2/elsewhere",
                                            "--registry",
                                            "redis://registry:6379"});
  ASSERT_EQ(preview.exit_code, 0) << preview.err;
  EXPECT_EQ(image_of(preview),
            R"({"beaker":"<no Prime-RL image cataloged for this workspace: pass --image>"})");
  EXPECT_NE(preview.err.find("warning: `rl submit` would refuse this launch: no Prime-RL "
                             "v0.7.1.dev83 image"),
            std::string::npos)
      << preview.err;
  // A TOML Prime-RL v0.8.0 reads too: Prime-RL's published image serves every workspace.
  const auto elsewhere = run_builtin_catalog(
      {"sft", "preview", "--toml", "examples/sft/sft.toml", "--workspace", "ai2/elsewhere"});
  ASSERT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  EXPECT_EQ(image_of(elsewhere), R"({"docker":"ghcr.io/primeintellect-ai/prime-rl:v0.8.0"})");
}

// --no-stage: the image's own primebeaker, so the default image is a runtime image.
TEST_F(FirstHour, NoStageRunsTheImagesBinaryOnTheRuntimeImage) {
  beaker_creates();
  const auto holmes = run({"rl",
                           "submit",
                           "--toml",
                           "examples/rl/rl.toml",
                           "--workspace",
                           "ai2/oe-agents-holmes",
                           "--no-stage"});
  ASSERT_EQ(holmes.exit_code, 0) << holmes.err;
  const auto receipt = json::parse(holmes.out);
  const auto spec = json::parse(read_file(receipt["spec_path"].get<std::string>()));
  EXPECT_EQ(spec["tasks"][0]["image"], json({{"beaker", "01TESTRUNTIMEHOLMES0000000"}}));
  EXPECT_EQ(spec["tasks"][0]["command"], json::array({"primebeaker", "node", "single", "rl"}));
  EXPECT_TRUE(receipt["staged_program"].is_null());
  EXPECT_FALSE(std::filesystem::exists(mount() / "primebeaker" / "bin")) << "--no-stage staged";
  const auto image =
      run({"images", "default", "--workspace", "ai2/oe-agents-holmes", "--no-stage"}, false);
  EXPECT_EQ(image.out, "beaker://01TESTRUNTIMEHOLMES0000000\n");

  const auto refused =
      run_builtin_catalog({"sft", "submit", "--toml", "examples/sft/sft.toml", "--no-stage"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--no-stage: no primebeaker-runtime image is cataloged for "
                             "workspace 'ai2/oe-agents'"),
            std::string::npos)
      << refused.err;
}

TEST_F(FirstHour, AnExplicitImageIsUsedAsGiven) {
  beaker_creates();
  for (const std::string image : {"beaker://01PRIMERLBASE", "ghcr.io/me/prime-rl:dev"}) {
    // Two launches of one run, each with its own id: a launch's spec file is written once.
    const auto result = run({"sft",
                             "submit",
                             "--toml",
                             "examples/sft/sft.toml",
                             "--image",
                             image,
                             "--prime-rl",
                             "v0.7.1.dev83",
                             "--wandb-run-id",
                             "first-hour"},
                            true,
                            {{"PRIMEBEAKER_IMAGE_CATALOG", ""},
                             {"PRIMEBEAKER_LAUNCH_ID", image.starts_with("beaker") ? "11111111111111111111111111111111"
                                                                        : "22222222222222222222222222222222"}});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_TRUE(std::regex_match(result.err, staged_line())) << result.err;
    const auto spec =
        json::parse(read_file(json::parse(result.out)["spec_path"].get<std::string>()));
    EXPECT_EQ(spec["tasks"][0]["image"],
              image.rfind("beaker://", 0) == 0 ? json({{"beaker", image.substr(9)}})
                                               : json({{"docker", image}}));
  }
  EXPECT_EQ(m_beaker.calls_matching({"experiment", "create"}).size(), 2u);
}

// Each Prime-RL v0.8.0 example previews as it is: Prime-RL's defaults (output_dir, W&B,
// deployment) are taken, and the card names each one (issue 36; they were "add this" before).
TEST_F(FirstHour, EachPrimeRlV080ExamplePreviewsWithPrimeRlsDefaultsNamed) {
  const auto corpus = shared_dir() / "corpus" / "prime-rl";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"v0.8.0-examples-basic-reverse-text-rl.toml",
       {"defaulted  no [deployment]: one node, deployment.num_train_gpus = 1, num_infer_gpus = 1 "
        "(Prime-RL's default)",
        "defaulted  output_dir = \"outputs/reverse-text\" (Prime-RL's outputs plus the run name, "
        "so that no two runs share checkpoints; --set output_dir=... to choose)"}},
      {"v0.8.0-examples-basic-reverse-text-sft.toml",
       {"defaulted  no [deployment]: one node, deployment.num_gpus = 1 (Prime-RL's default)",
        "defaulted  output_dir = \"outputs/v0.8.0-examples-basic-reverse-text-sft\" (Prime-RL's "
        "outputs plus the run name, so that no two runs share checkpoints; --set output_dir=... to "
        "choose)",
        "defaulted  no [wandb]: no W&B run (Prime-RL's default); the experiment is named "
        "'v0.8.0-examples-basic-reverse-text-sft' (--name to choose)",
        "W&B        off (the TOML has no W&B table)"}},
  };
  for (const auto &[name, lines] : cases) {
    write(name, read_file(corpus / name));
    const std::string program = name.find("sft") != std::string::npos ? "sft" : "rl";
    const auto card = run({program, "preview", "--toml", name, "--card"});
    ASSERT_EQ(card.exit_code, 0) << name << ": " << card.err;
    for (const auto &line : lines) {
      EXPECT_NE(card.out.find("  " + line + "\n"), std::string::npos)
          << name << ": no line '" << line << "' in\n"
          << card.out;
    }
  }
}

TEST_F(FirstHour, RelativeTomlPathsResolveAgainstTheWorkingDir) {
  // The submitter's cwd is outside the mount: what counts is where the container will look.
  RunOptions options;
  options.cwd = m_tmp.path();
  options.path_prepend = {m_fakes.bin()};
  options.env = {{"PRIMEBEAKER_LAUNCH_ID", "relative"},
                 {"PRIMEBEAKER_IMAGE_CATALOG", runtime_catalog().string()}};
  std::vector<std::string> args = {"sft", "preview", "--toml", at("examples/sft/sft.toml")};
  for (const auto &flag : mount_flags()) {
    args.push_back(flag);
  }
  const auto ok = run_primebeaker(args, options);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  write("escape.toml",
        replace_line(example_text("examples/sft/sft.toml"),
                     "output_dir = \"outputs/tiny-sft\"",
                     "output_dir = \"../outside\""));
  args[3] = at("escape.toml");
  const auto escaped = run_primebeaker(args, options);
  EXPECT_EQ(escaped.exit_code, 3);
  EXPECT_NE(normalized(escaped.err)
                .find("launch path must be under mounted path <TMP>/weka: <TMP>/outside "
                      "(output_dir at <TMP>/weka/escape.toml:6:14)"),
            std::string::npos)
      << escaped.err;
}

TEST_F(FirstHour, FlagsTheTopologyWouldIgnoreAreErrorsNamingThem) {
  const std::string before = tree_digest(m_tmp.path());
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"sft",
        "preview",
        "--toml",
        "examples/sft/sft.toml",
        "--registry",
        "redis://r:1",
        "--gateway-port",
        "99"},
       "--registry (only for RL), --gateway-port (only for multi-node RL) do not apply to "
       "single-node SFT: remove them"},
      {{"rl", "preview", "--toml", "examples/rl/rl.toml", "--gateway-port", "99"},
       "--gateway-port (only for multi-node RL) does not apply to single-node RL: remove it"},
      {{"rl", "preview", "--toml", "examples/rl/rl.toml", "--gateway-workers", "4"},
       "--gateway-workers (only for multi-node RL) does not apply to single-node RL: remove it"},
      {{"rl", "preview", "--toml", "examples/rl/rl.toml", "--required-service", "terminal=2"},
       "--required-service (only for multi-node RL) does not apply to single-node RL: remove it"},
      {{"rl", "submit", "--toml", "examples/rl/rl.toml", "--rendezvous-timeout-seconds", "60"},
       "--rendezvous-timeout-seconds (only for multi-node launches) does not apply to "
       "single-node RL: remove it"},
      {{"sft", "preview", "--toml", "examples/sft/sft.toml", "--wandb-entity", "team"},
       "--wandb-entity (only for RL) does not apply to single-node SFT: remove it"},
      {{"sft", "preview", "--toml", "data/multinode-sft.toml", "--registry", "redis://r:1"},
       "--registry (only for RL) does not apply to multi-node SFT: remove it"},
      {{"rl", "preview", "--toml", "examples/rl/rl.toml", "--gateway-port", "70000"},
       "--gateway-port must be in 1..65535, got 70000"},
      {{"rl",
        "preview",
        "--toml",
        "examples/multinode-rl/rl.toml",
        "--registry",
        "redis://r:1",
        "--gateway-port",
        "0"},
       "--gateway-port must be in 1..65535, got 0"},
      {{"rl", "preview", "--toml", "examples/rl/rl.toml", "--min-runtime-hours", "100000"},
       "--min-runtime-hours must be in 0..8760, got 100000"},
  };
  for (const auto &[args, message] : cases) {
    const auto result = run(args);
    EXPECT_EQ(result.exit_code, 2) << message << ": " << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, "primebeaker: error: " + message + "\n");
  }
  EXPECT_TRUE(m_beaker.calls().empty());
  EXPECT_EQ(tree_digest(m_tmp.path()), before);
}

TEST_F(FirstHour, ListFlagsSplitCommasOnlyBetweenWholeItems) {
  const auto result = run({"rl",
                           "preview",
                           "--toml",
                           "examples/multinode-rl/rl.toml",
                           "--registry",
                           "redis://r:1",
                           "--cluster",
                           "ai2/a,ai2/b",
                           "--cluster",
                           "ai2/c",
                           "--env",
                           "LIST=x,y",
                           "--env",
                           "ONE=1,TWO=2",
                           "--required-service",
                           "terminal=2,judge=1",
                           "--secret",
                           "S1=sec1,S2=sec2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto task = json::parse(result.out)["spec"]["tasks"][0];
  EXPECT_EQ(task["constraints"]["cluster"], json({"ai2/a", "ai2/b", "ai2/c"}));
  std::map<std::string, json> env;
  for (const auto &item : task["envVars"]) {
    env[item["name"]] = item;
  }
  EXPECT_EQ(env["LIST"]["value"], "x,y");
  EXPECT_EQ(env["ONE"]["value"], "1");
  EXPECT_EQ(env["TWO"]["value"], "2");
  EXPECT_EQ(env["S1"]["secret"], "sec1");
  EXPECT_EQ(env["S2"]["secret"], "sec2");
  EXPECT_EQ(env["REQUIRED_LITEREGISTRY_SERVICES"]["value"], R"({"judge":1,"terminal":2})");
  // A JSON list literal is taken as written, commas and all.
  const auto literal =
      run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--env", R"(["A=x,B=y"])"});
  ASSERT_EQ(literal.exit_code, 0) << literal.err;
  bool found = false;
  const auto literal_spec = json::parse(literal.out);
  for (const auto &item : literal_spec["spec"]["tasks"][0]["envVars"]) {
    if (item["name"] == "A") {
      found = true;
      EXPECT_EQ(item["value"], "x,B=y");
    }
  }
  EXPECT_TRUE(found);
}

} // namespace
} // namespace pb::test
