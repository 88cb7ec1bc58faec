// SPDX-License-Identifier: MIT
// Evaluation YAMLs (docs/evaluation.md "YAML kinds"): the dispatcher to the five kinds' loaders,
// what they share (the placement fields of a generic workflow and rejection sampling), and the
// finishing of a description into a request.
#include "description_internal.hpp"

#include <algorithm>

namespace pb::evaluation {
namespace detail {
namespace {

constexpr std::string_view k_placement_fields[] = {"workflow",
                                                   "image",
                                                   "services",
                                                   "required_services",
                                                   "registry",
                                                   "workspace",
                                                   "evaluation_cluster",
                                                   "priority",
                                                   "min_runtime_hours",
                                                   "keep_stack",
                                                   "readiness_timeout_seconds",
                                                   "beaker_token_secret",
                                                   "secrets",
                                                   "budget"};

} // namespace

std::string basename_or(const std::string &path, const std::string &fallback) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') {
    trimmed.pop_back();
  }
  const auto name = stdfs::path(trimmed).filename().string();
  return name.empty() || name == "/" ? fallback : name;
}

OrderedJson optional_json(const std::optional<std::string> &value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

OrderedJson optional_json(const std::optional<std::int64_t> &value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

OrderedJson rest_json(const Mapping &fields) {
  OrderedJson out = OrderedJson::object();
  for (const auto *item : fields.rest()) {
    out[item->key] = yaml::to_json(item->value);
  }
  return out;
}

Placement read_placement(Mapping &top) {
  Placement placement;
  placement.wrapper.read(top);
  if (const auto *services = top.mapping("services",
                                         "services must be a mapping of LiteRegistry "
                                         "BaseDeploymentConfig fields")) {
    for (const auto &item : services->members) {
      placement.services[item.key] = yaml::to_json(item.value);
      placement.origins[item.key] = top.document().location(item.key_mark);
    }
  }
  placement.required_services = top.counts("required_services");
  placement.registry = top.opt_string("registry");
  placement.workspace = top.string("workspace", "ai2/oe-agents");
  placement.evaluation_cluster = top.string("evaluation_cluster", "ai2/jupiter");
  placement.priority = top.priority("priority", "high");
  placement.min_runtime_hours = top.integer("min_runtime_hours", 1, Bound::non_negative);
  placement.readiness_timeout_seconds =
      top.number("readiness_timeout_seconds", 7200, Bound::positive);
  if (placement.registry && placement.services.contains("registry") &&
      !placement.services["registry"].is_null() &&
      placement.services["registry"] != OrderedJson(*placement.registry)) {
    throw top.error("registry", "registry conflicts with services.registry");
  }
  return placement;
}

void apply_placement(Placement placement,
                     const Loader &loader,
                     const std::string &name_prefix,
                     EvaluationRequest &request) {
  if (loader.registry_override()) {
    placement.registry = loader.registry_override();
  }
  request.services = std::move(placement.services);
  request.service_origins = std::move(placement.origins);
  if (placement.registry) {
    request.services["registry"] = *placement.registry;
  }
  if (!request.services.contains("name_prefix")) {
    request.services["name_prefix"] = name_prefix;
  }
  if (!request.services.contains("shared_dir")) {
    request.services["shared_dir"] = loader.shared_dir();
  }
  request.arguments = {"run"};
  request.image = loader.image(placement.wrapper.image);
  request.required_services = std::move(placement.required_services);
  request.workspace = placement.workspace;
  request.evaluation_cluster = placement.evaluation_cluster;
  request.priority = placement.priority;
  request.min_runtime_hours = placement.min_runtime_hours;
  request.readiness_timeout_seconds = placement.readiness_timeout_seconds;
  placement.wrapper.apply(request);
}

std::vector<std::string_view> known_fields(std::initializer_list<std::string_view> extra) {
  std::vector<std::string_view> known(std::begin(k_placement_fields), std::end(k_placement_fields));
  known.insert(known.end(), extra.begin(), extra.end());
  return known;
}

} // namespace detail

namespace {

using yaml::YamlDocument;
using yaml::YamlNode;
namespace stdfs = std::filesystem;

} // namespace

bool is_builtin_workflow(std::string_view workflow) {
  return workflow == "standard" || workflow == "search-agent" || workflow == "rejection-sampling" ||
         workflow == "rubric-judge-audit";
}

const std::vector<std::string> &fallback_workflow_names() {
  static const std::vector<std::string> names = {"inference",
                                                 "verifier-tool-use",
                                                 "verifier-tmax-podman-binary-submit-v3",
                                                 "verifier-articulated-submit-tool-use",
                                                 "rejection-sampling"};
  return names;
}

Description load_description(const YamlDocument &document,
                             const stdfs::path &yaml_path,
                             const LoadOptions &options) {
  if (!document.root.is_mapping()) {
    throw input_error(fmt::format("evaluation YAML must be a mapping: {}", document.source_name));
  }
  Description out;
  out.source = document.source_name;
  out.yaml_path = yaml_path;
  out.local_mount = options.local_mount;
  out.workflow = "standard";
  if (const auto *workflow = document.root.find("workflow");
      workflow != nullptr && workflow->value.kind != YamlNode::Kind::null) {
    if (!workflow->value.is_string()) {
      throw input_error(fmt::format("{}: unsupported evaluation workflow: '{}'",
                                    document.location(workflow->value.mark),
                                    workflow->value.text));
    }
    out.workflow = workflow->value.text;
  }
  out.request.mount_path = options.mount_path;
  out.request.dataset = options.dataset;
  const detail::Loader loader(document, yaml_path, options);
  if (out.workflow == "search-agent") {
    out.kind = Kind::search_agent;
    detail::load_search_agent(document, loader, out);
  } else if (out.workflow == "rubric-judge-audit") {
    out.kind = Kind::rubric_audit;
    detail::load_rubric_audit(document, loader, out);
  } else if (out.workflow == "rejection-sampling") {
    out.kind = Kind::rejection_sampling;
    detail::load_rejection_sampling(document, loader, out);
  } else if (out.workflow == "standard") {
    out.kind = Kind::standard;
    detail::load_standard(document, loader, out);
  } else {
    out.kind = Kind::workflow;
    detail::load_workflow(document, loader, out);
  }
  for (auto &ref : out.templates) {
    if (ref.path) {
      ref.snapshot = snapshot_path(out.snapshot_root, ref.content);
    }
  }
  return out;
}

stdfs::path Description::local_path(const std::string &path) const {
  if (!local_mount) {
    return path;
  }
  const std::string mount = stdfs::path(request.mount_path).lexically_normal().string();
  if (path == mount || text::starts_with(path, mount + "/")) {
    return *local_mount / path.substr(std::min(path.size(), mount.size() + 1));
  }
  return path;
}

OrderedJson workload_with_snapshots(const Description &description, const OrderedJson &workload) {
  OrderedJson out = workload;
  for (const auto &ref : description.templates) {
    const OrderedJson::json_pointer pointer(ref.pointer);
    if (!ref.snapshot.empty() && out.contains(pointer)) {
      out[pointer] = ref.snapshot;
    }
  }
  return out;
}

EvaluationRequest finished_request(const Description &description, const OrderedJson &workload) {
  EvaluationRequest request = description.request;
  request.environment[description.workload_variable] = workload.dump();
  validate(request);
  return request;
}

} // namespace pb::evaluation
