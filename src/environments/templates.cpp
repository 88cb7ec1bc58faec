// SPDX-License-Identifier: MIT
// Our default chat templates (src/environments/templates/, compiled in; docs/environments.md).
#include <primebeaker/environments/render.hpp>

#include <map>

namespace pb::environments {

const std::map<std::string, std::string> &builtin_templates(); // generated

const std::string *builtin_template(std::string_view path) {
  std::string key(path);
  if (key.rfind("templates/", 0) != 0) {
    key = "templates/" + key;
  }
  const auto &all = builtin_templates();
  const auto it = all.find(key);
  return it == all.end() ? nullptr : &it->second;
}

std::vector<std::string> builtin_template_names() {
  std::vector<std::string> names;
  for (const auto &entry : builtin_templates()) {
    names.push_back(entry.first);
  }
  return names;
}

} // namespace pb::environments
