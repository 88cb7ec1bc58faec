// SPDX-License-Identifier: MIT
// The generic workflow YAML kind: any workflow JTC registers, with its run_dir, arguments
// (their *template_path values snapshotted) and the placement fields.
#include "description_internal.hpp"

namespace pb::evaluation::detail {
namespace {

std::string pointer_escape(const std::string &key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

} // namespace

void load_workflow(const YamlDocument &document, const Loader &loader, Description &out) {
  Mapping top(document, document.root, "");
  const auto workflow = top.required_string("workflow");
  const auto run_dir = top.required_string("run_dir");
  const auto *arguments = top.member("arguments");
  if (arguments != nullptr && arguments->value.kind != YamlNode::Kind::null &&
      !arguments->value.is_mapping()) {
    throw top.error("arguments", "arguments must be a mapping");
  }
  Placement placement = read_placement(top);
  top.finish(known_fields({"run_dir", "arguments"}));

  EvaluationRequest &request = out.request;
  apply_placement(std::move(placement), loader, "jtceval-" + workflow, request);
  request.module = "jtc.eval.workflow_worker";
  request.run_dir = run_dir;
  request.experiment_name = basename_or(run_dir, "jtceval-" + workflow);

  OrderedJson args = OrderedJson::object();
  if (arguments != nullptr && arguments->value.is_mapping()) {
    args = yaml::to_json(arguments->value);
    for (const auto &item : arguments->value.members) {
      if (ends_with(item.key, "template_path") && item.value.is_string()) {
        out.templates.push_back(
            loader.resolve(item.value, "/arguments/" + pointer_escape(item.key)));
      }
    }
  }
  out.workload_variable = "JTCEVAL_WORKFLOW_JSON";
  out.workload = OrderedJson::object();
  out.workload["workflow"] = workflow;
  out.workload["run_dir"] = run_dir;
  out.workload["arguments"] = std::move(args);
  out.snapshot_root = run_dir;
}

} // namespace pb::evaluation::detail
