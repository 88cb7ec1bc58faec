// SPDX-License-Identifier: MIT
// Loading primebeaker.run/v1 and the pure parts of a joint run: aliases, registry derivation,
// the trainer-owned cleanup lifecycle and reading the service receipt.
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/joint/joint.hpp>
#include <primebeaker/services/launcher_config.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace pb::joint {
namespace {

using yaml::YamlDocument;
using yaml::YamlMember;
using yaml::YamlNode;

const std::set<std::string> &list_settings() {
  static const std::set<std::string> names = {"cluster", "env", "secret", "required-service"};
  return names;
}

// YAML alias -> the launch list setting it fills.
const std::map<std::string, std::string> &mapping_aliases() {
  static const std::map<std::string, std::string> aliases = {
      {"environment", "env"}, {"secrets", "secret"}, {"required_services", "required-service"}};
  return aliases;
}

std::string kebab(const std::string &name) {
  return text::kebab_case(name);
}

std::string snake(const std::string &name) {
  return text::snake_case(name);
}

std::string suggestion(const std::string &name, const std::vector<std::string> &known) {
  const std::string best = text::closest_match(name, known);
  return best.empty() ? std::string() : fmt::format(" (did you mean {}?)", best);
}

bool is_scalar(const YamlNode &node) {
  return node.kind != YamlNode::Kind::sequence && node.kind != YamlNode::Kind::mapping &&
         node.kind != YamlNode::Kind::null;
}

// A scalar as the launch parser's text: booleans as true/false, integers in decimal, the rest
// as written.
std::string scalar_text(const YamlNode &node) {
  switch (node.kind) {
  case YamlNode::Kind::boolean:
    return node.boolean ? "true" : "false";
  case YamlNode::Kind::integer:
    return std::to_string(node.integer);
  default:
    return node.text;
  }
}

class RunYamlReader {
public:
  RunYamlReader(const YamlDocument &document, const std::map<std::string, std::string> &env)
      : m_doc(document), m_env(env) {}

  [[noreturn]] void fail(yaml::YamlMark mark, const std::string &message) const {
    throw input_error(fmt::format("{}: {}", m_doc.location(mark), message));
  }

  const YamlMember &require_mapping(const YamlNode &root, const std::string &key) const {
    const YamlMember *member = root.find(key);
    if (member == nullptr) {
      throw input_error(fmt::format(
          "{}: missing {}: (a run YAML needs schema, service and rl)", m_doc.source_name, key));
    }
    if (!member->value.is_mapping()) {
      fail(member->value.mark,
           fmt::format(
               "{} must be a mapping, not {}", key, yaml::describe_kind(member->value.kind)));
    }
    return *member;
  }

  void apply(launch::LaunchOptions &options,
             const YamlMember &member,
             const std::string &setting,
             const std::vector<std::string> &values) const {
    try {
      launch::apply_setting(options, setting, values);
    } catch (const Error &error) {
      fail(member.key_mark, fmt::format("rl.{}: {}", member.key, error.what()));
    }
  }

  std::vector<std::string> list_values(const YamlMember &member) const {
    std::vector<std::string> values;
    const YamlNode &value = member.value;
    if (value.kind == YamlNode::Kind::sequence) {
      for (const auto &item : value.items) {
        if (!is_scalar(item)) {
          fail(item.mark, fmt::format("rl.{} items must be plain values", member.key));
        }
        values.push_back(scalar_text(item));
      }
    } else if (is_scalar(value)) {
      values.push_back(scalar_text(value));
    } else if (value.kind != YamlNode::Kind::null) {
      fail(value.mark, fmt::format("rl.{} must be a value or a list", member.key));
    }
    return values;
  }

  std::vector<std::string> mapping_values(const YamlMember &member) const {
    std::vector<std::string> values;
    const YamlNode &value = member.value;
    if (value.kind == YamlNode::Kind::null) {
      return values;
    }
    if (!value.is_mapping()) {
      fail(value.mark,
           fmt::format("rl.{} must be a mapping of NAME: value, not {}",
                       member.key,
                       yaml::describe_kind(value.kind)));
    }
    for (const auto &entry : value.members) {
      if (!is_scalar(entry.value)) {
        fail(entry.value.mark,
             fmt::format("rl.{}.{} must be a plain value", member.key, entry.key));
      }
      values.push_back(entry.key + "=" + entry.value.text);
    }
    return values;
  }

  void read_rl(const YamlNode &rl, const std::filesystem::path &yaml_dir, RunConfig &config) const {
    // Alias pairs may not both be given.
    for (const auto &[alias, setting] : std::vector<std::pair<std::string, std::string>>{
             {"clusters", "cluster"},
             {"environment", "env"},
             {"secrets", "secret"},
             {"required_services", "required_service"}}) {
      const YamlMember *a = rl.find(alias);
      const YamlMember *b = rl.find(setting);
      if (a != nullptr && b != nullptr) {
        const YamlMember *later = a->key_mark.line > b->key_mark.line ? a : b;
        fail(later->key_mark, fmt::format("rl may supply only {} or {}", setting, alias));
      }
    }
    std::vector<std::string> known = {
        "toml", "clusters", "environment", "secrets", "required_services"};
    for (const auto &name : launch::launch_flag_names()) {
      known.push_back(snake(name));
    }
    const YamlMember *toml = rl.find("toml");
    if (toml == nullptr) {
      throw input_error(fmt::format("{}: missing rl.toml (the Prime-RL training TOML, relative to "
                                    "this file)",
                                    m_doc.source_name));
    }
    for (const auto &member : rl.members) {
      const std::string &key = member.key;
      if (key == "toml") {
        if (!member.value.is_string() || text::trim(member.value.text).empty()) {
          fail(member.value.mark, "rl.toml must be a non-empty path");
        }
        config.rl.toml = resolve_toml_path(member.value.text, yaml_dir);
        config.rl.given.insert("toml");
        config.rl_toml_location = m_doc.location(member.value.mark);
        continue;
      }
      if (key == "clusters") {
        apply(config.rl, member, "cluster", list_values(member));
        continue;
      }
      if (const auto alias = mapping_aliases().find(key); alias != mapping_aliases().end()) {
        const auto values = mapping_values(member);
        if (!values.empty()) {
          apply(config.rl, member, alias->second, values);
        }
        continue;
      }
      const std::string setting = kebab(key);
      const auto &names = launch::launch_flag_names();
      if (key.find('-') != std::string::npos ||
          std::find(names.begin(), names.end(), setting) == names.end()) {
        fail(member.key_mark, fmt::format("unknown key rl.{}{}", key, suggestion(key, known)));
      }
      if (list_settings().contains(setting)) {
        const auto values = list_values(member);
        if (!values.empty()) {
          apply(config.rl, member, setting, values);
        }
        continue;
      }
      if (member.value.kind == YamlNode::Kind::null) {
        if (setting == "wandb-secret" || setting == "hf-secret") {
          apply(config.rl, member, setting, {""}); // null disables, as an empty name does
        }
        continue;
      }
      if (!is_scalar(member.value)) {
        fail(member.value.mark,
             fmt::format("rl.{} must be a single value, not {}",
                         key,
                         yaml::describe_kind(member.value.kind)));
      }
      apply(config.rl, member, setting, {scalar_text(member.value)});
    }
  }

  std::filesystem::path resolve_toml_path(const std::string &written,
                                          const std::filesystem::path &yaml_dir) const {
    const auto home = m_env.find("HOME");
    std::filesystem::path path =
        text::expand_user(written, home != m_env.end() ? home->second : std::string());
    if (path.is_relative()) {
      path = yaml_dir / path;
    }
    std::error_code ec;
    auto resolved = std::filesystem::weakly_canonical(path, ec);
    return ec ? path.lexically_normal() : resolved;
  }

  void read_lifecycle(const YamlNode &root, RunConfig &config) const {
    const YamlMember *lifecycle = root.find("lifecycle");
    if (lifecycle == nullptr || lifecycle->value.kind == YamlNode::Kind::null) {
      return;
    }
    if (!lifecycle->value.is_mapping()) {
      fail(lifecycle->value.mark,
           fmt::format("lifecycle must be a mapping, not {}",
                       yaml::describe_kind(lifecycle->value.kind)));
    }
    for (const auto &member : lifecycle->value.members) {
      if (member.key == "cleanup_service_on_training_exit") {
        if (member.value.kind != YamlNode::Kind::boolean) {
          fail(member.value.mark,
               "lifecycle.cleanup_service_on_training_exit must be true or false");
        }
        config.cleanup_service_on_training_exit = member.value.boolean;
      } else if (member.key == "beaker_token_secret") {
        if (!member.value.is_string() || text::trim(member.value.text).empty()) {
          fail(member.value.mark, "lifecycle.beaker_token_secret must be a non-empty secret name");
        }
        config.beaker_token_secret = std::string(text::trim(member.value.text));
      } else {
        fail(member.key_mark,
             fmt::format("unknown key lifecycle.{}{}",
                         member.key,
                         suggestion(member.key,
                                    {"cleanup_service_on_training_exit", "beaker_token_secret"})));
      }
    }
  }

private:
  const YamlDocument &m_doc;
  const std::map<std::string, std::string> &m_env;
};

} // namespace

RunConfig load_run_config(const YamlDocument &document,
                          const std::filesystem::path &yaml_path,
                          const std::map<std::string, std::string> &env) {
  const RunYamlReader reader(document, env);
  const YamlNode &root = document.root;
  if (!root.is_mapping()) {
    reader.fail(root.mark,
                fmt::format("a run YAML must be a mapping with schema: {}, service:, rl: and an "
                            "optional lifecycle:, not {}",
                            k_run_schema,
                            yaml::describe_kind(root.kind)));
  }
  for (const auto &member : root.members) {
    static const std::vector<std::string> top = {
        "schema", "service_stack", "service", "rl", "lifecycle"};
    if (std::find(top.begin(), top.end(), member.key) == top.end()) {
      reader.fail(member.key_mark,
                  fmt::format("unknown key '{}' (a run YAML holds schema, service_stack, service, "
                              "rl and lifecycle){}",
                              member.key,
                              suggestion(member.key, top)));
    }
  }
  const YamlMember *schema = root.find("schema");
  if (schema == nullptr) {
    throw input_error(fmt::format("{}: missing schema: {}", document.source_name, k_run_schema));
  }
  if (!schema->value.is_string() || schema->value.text != k_run_schema) {
    reader.fail(schema->value.mark,
                fmt::format("schema must be '{}', not '{}'", k_run_schema, schema->value.text));
  }
  reader.require_mapping(root, "service");
  reader.require_mapping(root, "rl");

  // $VAR expansion of the whole document; in a run YAML any '$' left over is an error.
  const YamlNode expanded =
      yaml::expand_environment(document, root, env, yaml::UnresolvedRule::any_dollar, "run YAML");

  RunConfig config;
  config.config_path = yaml_path;
  if (const YamlMember *stack = expanded.find("service_stack")) {
    if (!stack->value.is_string() ||
        (stack->value.text != "base" && stack->value.text != "podman")) {
      reader.fail(stack->value.mark, "service_stack must be base or podman");
    }
    config.stack = stack->value.text == "podman" ? services::Stack::podman : services::Stack::base;
  }
  reader.read_lifecycle(expanded, config);
  config.service = services::config_from_mapping(
      config.stack, document, expanded.find("service")->value, "service");
  reader.read_rl(expanded.find("rl")->value, yaml_path.parent_path(), config);
  if (config.rl.registry.empty()) {
    if (const auto registry = derive_registry(config.service)) {
      launch::apply_setting(config.rl, "registry", {*registry});
    }
  }
  return config;
}

std::optional<std::string> derive_registry(const services::LauncherConfig &service) {
  if (const auto registry = service.string_value("registry"); registry && !registry->empty()) {
    return registry;
  }
  if (const auto head = service.string_value("head_registry"); head && !head->empty()) {
    return text::starts_with(*head, "head+") ? *head : "head+" + *head;
  }
  return std::nullopt;
}

void share_placement_with_services(RunConfig &config) {
  const auto share = [&](const char *name, const std::string &value) {
    if (value.empty() || config.service.find(name) != nullptr) {
      return;
    }
    services::ConfigField field;
    field.name = name;
    field.value = value;
    // In a run YAML, "given" means the YAML's rl: said it (or a flag, for the path flags).
    const auto origin = config.rl.origins.find(name);
    field.origin = config.rl.was_given(name) || origin == config.rl.origins.end()
                       ? fmt::format("rl.{} of {}", name, config.config_path.filename().string())
                       : fmt::format("the {} default ({})", name, origin->second);
    config.service.fields.push_back(std::move(field));
  };
  share("workspace", config.rl.workspace);
  share("budget", config.rl.budget);
}

launch::LaunchOptions rl_options_with_lifecycle(const RunConfig &config,
                                                const toml::Document &rl_toml,
                                                const std::string &service_experiment_id) {
  launch::LaunchOptions options = config.rl;
  if (!config.cleanup_service_on_training_exit) {
    return options;
  }
  const std::string yaml = config.config_path.string();
  const toml::Value *type = rl_toml.root().find_path({"deployment", "type"});
  if (type == nullptr || type->string() == nullptr) {
    throw input_error(fmt::format("{}: the training TOML needs deployment.type; trainer-side "
                                  "service cleanup requires multi-node RL",
                                  rl_toml.source_name()))
        .add_context(
            fmt::format("or set lifecycle.cleanup_service_on_training_exit: false in {}", yaml));
  }
  if (*type->string() != "multi_node") {
    throw input_error(fmt::format("{}: deployment.type is '{}': trainer-side service cleanup "
                                  "requires multi-node RL",
                                  rl_toml.location(*type),
                                  *type->string()))
        .add_context(fmt::format("set lifecycle.cleanup_service_on_training_exit: false in {} "
                                 "for single-node RL (and stop the services yourself)",
                                 yaml));
  }
  const auto name_of = [](const std::string &entry) { return entry.substr(0, entry.find('=')); };
  for (const auto &entry : options.env) {
    if (name_of(entry) == k_managed_id_env) {
      throw input_error(fmt::format("{}: rl.environment may not set {}: run sets it to the "
                                    "service experiment it launched",
                                    yaml,
                                    k_managed_id_env));
    }
  }
  for (const auto &entry : options.secrets) {
    if (name_of(entry) == k_managed_token_env) {
      throw input_error(fmt::format("{}: rl.secrets may not set the managed {}; name the secret "
                                    "with lifecycle.beaker_token_secret instead",
                                    yaml,
                                    k_managed_token_env));
    }
  }
  options.env.push_back(fmt::format("{}={}", k_managed_id_env, service_experiment_id));
  options.secrets.push_back(fmt::format("{}={}", k_managed_token_env, config.beaker_token_secret));
  options.given.insert("env");
  options.given.insert("secret");
  return options;
}

namespace {

void collect_ids(const OrderedJson &value, std::vector<std::string> &ids) {
  const auto take = [&ids](const OrderedJson &record) {
    if (!record.is_object()) {
      return;
    }
    for (const char *key : {"experiment_id", "experimentId", "id"}) {
      const auto it = record.find(key);
      if (it != record.end() && it->is_string() && !it->get<std::string>().empty()) {
        ids.push_back(it->get<std::string>());
        return;
      }
    }
  };
  if (value.is_array()) {
    for (const auto &record : value) {
      take(record);
    }
  } else {
    take(value);
  }
}

} // namespace

std::vector<std::string> receipt_experiment_ids(const OrderedJson &receipt) {
  const OrderedJson &beaker =
      receipt.is_object() && receipt.contains("beaker") ? receipt["beaker"] : receipt;
  std::vector<std::string> ids;
  collect_ids(beaker, ids);
  if (ids.empty() && beaker.is_object()) {
    for (const char *key : {"experiment", "experiments"}) {
      if (ids.empty() && beaker.contains(key)) {
        collect_ids(beaker[key], ids);
      }
    }
  }
  std::vector<std::string> unique;
  for (auto &id : ids) {
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) {
      unique.push_back(std::move(id));
    }
  }
  return unique;
}

} // namespace pb::joint
