// SPDX-License-Identifier: MIT
// The rejection-sampling YAML kind: a `rejection:` block for JTC's rejection-sampling worker,
// with the placement fields.
#include "description_internal.hpp"

namespace pb::evaluation::detail {

void load_rejection_sampling(const YamlDocument &document, const Loader &loader, Description &out) {
  Mapping top(document, document.root, "");
  top.member("workflow");
  const auto *block = top.member("rejection");
  if (block == nullptr || !block->value.is_mapping()) {
    throw input_error(
        fmt::format("{}: rejection must be a mapping",
                    document.location(block != nullptr ? block->value.mark : document.root.mark)));
  }
  const auto *template_node = block->value.find("prompt_chat_template_path");
  if (template_node == nullptr) {
    throw input_error(fmt::format("{}: rejection.prompt_chat_template_path is required",
                                  document.location(block->value.mark)));
  }
  if (!template_node->value.is_string()) {
    throw input_error(fmt::format("{}: rejection.prompt_chat_template_path must be a string",
                                  document.location(template_node->value.mark)));
  }
  const auto *output_dir = block->value.find("output_dir");
  if (output_dir == nullptr || !output_dir->value.is_string()) {
    throw input_error(fmt::format("{}: rejection.output_dir is required (a string)",
                                  document.location(block->value.mark)));
  }
  Placement placement = read_placement(top);
  top.finish(known_fields({"rejection"}));

  EvaluationRequest &request = out.request;
  apply_placement(std::move(placement), loader, "jtceval-rejection-sampling", request);
  request.module = "jtc.eval.rejection_sampling_worker";
  request.run_dir = output_dir->value.text;
  request.experiment_name = basename_or(output_dir->value.text, "rejection-sampling");
  out.workload_variable = "JTCEVAL_REJECTION_SAMPLING_JSON";
  out.workload = yaml::to_json(block->value);
  out.snapshot_root = output_dir->value.text;
  out.templates.push_back(loader.resolve(template_node->value, "/prompt_chat_template_path"));
}

} // namespace pb::evaluation::detail
