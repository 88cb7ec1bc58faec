// SPDX-License-Identifier: MIT
// `primebeaker evaluation ...` end to end: the real binary, the fake LiteRegistry on PYTHONPATH,
// stand-in templates in a test-owned --template-dir, and the table-driven fake beaker, which tells
// LiteRegistry's service create (`-n NAME`) from the evaluator create (`--name NAME`).
#include "../services/fake_literegistry.hpp"
#include "test_support.hpp"

#include <primebeaker/registry/records.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>

namespace pb::test {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;
namespace stdfs = std::filesystem;

stdfs::path corpus_dir() {
  return shared_dir() / "corpus" / "primebeaker-eval-configs";
}

std::vector<std::string> corpus_yamls() {
  std::vector<std::string> files;
  for (const auto &entry : stdfs::directory_iterator(corpus_dir())) {
    if (entry.path().extension() == ".yaml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

const char *k_stand_in = R"({"stand_in": true, "messages": []})";

std::string snapshot_name() {
  return registry::sha256_hex(k_stand_in) + ".json";
}

class EvaluationE2E : public ::testing::Test {
protected:
  void SetUp() override {
    write_fake_literegistry(m_dir / "py");
    // A stand-in for every template the corpus references, under a test-owned template dir.
    const std::regex reference("template_path:\\s*(\\S+)");
    for (const auto &file : corpus_yamls()) {
      const auto text = read_file(file);
      for (std::sregex_iterator it(text.begin(), text.end(), reference), end; it != end; ++it) {
        write_file(m_dir / "templates-root" / (*it)[1].str(), k_stand_in);
      }
    }
  }

  RunResult run(std::vector<std::string> args, const std::map<std::string, std::string> &env = {}) {
    RunOptions options;
    options.env = {{"PYTHONPATH", (m_dir / "py").string()},
                   {"FAKE_LITEREGISTRY_RECORD", (m_dir / "records.jsonl").string()}};
    for (const auto &[name, value] : env) {
      options.env[name] = value;
    }
    options.path_prepend = {m_fakes.bin()};
    options.cwd = m_dir.path();
    answer_beaker();
    return run_primebeaker(args, options);
  }

  // What beaker answers in the next run: the service create (`-n`), the evaluator create
  // (`--name`, whose spec is kept), and the service stop; each can be made to fail.
  bool service_fails = false;
  bool evaluator_fails = false;
  bool evaluator_terminated = false; // SIGTERM reaches primebeaker while beaker runs
  bool stop_fails = false;

  void answer_beaker() {
    const std::vector<std::string> create = {"--format", "json", "experiment", "create"};
    auto with = [&create](const std::string &word) {
      auto prefix = create;
      prefix.push_back(word);
      return prefix;
    };
    FakeAnswer evaluator{R"([{"id": "01EVAL", "name": "x"}])"
                         "\n"};
    if (evaluator_terminated) {
      evaluator = {"", 1, "terminated\n"};
      evaluator.signal_caller = SIGTERM;
    } else if (evaluator_fails) {
      evaluator = {"", 1, "cluster ai2/jupiter is full\n"};
    }
    evaluator.keep_last_argument = true;
    m_beaker.clear()
        .on_sequence(with("-n"),
                     {service_fails ? FakeAnswer{"", 1, "no quota for services\n"}
                                    : FakeAnswer{R"({"id": "01SERVICE"})"
                                                 "\n"}})
        .on_sequence(with("--name"), {evaluator})
        .on_sequence({"experiment", "stop"},
                     {stop_fails ? FakeAnswer{"", 1, "permission denied\n"} : FakeAnswer{}});
  }

  std::vector<std::vector<std::string>> beaker_calls() const {
    std::vector<std::vector<std::string>> calls;
    for (const auto &call : m_beaker.calls()) {
      calls.push_back(std::vector<std::string>(call.argv.begin() + 1, call.argv.end()));
    }
    return calls;
  }

  std::vector<json> records() const { return fake_literegistry_records(m_dir / "records.jsonl"); }

  std::string template_dir() const { return (m_dir / "templates-root").string(); }

  // A standard YAML whose run_dir lives under /weka (mounted at m_dir/weka for submit tests).
  stdfs::path write_standard(const std::string &extra_top = "") {
    const auto path = m_dir / "cfg" / "eval.yaml";
    write_file(path,
               "image: beaker://01IMG\n" + extra_top +
                   "evaluation:\n"
                   "  model: /weka/models/step_400\n"
                   "  run_dir: /weka/evals/run-a\n"
                   "  datasets: [healthbench]\n"
                   "  verifier_tools: terminal\n"
                   "  verifier_prompt_chat_template_path: templates/t.json\n");
    write_file(m_dir / "cfg" / "templates" / "t.json", k_stand_in);
    return path;
  }

  TempDir m_dir;
  TempDir m_fake_root; // apart from m_dir, whose digest the dry-run tests compare
  FakeBin m_fakes{m_fake_root.path()};
  FakeBeaker m_beaker{m_fakes};
};

template <typename Json> const Json *find_env(const Json &spec, const std::string &name) {
  for (const auto &entry : spec["tasks"][0]["envVars"]) {
    if (entry["name"] == name) {
      return &entry;
    }
  }
  return nullptr;
}

json recorded_config(const json &record) {
  json out = json::object();
  for (const auto &[key, value] : record["config"].items()) {
    out[key] = value["value"];
  }
  return out;
}

TEST_F(EvaluationE2E, EveryCorpusYamlPreviewsInOneProcess) {
  auto args = std::vector<std::string>{
      "evaluation", "preview", "--image", "beaker://01TEST", "--template-dir", template_dir()};
  const auto files = corpus_yamls();
  ASSERT_GE(files.size(), 106U);
  args.insert(args.end(), files.begin(), files.end());
  const auto before = tree_digest(m_dir.path());
  const auto result = run(args, {{"FAKE_LITEREGISTRY_RECORD", ""}});
  ASSERT_EQ(result.exit_code, 0) << result.err.substr(0, 4000);
  const auto previews = ordered::parse(result.out);
  ASSERT_EQ(previews.size(), files.size());
  std::map<std::string, int> kinds;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto &preview = previews[i];
    const auto &evaluation = preview.contains("primebeaker") ? preview["primebeaker"] : preview;
    std::vector<std::string> keys;
    for (const auto &[key, value] : evaluation.items()) {
      keys.push_back(key);
    }
    ASSERT_EQ(keys,
              (std::vector<std::string>{
                  "service", "evaluation_experiment_name", "coordination_root", "evaluation_spec"}))
        << files[i];
    const auto *module = find_env(evaluation["evaluation_spec"], "PRIMEBEAKER_EVALUATION_MODULE");
    ASSERT_NE(module, nullptr) << files[i];
    ++kinds[(*module)["value"].get<std::string>()];
    // Every template reference became the stand-in's snapshot path.
    EXPECT_NE(evaluation["evaluation_spec"].dump().find(snapshot_name()), std::string::npos)
        << files[i];
  }
  EXPECT_EQ(kinds["jtc.eval.worker"], 100);
  EXPECT_EQ(kinds["jtc.eval.workflow_worker"], 3);
  EXPECT_EQ(kinds["jtc.eval.rejection_sampling_worker"], 1);
  EXPECT_EQ(kinds["jtc.eval.search_worker"], 1);
  EXPECT_EQ(kinds["jtc.eval.rubric_judge_audit_worker"], 1);
  EXPECT_TRUE(beaker_calls().empty());
  EXPECT_EQ(tree_digest(m_dir.path()), before); // preview wrote nothing, not even snapshots
}

// services.shared_dir defaults to the user's shared dir (docs/config.md), never one person's.
// With neither $USER nor $LOGNAME (most containers and CI jobs), the name is the passwd entry's.
TEST_F(EvaluationE2E, SharedDirIsTheUsersEvenWithoutUserOrLogname) {
  const std::vector<std::string> args = {"evaluation",
                                         "preview",
                                         (corpus_dir() / "glm_2b_rl_step_400.yaml").string(),
                                         "--image",
                                         "beaker://01IMG",
                                         "--template-dir",
                                         template_dir()};
  const struct passwd *entry = ::getpwuid(::geteuid());
  if (entry == nullptr || entry->pw_name == nullptr) {
    GTEST_SKIP() << "this uid has no passwd entry";
  }
  const std::string name = entry->pw_name;
  const auto nameless = run(args, {{"USER", ""}, {"LOGNAME", ""}});
  ASSERT_EQ(nameless.exit_code, 0) << nameless.err;
  EXPECT_EQ(json::parse(nameless.out)["coordination_root"],
            "/weka/" + name + "/.literegistry-coop/jtceval-fake");
  // $LOGNAME comes before the passwd entry, $USER before both.
  const auto logname = run(args, {{"USER", ""}, {"LOGNAME", "lee"}});
  ASSERT_EQ(logname.exit_code, 0) << logname.err;
  EXPECT_EQ(json::parse(logname.out)["coordination_root"],
            "/weka/lee/.literegistry-coop/jtceval-fake");
  const auto configured = run(args, {{"USER", ""}, {"PRIMEBEAKER_SHARED_DIR", "/weka/team/me"}});
  ASSERT_EQ(configured.exit_code, 0) << configured.err;
  EXPECT_EQ(json::parse(configured.out)["coordination_root"],
            "/weka/team/me/.literegistry-coop/jtceval-fake");
}

// The evaluator's mount, bucket and stage come from the user's config (docs/config.md): the
// mount_path and dataset keys, the worker staged under scratch_dir when that is on the mount.
TEST_F(EvaluationE2E, MountDatasetAndStageComeFromTheConfig) {
  const auto yaml = m_dir / "cfg" / "mnt.yaml";
  write_file(yaml,
             std::regex_replace(read_file(corpus_dir() / "glm_2b_rl_step_400.yaml"),
                                std::regex("/weka/"),
                                "/mnt/team/"));
  const std::vector<std::string> args = {"evaluation",
                                         "preview",
                                         yaml.string(),
                                         "--image",
                                         "beaker://01IMG",
                                         "--template-dir",
                                         template_dir()};
  // Without the config, the YAML's run_dir is not under the built-in mount.
  const auto refused = run(args, {{"XDG_CONFIG_HOME", (m_dir / "xdg").string()}});
  EXPECT_EQ(refused.exit_code, 3) << refused.out;
  EXPECT_NE(refused.err.find("must be under mounted path /weka"), std::string::npos) << refused.err;
  write_file(m_dir / "xdg" / "primebeaker" / "config.toml",
             "mount_path = \"/mnt/team\"\ndataset = \"team-bucket\"\n"
             "scratch_dir = \"/mnt/team/scratch\"\n");
  const auto result = run(args, {{"XDG_CONFIG_HOME", (m_dir / "xdg").string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto preview = json::parse(result.out);
  EXPECT_EQ(preview["coordination_root"], "/mnt/team/jdoe/.literegistry-coop/jtceval-fake");
  const auto &spec = preview["evaluation_spec"];
  EXPECT_EQ(spec["tasks"][0]["datasets"],
            json::parse(R"([{"mountPath": "/mnt/team", "source": {"weka": "team-bucket"}}])"));
  const auto stage = run_primebeaker({"stage", "--dry-run", "--scratch-dir", "/mnt/team/scratch"});
  ASSERT_EQ(stage.exit_code, 0) << stage.err;
  EXPECT_EQ(spec["tasks"][0]["command"][0], json::parse(stage.out)["program"]);
}

TEST_F(EvaluationE2E, StandardPreviewFieldByField) {
  const auto result = run({"evaluation",
                           "preview",
                           (corpus_dir() / "glm_2b_rl_step_400.yaml").string(),
                           "--image",
                           "beaker://01IMG",
                           "--template-dir",
                           template_dir()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto preview = json::parse(result.out);
  const auto recs = records();
  ASSERT_EQ(recs.size(), 1U);
  EXPECT_EQ(recs[0]["call"], "preview");
  EXPECT_EQ(recs[0]["config"]["service_clusters"]["type"], "tuple");
  EXPECT_EQ(recorded_config(recs[0]), json::parse(R"({
    "registry": null, "python_replicas": 0, "terminal_replicas": 8, "web_search_replicas": 0,
    "local_search_replicas": 0, "local_search_corpus_jsonl": null, "local_search_index_dir": null,
    "local_search_service_name": null,
    "generation_model": "/weka/gfaria/prime_sft/outputs/qwen35_2b_glm52_sft_c0e8854bb5143cac_rl_5k_161bc7548bdec992_step400/weights/step_400",
    "generation_replicas": 8, "generation_tp": 1, "max_model_len": 32768,
    "max_num_batched_tokens": 65536, "max_num_seqs": null, "gateway_workers": 8,
    "service_clusters": ["ai2/jupiter"], "model_cluster": "ai2/holmes",
    "service_priority": "high", "model_priority": "high", "min_runtime_hours": 1,
    "omit_service_resources": true, "name_prefix": "jtceval", "shared_dir": "/weka/jdoe",
    "workspace": "ai2/oe-agents-holmes", "budget": "ai2/oe-omai"})"));
  EXPECT_EQ(preview["service"]["experiment_name"], "jtceval-fake");
  EXPECT_EQ(preview["evaluation_experiment_name"], "glm_2b_rl_step_400-ceval-fake");
  EXPECT_EQ(preview["coordination_root"], "/weka/jdoe/.literegistry-coop/jtceval-fake");
  const auto &spec = preview["evaluation_spec"];
  EXPECT_EQ(spec["description"], "PrimeBeaker managed Python evaluation: glm_2b_rl_step_400");
  EXPECT_EQ(spec["budget"], "ai2/oe-omai");
  const auto &task = spec["tasks"][0];
  // The worker is this build, staged on the mount (docs/staging.md).
  const auto stage = run_primebeaker({"stage", "--dry-run", "--scratch-dir", "/weka"});
  ASSERT_EQ(stage.exit_code, 0) << stage.err;
  EXPECT_EQ(task["command"], json({json::parse(stage.out)["program"], "evaluation", "worker"}));
  EXPECT_EQ(task["image"], json({{"beaker", "01IMG"}}));
  EXPECT_EQ(task["context"],
            json::parse(R"({"priority": "high", "minRuntime": "1h", "autoResume": true})"));
  EXPECT_EQ(task["constraints"], json::parse(R"({"cluster": ["ai2/jupiter"]})"));
  EXPECT_FALSE(task.contains("resources"));
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID"))["value"],
            "<created-at-launch>");
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_REQUIRED_SERVICES_JSON"))["value"],
            "{\"/weka/gfaria/prime_sft/outputs/"
            "qwen35_2b_glm52_sft_c0e8854bb5143cac_rl_5k_161bc7548bdec992_step400/weights/"
            "step_400\": 1, \"terminal\": 1}");
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_READINESS_TIMEOUT_SECONDS"))["value"], "7200.0");
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_RUN_DIR"))["value"],
            "/weka/gfaria/jtc-artifacts/evals/glm_2b_rl_step_400");
  EXPECT_EQ(find_env(spec, "PRIMEBEAKER_REGISTRY"), nullptr);
  EXPECT_EQ((*find_env(spec, "BEAKER_TOKEN"))["secret"], "BEAKER_TOKEN");
  const auto workload =
      json::parse((*find_env(spec, "JTCEVAL_EVALUATION_JSON"))["value"].get<std::string>());
  EXPECT_EQ(workload["datasets"].size(), 6U);
  EXPECT_EQ(workload["runs"], 3);
  EXPECT_EQ(workload["verifier_max_iters"], 16);
  EXPECT_EQ(workload["verifier_prompt_chat_template_path"],
            "/weka/gfaria/jtc-artifacts/evals/glm_2b_rl_step_400/.jtceval-inputs/templates/" +
                snapshot_name());
  for (const char *infrastructure : {"cluster",
                                     "priority",
                                     "model_replicas",
                                     "terminal_replicas",
                                     "python_replicas",
                                     "search_replicas",
                                     "max_num_batched_tokens"}) {
    EXPECT_FALSE(workload.contains(infrastructure)) << infrastructure;
  }
}

TEST_F(EvaluationE2E, OtherKindsPreviewFieldByField) {
  const auto preview_of = [&](const std::string &name, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"evaluation",
                                  "preview",
                                  "--config",
                                  (corpus_dir() / name).string(),
                                  "--template-dir",
                                  template_dir()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return json::parse(result.out.empty() ? "{}" : result.out);
  };
  // Generic registered workflow (the fallback names: no JTC here).
  auto preview = preview_of("verifier_tool_use_smoke.yaml");
  auto spec = preview["evaluation_spec"];
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_EVALUATION_MODULE"))["value"],
            "jtc.eval.workflow_worker");
  EXPECT_EQ(spec["tasks"][0]["image"], json({{"beaker", "REPLACE_WITH_IMMUTABLE_JTC_EVAL_IMAGE"}}));
  EXPECT_EQ(spec["tasks"][0]["context"]["minRuntime"], "1h");
  EXPECT_EQ(spec["tasks"][0]["constraints"]["cluster"], json({"ai2/jupiter"}));
  auto workload =
      json::parse((*find_env(spec, "JTCEVAL_WORKFLOW_JSON"))["value"].get<std::string>());
  EXPECT_EQ(workload["workflow"], "verifier-tool-use");
  EXPECT_EQ(workload["run_dir"], "/weka/gfaria/evals/verifier-tool-use-smoke");
  EXPECT_EQ(workload["arguments"]["tools"], "terminal");
  EXPECT_EQ(workload["arguments"]["prompt_chat_template_path"],
            "/weka/gfaria/evals/verifier-tool-use-smoke/.jtceval-inputs/templates/" +
                snapshot_name());
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_REQUIRED_SERVICES_JSON"))["value"],
            "{\"/weka/gfaria/models/policy\": 1, \"terminal\": 1}");
  EXPECT_EQ(preview["service"]["experiment_name"], "jtceval-verifier-tool-use-fake");
  auto config = recorded_config(records().back());
  EXPECT_EQ(config["terminal_replicas"], 2);
  EXPECT_EQ(config["workspace"], "ai2/oe-agents");
  EXPECT_EQ(config["shared_dir"], "/weka/jdoe");

  // Rejection sampling.
  preview = preview_of("verifier_rejection_sampling_smoke.yaml");
  spec = preview["evaluation_spec"];
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_RUN_DIR"))["value"],
            "/weka/gfaria/evals/verifier-rejection-sampling-smoke");
  workload =
      json::parse((*find_env(spec, "JTCEVAL_REJECTION_SAMPLING_JSON"))["value"].get<std::string>());
  EXPECT_EQ(workload["rounds"], 4);
  EXPECT_EQ(workload["verifier_workflow"], "verifier-tool-use");
  EXPECT_EQ(preview["evaluation_experiment_name"], "verifier-rejection-sampling-smoke-pling-fake");
  EXPECT_EQ(recorded_config(records().back())["name_prefix"], "jtceval-rejection-sampling");

  // Search agent: registry reuse, no new capacity, judge services required.
  preview = preview_of("search-agent-eval-browsecomp-subset.yaml");
  spec = preview["evaluation_spec"];
  config = recorded_config(records().back());
  EXPECT_EQ(config["registry"], "redis://YOUR_REGISTRY_HOST:6379");
  EXPECT_EQ(config["generation_replicas"], 0);
  EXPECT_EQ(config["generation_model"], nullptr);
  EXPECT_EQ(config["terminal_replicas"], 0);
  EXPECT_EQ(config["name_prefix"], "jtceval-search");
  EXPECT_FALSE(config.contains("gateway_workers"));
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_REGISTRY"))["value"], "redis://YOUR_REGISTRY_HOST:6379");
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_KEEP_SERVICES"))["value"], "True");
  EXPECT_EQ(find_env(spec, "BEAKER_TOKEN"), nullptr); // keep_stack: no managed cleanup
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_REQUIRED_SERVICES_JSON"))["value"],
            "{\"/weka/models/quokka/step_400\": 1, \"/weka/models/search-agent/step_380\": 1, "
            "\"judge\": 1, \"localsearch:browsecomp-plus\": 1, \"terminal\": 1}");
  workload = json::parse((*find_env(spec, "JTCEVAL_SEARCH_JSON"))["value"].get<std::string>());
  EXPECT_EQ(workload["rollout_timeout"], 7200);
  EXPECT_EQ(workload["harness"], "webterminal-judge");
  EXPECT_FALSE(workload.contains("registry"));
  EXPECT_FALSE(workload.contains("keep_stack"));

  // Rubric-judge audit: JTC's probes are unknown without JTC.
  preview = preview_of("rubric_judge_audit-qwen35_4b_grouped_vs_qwen36_35b_steps005_400.yaml",
                       {"--registry", "redis://reuse:6379"});
  EXPECT_EQ(preview["workflow"], "rubric-judge-audit");
  EXPECT_EQ(preview["python_module"], "jtc.eval.rubric_judge_audit_worker");
  EXPECT_EQ(preview["sample_complete"], nullptr);
  spec = preview["primebeaker"]["evaluation_spec"];
  EXPECT_EQ((*find_env(spec, "JTCEVAL_RUBRIC_AUDIT_FORCE"))["value"], "false");
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_REGISTRY"))["value"], "redis://reuse:6379");
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_REQUIRED_SERVICES_JSON"))["value"],
            "{\"Qwen/Qwen3.6-35B-A3B\": 2}");
  config = recorded_config(records().back());
  EXPECT_EQ(config["generation_model"], nullptr); // --registry reuses: no new model
  EXPECT_EQ(config["generation_tp"], 2);
  EXPECT_EQ(config["max_num_seqs"], 64);
}

TEST_F(EvaluationE2E, BadYamlNamesFileLineColumn) {
  write_file(m_dir / "bad.yaml", "image: x\nevaluation:\n  model: [unclosed\n");
  auto result = run({"evaluation", "preview", "bad.yaml"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("primebeaker: error: bad.yaml:"), std::string::npos) << result.err;
  write_standard();
  write_file(m_dir / "cfg" / "typo.yaml",
             read_file(m_dir / "cfg" / "eval.yaml") + "  model_replicas: 0\nkeep_stak: true\n");
  result = run({"evaluation", "preview", "cfg/typo.yaml"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(
      result.err.find("cfg/typo.yaml:9:1: unknown field keep_stak (did you mean keep_stack?)"),
      std::string::npos)
      << result.err;
  EXPECT_EQ(records().size(), 0U); // refused before any Python ran
}

TEST_F(EvaluationE2E, MissingTemplateSaysWhereItLooked) {
  write_standard();
  std::filesystem::remove(m_dir / "cfg" / "templates" / "t.json");
  const auto result = run({"evaluation", "preview", "cfg/eval.yaml"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("template referenced by cfg/eval.yaml was not found: templates/t.json"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("JTC's packaged resources were not searched"), std::string::npos)
      << result.err;
}

TEST_F(EvaluationE2E, UnknownWorkflowSaysWhichNamesWereUsed) {
  write_file(m_dir / "w.yaml", "workflow: verifier-tool-us\nimage: x\nrun_dir: /weka/x\n");
  const auto result = run({"evaluation", "preview", "w.yaml"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("unsupported evaluation workflow: 'verifier-tool-us'"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("unsupported JTC workflow 'verifier-tool-us'; choose one of: "
                            "inference, verifier-tool-use"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("JTC is not importable"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("Traceback"), std::string::npos);
}

TEST_F(EvaluationE2E, WorkflowsFallBackAndSaySo) {
  const auto result = run({"evaluation", "workflows"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(json::parse(result.out)[0], "inference");
  EXPECT_NE(result.err.find("using the names known from primebeaker's example YAMLs"),
            std::string::npos)
      << result.err;
}

TEST_F(EvaluationE2E, WorkflowsAndTemplatesComeFromJtcWhenInstalled) {
  write_file(m_dir / "py" / "jtc" / "__init__.py", "");
  write_file(m_dir / "py" / "jtc" / "common" / "__init__.py", "");
  write_file(m_dir / "py" / "jtc" / "common" / "workflows" / "__init__.py", "");
  write_file(m_dir / "py" / "jtc" / "common" / "workflows" / "registry.py",
             "def workflow_names():\n    return ['inference', 'rubric-generation-v2']\n");
  write_file(m_dir / "py" / "jtc" / "templates" / "packaged.json", k_stand_in);
  auto result = run({"evaluation", "workflows"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(json::parse(result.out), json({"inference", "rubric-generation-v2"}));
  EXPECT_EQ(result.err.find("example YAMLs"), std::string::npos) << result.err;
  // A workflow only JTC knows, with a template only JTC ships.
  write_file(m_dir / "w.yaml",
             "workflow: rubric-generation-v2\nimage: x\nrun_dir: /weka/r\n"
             "arguments:\n  prompt_template_path: templates/packaged.json\n");
  result = run({"evaluation", "preview", "w.yaml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto spec = json::parse(result.out)["evaluation_spec"];
  const auto workload =
      json::parse((*find_env(spec, "JTCEVAL_WORKFLOW_JSON"))["value"].get<std::string>());
  EXPECT_EQ(workload["arguments"]["prompt_template_path"],
            "/weka/r/.jtceval-inputs/templates/" + snapshot_name());
}

TEST_F(EvaluationE2E, SubmitLaunchesServicesThenTheEvaluatorAndSnapshots) {
  write_standard();
  const auto result =
      run({"evaluation", "submit", "cfg/eval.yaml", "--local-mount", (m_dir / "weka").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = ordered::parse(result.out);
  std::vector<std::string> keys;
  for (const auto &[key, value] : receipt.items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys,
            (std::vector<std::string>{"service_experiment_id",
                                      "evaluation_experiment_id",
                                      "coordination_root",
                                      "service",
                                      "evaluation"}));
  EXPECT_EQ(receipt["service_experiment_id"], "01SERVICE");
  EXPECT_EQ(receipt["evaluation_experiment_id"], "01EVAL");
  EXPECT_EQ(receipt["evaluation"]["experiment_name"], "run-a-ceval-fake");
  const auto calls = beaker_calls();
  ASSERT_EQ(calls.size(), 2U);
  EXPECT_EQ(calls[0][4], "-n");
  EXPECT_EQ(std::vector<std::string>(calls[1].begin(), calls[1].end() - 1),
            (std::vector<std::string>{"--format",
                                      "json",
                                      "experiment",
                                      "create",
                                      "--name",
                                      "run-a-ceval-fake",
                                      "--workspace",
                                      "ai2/oe-agents-holmes"}));
  EXPECT_FALSE(stdfs::exists(calls[1].back())); // the temporary spec is gone
  ASSERT_EQ(m_beaker.kept_files().size(), 1U);
  const auto spec = json::parse(m_beaker.kept_files().front());
  EXPECT_EQ((*find_env(spec, "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID"))["value"], "01SERVICE");
  const auto snapshot =
      m_dir / "weka" / "evals" / "run-a" / ".jtceval-inputs" / "templates" / snapshot_name();
  EXPECT_EQ(read_file(snapshot), k_stand_in);
  EXPECT_EQ(json::parse((*find_env(spec, "JTCEVAL_EVALUATION_JSON"))["value"]
                            .get<std::string>())["verifier_prompt_chat_template_path"],
            "/weka/evals/run-a/.jtceval-inputs/templates/" + snapshot_name());
}

TEST_F(EvaluationE2E, SnapshotCollisionStopsBeforeAnythingIsLaunched) {
  write_standard();
  write_file(m_dir / "weka" / "evals" / "run-a" / ".jtceval-inputs" / "templates" / snapshot_name(),
             "{}");
  const auto result = run({"evaluation", "submit", "cfg/eval.yaml"},
                          {{"PRIMEBEAKER_LOCAL_MOUNT", (m_dir / "weka").string()}});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("template snapshot digest collision"), std::string::npos) << result.err;
  EXPECT_TRUE(beaker_calls().empty());
}

TEST_F(EvaluationE2E, EvaluatorFailureStopsTheServices) {
  write_standard();
  evaluator_fails = true;
  const auto result = run({"evaluation",
                           "submit",
                           "--config",
                           "cfg/eval.yaml",
                           "--local-mount",
                           (m_dir / "weka").string()});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find(
                "Beaker could not create evaluator run-a-ceval-fake: cluster ai2/jupiter is full"),
            std::string::npos)
      << result.err;
  EXPECT_NE(
      result.err.find("stopped service experiment 01SERVICE after evaluator submission failed"),
      std::string::npos)
      << result.err;
  const auto calls = beaker_calls();
  ASSERT_EQ(calls.size(), 3U);
  EXPECT_EQ(calls[2], (std::vector<std::string>{"experiment", "stop", "01SERVICE"}));
}

TEST_F(EvaluationE2E, FailedStopReportsBothErrors) {
  write_standard();
  evaluator_fails = true;
  stop_fails = true;
  const auto result =
      run({"evaluation", "run", "cfg/eval.yaml", "--local-mount", (m_dir / "weka").string()});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("Beaker could not create evaluator"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("also failed to stop service experiment 01SERVICE:"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("permission denied"), std::string::npos) << result.err;
}

TEST_F(EvaluationE2E, SigtermDuringSubmissionStopsTheServices) {
  write_standard();
  evaluator_terminated = true;
  const auto result =
      run({"evaluation", "submit", "cfg/eval.yaml", "--local-mount", (m_dir / "weka").string()});
  EXPECT_EQ(result.exit_code, 143) << result.err;
  EXPECT_NE(result.err.find("interrupted"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("stopped service experiment 01SERVICE"), std::string::npos)
      << result.err;
  const auto calls = beaker_calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), (std::vector<std::string>{"experiment", "stop", "01SERVICE"}));
}

TEST_F(EvaluationE2E, ServiceFailureLaunchesNoEvaluator) {
  write_standard();
  service_fails = true;
  const auto result =
      run({"evaluation", "submit", "cfg/eval.yaml", "--local-mount", (m_dir / "weka").string()});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("no quota for services"), std::string::npos) << result.err;
  EXPECT_EQ(beaker_calls().size(), 1U);
}

TEST_F(EvaluationE2E, DryRunIsThePreview) {
  write_standard();
  const auto before = tree_digest(m_dir.path());
  const auto result = run({"evaluation", "submit", "cfg/eval.yaml", "--dry-run"},
                          {{"FAKE_LITEREGISTRY_RECORD", ""}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(json::parse(result.out).contains("evaluation_spec"));
  EXPECT_TRUE(beaker_calls().empty());
  EXPECT_EQ(tree_digest(m_dir.path()), before);
}

TEST_F(EvaluationE2E, AuditCoordinatorWithoutJtcNamesThePipRequirement) {
  const auto result =
      run({"evaluation",
           "submit",
           "--template-dir",
           template_dir(),
           (corpus_dir() / "rubric_judge_audit-qwen35_4b_grouped_vs_qwen36_35b_steps005_400.yaml")
               .string()},
          {{"PRIMEBEAKER_LOCAL_MOUNT", (m_dir / "weka").string()}});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("needs JTC"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("-m pip install jtc"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_TRUE(beaker_calls().empty());
}

TEST_F(EvaluationE2E, RequestPreviewOfTheDocumentedExample) {
  const std::string request = R"({"module": "jtc.eval.worker", "arguments": ["run"],
    "image": "beaker://01EVAL", "run_dir": "/weka/evals/example",
    "services": {"generation_model": "Qwen/Qwen3.5-4B", "generation_replicas": 2,
      "terminal_replicas": 4, "python_replicas": 0, "web_search_replicas": 0,
      "service_clusters": ["ai2/jupiter"], "model_cluster": "ai2/holmes", "shared_dir": "/weka/shared"},
    "required_services": {"Qwen/Qwen3.5-4B": 1, "terminal": 1}, "beaker_token_secret": "eval-token"})";
  write_file(m_dir / "request.json", request);
  for (const auto &argument : {request, std::string("request.json")}) {
    const auto result = run({"evaluation", "request-preview", "--request-json", argument});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto preview = json::parse(result.out);
    EXPECT_EQ(preview["coordination_root"],
              "/weka/shared/.literegistry-coop/literegistry-base-fake");
    EXPECT_EQ(preview["evaluation_experiment_name"], "jtceval--base-fake");
    EXPECT_EQ((*find_env(preview["evaluation_spec"], "BEAKER_TOKEN"))["secret"], "eval-token");
  }
  const auto config = recorded_config(records().back());
  EXPECT_EQ(config["terminal_replicas"], 4);
  EXPECT_EQ(config["workspace"], "ai2/oe-agents");
  EXPECT_EQ(config["service_clusters"], json({"ai2/jupiter"}));

  auto shell = json::parse(request);
  shell["module"] = "bash -lc eval";
  const auto refused = run({"evaluation", "request-preview", "--request_json=" + shell.dump()});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find("invalid Python module path: 'bash -lc eval'"), std::string::npos)
      << refused.err;
  EXPECT_EQ(records().size(), 2U); // the refused one never reached Python
}

TEST_F(EvaluationE2E, RequestSubmitRollsBackToo) {
  const std::string request = R"({"module": "jtc.eval.worker", "image": "docker.io/eval:1",
    "run_dir": "/weka/evals/example", "services": {"terminal_replicas": 1}})";
  // --no-stage: the request's mount is /weka, which a test must never write on this machine.
  const auto ok =
      run({"evaluation", "request-submit", "--request-json", request, "--no-stage"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(json::parse(ok.out)["evaluation_experiment_id"], "01EVAL");
  evaluator_fails = true;
  const auto failed =
      run({"evaluation", "request-submit", "--request-json", request, "--no-stage"});
  EXPECT_EQ(failed.exit_code, 4);
  EXPECT_EQ(beaker_calls().back(), (std::vector<std::string>{"experiment", "stop", "01SERVICE"}));
}

} // namespace
} // namespace pb::test

namespace pb::test {
namespace {

TEST_F(EvaluationE2E, TheExamplePreviewsFromTheRepositoryRoot) {
  RunOptions options;
  options.env = {{"PYTHONPATH", (m_dir / "py").string()}};
  options.cwd = source_dir();
  const auto result =
      run_primebeaker({"evaluation", "preview", "examples/evaluation/smoke.yaml"}, options);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto spec = json::parse(result.out)["evaluation_spec"];
  const auto workload =
      json::parse((*find_env(spec, "JTCEVAL_EVALUATION_JSON"))["value"].get<std::string>());
  const auto content = read_file(source_dir() / "examples" / "evaluation" / "templates" /
                                 "smoke-terminal-prompt.json");
  EXPECT_EQ(workload["verifier_prompt_chat_template_path"],
            "/weka/oe-adapt-default/evals/policy-step-400-smoke/.jtceval-inputs/templates/" +
                registry::sha256_hex(content) + ".json");
  EXPECT_EQ(spec["tasks"][0]["constraints"]["cluster"], json({"ai2/jupiter"}));
}

} // namespace
} // namespace pb::test
