// SPDX-License-Identifier: MIT
// What the loaders of the five YAML kinds share (internal to the evaluation module):
//   description.cpp                     the dispatcher, shared helpers, the placement fields;
//   description_standard.cpp            standard (`evaluation:` block, JTC's eval worker);
//   description_search_agent.cpp        search-agent;
//   description_workflow.cpp            a generic registered JTC workflow;
//   description_rejection_sampling.cpp  rejection-sampling;
//   description_rubric_audit.cpp        rubric-judge-audit.
// The rules they implement: docs/evaluation.md, "YAML kinds".
#pragma once

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/evaluation/description.hpp>
#include <primebeaker/evaluation/templates.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pb::evaluation::detail {

using yaml::YamlDocument;
using yaml::YamlMember;
using yaml::YamlNode;
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
            "{} must be {} (got {})", name(key), expected, yaml::describe_kind(value.kind)));
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

  // A string field JTC owns, read without marking it (rest() keeps it): nullopt when absent
  // or null.
  std::optional<std::string> jtc_string(std::string_view key) const {
    const auto *found = m_node.find(key);
    if (found == nullptr || found->value.kind == YamlNode::Kind::null) {
      return std::nullopt;
    }
    if (!found->value.is_string()) {
      throw type_error(key, "a string", found->value);
    }
    return found->value.text;
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
  // The default of services.shared_dir: the user's (docs/config.md), which must be known.
  std::string shared_dir() const {
    if (m_options.shared_dir.empty()) {
      throw input_error(fmt::format(
          "{}: services.shared_dir is not set and primebeaker does not know your name: set "
          "services.shared_dir, or run `primebeaker config set user NAME` (then it is "
          "<mount_path>/NAME)",
          m_yaml_path.string()));
    }
    return m_options.shared_dir;
  }

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

// The last component of `path` (trailing slashes ignored), or `fallback` when there is none.
std::string basename_or(const std::string &path, const std::string &fallback);
// The value, or null.
OrderedJson optional_json(const std::optional<std::string> &value);
OrderedJson optional_json(const std::optional<std::int64_t> &value);
// The JSON of the members JTC owns (everything `fields` did not read), in document order.
OrderedJson rest_json(const Mapping &fields);

// ----- the placement fields of a generic workflow and rejection sampling (description.cpp)

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

Placement read_placement(Mapping &top);
void apply_placement(Placement placement,
                     const Loader &loader,
                     const std::string &name_prefix,
                     EvaluationRequest &request);
// The placement fields, then `extra`: what finish() accepts.
std::vector<std::string_view> known_fields(std::initializer_list<std::string_view> extra);

// ----- one loader per kind (description_<kind>.cpp)

void load_standard(const YamlDocument &document, const Loader &loader, Description &out);
void load_search_agent(const YamlDocument &document, const Loader &loader, Description &out);
void load_workflow(const YamlDocument &document, const Loader &loader, Description &out);
void load_rejection_sampling(const YamlDocument &document, const Loader &loader, Description &out);
void load_rubric_audit(const YamlDocument &document, const Loader &loader, Description &out);

} // namespace pb::evaluation::detail
