// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/python_json.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation/request.hpp>
#include <primebeaker/registry/records.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>

namespace pb::evaluation {
namespace {

constexpr std::string_view k_reserved[] = {
    "PRIMEBEAKER_EVALUATION_MODULE",
    "PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON",
    "PRIMEBEAKER_COORDINATION_ROOT",
    "PRIMEBEAKER_REQUIRED_SERVICES_JSON",
    "PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID",
    "PRIMEBEAKER_KEEP_SERVICES",
    "PRIMEBEAKER_READINESS_TIMEOUT_SECONDS",
    "PRIMEBEAKER_RUN_DIR",
    "PRIMEBEAKER_REGISTRY",
};

std::string python_list(const std::vector<std::string> &names) {
  std::vector<std::string> quoted;
  quoted.reserve(names.size());
  for (const auto &name : names) {
    quoted.push_back("'" + name + "'");
  }
  return "[" + text::join(quoted, ", ") + "]";
}

// A path made absolute and lexically normal (what Path.resolve() does without symlinks on a
// mount the client does not have).
std::filesystem::path resolved(const std::string &path) {
  return std::filesystem::path(path).lexically_normal();
}

bool is_under(const std::filesystem::path &path, const std::filesystem::path &root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) {
      continue; // a trailing separator
    }
    if (p == path.end() || *p != *r) {
      return false;
    }
  }
  return true;
}

Error request_error(const std::string &message) {
  return input_error(message);
}

// Strict JSON field readers for request_from_json.
class JsonFields {
public:
  JsonFields(const OrderedJson &object, std::string source)
      : m_object(object), m_source(std::move(source)) {}

  const OrderedJson *get(const std::string &key) {
    m_seen.insert(key);
    const auto it = m_object.find(key);
    return it == m_object.end() ? nullptr : &*it;
  }
  Error type_error(const std::string &key, std::string_view expected) const {
    return request_error(fmt::format("{}: {} must be {}", m_source, key, expected));
  }
  std::optional<std::string> string(const std::string &key, bool nullable = false) {
    const auto *value = get(key);
    if (value == nullptr || (nullable && value->is_null())) {
      return std::nullopt;
    }
    if (!value->is_string()) {
      throw type_error(key, nullable ? "a string or null" : "a string");
    }
    return value->get<std::string>();
  }
  std::string required_string(const std::string &key) {
    if (m_object.find(key) == m_object.end()) {
      throw request_error(fmt::format("{}: {} is required", m_source, key));
    }
    return *string(key);
  }
  std::optional<std::int64_t> integer(const std::string &key) {
    const auto *value = get(key);
    if (value == nullptr) {
      return std::nullopt;
    }
    if (!value->is_number_integer()) {
      throw type_error(key, "an integer");
    }
    return value->get<std::int64_t>();
  }
  std::optional<double> number(const std::string &key) {
    const auto *value = get(key);
    if (value == nullptr) {
      return std::nullopt;
    }
    if (!value->is_number()) {
      throw type_error(key, "a number");
    }
    return value->get<double>();
  }
  std::optional<bool> boolean(const std::string &key) {
    const auto *value = get(key);
    if (value == nullptr) {
      return std::nullopt;
    }
    if (!value->is_boolean()) {
      throw type_error(key, "true or false");
    }
    return value->get<bool>();
  }
  std::map<std::string, std::string> string_map(const std::string &key) {
    std::map<std::string, std::string> out;
    const auto *value = get(key);
    if (value == nullptr) {
      return out;
    }
    if (!value->is_object()) {
      throw type_error(key, "an object of strings");
    }
    for (const auto &[name, item] : value->items()) {
      if (!item.is_string()) {
        throw type_error(key + "." + name, "a string");
      }
      out[name] = item.get<std::string>();
    }
    return out;
  }
  void reject_unknown(const std::vector<std::string> &known) const {
    for (const auto &[key, value] : m_object.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string message = fmt::format("{}: unknown request field '{}'", m_source, key);
        for (const auto &candidate : known) {
          if (text::edit_distance(key, candidate) < 3) {
            message += fmt::format(" (did you mean {}?)", candidate);
            break;
          }
        }
        throw request_error(message);
      }
    }
  }

private:
  const OrderedJson &m_object;
  std::string m_source;
  std::set<std::string> m_seen;
};

} // namespace

std::vector<std::string> worker_command(const EvaluationRequest &request) {
  return {request.staged_worker.empty() ? std::string("primebeaker") : request.staged_worker,
          "evaluation",
          "worker"};
}

bool is_python_module_path(std::string_view text) {
  static const std::regex pattern("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*");
  return std::regex_match(text.begin(), text.end(), pattern);
}

std::string python_float(double value) {
  return python_json::float_repr(value);
}

EvaluationRequest request_from_json(const OrderedJson &json, const std::string &source) {
  if (!json.is_object()) {
    throw request_error(fmt::format("{}: an evaluation request must be a JSON object", source));
  }
  JsonFields fields(json, source);
  fields.reject_unknown({"module",
                         "arguments",
                         "image",
                         "run_dir",
                         "services",
                         "required_services",
                         "workspace",
                         "evaluation_cluster",
                         "priority",
                         "min_runtime_hours",
                         "mount_path",
                         "dataset",
                         "environment",
                         "secrets",
                         "beaker_token_secret",
                         "keep_services",
                         "readiness_timeout_seconds",
                         "experiment_name",
                         "budget"});
  EvaluationRequest request;
  request.module = fields.required_string("module");
  if (const auto *arguments = fields.get("arguments")) {
    if (!arguments->is_array()) {
      throw fields.type_error("arguments", "an array of strings");
    }
    for (const auto &argument : *arguments) {
      if (!argument.is_string()) {
        throw request_error("Python module arguments must all be strings");
      }
      request.arguments.push_back(argument.get<std::string>());
    }
  }
  request.image = fields.required_string("image");
  request.run_dir = fields.required_string("run_dir");
  const auto *services = fields.get("services");
  if (services == nullptr) {
    throw request_error(fmt::format("{}: services is required", source));
  }
  if (!services->is_object()) {
    throw fields.type_error("services", "an object of LiteRegistry BaseDeploymentConfig fields");
  }
  request.services = *services;
  if (const auto *required = fields.get("required_services")) {
    if (!required->is_object()) {
      throw fields.type_error("required_services", "an object of names to counts");
    }
    for (const auto &[name, count] : required->items()) {
      if (!count.is_number_integer()) {
        throw fields.type_error("required_services." + name, "an integer");
      }
      request.required_services[name] = count.get<std::int64_t>();
    }
  }
  request.workspace = fields.string("workspace").value_or(request.workspace);
  request.evaluation_cluster =
      fields.string("evaluation_cluster").value_or(request.evaluation_cluster);
  request.priority = fields.string("priority").value_or(request.priority);
  request.min_runtime_hours = fields.integer("min_runtime_hours").value_or(0);
  request.mount_path = fields.string("mount_path").value_or(request.mount_path);
  request.dataset = fields.string("dataset").value_or(request.dataset);
  request.environment = fields.string_map("environment");
  request.secrets = fields.string_map("secrets");
  if (json.contains("beaker_token_secret")) {
    request.beaker_token_secret = fields.string("beaker_token_secret", true);
  }
  request.keep_services = fields.boolean("keep_services").value_or(false);
  request.readiness_timeout_seconds = fields.number("readiness_timeout_seconds").value_or(7200);
  request.experiment_name = fields.string("experiment_name").value_or(request.experiment_name);
  if (json.contains("budget")) {
    request.budget = fields.string("budget", true);
  }
  validate(request);
  return request;
}

void validate(const EvaluationRequest &request) {
  if (request.module.empty() || !is_python_module_path(request.module)) {
    throw request_error(fmt::format("invalid Python module path: '{}'", request.module));
  }
  if (request.image.empty()) {
    throw request_error("image must be a non-empty string");
  }
  const auto mount = resolved(request.mount_path);
  const auto run_dir = resolved(request.run_dir);
  if (request.run_dir.empty() || !run_dir.is_absolute() || !is_under(run_dir, mount)) {
    throw request_error(fmt::format(
        "launch path must be under mounted path {}: {}", mount.string(), run_dir.string()));
  }
  for (const auto &[name, count] : request.required_services) {
    if (name.empty() || count < 1) {
      throw request_error("required services need names and positive counts");
    }
  }
  const std::pair<std::string_view, const std::string *> non_empty[] = {
      {"workspace", &request.workspace},
      {"evaluation_cluster", &request.evaluation_cluster},
      {"dataset", &request.dataset},
      {"experiment_name", &request.experiment_name}};
  for (const auto &[name, value] : non_empty) {
    if (value->empty()) {
      throw request_error(fmt::format("{} must be a non-empty string", name));
    }
  }
  if (request.priority != "normal" && request.priority != "high" && request.priority != "urgent") {
    throw request_error(
        fmt::format("priority must be one of normal, high, urgent (got '{}')", request.priority));
  }
  if (request.min_runtime_hours < 0) {
    throw request_error(
        fmt::format("min_runtime_hours must be >= 0 (got {})", request.min_runtime_hours));
  }
  if (!(request.readiness_timeout_seconds > 0) ||
      !std::isfinite(request.readiness_timeout_seconds)) {
    throw request_error(fmt::format("readiness_timeout_seconds must be > 0 (got {})",
                                    python_float(request.readiness_timeout_seconds)));
  }
  if (!request.keep_services &&
      (!request.beaker_token_secret || request.beaker_token_secret->empty())) {
    throw request_error("managed service cleanup requires a Beaker token secret");
  }
}

OrderedJson service_config(const EvaluationRequest &request) {
  OrderedJson config = request.services;
  const std::pair<const char *, std::optional<std::string>> owned[] = {
      {"workspace", request.workspace}, {"budget", request.budget}};
  for (const auto &[key, value] : owned) {
    if (config.contains(key)) {
      const OrderedJson wanted = value ? OrderedJson(*value) : OrderedJson(nullptr);
      if (config[key] != wanted) {
        throw request_error(
            fmt::format("services.{} conflicts with evaluation scheduler value", key));
      }
    }
    if (value) {
      config[key] = *value;
    }
  }
  return config;
}

std::string coordination_root(const OrderedJson &config, const std::string &service_name) {
  std::string shared;
  if (const auto it = config.find("shared_dir");
      it != config.end() && it->is_string() && !it->get<std::string>().empty()) {
    shared = it->get<std::string>();
  } else {
    throw input_error("services.shared_dir is not set: set it in the request, or run "
                      "`primebeaker config set user NAME` (then it is <mount_path>/NAME)");
  }
  while (shared.size() > 1 && shared.back() == '/') {
    shared.pop_back();
  }
  return shared + "/.literegistry-coop/" + service_name;
}

std::string evaluation_experiment_name(const EvaluationRequest &request,
                                       const std::string &service_name) {
  const size_t keep = std::min<size_t>(10, service_name.size());
  return request.experiment_name + "-" + service_name.substr(service_name.size() - keep);
}

beaker::Experiment evaluator_experiment(const EvaluationRequest &request,
                                        const OrderedJson &config,
                                        const std::string &root,
                                        const std::string &service_experiment_id) {
  std::map<std::string, std::string> values;
  values["PRIMEBEAKER_EVALUATION_MODULE"] = request.module;
  values["PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON"] = registry::python_json(request.arguments);
  values["PRIMEBEAKER_COORDINATION_ROOT"] = root;
  OrderedJson required = OrderedJson::object();
  for (const auto &[name, count] : request.required_services) { // std::map: keys sorted
    required[name] = count;
  }
  values["PRIMEBEAKER_REQUIRED_SERVICES_JSON"] = registry::python_json(required);
  values["PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID"] = service_experiment_id;
  values["PRIMEBEAKER_KEEP_SERVICES"] = request.keep_services ? "True" : "False";
  values["PRIMEBEAKER_READINESS_TIMEOUT_SECONDS"] = python_float(request.readiness_timeout_seconds);
  values["PRIMEBEAKER_RUN_DIR"] = request.run_dir;
  if (const auto it = config.find("registry");
      it != config.end() && it->is_string() && !it->get<std::string>().empty()) {
    values["PRIMEBEAKER_REGISTRY"] = it->get<std::string>();
  }
  std::vector<std::string> overridden;
  for (const auto &[name, value] : request.environment) {
    if (std::find(std::begin(k_reserved), std::end(k_reserved), name) != std::end(k_reserved)) {
      overridden.push_back(name);
    }
  }
  if (!overridden.empty()) {
    throw request_error(fmt::format(
        "reserved evaluation environment names cannot be overridden: {}", python_list(overridden)));
  }
  values.insert(request.environment.begin(), request.environment.end());

  std::map<std::string, std::string> secrets = request.secrets;
  if (!request.keep_services) {
    if (secrets.count("BEAKER_TOKEN") != 0) {
      throw request_error("evaluation secrets may not override managed BEAKER_TOKEN");
    }
    secrets["BEAKER_TOKEN"] = request.beaker_token_secret.value_or("");
  }
  std::vector<std::string> both;
  for (const auto &[name, secret] : secrets) {
    if (values.count(name) != 0) {
      both.push_back(name);
    }
  }
  if (!both.empty()) {
    throw request_error(
        fmt::format("environment names cannot be both values and secrets: {}", python_list(both)));
  }

  beaker::Task task;
  task.name = "evaluation";
  task.image = beaker::Image::from_reference(request.image);
  task.command = worker_command(request);
  for (const auto &[name, value] : values) {
    task.env_vars.push_back(beaker::EnvVar::plain(name, value));
  }
  for (const auto &[name, secret] : secrets) {
    task.env_vars.push_back(beaker::EnvVar::from_secret(name, secret));
  }
  task.datasets.push_back({request.mount_path, request.dataset});
  task.context.priority = request.priority;
  task.context.min_runtime = fmt::format("{}h", request.min_runtime_hours);
  task.context.auto_resume = true;
  task.clusters = {request.evaluation_cluster};

  beaker::Experiment experiment;
  experiment.description = "PrimeBeaker managed Python evaluation: " + request.experiment_name;
  experiment.tasks.push_back(std::move(task));
  experiment.budget = request.budget.value_or("");
  return experiment;
}

OrderedJson evaluator_spec_json(const beaker::Experiment &experiment) {
  OrderedJson spec = beaker::to_json(experiment);
  for (auto &task : spec["tasks"]) {
    task.erase("resources"); // a CPU task placed by cluster only
  }
  return spec;
}

OrderedJson preview_json(const EvaluationRequest &request, const OrderedJson &service_preview) {
  const auto config = service_config(request);
  const std::string service_name = service_preview.value("experiment_name", "");
  const std::string root = coordination_root(config, service_name);
  OrderedJson out = OrderedJson::object();
  out["service"] = service_preview;
  out["evaluation_experiment_name"] = evaluation_experiment_name(request, service_name);
  out["coordination_root"] = root;
  out["evaluation_spec"] = evaluator_spec_json(
      evaluator_experiment(request, config, root, std::string(k_service_id_placeholder)));
  return out;
}

std::vector<std::string> receipt_experiment_ids(const OrderedJson &receipt) {
  const OrderedJson &beaker =
      receipt.is_object() && receipt.contains("beaker") ? receipt["beaker"] : receipt;
  std::vector<std::string> found;
  const auto scan = [&found](const OrderedJson &value) {
    const OrderedJson records = value.is_array() ? value : OrderedJson::array({value});
    for (const auto &record : records) {
      if (!record.is_object()) {
        continue;
      }
      for (const char *key : {"experiment_id", "experimentId", "id"}) {
        if (const auto it = record.find(key);
            it != record.end() && it->is_string() && !it->get<std::string>().empty()) {
          found.push_back(it->get<std::string>());
          break;
        }
      }
    }
  };
  scan(beaker);
  for (const char *nested : {"experiment", "experiments"}) {
    if (found.empty() && beaker.is_object() && beaker.contains(nested)) {
      scan(beaker[nested]);
    }
  }
  std::vector<std::string> unique;
  for (auto &id : found) {
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) {
      unique.push_back(std::move(id));
    }
  }
  return unique;
}

std::string single_experiment_id(const OrderedJson &receipt) {
  const auto ids = receipt_experiment_ids(receipt);
  if (ids.size() != 1) {
    throw tool_error(fmt::format("Beaker receipt did not contain exactly one experiment ID: {}",
                                 python_list(ids)));
  }
  return ids.front();
}

} // namespace pb::evaluation
