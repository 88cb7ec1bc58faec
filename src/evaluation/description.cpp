// SPDX-License-Identifier: MIT
// The five YAML kinds (docs/evaluation.md "YAML kinds"): strict fields, defaults, validations,
// and the mapping of each onto an EvaluationRequest and its JTC workload.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation/description.hpp>
#include <primebeaker/evaluation/templates.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

namespace pb::evaluation {
namespace {

using services::YamlDocument;
using services::YamlMember;
using services::YamlNode;
namespace stdfs = std::filesystem;

enum class Bound : std::uint8_t { any, non_negative, positive };

// One strict YAML mapping: every read marks its key, finish() refuses the rest. Messages are
// "file:line:col: <prefix><key> ...".
class Mapping {
public:
  Mapping(const YamlDocument &document, const YamlNode &node, std::string prefix)
      : m_document(document), m_node(node), m_prefix(std::move(prefix)) {}

  const YamlDocument &document() const { return m_document; }
  const YamlNode &node() const { return m_node; }
  std::string name(std::string_view key) const { return m_prefix + std::string(key); }

  const YamlMember *member(std::string_view key) {
    m_used.insert(std::string(key));
    return m_node.find(key);
  }
  bool present(std::string_view key) const {
    const auto *found = m_node.find(key);
    return found != nullptr && found->value.kind != YamlNode::Kind::null;
  }
  std::string location(std::string_view key) const {
    const auto *found = m_node.find(key);
    return m_document.location(found != nullptr ? found->value.mark : m_node.mark);
  }
  Error error(std::string_view key, const std::string &message) const {
    return input_error(fmt::format("{}: {}", location(key), message));
  }
  Error type_error(std::string_view key, std::string_view expected, const YamlNode &value) const {
    return error(
        key,
        fmt::format(
            "{} must be {} (got {})", name(key), expected, services::describe_kind(value.kind)));
  }

  std::optional<std::string> opt_string(std::string_view key) {
    const auto *found = member(key);
    if (found == nullptr || found->value.kind == YamlNode::Kind::null) {
      return std::nullopt;
    }
    if (!found->value.is_string()) {
      throw type_error(key, "a string", found->value);
    }
    return found->value.text;
  }
  std::string string(std::string_view key, std::string fallback) {
    const auto *found = member(key);
    if (found == nullptr) {
      return fallback;
    }
    if (!found->value.is_string()) {
      throw type_error(key, "a string", found->value);
    }
    return found->value.text;
  }
  std::string required_string(std::string_view key) {
    if (m_node.find(key) == nullptr) {
      throw input_error(
          fmt::format("{}: {} is required", m_document.location(m_node.mark), name(key)));
    }
    return string(key, {});
  }
  // A string that may be null (budget).
  std::optional<std::string> nullable_string(std::string_view key, std::string fallback) {
    const auto *found = member(key);
    if (found == nullptr) {
      return fallback;
    }
    if (found->value.kind == YamlNode::Kind::null) {
      return std::nullopt;
    }
    if (!found->value.is_string()) {
      throw type_error(key, "a string or null", found->value);
    }
    return found->value.text;
  }
  std::optional<std::int64_t> opt_integer(std::string_view key, Bound bound) {
    const auto *found = member(key);
    if (found == nullptr || found->value.kind == YamlNode::Kind::null) {
      return std::nullopt;
    }
    if (found->value.kind != YamlNode::Kind::integer) {
      throw type_error(key, "an integer", found->value);
    }
    check_bound(key, static_cast<double>(found->value.integer), bound);
    return found->value.integer;
  }
  std::int64_t integer(std::string_view key, std::int64_t fallback, Bound bound) {
    if (const auto *found = m_node.find(key);
        found != nullptr && found->value.kind == YamlNode::Kind::null) {
      throw type_error(key, "an integer", found->value);
    }
    return opt_integer(key, bound).value_or(fallback);
  }
  double number(std::string_view key, double fallback, Bound bound) {
    const auto *found = member(key);
    if (found == nullptr) {
      return fallback;
    }
    double value = 0;
    if (found->value.kind == YamlNode::Kind::integer) {
      value = static_cast<double>(found->value.integer);
    } else if (found->value.kind == YamlNode::Kind::floating) {
      value = found->value.floating;
    } else {
      throw type_error(key, "a number", found->value);
    }
    check_bound(key, value, bound);
    return value;
  }
  bool boolean(std::string_view key, bool fallback) {
    const auto *found = member(key);
    if (found == nullptr) {
      return fallback;
    }
    if (found->value.kind != YamlNode::Kind::boolean) {
      throw type_error(key, "true or false", found->value);
    }
    return found->value.boolean;
  }
  std::string priority(std::string_view key, std::string fallback) {
    auto value = string(key, std::move(fallback));
    if (value != "normal" && value != "high" && value != "urgent") {
      throw error(
          key, fmt::format("{} must be one of normal, high, urgent (got '{}')", name(key), value));
    }
    return value;
  }
  const YamlNode *mapping(std::string_view key, const std::string &message) {
    const auto *found = member(key);
    if (found == nullptr || found->value.kind == YamlNode::Kind::null) {
      return nullptr;
    }
    if (!found->value.is_mapping()) {
      throw error(key, message);
    }
    return &found->value;
  }
  std::map<std::string, std::string> string_map(std::string_view key) {
    std::map<std::string, std::string> out;
    const auto *node = mapping(key, name(key) + " must be a mapping of names to strings");
    if (node == nullptr) {
      return out;
    }
    for (const auto &item : node->members) {
      if (!item.value.is_string()) {
        throw input_error(fmt::format("{}: {}.{} must be a string",
                                      m_document.location(item.value.mark),
                                      name(key),
                                      item.key));
      }
      out[item.key] = item.value.text;
    }
    return out;
  }
  std::map<std::string, std::int64_t> counts(std::string_view key) {
    std::map<std::string, std::int64_t> out;
    const auto *node = mapping(key, name(key) + " must be a mapping of names to counts");
    if (node == nullptr) {
      return out;
    }
    for (const auto &item : node->members) {
      if (item.key.empty() || item.value.kind != YamlNode::Kind::integer ||
          item.value.integer < 1) {
        throw input_error(fmt::format("{}: required services need names and positive counts",
                                      m_document.location(item.value.mark)));
      }
      out[item.key] = item.value.integer;
    }
    return out;
  }

  // The members nobody read, in document order (JTC's own fields).
  std::vector<const YamlMember *> rest() const {
    std::vector<const YamlMember *> out;
    for (const auto &item : m_node.members) {
      if (m_used.count(item.key) == 0) {
        out.push_back(&item);
      }
    }
    return out;
  }
  void finish(const std::vector<std::string_view> &known) const {
    for (const auto *item : rest()) {
      std::string message =
          fmt::format("{}: unknown field {}", m_document.location(item->key_mark), name(item->key));
      for (const auto candidate : known) {
        if (text::edit_distance(item->key, candidate) < 3) {
          message += fmt::format(" (did you mean {}?)", candidate);
          break;
        }
      }
      throw input_error(message);
    }
  }

private:
  void check_bound(std::string_view key, double value, Bound bound) const {
    if (bound == Bound::positive && !(value > 0)) {
      throw error(key,
                  fmt::format("{} must be > 0 (got {})", name(key), python_float_or_int(value)));
    }
    if (bound == Bound::non_negative && !(value >= 0)) {
      throw error(key,
                  fmt::format("{} must be >= 0 (got {})", name(key), python_float_or_int(value)));
    }
  }
  static std::string python_float_or_int(double value) {
    if (value == static_cast<double>(static_cast<std::int64_t>(value))) {
      return std::to_string(static_cast<std::int64_t>(value));
    }
    return python_float(value);
  }

  const YamlDocument &m_document;
  const YamlNode &m_node;
  std::string m_prefix;
  std::set<std::string> m_used;
};

// Fields common to the primebeaker-owned wrappers (keep_stack, token, secrets, budget, image).
struct Wrapper {
  std::optional<std::string> image;
  bool keep_stack = false;
  std::string beaker_token_secret = "BEAKER_TOKEN";
  std::map<std::string, std::string> secrets;
  std::optional<std::string> budget = "ai2/oe-omai";

  void read(Mapping &fields, bool with_budget = true) {
    image = fields.opt_string("image");
    keep_stack = fields.boolean("keep_stack", false);
    beaker_token_secret = fields.string("beaker_token_secret", beaker_token_secret);
    secrets = fields.string_map("secrets");
    if (with_budget) {
      budget = fields.nullable_string("budget", *budget);
    }
  }
  void apply(EvaluationRequest &request) const {
    request.keep_services = keep_stack;
    request.beaker_token_secret = beaker_token_secret;
    request.secrets = secrets;
    request.budget = budget;
  }
};

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

bool under_weka(const std::string &path) {
  const auto normal = stdfs::path(path).lexically_normal().string();
  return normal == "/weka" || text::starts_with(normal, "/weka/");
}

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return out;
}

// The JSON of the members JTC owns (everything `fields` did not read), in document order.
OrderedJson rest_json(const Mapping &fields) {
  OrderedJson out = OrderedJson::object();
  for (const auto *item : fields.rest()) {
    out[item->key] = services::to_json(item->value);
  }
  return out;
}

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

class Loader {
public:
  Loader(const YamlDocument &document, const stdfs::path &yaml_path, const LoadOptions &options)
      : m_document(document), m_yaml_path(yaml_path), m_options(options),
        m_search(
            template_search_dirs(yaml_path.parent_path(), options.cwd, options.template_dirs)) {}

  // A template value at `node`, located in the workload at `pointer`.
  TemplateRef resolve(const YamlNode &node, const std::string &pointer) const {
    TemplateRef ref;
    ref.requested = node.text;
    ref.location = m_document.location(node.mark);
    ref.pointer = pointer;
    ref.path = find_template(node.text, m_search);
    if (ref.path) {
      ref.content = fs::read_file(*ref.path);
      check_template(ref.path->string(), ref.content);
    }
    return ref;
  }

  const std::optional<std::string> &image_override() const { return m_options.image; }
  const std::optional<std::string> &registry_override() const { return m_options.registry; }
  const LoadOptions &options() const { return m_options; }

  std::string image(const std::optional<std::string> &from_yaml) const {
    if (m_options.image && !m_options.image->empty()) {
      return *m_options.image;
    }
    if (from_yaml && !from_yaml->empty()) {
      return *from_yaml;
    }
    throw input_error("evaluation image is required; pass --image or set image");
  }

private:
  const YamlDocument &m_document;
  const stdfs::path &m_yaml_path;
  const LoadOptions &m_options;
  std::vector<stdfs::path> m_search;
};

// ---- standard -------------------------------------------------------------------------------

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
  const auto jtc_string = [&](std::string_view key) -> std::optional<std::string> {
    const auto *found = eval.node().find(key);
    if (found == nullptr || found->value.kind == YamlNode::Kind::null) {
      return std::nullopt;
    }
    if (!found->value.is_string()) {
      throw eval.type_error(key, "a string", found->value);
    }
    return found->value.text;
  };
  const auto model = jtc_string("model");
  const auto run_dir = jtc_string("run_dir");
  if (!model) {
    throw input_error(
        fmt::format("{}: evaluation.model is required", document.location(block->value.mark)));
  }
  if (!run_dir) {
    throw input_error(
        fmt::format("{}: evaluation.run_dir is required", document.location(block->value.mark)));
  }
  const auto local_search_model_path = jtc_string("local_search_model_path");
  const auto verifier_tools = jtc_string("verifier_tools").value_or("");
  jtc_string("verifier_prompt_chat_template_path");

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
  services["shared_dir"] = k_default_shared_dir;
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

// ---- search-agent ---------------------------------------------------------------------------

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
  const auto jtc_string = [&](std::string_view key) -> std::optional<std::string> {
    const auto *found = agent.node().find(key);
    if (found == nullptr || found->value.kind == YamlNode::Kind::null) {
      return std::nullopt;
    }
    if (!found->value.is_string()) {
      throw agent.type_error(key, "a string", found->value);
    }
    return found->value.text;
  };
  const auto model = jtc_string("model");
  const auto dataset = jtc_string("dataset").value_or("");
  const auto run_dir = jtc_string("run_dir").value_or("");
  const auto harness = jtc_string("harness").value_or("");
  const auto local_search_model_path = jtc_string("local_search_model_path");
  const auto judge_model_path = jtc_string("judge_model_path");
  const auto judge_service_model_path = jtc_string("judge_service_model_path");
  if (!model) {
    throw input_error(
        fmt::format("{}: {}model is required", document.location(payload_node->mark), prefix));
  }

  // Validation, in the reference's order.
  if (!under_weka(dataset)) {
    throw agent.error("dataset", "dataset must be under /weka");
  }
  if (!under_weka(run_dir)) {
    throw agent.error("run_dir", "run_dir must be under /weka");
  }
  if (local_search_replicas > 0) {
    const std::pair<const char *, const std::optional<std::string> *> needed[] = {
        {"local_search_corpus_jsonl", &local_search_corpus},
        {"local_search_index_dir", &local_search_index}};
    for (const auto &[name, value] : needed) {
      if (!*value || !under_weka(**value)) {
        throw agent.error(name, fmt::format("{} must be under /weka", name));
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
  services["shared_dir"] = k_default_shared_dir;
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

// ---- generic workflow and rejection sampling (same placement fields) -------------------------

struct Placement {
  OrderedJson services = OrderedJson::object();
  std::map<std::string, std::string> origins;
  std::map<std::string, std::int64_t> required_services;
  std::optional<std::string> registry;
  std::string workspace;
  std::string evaluation_cluster;
  std::string priority;
  std::int64_t min_runtime_hours = 1;
  double readiness_timeout_seconds = 7200;
  Wrapper wrapper;
};

Placement read_placement(Mapping &top) {
  Placement placement;
  placement.wrapper.read(top);
  if (const auto *services = top.mapping("services",
                                         "services must be a mapping of LiteRegistry "
                                         "BaseDeploymentConfig fields")) {
    for (const auto &item : services->members) {
      placement.services[item.key] = services::to_json(item.value);
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
    request.services["shared_dir"] = k_default_shared_dir;
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

std::vector<std::string_view> known_fields(std::initializer_list<std::string_view> extra) {
  std::vector<std::string_view> known(std::begin(k_placement_fields), std::end(k_placement_fields));
  known.insert(known.end(), extra.begin(), extra.end());
  return known;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

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
    args = services::to_json(arguments->value);
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
  out.workload = services::to_json(block->value);
  out.snapshot_root = output_dir->value.text;
  out.templates.push_back(loader.resolve(template_node->value, "/prompt_chat_template_path"));
}

// ---- rubric-judge audit ---------------------------------------------------------------------

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
  services["shared_dir"] = k_default_shared_dir;

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
      out.workload[key] = services::to_json(*node);
    }
  }
  out.snapshot_root = audit_dir->value.text;
  out.force = loader.options().force;
  if (receipt != nullptr && receipt->value.is_string()) {
    out.audit_receipt_path = receipt->value.text;
  }
  out.templates.push_back(loader.resolve(template_node->value, "/inference/template_path"));
}

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
  const Loader loader(document, yaml_path, options);
  if (out.workflow == "search-agent") {
    out.kind = Kind::search_agent;
    load_search_agent(document, loader, out);
  } else if (out.workflow == "rubric-judge-audit") {
    out.kind = Kind::rubric_audit;
    load_rubric_audit(document, loader, out);
  } else if (out.workflow == "rejection-sampling") {
    out.kind = Kind::rejection_sampling;
    load_rejection_sampling(document, loader, out);
  } else if (out.workflow == "standard") {
    out.kind = Kind::standard;
    load_standard(document, loader, out);
  } else {
    out.kind = Kind::workflow;
    load_workflow(document, loader, out);
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
