// SPDX-License-Identifier: MIT
// The rubric-judge-audit YAML kind: deployment, sample, inference and outputs for JTC's
// rubric-judge audit worker.
#include "description_internal.hpp"

namespace pb::evaluation::detail {

void load_rubric_audit(const YamlDocument &document, const Loader &loader, Description &out) {
  Mapping top(document, document.root, "");
  if (top.opt_string("workflow") != std::optional<std::string>("rubric-judge-audit")) {
    throw input_error(fmt::format("{}: audit YAML must set workflow: rubric-judge-audit",
                                  top.location("workflow")));
  }
  const auto *inference = top.mapping("inference", "inference must be a mapping");
  const auto *template_node = inference != nullptr ? inference->find("template_path") : nullptr;
  if (template_node == nullptr || !template_node->value.is_string()) {
    throw input_error(fmt::format(
        "{}: audit YAML must set inference.template_path",
        document.location(inference != nullptr ? inference->mark : document.root.mark)));
  }
  const auto *sample = top.mapping("sample", "sample must be a mapping");
  const auto *outputs = top.mapping("outputs", "outputs must be a mapping");
  Wrapper wrapper;
  wrapper.read(top, false);
  auto existing_registry = top.opt_string("existing_registry");
  auto registry = top.opt_string("registry");
  const auto *deployment_node = top.mapping("deployment", "deployment must be a mapping");
  top.finish({"workflow",
              "image",
              "existing_registry",
              "registry",
              "keep_stack",
              "beaker_token_secret",
              "secrets",
              "deployment",
              "sample",
              "inference",
              "outputs"});

  static const YamlNode empty_mapping = [] {
    YamlNode node;
    node.kind = YamlNode::Kind::mapping;
    return node;
  }();
  Mapping deployment(
      document, deployment_node != nullptr ? *deployment_node : empty_mapping, "deployment.");
  const auto model_replicas = deployment.integer("model_replicas", 2, Bound::positive);
  const auto tensor_parallelism = deployment.integer("tensor_parallelism", 2, Bound::positive);
  const auto max_model_len = deployment.integer("max_model_len", 131072, Bound::positive);
  const auto max_num_batched_tokens =
      deployment.integer("max_num_batched_tokens", 32768, Bound::positive);
  const auto max_num_seqs = deployment.integer("max_num_seqs", 64, Bound::positive);
  const auto gateway_workers = deployment.integer("gateway_workers", 8, Bound::positive);
  const auto cluster = deployment.string("cluster", "ai2/holmes");
  const auto service_cluster = deployment.opt_string("service_cluster");
  const auto workspace = deployment.string("workspace", "ai2/oe-agents-holmes");
  const auto budget = deployment.nullable_string("budget", "ai2/oe-omai");
  const auto priority = deployment.priority("priority", "high");
  const auto min_runtime_hours = deployment.integer("min_runtime_hours", 1, Bound::non_negative);
  const auto readiness = deployment.number("readiness_timeout_seconds", 5400, Bound::positive);
  deployment.finish({"model_replicas",
                     "tensor_parallelism",
                     "max_model_len",
                     "max_num_batched_tokens",
                     "max_num_seqs",
                     "gateway_workers",
                     "cluster",
                     "service_cluster",
                     "workspace",
                     "budget",
                     "priority",
                     "min_runtime_hours",
                     "readiness_timeout_seconds"});

  const auto *model = inference->find("model");
  if (model == nullptr || !model->value.is_string()) {
    throw input_error(fmt::format("{}: inference.model is required (a string)",
                                  document.location(inference->mark)));
  }
  const auto *prompt = inference->find("max_prompt_length");
  const auto *new_tokens = inference->find("max_new_tokens");
  if (prompt != nullptr && new_tokens != nullptr && prompt->value.kind == YamlNode::Kind::integer &&
      new_tokens->value.kind == YamlNode::Kind::integer &&
      prompt->value.integer + new_tokens->value.integer > max_model_len) {
    throw input_error(fmt::format("{}: max_prompt_length + max_new_tokens exceeds max_model_len",
                                  document.location(prompt->value.mark)));
  }
  const YamlMember *audit_dir = outputs != nullptr ? outputs->find("audit_dir") : nullptr;
  if (audit_dir == nullptr || !audit_dir->value.is_string()) {
    throw input_error(
        fmt::format("{}: outputs.audit_dir is required (a string)",
                    document.location(outputs != nullptr ? outputs->mark : document.root.mark)));
  }
  const YamlMember *receipt = outputs->find("receipt_path");

  if (loader.registry_override()) {
    existing_registry = loader.registry_override();
  }
  const auto effective_registry = existing_registry ? existing_registry : registry;
  const bool reuse = existing_registry.has_value() && !existing_registry->empty();
  const std::string services_cluster = service_cluster.value_or(cluster);

  EvaluationRequest &request = out.request;
  OrderedJson &services = request.services;
  services["registry"] = optional_json(effective_registry);
  services["python_replicas"] = 0;
  services["terminal_replicas"] = 0;
  services["web_search_replicas"] = 0;
  services["local_search_replicas"] = 0;
  services["generation_model"] = reuse ? OrderedJson(nullptr) : OrderedJson(model->value.text);
  services["generation_replicas"] = reuse ? 0 : model_replicas;
  services["generation_tp"] = tensor_parallelism;
  services["max_model_len"] = max_model_len;
  services["max_num_batched_tokens"] = max_num_batched_tokens;
  services["max_num_seqs"] = max_num_seqs;
  services["gateway_workers"] = gateway_workers;
  services["service_clusters"] = OrderedJson::array({services_cluster});
  services["model_cluster"] = cluster;
  services["service_priority"] = priority;
  services["model_priority"] = priority;
  services["min_runtime_hours"] = min_runtime_hours;
  services["omit_service_resources"] = true;
  services["name_prefix"] = "jtceval-audit";
  services["shared_dir"] = loader.shared_dir();

  request.module = "jtc.eval.rubric_judge_audit_worker";
  request.arguments = {"run"};
  request.image = loader.image(wrapper.image);
  request.run_dir = audit_dir->value.text;
  request.required_services[model->value.text] = model_replicas;
  request.workspace = workspace;
  request.evaluation_cluster = services_cluster;
  request.priority = priority;
  request.min_runtime_hours = min_runtime_hours;
  wrapper.apply(request);
  request.budget = budget;
  request.readiness_timeout_seconds = readiness;
  request.experiment_name = basename_or(audit_dir->value.text, "jtceval-audit");
  request.environment["JTCEVAL_RUBRIC_AUDIT_FORCE"] = loader.options().force ? "true" : "false";

  out.workload_variable = "JTCEVAL_RUBRIC_AUDIT_JSON";
  out.workload = OrderedJson::object();
  for (const auto &[key, node] : {std::pair{"sample", sample},
                                  std::pair{"inference", inference},
                                  std::pair{"outputs", outputs}}) {
    if (node != nullptr) {
      out.workload[key] = yaml::to_json(*node);
    }
  }
  out.snapshot_root = audit_dir->value.text;
  out.force = loader.options().force;
  if (receipt != nullptr && receipt->value.is_string()) {
    out.audit_receipt_path = receipt->value.text;
  }
  out.templates.push_back(loader.resolve(template_node->value, "/inference/template_path"));
}

} // namespace pb::evaluation::detail
