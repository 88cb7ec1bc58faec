// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/services/launcher_config.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::services {
namespace {

std::string underscored(std::string_view name) {
  std::string result(name);
  std::replace(result.begin(), result.end(), '-', '_');
  return result;
}

ConfigField *find_mutable(LauncherConfig &config, std::string_view name) {
  for (auto &field : config.fields) {
    if (field.name == name) {
      return &field;
    }
  }
  return nullptr;
}

} // namespace

std::vector<std::string> split_clusters(std::string_view text) {
  std::vector<std::string> clusters;
  for (const auto &piece : text::split(text, ',')) {
    const auto trimmed = text::trim(piece);
    if (!trimmed.empty()) {
      clusters.emplace_back(trimmed);
    }
  }
  return clusters;
}

FlagConfig config_from_flags(Stack stack, const std::vector<std::string> &args) {
  FlagConfig result;
  result.config.stack = stack;
  result.config.source = ConfigSource::flags;
  std::vector<std::string> cluster_texts;
  std::string cluster_flag;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (!text::starts_with(arg, "--") || arg.size() == 2) {
      throw usage_error(
          fmt::format("unexpected argument '{}': LiteRegistry fields are given as --field value or "
                      "--field=value",
                      arg));
    }
    std::string flag_name = arg.substr(2);
    OrderedJson value;
    if (const auto eq = flag_name.find('='); eq != std::string::npos) {
      value = flag_name.substr(eq + 1);
      flag_name.resize(eq);
    } else if (i + 1 < args.size() && !text::starts_with(args[i + 1], "--")) {
      value = args[++i];
    } else {
      value = true; // a bare boolean flag
    }
    const std::string name = underscored(flag_name);
    const std::string spelled = "--" + flag_name;
    if (name.empty()) {
      throw usage_error(fmt::format("unexpected argument '{}'", arg));
    }
    if (name == "python") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        throw usage_error("--python needs an interpreter path or name");
      }
      result.python = value.get<std::string>();
      continue;
    }
    if (name == "service_cluster") {
      if (!value.is_string()) {
        throw usage_error(spelled + " needs a comma-separated list of clusters");
      }
      cluster_texts.push_back(value.get<std::string>());
      cluster_flag = spelled;
      continue;
    }
    if (ConfigField *existing = find_mutable(result.config, name)) {
      if (!existing->value.is_array()) {
        existing->value = OrderedJson::array({existing->value});
      }
      existing->value.push_back(value);
      continue;
    }
    ConfigField field;
    field.name = name;
    field.value = value;
    field.from_text = true;
    field.origin = spelled;
    result.config.fields.push_back(std::move(field));
  }
  if (!cluster_texts.empty()) {
    if (const ConfigField *other = result.config.find("service_clusters")) {
      throw usage_error(fmt::format("supply only {} or {}, not both", cluster_flag, other->origin));
    }
    ConfigField field;
    field.name = "service_clusters";
    field.value = OrderedJson::array();
    for (const auto &text : cluster_texts) {
      for (auto &cluster : split_clusters(text)) {
        field.value.push_back(std::move(cluster));
      }
    }
    field.as_tuple = true;
    field.origin = cluster_flag;
    result.config.fields.push_back(std::move(field));
  }
  return result;
}

LauncherConfig config_from_mapping(Stack stack,
                                   const yaml::YamlDocument &document,
                                   const yaml::YamlNode &mapping,
                                   std::string_view path_prefix) {
  LauncherConfig config;
  config.stack = stack;
  config.source = ConfigSource::file;
  const yaml::YamlMember *alias = mapping.find("service_cluster");
  const yaml::YamlMember *clusters = mapping.find("service_clusters");
  if (alias != nullptr && clusters != nullptr) {
    const yaml::YamlMember *later = alias->key_mark.line > clusters->key_mark.line ? alias : clusters;
    throw input_error(fmt::format("{}: {}: supply only service_cluster or service_clusters",
                                  document.location(later->key_mark),
                                  path_prefix));
  }
  for (const auto &member : mapping.members) {
    ConfigField field;
    field.name = member.key;
    field.origin = document.location(member.key_mark);
    field.path = fmt::format("{}.{}", path_prefix, member.key);
    if (&member == alias) {
      if (!member.value.is_string()) {
        throw input_error(fmt::format("{}: {}: service_cluster must be a comma-separated string, "
                                      "not {} (use service_clusters for a list)",
                                      document.location(member.value.mark),
                                      field.path,
                                      yaml::describe_kind(member.value.kind)));
      }
      field.name = "service_clusters";
      field.value = OrderedJson::array();
      for (auto &cluster : split_clusters(member.value.text)) {
        field.value.push_back(std::move(cluster));
      }
      field.as_tuple = true;
    } else {
      field.value = yaml::to_json(member.value);
    }
    config.fields.push_back(std::move(field));
  }
  return config;
}

LauncherConfig load_services_yaml(Stack stack,
                                  const yaml::YamlDocument &document,
                                  const std::map<std::string, std::string> &env) {
  const yaml::YamlNode &root = document.root;
  if (!root.is_mapping()) {
    throw input_error(fmt::format("{}: a services YAML must be a mapping with schema: {} and "
                                  "services:, not {}",
                                  document.location(root.mark),
                                  k_services_schema,
                                  yaml::describe_kind(root.kind)));
  }
  const yaml::YamlMember *schema = root.find("schema");
  if (schema == nullptr) {
    throw input_error(
        fmt::format("{}: missing schema: {}", document.source_name, k_services_schema));
  }
  if (!schema->value.is_string() || schema->value.text != k_services_schema) {
    throw input_error(fmt::format("{}: schema must be '{}', not '{}'",
                                  document.location(schema->value.mark),
                                  k_services_schema,
                                  schema->value.text));
  }
  for (const auto &member : root.members) {
    if (member.key != "schema" && member.key != "services") {
      throw input_error(fmt::format("{}: unknown key '{}' (a services YAML holds only schema "
                                    "and services)",
                                    document.location(member.key_mark),
                                    member.key));
    }
  }
  const yaml::YamlMember *services = root.find("services");
  if (services == nullptr) {
    throw input_error(fmt::format("{}: missing services: (the LiteRegistry config fields)",
                                  document.source_name));
  }
  if (!services->value.is_mapping()) {
    throw input_error(fmt::format("{}: services must be a mapping of LiteRegistry config "
                                  "fields, not {}",
                                  document.location(services->value.mark),
                                  yaml::describe_kind(services->value.kind)));
  }
  const yaml::YamlNode expanded = yaml::expand_environment(
      document, services->value, env, yaml::UnresolvedRule::variable_syntax, "services YAML");
  return config_from_mapping(stack, document, expanded, "services");
}

} // namespace pb::services
