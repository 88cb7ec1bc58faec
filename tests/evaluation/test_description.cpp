// SPDX-License-Identifier: MIT
// The YAML kinds: defaults, request mapping, overrides and every validation message
// (docs/evaluation.md "YAML kinds"), in process.
#include "test_support.hpp"

#include <primebeaker/core/fs.hpp>
#include <primebeaker/evaluation/description.hpp>
#include <primebeaker/evaluation/templates.hpp>
#include <primebeaker/registry/records.hpp>

#include <gtest/gtest.h>

#include <regex>

namespace pb::evaluation {
namespace {

using test::TempDir;
using test::write_file;

constexpr const char *k_template = R"({"messages": [{"role": "system", "content": "x"}]})";

class Descriptions : public ::testing::Test {
protected:
  Descriptions() {
    write_file(m_dir / "cfg" / "templates" / "t.json", k_template);
    m_options.cwd = m_dir.path();
    m_options.shared_dir = "/weka/jdoe"; // the config's shared_dir (docs/config.md)
  }

  Description load(const std::string &yaml, const std::string &name = "eval.yaml") {
    const auto path = m_dir / "cfg" / name;
    write_file(path, yaml);
    return load_description(yaml::parse_yaml(yaml, "cfg/" + name), path, m_options);
  }

  // A standard YAML with `evaluation_extra` appended to its evaluation block.
  static std::string standard(const std::string &evaluation_extra = "",
                              const std::string &top = "image: beaker://01IMG\n") {
    return top +
           "evaluation:\n"
           "  model: /weka/models/step_400\n"
           "  run_dir: /weka/evals/run-a\n"
           "  datasets: [healthbench]\n"
           "  verifier_tools: terminal\n"
           "  verifier_prompt_chat_template_path: templates/t.json\n" +
           evaluation_extra;
  }

  TempDir m_dir;
  LoadOptions m_options;
};

std::string snapshot_of(const std::string &root) {
  return root + "/.jtceval-inputs/templates/" + registry::sha256_hex(k_template) + ".json";
}

TEST_F(Descriptions, StandardDefaultsAndRequestMapping) {
  const auto d = load(standard("  verifier_tools: webterminal,search\n  cluster: ai2/holmes\n"
                               "  runs: 3\n  readiness_timeout_seconds: 60\n"
                               "  service_startup_timeout_seconds: 90\n  terminal_image: t/img\n")
                          .replace(standard().find("  verifier_tools: terminal\n"),
                                   std::string("  verifier_tools: terminal\n").size(),
                                   ""));
  EXPECT_EQ(d.kind, Kind::standard);
  const auto &r = d.request;
  EXPECT_EQ(r.module, "jtc.eval.worker");
  EXPECT_EQ(r.arguments, std::vector<std::string>{"run"});
  EXPECT_EQ(r.image, "beaker://01IMG");
  EXPECT_EQ(r.run_dir, "/weka/evals/run-a");
  EXPECT_EQ(r.workspace, "ai2/oe-agents-holmes");
  EXPECT_EQ(r.evaluation_cluster, "ai2/jupiter");
  EXPECT_EQ(r.priority, "high");
  EXPECT_EQ(r.min_runtime_hours, 1);
  EXPECT_EQ(r.readiness_timeout_seconds, 90);
  EXPECT_EQ(r.experiment_name, "run-a");
  EXPECT_EQ(r.budget, std::optional<std::string>("ai2/oe-omai"));
  EXPECT_EQ(r.required_services,
            (std::map<std::string, std::int64_t>{
                {"/weka/models/step_400", 1}, {"terminal", 1}, {"search", 1}}));
  const auto expected = OrderedJson::parse(R"({
    "registry": null, "python_replicas": 0, "terminal_replicas": 8, "web_search_replicas": 0,
    "local_search_replicas": 0, "local_search_corpus_jsonl": null, "local_search_index_dir": null,
    "local_search_service_name": null, "generation_model": "/weka/models/step_400",
    "generation_replicas": 8, "generation_tp": 1, "max_model_len": 32768,
    "max_num_batched_tokens": 65536, "max_num_seqs": null, "gateway_workers": 8,
    "service_clusters": ["ai2/jupiter"], "model_cluster": "ai2/holmes",
    "service_priority": "high", "model_priority": "high", "min_runtime_hours": 1,
    "omit_service_resources": true, "name_prefix": "jtceval", "shared_dir": "/weka/jdoe",
    "terminal_image": "t/img"})");
  EXPECT_EQ(r.services, expected);
  EXPECT_EQ(r.services.dump(), expected.dump()); // and in this order
  // The workload keeps JTC's fields only, in document order.
  EXPECT_EQ(
      d.workload.dump(),
      R"({"model":"/weka/models/step_400","run_dir":"/weka/evals/run-a","datasets":["healthbench"],)"
      R"("verifier_prompt_chat_template_path":"templates/t.json","verifier_tools":"webterminal,search","runs":3})");
  ASSERT_EQ(d.templates.size(), 1U);
  EXPECT_EQ(d.templates[0].snapshot, snapshot_of("/weka/evals/run-a"));
  const auto request = finished_request(d, workload_with_snapshots(d, d.workload));
  EXPECT_EQ(OrderedJson::parse(request.environment.at(
                "JTCEVAL_EVALUATION_JSON"))["verifier_prompt_chat_template_path"],
            snapshot_of("/weka/evals/run-a"));
}

TEST_F(Descriptions, StandardRegistryReuseZeroesCapacityAndOverridesApply) {
  const auto reuse = load(standard("  local_search_model_path: localsearch:bc\n",
                                   "image: beaker://01IMG\nexisting_registry: redis://r:1\n"));
  EXPECT_EQ(reuse.request.services["registry"], "redis://r:1");
  EXPECT_EQ(reuse.request.services["generation_model"], nullptr);
  EXPECT_EQ(reuse.request.services["generation_replicas"], 0);
  EXPECT_EQ(reuse.request.services["terminal_replicas"], 0);
  EXPECT_EQ(reuse.request.services["local_search_service_name"], "localsearch:bc");
  EXPECT_EQ(reuse.request.required_services.at("localsearch:bc"), 1);

  const auto joined = load(standard("", "image: beaker://01IMG\nregistry: redis://r:2\n"));
  EXPECT_EQ(joined.request.services["registry"], "redis://r:2");
  EXPECT_EQ(joined.request.services["generation_replicas"], 8); // joins, keeps capacity

  m_options.registry = "redis://cli:3";
  m_options.image = "docker.io/eval:1";
  const auto overridden = load(standard("", "image: beaker://01IMG\nregistry: redis://r:2\n"));
  EXPECT_EQ(overridden.request.services["registry"], "redis://cli:3");
  EXPECT_EQ(overridden.request.services["generation_replicas"], 0);
  EXPECT_EQ(overridden.request.image, "docker.io/eval:1");
}

TEST_F(Descriptions, StandardValidationMessages) {
  EXPECT_PB_ERROR(load("- a\n- b\n"), 3, "evaluation YAML must be a mapping: cfg/eval.yaml");
  EXPECT_PB_ERROR(load("workflow: nope\nimage: x\n", "w.yaml"), 3, "run_dir is required");
  EXPECT_PB_ERROR(
      load("image: x\nevaluation: [1]\n"), 3, "cfg/eval.yaml:2:13: evaluation must be a mapping");
  EXPECT_PB_ERROR(load("image: x\nevaluation:\n  model: m\n  run_dir: /weka/r\n"),
                  3,
                  "evaluation.verifier_prompt_chat_template_path is required");
  EXPECT_PB_ERROR(
      load(standard("  local_search_replicas: 1\n  local_search_index_dir: /weka/i\n")),
      3,
      "local search replicas require: local_search_corpus_jsonl, local_search_model_path");
  EXPECT_PB_ERROR(
      load(standard("  model_replicas: 0\n")), 3, "evaluation.model_replicas must be > 0 (got 0)");
  EXPECT_PB_ERROR(
      load(standard("  terminal_replicas: -1\n")), 3, "evaluation.terminal_replicas must be >= 0");
  EXPECT_PB_ERROR(load(standard("  priority: low\n")),
                  3,
                  "evaluation.priority must be one of normal, high, urgent");
  EXPECT_PB_ERROR(
      load(standard("", "image: x\ntensor_parallelism: 0\n")), 3, "tensor_parallelism must be > 0");
  EXPECT_PB_ERROR(load(standard("", "image: x\nworkspce: ai2/x\n")),
                  3,
                  "cfg/eval.yaml:2:1: unknown field workspce (did you mean workspace?)");
  EXPECT_PB_ERROR(
      load(standard("", "")), 3, "evaluation image is required; pass --image or set image");
  EXPECT_PB_ERROR(load(standard("  model_replicas: two\n")),
                  3,
                  "cfg/eval.yaml:8:19: evaluation.model_replicas must be an integer");
  // Found nowhere locally: left for JTC's packaged resources (the end-to-end tests cover the
  // message when JTC does not have it either).
  const auto missing = load("image: x\nevaluation:\n  model: m\n  run_dir: /weka/r\n"
                            "  verifier_prompt_chat_template_path: templates/missing.json\n");
  EXPECT_FALSE(missing.templates[0].path.has_value());
  EXPECT_TRUE(missing.templates[0].snapshot.empty());
}

TEST_F(Descriptions, TemplatesAreSearchedInOrderAndChecked) {
  // The YAML's directory wins over cwd and ancestors.
  write_file(m_dir / "templates" / "t.json", R"({"from": "cwd"})");
  auto d = load(standard());
  EXPECT_EQ(d.templates[0].path->string(), (m_dir / "cfg" / "templates" / "t.json").string());
  // An ancestor of the YAML: cfg/nested/eval.yaml finds cfg/templates/t.json... after cwd.
  d = load(standard(), "nested/eval.yaml");
  EXPECT_EQ(d.templates[0].path->string(), (m_dir / "templates" / "t.json").string());
  // --template-dir entries come last.
  write_file(m_dir / "extra" / "templates" / "only.json", R"({"x": 1})");
  m_options.template_dirs = {m_dir / "extra"};
  d = load(standard().replace(standard().find("templates/t.json"), 16, "templates/only.json"));
  EXPECT_EQ(d.templates[0].path->string(), (m_dir / "extra" / "templates" / "only.json").string());
  write_file(m_dir / "cfg" / "templates" / "bad.json", "{not json");
  EXPECT_PB_ERROR(
      load(standard().replace(standard().find("templates/t.json"), 16, "templates/bad.json")),
      3,
      "invalid JSON template " + (m_dir / "cfg" / "templates" / "bad.json").string());
  write_file(m_dir / "cfg" / "templates" / "list.json", "[1, 2]");
  EXPECT_PB_ERROR(
      load(standard().replace(standard().find("templates/t.json"), 16, "templates/list.json")),
      3,
      "template must contain a JSON object: ");
}

TEST_F(Descriptions, SnapshotsAreContentAddressedAtomicAndCheckedForCollisions) {
  const std::string root = (m_dir / "run").string();
  const std::string target = snapshot_path(root, k_template);
  EXPECT_EQ(target, snapshot_of(root));
  write_snapshot(target, k_template);
  EXPECT_EQ(test::read_file(target), k_template);
  write_snapshot(target, k_template); // same bytes: kept
  size_t entries = 0;
  for (const auto &entry :
       std::filesystem::directory_iterator(std::filesystem::path(target).parent_path())) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1U); // no temporary left behind
  write_file(target, "{\"tampered\": true}");
  EXPECT_PB_ERROR(
      write_snapshot(target, k_template), 1, "template snapshot digest collision: " + target);
}

TEST_F(Descriptions, SearchAgentMappingAndValidationInOrder) {
  const std::string base =
      "workflow: search-agent\nimage: beaker://01IMG\nsearch_agent:\n"
      "  model: /weka/m\n  dataset: /weka/d.parquet\n  run_dir: /weka/runs/s1\n"
      "  harness: visit\n  local_search_replicas: 0\n  template_path: templates/t.json\n";
  const auto d = load(base);
  EXPECT_EQ(d.kind, Kind::search_agent);
  EXPECT_EQ(d.request.module, "jtc.eval.search_worker");
  EXPECT_EQ(d.request.services["terminal_replicas"], 0); // harness visit
  EXPECT_EQ(d.request.services["name_prefix"], "jtceval-search");
  EXPECT_FALSE(d.request.services.contains("gateway_workers"));
  EXPECT_EQ(d.request.services["generation_model"], "/weka/m");
  EXPECT_EQ(d.request.required_services, (std::map<std::string, std::int64_t>{{"/weka/m", 1}}));
  EXPECT_EQ(d.request.workspace, "ai2/oe-agents");
  EXPECT_EQ(d.request.evaluation_cluster, "ai2/jupiter");
  EXPECT_EQ(d.request.readiness_timeout_seconds, 7200);
  EXPECT_EQ(d.request.experiment_name, "s1");
  EXPECT_EQ(d.workload["rollout_timeout"], 7200);
  EXPECT_FALSE(d.workload.contains("local_search_replicas"));

  const auto bad = [&](const std::string &extra) { return load(base + extra); };
  EXPECT_PB_ERROR(
      load("workflow: search-agent\nsearch_agent: 3\n"), 3, "search_agent must be a mapping");
  EXPECT_PB_ERROR(load(std::regex_replace(base, std::regex("/weka/d.parquet"), "/data/d.parquet")),
                  3,
                  "dataset must be under /weka");
  EXPECT_PB_ERROR(load(std::regex_replace(base, std::regex("/weka/runs/s1"), "/tmp/s1")),
                  3,
                  "run_dir must be under /weka");
  EXPECT_PB_ERROR(load(std::regex_replace(
                      base, std::regex("local_search_replicas: 0"), "local_search_replicas: 1")),
                  3,
                  "local_search_corpus_jsonl must be under /weka");
  EXPECT_PB_ERROR(
      load(std::regex_replace(base,
                              std::regex("local_search_replicas: 0"),
                              "local_search_replicas: 1\n  local_search_corpus_jsonl: /weka/c\n"
                              "  local_search_index_dir: /weka/i")),
      3,
      "local_search_model_path is required");
  EXPECT_PB_ERROR(
      bad("  max_tokens: 131072\n"), 3, "max_tokens must be smaller than max_model_len");
  EXPECT_PB_ERROR(bad("  model_replicas: 0\n"),
                  3,
                  "model_replicas=0 requires registry and required_model_replicas");
  EXPECT_PB_ERROR(
      load(std::regex_replace(base, std::regex("harness: visit"), "harness: visit-judge")),
      3,
      "judge-backed search requires an existing registry");
  EXPECT_PB_ERROR(load(std::regex_replace(base,
                                          std::regex("harness: visit"),
                                          "harness: webterminal\n  terminal_replicas: 0")),
                  3,
                  "tool-using evaluation requires terminal_replicas >= 1");
}

TEST_F(Descriptions, SearchAgentMustSayItsWorkflowWhenLoadedDirectly) {
  // The dispatcher only sends search-agent YAMLs here; the check is the loader's own.
  EXPECT_PB_ERROR(load("workflow: search-agent\nsearch_agent:\n  model: [x]\n"),
                  3,
                  "search_agent.model must be a string");
}

TEST_F(Descriptions, GenericWorkflowMapping) {
  const std::string yaml = "workflow: verifier-tool-use\nimage: beaker://01IMG\n"
                           "run_dir: /weka/evals/v1\narguments:\n"
                           "  prompt_chat_template_path: templates/t.json\n  max_rows: 8\n"
                           "services:\n  terminal_replicas: 2\n  service_clusters: [ai2/jupiter]\n"
                           "required_services:\n  /weka/m: 1\n  terminal: 1\n";
  const auto d = load(yaml);
  EXPECT_EQ(d.kind, Kind::workflow);
  EXPECT_EQ(d.request.module, "jtc.eval.workflow_worker");
  EXPECT_EQ(
      d.request.services.dump(),
      R"({"terminal_replicas":2,"service_clusters":["ai2/jupiter"],"name_prefix":"jtceval-verifier-tool-use","shared_dir":"/weka/jdoe"})");
  EXPECT_EQ(d.request.service_origins.at("terminal_replicas"), "cfg/eval.yaml:8:3");
  EXPECT_EQ(d.request.min_runtime_hours, 1);
  EXPECT_EQ(d.request.experiment_name, "v1");
  const auto workload = workload_with_snapshots(d, d.workload);
  EXPECT_EQ(workload["workflow"], "verifier-tool-use");
  EXPECT_EQ(workload["arguments"]["prompt_chat_template_path"], snapshot_of("/weka/evals/v1"));
  EXPECT_EQ(workload["arguments"]["max_rows"], 8);

  EXPECT_EQ(load(yaml + "registry: redis://a:1\n").request.services["registry"], "redis://a:1");
  EXPECT_PB_ERROR(load(std::regex_replace(yaml,
                                          std::regex("\nservices:\n"),
                                          "\nservices:\n  registry: redis://b:1\n") +
                       "registry: redis://a:1\n"),
                  3,
                  "registry conflicts with services.registry");
  EXPECT_PB_ERROR(
      load(std::regex_replace(
          yaml,
          std::regex("arguments:\n  prompt_chat_template_path: templates/t.json\n  max_rows: 8\n"),
          "arguments: [1]\n")),
      3,
      "arguments must be a mapping");
  EXPECT_PB_ERROR(load(std::regex_replace(yaml, std::regex("terminal: 1"), "terminal: 0")),
                  3,
                  "required services need names and positive counts");
}

TEST_F(Descriptions, RejectionSamplingMapping) {
  const std::string yaml =
      "workflow: rejection-sampling\nimage: beaker://01IMG\nrejection:\n"
      "  output_dir: /weka/rs/out\n  prompt_chat_template_path: templates/t.json\n"
      "  rounds: 4\nservices:\n  terminal_replicas: 2\nregistry: redis://r:1\n";
  const auto d = load(yaml);
  EXPECT_EQ(d.request.module, "jtc.eval.rejection_sampling_worker");
  EXPECT_EQ(d.request.run_dir, "/weka/rs/out");
  EXPECT_EQ(d.request.services["registry"], "redis://r:1");
  EXPECT_EQ(d.request.services["name_prefix"], "jtceval-rejection-sampling");
  EXPECT_EQ(d.workload_variable, "JTCEVAL_REJECTION_SAMPLING_JSON");
  EXPECT_EQ(workload_with_snapshots(d, d.workload)["prompt_chat_template_path"],
            snapshot_of("/weka/rs/out"));
  EXPECT_PB_ERROR(
      load("workflow: rejection-sampling\nrejection: 1\n"), 3, "rejection must be a mapping");
  EXPECT_PB_ERROR(load("workflow: rejection-sampling\nrejection:\n  output_dir: /weka/x\n"),
                  3,
                  "rejection.prompt_chat_template_path is required");
}

TEST_F(Descriptions, RubricAuditMappingAndValidation) {
  const std::string yaml =
      "workflow: rubric-judge-audit\nimage: beaker://01IMG\n"
      "sample:\n  run_dir: /weka/train\ninference:\n  model: Qwen/Judge\n"
      "  template_path: templates/t.json\n  max_prompt_length: 1000\n  max_new_tokens: 24\n"
      "deployment:\n  model_replicas: 3\n  max_model_len: 1024\n"
      "outputs:\n  audit_dir: /weka/audit/a1\n  receipt_path: /weka/audit/a1/run.json\n";
  const auto d = load(yaml);
  EXPECT_EQ(d.request.module, "jtc.eval.rubric_judge_audit_worker");
  EXPECT_EQ(d.request.run_dir, "/weka/audit/a1");
  EXPECT_EQ(d.request.required_services, (std::map<std::string, std::int64_t>{{"Qwen/Judge", 3}}));
  EXPECT_EQ(d.request.workspace, "ai2/oe-agents-holmes");
  EXPECT_EQ(d.request.readiness_timeout_seconds, 5400);
  EXPECT_EQ(d.request.environment.at("JTCEVAL_RUBRIC_AUDIT_FORCE"), "false");
  EXPECT_EQ(d.request.services["generation_tp"], 2);
  EXPECT_EQ(d.request.services["name_prefix"], "jtceval-audit");
  EXPECT_EQ(workload_with_snapshots(d, d.workload)["inference"]["template_path"],
            snapshot_of("/weka/audit/a1"));
  EXPECT_PB_ERROR(
      load(std::regex_replace(yaml, std::regex("max_new_tokens: 24"), "max_new_tokens: 25")),
      3,
      "max_prompt_length + max_new_tokens exceeds max_model_len");
  EXPECT_PB_ERROR(
      load(std::regex_replace(yaml, std::regex("  template_path: templates/t.json\n"), "")),
      3,
      "audit YAML must set inference.template_path");
  EXPECT_PB_ERROR(
      load(std::regex_replace(yaml, std::regex("  model_replicas: 3\n"), "  replicas: 3\n")),
      3,
      "unknown field deployment.replicas");
  m_options.registry = "redis://reuse:1";
  m_options.force = true;
  const auto reuse = load(yaml);
  EXPECT_EQ(reuse.request.services["generation_model"], nullptr);
  EXPECT_EQ(reuse.request.required_services.at("Qwen/Judge"), 3); // even on reuse
  EXPECT_EQ(reuse.request.environment.at("JTCEVAL_RUBRIC_AUDIT_FORCE"), "true");
}

} // namespace
} // namespace pb::evaluation
