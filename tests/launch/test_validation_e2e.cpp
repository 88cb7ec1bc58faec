// SPDX-License-Identifier: MIT
// Every validation of docs/launch.md ("Validation order", "TOML keys") as a plan: the launch
// flags parsed by the real flag parser, the TOML read from a temp mount, make_plan run
// in-process; exit code and message checked, nothing written. A few cases also run the real
// binary (ValidationSmoke) for the one-line error, the exit code and no beaker call.
#include "launch_fixture.hpp"

#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/launch/launch.hpp>
#include <primebeaker/toml/value.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>

namespace pb::test {
namespace {

struct FlagCase {
  const char *name;
  std::vector<std::string> args;
  int exit_code;
  const char *message;
};

class Validation : public LaunchFixture {
protected:
  // `args` as for the binary ("rl", "preview", flags...), planned in-process with cwd = mount.
  void plan(const std::vector<std::string> &args) {
    launch::LaunchOptions options;
    CLI::App app;
    cli::Command command(app);
    launch::register_launch_flags(command, options);
    std::vector<std::string> flags = mount_flags();
    flags.insert(flags.end(), args.begin() + 2, args.end());
    std::reverse(flags.begin(), flags.end()); // CLI11 takes its vector reversed
    app.parse(flags);
    const auto path = options.toml.is_absolute() ? options.toml : mount() / options.toml;
    const auto document = std::filesystem::exists(path)
                              ? toml::Document::parse(read_file(path), options.toml.string())
                              : toml::Document::load(path);
    launch::LaunchInputs inputs;
    inputs.program = args[0] == "sft" ? launch::Program::sft : launch::Program::rl;
    inputs.document = &document;
    inputs.cwd = mount();
    inputs.config_path = path;
    inputs.launch_id = "0123456789abcdef0123456789abcdef";
    launch::resolve_launch_paths(options, inputs);
    (void)launch::make_plan(options, inputs);
  }

  void expect_error(const std::vector<std::string> &args,
                    int exit_code,
                    const std::string &message,
                    const std::string &label) {
    const std::string before = tree_digest(m_tmp.path());
    int code = 0;
    std::string text;
    try {
      plan(args);
    } catch (const Error &error) {
      code = error.code();
      text = error.what();
      for (const auto &line : error.context()) {
        text += "\n" + line;
      }
    } catch (const CLI::ParseError &error) {
      code = 2; // what the binary exits with for CLI11's own errors
      text = error.what();
    }
    EXPECT_EQ(code, exit_code) << label << ": " << text;
    EXPECT_NE(normalized(text).find(message), std::string::npos)
        << label << ": expected '" << message << "' in\n"
        << normalized(text);
    EXPECT_EQ(tree_digest(m_tmp.path()), before) << label << " changed the file tree";
  }

  // Writes `toml` as case.toml in the mount and previews it with `program`.
  void expect_toml_error(const std::string &program,
                         const std::string &toml,
                         const std::string &message,
                         std::vector<std::string> extra = {}) {
    write("case.toml", toml);
    std::vector<std::string> args = {program, "preview", "--toml", "case.toml"};
    args.insert(args.end(), extra.begin(), extra.end());
    expect_error(args, 3, message, message);
  }
};

TEST_F(Validation, Flags) {
  const std::vector<std::string> rl = {"rl", "preview", "--toml", "examples/rl/rl.toml"};
  const std::vector<std::string> multi = {
      "rl", "preview", "--toml", "examples/multinode-rl/rl.toml", "--registry", "redis://r:1"};
  const std::vector<FlagCase> cases = {
      {"priority",
       {"--priority", "low"},
       2,
       "--priority must be normal, high, or urgent, got 'low'"},
      {"workspace", {"--workspace", "noslash"}, 2, "--workspace must look like ACCOUNT/NAME"},
      {"min runtime negative",
       {"--min-runtime-hours", "-1"},
       2,
       "--min-runtime-hours must be in 0..8760, got -1"},
      {"min runtime text",
       {"--min-runtime-hours", "two"},
       2,
       "--min-runtime-hours expects a whole number, got 'two'"},
      {"env without =", {"--env", "FEATURE"}, 2, "--env expects NAME=VALUE, got 'FEATURE'"},
      {"env empty value", {"--env", "FEATURE="}, 2, "--env expects NAME=VALUE, got 'FEATURE='"},
      {"env bad name", {"--env", "1BAD=x"}, 2, "--env: '1BAD' is not an environment variable name"},
      {"secret empty name", {"--secret", "=x"}, 2, "--secret expects NAME=SECRETNAME, got '=x'"},
      {"reserved",
       {"--env", "CONFIG_PATH=/x"},
       2,
       "reserved environment names cannot be overridden: [CONFIG_PATH]"},
      {"value and secret",
       {"--env", "HF_TOKEN=x"},
       2,
       "environment names cannot be both values and secrets: [HF_TOKEN]"},
      {"secret vs wandb-secret",
       {"--secret", "WANDB_API_KEY=mine", "--wandb-secret", "team"},
       2,
       "--secret WANDB_API_KEY=mine and --wandb-secret=team both set WANDB_API_KEY"},
      {"secret vs hf-secret",
       {"--secret", "HF_TOKEN=mine", "--hf-secret", "other"},
       2,
       "--secret HF_TOKEN=mine and --hf-secret=other both set HF_TOKEN"},
      {"empty cluster", {"--cluster", ""}, 2, "at least one non-empty Beaker cluster is required"},
      {"bad cluster list",
       {"--cluster", "[1,2]"},
       2,
       "--cluster: [1,2] is not a JSON list of strings"},
      {"relative mount",
       {"--mount-path", "weka"},
       2,
       "--mount-path must be an absolute container path, got 'weka'"},
      {"working dir outside mount",
       {"--working-dir", "/elsewhere"},
       2,
       "launch path must be under mounted path <TMP>/weka: /elsewhere (--working-dir)"},
  };
  for (const auto &c : cases) {
    auto args = rl;
    args.insert(args.end(), c.args.begin(), c.args.end());
    expect_error(args, c.exit_code, c.message, c.name);
  }
  const std::vector<FlagCase> multi_cases = {
      {"rendezvous",
       {"--rendezvous-timeout-seconds", "0"},
       2,
       "--rendezvous-timeout-seconds must be in 1..1000000000, got 0"},
      {"required service text",
       {"--required-service", "terminal=x"},
       2,
       "--required-service expects NAME=COUNT, got terminal='x'"},
      {"required service shape",
       {"--required-service", "terminal"},
       2,
       "--required-service expects NAME=COUNT, got 'terminal'"},
      {"required service zero",
       {"--required-service", "terminal=0"},
       2,
       "--required-service counts must be positive"},
      {"gateway port", {"--gateway-port", "70000"}, 2, "--gateway-port must be in 1..65535"},
      {"gateway workers",
       {"--gateway-workers", "0"},
       2,
       "--gateway-workers must be in 1..100000, got 0"},
  };
  for (const auto &c : multi_cases) {
    auto args = multi;
    args.insert(args.end(), c.args.begin(), c.args.end());
    expect_error(args, c.exit_code, c.message, c.name);
  }
  // Without --registry a multi-node run gets a file registry on the mount (docs/launch.md
  // "Registry"); a registry it cannot use is refused by name.
  expect_error(
      {"rl", "preview", "--toml", "examples/multinode-rl/rl.toml", "--registry", "ftp://x"},
      2,
      "--registry: invalid registry URI ftp://x: unsupported scheme 'ftp'",
      "registry");
  expect_error({"rl", "preview", "--toml", "missing.toml"}, 3, "missing.toml", "missing file");
  // The TOML itself must be under the mount.
  write("../outside.toml", example_text("examples/rl/rl.toml"));
  expect_error({"rl", "preview", "--toml", at("../outside.toml")},
               2,
               "launch path must be under mounted path <TMP>/weka: <TMP>/outside.toml (--toml)",
               "toml outside mount");
}

TEST_F(Validation, DeploymentAndGeneration) {
  const std::string rl = example_text("examples/rl/rl.toml");
  // Without a type Prime-RL's deployment is single_node; a misspelt key is Prime-RL's to refuse.
  expect_toml_error("rl",
                    replace_line(rl, "type = \"single_node\"", "kind = \"single_node\""),
                    "case.toml:11:1: unknown key deployment.kind");
  expect_toml_error("rl",
                    replace_line(rl, "type = \"single_node\"", "type = \"cluster\""),
                    "case.toml:11:8: unsupported deployment.type 'cluster'");
  expect_toml_error(
      "rl", "[deployment]\ntype = 7\n", "case.toml:2:8: training TOML needs deployment.type");
  // [resume] makes it a v0.9 TOML: its v0.8.0 keys are named with where v0.9 moved them.
  expect_toml_error("rl",
                    rl + "\n[resume]\nstep = 3\n",
                    "unknown key wandb (RLConfig has no such key); Prime-RL v0.9 moved it to "
                    "monitors.wandb (#3275)");
  expect_toml_error(
      "rl",
      "[deployment]\ntype = \"single_node\"\n\n[[orchestrator.train.env]]\nid = \"x\"\n",
      "this is a Prime-RL v0.6-v0.7 config (orchestrator.train.env at case.toml:4:1)");
  expect_toml_error("rl",
                    "[deployment]\ntype = \"single_node\"\n[[orchestrator.env]]\nid = \"x\"\n",
                    "this is a Prime-RL v0.5 config");
  expect_toml_error("rl", "trainer_gpu_ids = [1]\n", "this is a Prime-RL v0.2-v0.4 config");
  expect_toml_error("rl", "x = [", "case.toml:1:");
}

TEST_F(Validation, SingleNodeSftKeys) {
  const std::string sft = example_text("examples/sft/sft.toml");
  expect_toml_error(
      "sft",
      replace_line(sft, "num_gpus = 2", "num_gpus = 1"),
      "single-node SFT requires deployment.num_gpus (1) == deployment.gpus_per_node (2)");
  expect_toml_error("sft",
                    replace_line(sft, "num_gpus = 2", "num_gpus = 2.0"),
                    "deployment.num_gpus must be a positive integer, got 2.0 (float)");
  expect_toml_error("sft",
                    replace_line(sft, "num_gpus = 2", "num_gpus = true"),
                    "deployment.num_gpus must be a positive integer, got true (bool)");
  expect_toml_error("sft",
                    replace_line(sft, "max_steps = 2", "max_steps = 0"),
                    "case.toml:5:13: max_steps must be a positive integer, got 0 (integer)");
  expect_toml_error("sft",
                    replace_once(sft, "interval = 1\neval", "interval = 3\neval"),
                    "SFT val.interval (3) must not exceed max_steps (2)");
  expect_toml_error("sft",
                    replace_line(sft, "[val.data]", "[val.dataset]"),
                    "case.toml:28:2: val.data is required: [val] has no data");
  expect_toml_error("sft",
                    replace_line(sft, "name = \"primebeaker-example-sft\"", "title = \"x\""),
                    "unknown key wandb.title");
  expect_toml_error("sft",
                    replace_line(sft, "name = \"primebeaker-example-sft\"", "name = \"a/b\""),
                    "wandb.name 'a/b' cannot be a Beaker experiment name");
  expect_toml_error("sft",
                    replace_line(sft, "project = \"primebeaker-examples\"", "project = \"\""),
                    "wandb.project must be a non-empty string");
  expect_toml_error("sft",
                    replace_line(sft, "offline = true", "offline = \"yes\""),
                    "wandb.offline must be true or false");
  expect_toml_error(
      "sft",
      replace_line(sft, "output_dir = \"outputs/tiny-sft\"", "output_dir = \"/elsewhere\""),
      "launch path must be under mounted path <TMP>/weka: /elsewhere (output_dir at "
      "case.toml:6:14)");
  expect_toml_error(
      "sft",
      replace_line(sft, "type = \"single_node\"", "type = \"multi_node\"\nnum_nodes = 1"),
      "multi-node SFT needs deployment.num_nodes >= 2");
  expect_toml_error(
      "sft",
      example_text("examples/rl/rl.toml"),
      "case.toml: this looks like an RL TOML (it has [orchestrator]); use `primebeaker rl`");
  expect_toml_error("rl", example_text("examples/sft/sft.toml"), "this looks like an SFT TOML");
}

TEST_F(Validation, SingleNodeRlKeys) {
  const std::string rl = example_text("examples/rl/rl.toml");
  expect_toml_error("rl",
                    replace_line(rl, "gpus_per_node = 2", "gpus_per_node = 1"),
                    "single-node RL needs deployment.num_train_gpus (1) + num_infer_gpus (1) <= "
                    "gpus_per_node (1)");
  expect_toml_error("rl",
                    replace_line(rl, "num_infer_gpus = 1", "num_infer_gpus = 0"),
                    "deployment.num_infer_gpus must be a positive integer, got 0");
  const auto no_orchestrator = rl.substr(0, rl.find("[orchestrator]"));
  expect_toml_error(
      "rl", no_orchestrator, "case.toml: single-node RL needs a [orchestrator] table");
  // A bad environment argument fails the preview, not the Verifiers worker after scheduling.
  expect_toml_error(
      "rl",
      replace_line(rl, "split = \"validation\"", "split = \"validation\"\nmax_turns = 3"),
      "orchestrator.eval.source[0].legacy.args.max_turns");
}

TEST_F(Validation, MultiNodeRlAccounting) {
  const std::string rl = example_text("examples/multinode-rl/rl.toml");
  const std::vector<std::string> registry = {"--registry", "redis://r:1"};
  expect_toml_error("rl",
                    replace_line(rl, "dp_replicate = 2", "dp_replicate = 8"),
                    "trainer GPU count trainer.model.cp x dp_replicate = 16 exceeds "
                    "deployment.gpus_per_node (8)",
                    registry);
  expect_toml_error(
      "rl",
      replace_line(rl, "tp = 2", "tp = 3"),
      "each inference-bearing GPU slice must be divisible by inference.parallel.tp (3)",
      registry);
  expect_toml_error("rl",
                    replace_line(rl, "dp = 6", "dp = 5"),
                    "inference.parallel.dp (5) and inference.api_server_count (6) must both equal "
                    "the external-LB rank count (12 inference GPUs / tp 2 = 6)",
                    registry);
  expect_toml_error("rl",
                    replace_line(rl, "tp = 2", "tp = 2.0"),
                    "inference.parallel.tp must be a positive integer, got 2.0 (float)",
                    registry);
  expect_toml_error("rl",
                    replace_line(rl, "[inference.parallel]", "[inference.para]"),
                    "inference.parallel.dp (1) and inference.api_server_count (6) must both equal "
                    "the external-LB rank count (12 inference GPUs / tp 1 = 12)",
                    registry);
  expect_toml_error("rl",
                    replace_line(rl, "num_infer_nodes = 2", "# none"),
                    "deployment.num_infer_nodes is required for multi-node RL",
                    registry);
  expect_toml_error("rl",
                    replace_line(rl,
                                 "local_search_model_path = \"localsearch:example-index\"",
                                 "local_search_model_path = \"\""),
                    "local_search_model_path must be a non-empty string",
                    registry);
  // Expert parallelism takes Prime-RL's placement, whose config validator wants one DP group
  // of every inference GPU of the replica (2 nodes x 8 GPUs / tp 2 = dp 8).
  expect_toml_error("rl",
                    replace_line(rl,
                                 "api_server_count = 6",
                                 "api_server_count = 6\nenable_expert_parallel = true"),
                    "expert parallelism across 2 inference nodes needs inference.parallel.dp x tp "
                    "= the replica's 16 GPUs, got 6 x 2",
                    registry);
  expect_toml_error(
      "rl",
      replace_line(rl, "api_server_count = 6", "api_server_count = 6\nrouter = \"None\""),
      "multi-node RL requires inference with a router",
      registry);
}

// The binary itself: one error line, the exit code, nothing written, beaker never run.
class ValidationSmoke : public LaunchFixture {
protected:
  void
  expect_error(const std::vector<std::string> &args, int exit_code, const std::string &message) {
    const std::string before = tree_digest(m_tmp.path());
    const auto result = run(args);
    EXPECT_EQ(result.exit_code, exit_code) << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_NE(normalized(result.err).find(message), std::string::npos) << normalized(result.err);
    EXPECT_EQ(result.err.rfind("primebeaker: error: ", 0), 0u) << result.err;
    EXPECT_EQ(tree_digest(m_tmp.path()), before);
    EXPECT_TRUE(m_beaker.calls().empty());
  }
};

// What the mixed layout cannot place takes Prime-RL's own placement instead of a refusal
// (docs/launch.md "Placements"): several trainer nodes, several inference replicas, expert
// parallelism, disaggregated inference.
TEST_F(Validation, WhatTheMixedLayoutCannotPlaceTakesPrimeRlsPlacement) {
  const std::string rl = example_text("examples/multinode-rl/rl.toml");
  const std::vector<std::string> cases = {
      replace_line(rl, "num_train_nodes = 1", "num_train_nodes = 2"),
      replace_line(rl, "num_infer_replicas = 1", "num_infer_replicas = 2"),
      replace_line(replace_line(rl, "dp = 6", "dp = 8"),
                   "api_server_count = 6",
                   "api_server_count = 6\nenable_expert_parallel = true"),
      rl + "\n[inference.deployment]\ntype = \"disaggregated\"\n",
  };
  for (const auto &to : cases) {
    write("case.toml", to);
    const auto result = run({"rl", "preview", "--toml", "case.toml", "--registry", "redis://r:1"});
    EXPECT_EQ(result.exit_code, 0) << to << "\n" << result.err;
    EXPECT_NE(result.out.find("\"PRIME_RL_PLACEMENT\""), std::string::npos) << to;
    EXPECT_NE(result.out.find("multi-node RL (Prime-RL's placement)"), std::string::npos) << to;
  }
}

TEST_F(ValidationSmoke, FlagTomlAndReplicaRefusalsThroughTheBinary) {
  expect_error({"rl", "preview"}, 2, "--toml is required");
  expect_error(
      {"rl", "preview", "--toml", "examples/rl/rl.toml", "--colour", "red"}, 2, "--colour");
  expect_error({"rl", "preview", "--toml", "examples/rl/rl.toml", "--priority", "low"},
               2,
               "--priority must be normal, high, or urgent, got 'low'");
  write("case.toml", "[deployment]\ntype = 7\n");
  expect_error({"rl", "preview", "--toml", "case.toml"},
               3,
               "case.toml:2:8: training TOML needs deployment.type");
  // Formerly accepted by preview and refused by every replica after the synchronized start.
  expect_error(
      {"rl", "preview", "--toml", "examples/multinode-rl/rl.toml", "--registry", "rediss://h:6379"},
      2,
      "--registry: cannot connect to rediss://h:6379: rediss:// (Redis over TLS) is not "
      "supported by this build");
  write("case.toml",
        example_text("examples/multinode-rl/rl.toml") +
            "\n[inference.deployment]\ntype = \"prefill_only\"\n");
  expect_error({"rl", "preview", "--toml", "case.toml", "--registry", "redis://r:1"},
               3,
               "inference.deployment.type 'prefill_only' is not one Prime-RL v0.8.0 knows");
  // What Prime-RL refuses behind llm-d's router: one line at the key, before the replicas start.
  write("case.toml",
        replace_line(replace_line(example_text("examples/multinode-rl/rl.toml"),
                                  "num_train_nodes = 1",
                                  "num_train_nodes = 2"),
                     "[inference]",
                     "[inference]\nenable_return_routed_experts = true") +
            "\n[inference.router]\ntype = \"llm-d\"\n");
  expect_error({"rl",
                "preview",
                "--toml",
                "case.toml",
                "--image-holds",
                "vllm-router,llm-d",
                "--image",
                "beaker://team/llmd",
                "--prime-rl",
                "v0.8.0",
                "--registry",
                "redis://r:1"},
               3,
               "case.toml:54:32: inference.enable_return_routed_experts does not work behind the "
               "llm-d router");
}

// A YAML file given as --toml is named as YAML in one line (not "expected '=' after the key"),
// whether its name or its first line gives it away; a TOML typo keeps FILE:LINE:COL, and TOML
// content named .yaml is simply TOML.
TEST_F(ValidationSmoke, YamlGivenAsTomlIsNamedAsYaml) {
  write("run.yaml", "trainer:\n  lr: 1\n");
  expect_error({"rl", "preview", "--toml", "run.yaml"},
               3,
               "run.yaml looks like YAML, not TOML (line 1: 'trainer:')");
  write("copied.toml", "# from the run YAML\n\nmodel:\n  name: x\n");
  expect_error({"sft", "preview", "--toml", "copied.toml"},
               3,
               "copied.toml looks like YAML, not TOML (line 3: 'model:')");
  const auto one_line = run({"rl", "preview", "--toml", "run.yaml"});
  EXPECT_EQ(std::count(one_line.err.begin(), one_line.err.end(), '\n'), 1) << one_line.err;
  write("case.toml", example_text("examples/rl/rl.toml") + "\nlr: 3\n");
  expect_error({"rl", "preview", "--toml", "case.toml"}, 3, "case.toml:");
  EXPECT_EQ(run({"rl", "preview", "--toml", "case.toml"}).err.find("YAML"), std::string::npos);
  write("rl.yaml", example_text("examples/rl/rl.toml"));
  const auto toml_named_yaml = run({"rl", "preview", "--toml", "rl.yaml"});
  EXPECT_EQ(toml_named_yaml.exit_code, 0) << toml_named_yaml.err;
}

// The TOML given as a positional is named with the flag it belongs to, for preview, submit and
// sweep (CLI11 said "--toml is required", or that the word was not expected).
TEST_F(ValidationSmoke, TomlGivenAsPositionalNamesTheFlag) {
  const std::string rl = "examples/rl/rl.toml";
  const std::string refused = "primebeaker: error: a positional " + rl + ": pass it as --toml ";
  expect_error({"rl", "preview", rl}, 2, refused + rl + "\n");
  expect_error({"sft", "submit", rl}, 2, refused + rl + "\n");
  expect_error({"rl", "sweep", rl, "--set", "a=1,2"}, 2, refused + rl + "\n");
  expect_error({"rl", "preview", "--toml", rl, "other.toml"},
               2,
               "primebeaker: error: a positional other.toml: pass it as --toml other.toml\n");
  // Words a list flag takes are its values, not positionals.
  const auto sweep =
      run({"rl", "sweep", "--toml", "examples/rl/rl.toml", "--set", "a=1", "b=2", "--dry-run"});
  EXPECT_EQ(sweep.err.find("a positional"), std::string::npos) << sweep.err;
}

TEST_F(ValidationSmoke, MisspeltPrioritySuggestsTheClosest) {
  expect_error({"rl", "preview", "--toml", "examples/rl/rl.toml", "--priority", "hgh"},
               2,
               "--priority must be normal, high, or urgent, got 'hgh'; did you mean 'high'?\n");
  expect_error({"rl",
                "preview",
                "--toml",
                "examples/multinode-rl/rl.toml",
                "--registry",
                "redis://r:1",
                "--controller-priority",
                "nromal"},
               2,
               "--controller-priority: unknown priority 'nromal'; did you mean 'normal'?\n");
}

// A copied example whose environment names a dataset file that is not there is refused at
// preview (and so at submit), at the key's line:column; a path on a filesystem this machine does
// not see is only a note (-v).
TEST_F(ValidationSmoke, AMissingLocalDatasetFileIsRefusedAtPreview) {
  const std::string rl = example_text("examples/rl/rl.toml");
  write("case.toml",
        replace_once(rl, "\"examples/rl/data/train.jsonl\"", "\"examples/rl/data/trian.jsonl\""));
  const std::string message =
      "primebeaker: error: case.toml:42:11: orchestrator.train.source[0].legacy.args.dataset: no "
      "such file: <TMP>/weka/examples/rl/data/trian.jsonl (relative to <TMP>/weka)\n";
  for (const std::string command : {"preview", "submit"}) {
    expect_error({"rl", command, "--toml", "case.toml"}, 3, message);
  }
  expect_error({"rl", "preview", "--toml", "case.toml", "--write-spec"}, 3, message);
  const auto result = run({"rl", "preview", "--toml", "case.toml"});
  EXPECT_EQ(normalized(result.err), message); // the one line

  // Under the mount, but on a bucket this machine does not have: previewed, with a note.
  write("case.toml",
        replace_once(rl, "\"examples/rl/data/train.jsonl\"", "\"other-bucket/data/train.jsonl\""));
  const auto unseen = run({"rl", "preview", "-v", "--toml", "case.toml"});
  EXPECT_EQ(unseen.exit_code, 0) << unseen.err;
  EXPECT_NE(normalized(unseen.err)
                .find("primebeaker: info: case.toml:42:11: "
                      "orchestrator.train.source[0].legacy.args.dataset: "
                      "<TMP>/weka/other-bucket/data/train.jsonl is not visible from this machine "
                      "(no <TMP>/weka/other-bucket/data here): not checked\n"),
            std::string::npos)
      << unseen.err;
}

} // namespace
} // namespace pb::test
