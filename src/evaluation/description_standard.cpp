// SPDX-License-Identifier: MIT
// The standard YAML kind: an `evaluation:` block for JTC's eval worker, its services sized from
// the infrastructure fields and the verifier tools.
#include "description_internal.hpp"

#include <algorithm>
#include <cctype>

namespace pb::evaluation::detail {
namespace {

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return out;
}

constexpr std::string_view k_standard_infrastructure[] = {"cluster",
                                                          "service_cluster",
                                                          "omit_service_resources",
                                                          "priority",
                                                          "min_runtime_hours",
                                                          "service_min_runtime_hours",
                                                          "model_replicas",
                                                          "max_num_batched_tokens",
                                                          "max_num_seqs",
                                                          "terminal_replicas",
                                                          "terminal_image",
                                                          "python_replicas",
                                                          "search_replicas",
                                                          "local_search_replicas",
                                                          "local_search_corpus_jsonl",
                                                          "local_search_index_dir",
                                                          "local_search_image",
                                                          "service_startup_timeout_seconds",
                                                          "readiness_timeout_seconds",
                                                          "tags"};

} // namespace

void load_standard(const YamlDocument &document, const Loader &loader, Description &out) {
  Mapping top(document, document.root, "");
  top.member("workflow");
  const auto *block = top.member("evaluation");
  if (block == nullptr || !block->value.is_mapping()) {
    throw input_error(
        fmt::format("{}: evaluation must be a mapping",
                    document.location(block != nullptr ? block->value.mark : document.root.mark)));
  }
  Wrapper wrapper;
  wrapper.read(top);
  auto existing_registry = top.opt_string("existing_registry");
  auto registry = top.opt_string("registry");
  const auto workspace = top.string("workspace", "ai2/oe-agents-holmes");
  const auto tensor_parallelism = top.integer("tensor_parallelism", 1, Bound::positive);
  const auto max_model_len = top.integer("max_model_len", 32768, Bound::positive);
  const auto gateway_workers = top.integer("gateway_workers", 8, Bound::positive);
  const auto evaluation_cluster = top.opt_string("evaluation_cluster");
  top.finish({"workflow",
              "evaluation",
              "image",
              "existing_registry",
              "registry",
              "workspace",
              "budget",
              "tensor_parallelism",
              "max_model_len",
              "gateway_workers",
              "evaluation_cluster",
              "keep_stack",
              "beaker_token_secret",
              "secrets"});

  Mapping eval(document, block->value, "evaluation.");
  if (eval.node().find("verifier_prompt_chat_template_path") == nullptr) {
    throw input_error(fmt::format("{}: evaluation.verifier_prompt_chat_template_path is required",
                                  document.location(block->value.mark)));
  }
  const auto cluster = eval.string("cluster", "ai2/holmes");
  const auto *service_cluster_member = eval.node().find("service_cluster");
  auto service_cluster = service_cluster_member != nullptr
                             ? eval.opt_string("service_cluster")
                             : std::optional<std::string>("ai2/jupiter");
  const auto omit_service_resources = eval.boolean("omit_service_resources", true);
  const auto priority = eval.priority("priority", "high");
  const auto min_runtime_hours = eval.integer("min_runtime_hours", 1, Bound::non_negative);
  const auto service_min_runtime_hours =
      eval.opt_integer("service_min_runtime_hours", Bound::non_negative);
  const auto model_replicas = eval.integer("model_replicas", 8, Bound::positive);
  const auto max_num_batched_tokens =
      eval.integer("max_num_batched_tokens", 65536, Bound::positive);
  const auto max_num_seqs = eval.opt_integer("max_num_seqs", Bound::positive);
  const auto terminal_replicas = eval.integer("terminal_replicas", 8, Bound::non_negative);
  const auto terminal_image = eval.opt_string("terminal_image");
  const auto python_replicas = eval.integer("python_replicas", 0, Bound::non_negative);
  const auto search_replicas = eval.integer("search_replicas", 0, Bound::non_negative);
  const auto local_search_replicas = eval.integer("local_search_replicas", 0, Bound::non_negative);
  const auto local_search_corpus = eval.opt_string("local_search_corpus_jsonl");
  const auto local_search_index = eval.opt_string("local_search_index_dir");
  const auto local_search_image = eval.opt_string("local_search_image");
  const auto startup_timeout =
      eval.integer("service_startup_timeout_seconds", 120, Bound::positive);
  const auto readiness_timeout = eval.integer("readiness_timeout_seconds", 7200, Bound::positive);
  if (const auto *tags = eval.member("tags");
      tags != nullptr && tags->value.kind != YamlNode::Kind::sequence) {
    throw eval.error("tags", "evaluation.tags must be a list");
  }

  // JTC's EvaluationWorkloadConfig fields: everything else in the block.
  OrderedJson workload = rest_json(eval);
  const auto model = eval.jtc_string("model");
  const auto run_dir = eval.jtc_string("run_dir");
  if (!model) {
    throw input_error(
        fmt::format("{}: evaluation.model is required", document.location(block->value.mark)));
  }
  if (!run_dir) {
    throw input_error(
        fmt::format("{}: evaluation.run_dir is required", document.location(block->value.mark)));
  }
  const auto local_search_model_path = eval.jtc_string("local_search_model_path");
  const auto verifier_tools = eval.jtc_string("verifier_tools").value_or("");
  eval.jtc_string("verifier_prompt_chat_template_path");

  if (local_search_replicas > 0) {
    std::vector<std::string> missing;
    const std::pair<const char *, const std::optional<std::string> *> needed[] = {
        {"local_search_corpus_jsonl", &local_search_corpus},
        {"local_search_index_dir", &local_search_index},
        {"local_search_model_path", &local_search_model_path}};
    for (const auto &[name, value] : needed) {
      if (!*value || text::trim(**value).empty()) {
        missing.emplace_back(name);
      }
    }
    if (!missing.empty()) {
      throw eval.error("local_search_replicas",
                       "local search replicas require: " + text::join(missing, ", "));
    }
  }

  if (loader.registry_override()) {
    existing_registry = loader.registry_override(); // a copy; validators are not re-run
  }
  const bool reuse = existing_registry.has_value() && !existing_registry->empty();
  const std::string services_cluster = service_cluster.value_or(cluster);

  EvaluationRequest &request = out.request;
  OrderedJson &services = request.services;
  services["registry"] = optional_json(reuse ? existing_registry : registry);
  services["python_replicas"] = reuse ? 0 : python_replicas;
  services["terminal_replicas"] = reuse ? 0 : terminal_replicas;
  services["web_search_replicas"] = reuse ? 0 : search_replicas;
  services["local_search_replicas"] = reuse ? 0 : local_search_replicas;
  services["local_search_corpus_jsonl"] = optional_json(reuse ? std::nullopt : local_search_corpus);
  services["local_search_index_dir"] = optional_json(reuse ? std::nullopt : local_search_index);
  services["local_search_service_name"] = optional_json(local_search_model_path);
  services["generation_model"] = optional_json(reuse ? std::nullopt : model);
  services["generation_replicas"] = reuse ? 0 : model_replicas;
  services["generation_tp"] = tensor_parallelism;
  services["max_model_len"] = max_model_len;
  services["max_num_batched_tokens"] = max_num_batched_tokens;
  services["max_num_seqs"] = optional_json(max_num_seqs);
  services["gateway_workers"] = gateway_workers;
  services["service_clusters"] = OrderedJson::array({services_cluster});
  services["model_cluster"] = cluster;
  services["service_priority"] = priority;
  services["model_priority"] = priority;
  services["min_runtime_hours"] = service_min_runtime_hours.value_or(min_runtime_hours);
  services["omit_service_resources"] = omit_service_resources;
  services["name_prefix"] = "jtceval";
  services["shared_dir"] = loader.shared_dir();
  if (terminal_image) {
    services["terminal_image"] = *terminal_image;
  }
  if (local_search_image) {
    services["local_search_image"] = *local_search_image;
  }

  request.module = "jtc.eval.worker";
  request.arguments = {"run"};
  request.image = loader.image(wrapper.image);
  request.run_dir = *run_dir;
  request.required_services[*model] = 1;
  std::set<std::string> tools;
  for (const auto &tool : text::split(verifier_tools, ',')) {
    tools.insert(lowered(text::trim(tool)));
  }
  if (tools.count("terminal") != 0 || tools.count("webterminal") != 0) {
    request.required_services["terminal"] = 1;
  }
  if (tools.count("python") != 0) {
    request.required_services["python"] = 1;
  }
  if (tools.count("search") != 0 && !local_search_model_path) {
    request.required_services["search"] = 1;
  }
  if (local_search_model_path) {
    request.required_services[*local_search_model_path] = 1;
  }
  request.workspace = workspace;
  request.evaluation_cluster = evaluation_cluster.value_or(services_cluster);
  request.priority = priority;
  request.min_runtime_hours = min_runtime_hours;
  wrapper.apply(request);
  request.readiness_timeout_seconds =
      static_cast<double>(std::max(readiness_timeout, startup_timeout));
  request.experiment_name = basename_or(*run_dir, "jtceval");

  out.workload_variable = "JTCEVAL_EVALUATION_JSON";
  out.workload = std::move(workload);
  out.snapshot_root = *run_dir;
  const auto *template_node = eval.node().find("verifier_prompt_chat_template_path");
  out.templates.push_back(
      loader.resolve(template_node->value, "/verifier_prompt_chat_template_path"));
}

} // namespace pb::evaluation::detail
