// SPDX-License-Identifier: MIT
// Building LiteRegistry launcher configurations from flags and from primebeaker.services/v1
// YAML. Pure: the caller reads files and the environment and passes them in.
#pragma once

#include <primebeaker/services/launcher.hpp>
#include <primebeaker/yaml/tree.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::services {

inline constexpr std::string_view k_services_schema = "primebeaker.services/v1";

// `services [podman] preview|launch` arguments: every `--field value`, `--field=value` or bare
// `--flag` becomes an upstream field (hyphens read as underscores; repeats accumulate), except
// our own `--python`. `--service-cluster a,b` becomes service_clusters ("a","b").
// Throws pb::Error (exit 2) naming the offending argument.
struct FlagConfig {
  LauncherConfig config;
  std::optional<std::string> python;
};
FlagConfig config_from_flags(Stack stack, const std::vector<std::string> &args);

// The fields of a YAML mapping (`services:` of a services YAML, `service:` of a run YAML), each
// remembering its file:line:col and dotted path; applies the service_cluster alias.
// Throws pb::Error (exit 3) at the location of a bad alias.
LauncherConfig config_from_mapping(Stack stack,
                                   const yaml::YamlDocument &document,
                                   const yaml::YamlNode &mapping,
                                   std::string_view path_prefix);

// A whole primebeaker.services/v1 document: schema checked, only `schema` and `services` keys,
// environment expanded (a leftover $NAME or ${...} is an error). Throws pb::Error (exit 3).
LauncherConfig load_services_yaml(Stack stack,
                                  const yaml::YamlDocument &document,
                                  const std::map<std::string, std::string> &env);

// "a, b,,c" -> {"a", "b", "c"}: the service_cluster alias.
std::vector<std::string> split_clusters(std::string_view text);

} // namespace pb::services
