// SPDX-License-Identifier: MIT
// The environment-path rewrite through the lossless TOML engine: only the rewritten string
// literals change, so comments and layout survive (docs/launch.md).
#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/environments.hpp>
#include <primebeaker/primerl/rewrite_envs.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::primerl {

using toml::Type;
using toml::Value;

std::vector<EnvironmentRewrite> plan_environment_rewrites(const toml::Document &document) {
  const Value *orchestrator = document.root().find("orchestrator");
  if (orchestrator == nullptr || !orchestrator->is(Type::table)) {
    throw input_error(
        fmt::format("{}: RL TOML needs an [orchestrator] table", document.source_name()));
  }
  const auto &modules = bundled_environment_modules();
  std::vector<EnvironmentRewrite> rewrites;
  for (const char *split : {"train", "eval"}) {
    for (const char *collection : {"source", "env"}) {
      const Value *entries = orchestrator->find_path({split, collection});
      if (entries == nullptr || !entries->is(Type::array)) {
        continue;
      }
      for (size_t i = 0; i < entries->array()->size(); ++i) {
        const Value &entry = (*entries->array())[i];
        const Value *id = entry.is(Type::table) ? entry.find_path({"legacy", "id"}) : nullptr;
        if (id == nullptr || id->string() == nullptr || id->string()->empty()) {
          continue;
        }
        const std::string &old_id = *id->string();
        const auto dot = old_id.rfind('.');
        const std::string module = dot == std::string::npos ? old_id : old_id.substr(dot + 1);
        if (!std::binary_search(modules.begin(), modules.end(), module)) {
          continue;
        }
        const std::string new_id = "primebeaker.environments." + module;
        if (new_id == old_id) {
          continue;
        }
        rewrites.push_back({{"orchestrator", split, collection, std::to_string(i), "legacy", "id"},
                            old_id,
                            new_id,
                            document.location(*id)});
      }
    }
  }
  return rewrites;
}

std::string rewrite_environment_ids(const toml::Document &document) {
  const auto rewrites = plan_environment_rewrites(document);
  if (rewrites.empty()) {
    return document.text();
  }
  // The lossless engine splices each string and verifies the result (docs/launch.md).
  toml::Editor editor(document);
  for (const auto &rewrite : rewrites) {
    const auto &k = rewrite.key;
    editor.set_string(fmt::format("{}.{}.{}[{}].{}.{}", k[0], k[1], k[2], k[3], k[4], k[5]),
                      rewrite.to);
  }
  return editor.text();
}

} // namespace pb::primerl
