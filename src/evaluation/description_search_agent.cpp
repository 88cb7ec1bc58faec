// SPDX-License-Identifier: MIT
// The search-agent YAML kind: JTC's search worker, at the top level or under `search_agent:`,
// validated in Python PrimeBeaker's order (paths under the mount, /weka unless configured;
// registry and judge rules).
#include "description_internal.hpp"

namespace pb::evaluation::detail {
namespace {

bool under_mount(const std::string &path, const std::string &mount_path) {
  const auto normal = stdfs::path(path).lexically_normal().string();
  auto mount = stdfs::path(mount_path).lexically_normal().string();
  while (mount.size() > 1 && mount.back() == '/') {
    mount.pop_back();
  }
  return normal == mount || text::starts_with(normal, mount == "/" ? mount : mount + "/");
}

} // namespace

void load_search_agent(const YamlDocument &document, const Loader &loader, Description &out) {
  Mapping top(document, document.root, "");
  const auto workflow = top.opt_string("workflow");
  if (workflow != std::optional<std::string>("search-agent")) {
    throw input_error(fmt::format("{}: search-agent YAML must set workflow: search-agent",
                                  top.location("workflow")));
  }
  const YamlNode *payload_node = &document.root;
  std::string prefix;
  std::optional<std::string> top_image;
  if (document.root.find("search_agent") != nullptr) {
    payload_node = top.mapping("search_agent", "search_agent must be a mapping");
    if (payload_node == nullptr) {
      throw top.error("search_agent", "search_agent must be a mapping");
    }
    top_image = top.opt_string("image");
    top.finish({"workflow", "image", "search_agent"});
    prefix = "search_agent.";
  }
  Mapping agent(document, *payload_node, prefix);
  if (prefix.empty()) {
    agent.member("workflow");
  }
  Wrapper wrapper;
  wrapper.read(agent);
  if (!wrapper.image) {
    wrapper.image = top_image;
  }
  const auto cluster = agent.string("cluster", "ai2/holmes");
  const auto evaluation_cluster = agent.opt_string("evaluation_cluster");
  const auto search_replicas = agent.integer("search_replicas", 0, Bound::non_negative);
  const auto service_cluster = agent.string("service_cluster", "ai2/jupiter");
  const auto workspace = agent.string("workspace", "ai2/oe-agents");
  const auto priority = agent.priority("priority", "high");
  const auto model_replicas = agent.integer("model_replicas", 1, Bound::non_negative);
  const auto required_model_replicas =
      agent.opt_integer("required_model_replicas", Bound::positive);
  const auto tensor_parallelism = agent.integer("tensor_parallelism", 1, Bound::positive);
  const auto max_model_len = agent.integer("max_model_len", 131072, Bound::positive);
  const auto max_num_batched_tokens =
      agent.integer("max_num_batched_tokens", 131072, Bound::positive);
  const auto max_num_seqs = agent.opt_integer("max_num_seqs", Bound::positive);
  const auto local_search_replicas = agent.integer("local_search_replicas", 1, Bound::non_negative);
  const auto terminal_replicas = agent.integer("terminal_replicas", 1, Bound::non_negative);
  const auto local_search_corpus = agent.opt_string("local_search_corpus_jsonl");
  const auto local_search_index = agent.opt_string("local_search_index_dir");
  const auto terminal_image = agent.opt_string("terminal_image");
  const auto local_search_image = agent.opt_string("local_search_image");
  const auto judge_model_replicas = agent.integer("judge_model_replicas", 0, Bound::non_negative);
  agent.integer("judge_tensor_parallelism", 1, Bound::positive);
  agent.integer("judge_max_model_len", 32768, Bound::positive);
  agent.integer("judge_max_num_batched_tokens", 32768, Bound::positive);
  const auto judge_replicas = agent.integer("judge_replicas", 0, Bound::non_negative);
  const auto min_runtime_hours = agent.integer("min_runtime_hours", 0, Bound::non_negative);
  const auto model_ready_timeout = agent.integer("model_ready_timeout", 7200, Bound::positive);
  auto registry = agent.opt_string("registry");

  OrderedJson workload = rest_json(agent);
  const auto model = agent.jtc_string("model");
  const auto dataset = agent.jtc_string("dataset").value_or("");
  const auto run_dir = agent.jtc_string("run_dir").value_or("");
  const auto harness = agent.jtc_string("harness").value_or("");
  const auto local_search_model_path = agent.jtc_string("local_search_model_path");
  const auto judge_model_path = agent.jtc_string("judge_model_path");
  const auto judge_service_model_path = agent.jtc_string("judge_service_model_path");
  if (!model) {
    throw input_error(
        fmt::format("{}: {}model is required", document.location(payload_node->mark), prefix));
  }

  // Validation, in Python PrimeBeaker's order; the mount is /weka unless configured.
  const std::string &mount = loader.options().mount_path;
  const auto under_weka = [&mount](const std::string &path) { return under_mount(path, mount); };
  if (!under_weka(dataset)) {
    throw agent.error("dataset", fmt::format("dataset must be under {}", mount));
  }
  if (!under_weka(run_dir)) {
    throw agent.error("run_dir", fmt::format("run_dir must be under {}", mount));
  }
  if (local_search_replicas > 0) {
    const std::pair<const char *, const std::optional<std::string> *> needed[] = {
        {"local_search_corpus_jsonl", &local_search_corpus},
        {"local_search_index_dir", &local_search_index}};
    for (const auto &[name, value] : needed) {
      if (!*value || !under_weka(**value)) {
        throw agent.error(name, fmt::format("{} must be under {}", name, mount));
      }
    }
    if (!local_search_model_path) {
      throw agent.error("local_search_model_path", "local_search_model_path is required");
    }
  }
  if (const auto *max_tokens = agent.node().find("max_tokens");
      max_tokens != nullptr && max_tokens->value.kind == YamlNode::Kind::integer &&
      max_tokens->value.integer >= max_model_len) {
    throw agent.error("max_tokens", "max_tokens must be smaller than max_model_len");
  }
  const bool has_registry = registry.has_value() && !registry->empty();
  if (model_replicas == 0 && (!has_registry || !required_model_replicas)) {
    throw agent.error("model_replicas",
                      "model_replicas=0 requires registry and required_model_replicas");
  }
  const bool judge_harness = harness == "visit-judge" || harness == "webterminal-judge";
  if (judge_harness && !has_registry) {
    throw agent.error("harness", "judge-backed search requires an existing registry");
  }
  if (!has_registry && harness != "visit" && terminal_replicas < 1) {
    throw agent.error("terminal_replicas", "tool-using evaluation requires terminal_replicas >= 1");
  }

  if (loader.registry_override()) {
    registry = loader.registry_override();
  }
  const bool reuse = registry.has_value() && !registry->empty();
  const std::int64_t generation_replicas = reuse ? 0 : model_replicas;

  EvaluationRequest &request = out.request;
  OrderedJson &services = request.services;
  services["registry"] = optional_json(registry);
  services["python_replicas"] = 0;
  services["terminal_replicas"] = reuse || harness == "visit" ? 0 : terminal_replicas;
  services["web_search_replicas"] = reuse ? 0 : search_replicas;
  services["local_search_replicas"] = reuse ? 0 : local_search_replicas;
  services["local_search_corpus_jsonl"] = optional_json(reuse ? std::nullopt : local_search_corpus);
  services["local_search_index_dir"] = optional_json(reuse ? std::nullopt : local_search_index);
  services["local_search_service_name"] = optional_json(local_search_model_path);
  services["generation_model"] = optional_json(generation_replicas > 0 ? model : std::nullopt);
  services["generation_replicas"] = generation_replicas;
  services["generation_tp"] = tensor_parallelism;
  services["max_model_len"] = max_model_len;
  services["max_num_batched_tokens"] = max_num_batched_tokens;
  services["max_num_seqs"] = optional_json(max_num_seqs);
  services["service_clusters"] = OrderedJson::array({service_cluster});
  services["model_cluster"] = cluster;
  services["service_priority"] = priority;
  services["model_priority"] = priority;
  services["min_runtime_hours"] = min_runtime_hours;
  services["omit_service_resources"] = true;
  services["name_prefix"] = "jtceval-search";
  services["shared_dir"] = loader.shared_dir();
  if (terminal_image) {
    services["terminal_image"] = *terminal_image;
  }
  if (local_search_image) {
    services["local_search_image"] = *local_search_image;
  }

  request.module = "jtc.eval.search_worker";
  request.arguments = {"run"};
  request.image = loader.image(wrapper.image);
  request.run_dir = run_dir;
  request.required_services[*model] = required_model_replicas.value_or(1);
  if (harness != "visit") {
    request.required_services["terminal"] = 1;
  }
  if (local_search_model_path) {
    request.required_services[*local_search_model_path] = 1;
  }
  if (judge_harness) {
    if (judge_model_path) {
      request.required_services[*judge_model_path] =
          judge_model_replicas > 0 ? judge_model_replicas : 1;
    }
    if (judge_service_model_path) {
      request.required_services[*judge_service_model_path] =
          judge_replicas > 0 ? judge_replicas : 1;
    }
  }
  request.workspace = workspace;
  request.evaluation_cluster = evaluation_cluster.value_or(service_cluster);
  request.priority = priority;
  request.min_runtime_hours = min_runtime_hours;
  wrapper.apply(request);
  request.readiness_timeout_seconds = static_cast<double>(model_ready_timeout);
  request.experiment_name = basename_or(run_dir, "jtceval-search");

  workload["rollout_timeout"] = model_ready_timeout;
  out.workload_variable = "JTCEVAL_SEARCH_JSON";
  out.workload = std::move(workload);
  out.snapshot_root = run_dir;
  if (const auto *template_node = agent.node().find("template_path");
      template_node != nullptr && template_node->value.is_string()) {
    out.templates.push_back(loader.resolve(template_node->value, "/template_path"));
  }
}

} // namespace pb::evaluation::detail
