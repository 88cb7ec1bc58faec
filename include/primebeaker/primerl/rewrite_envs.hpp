// SPDX-License-Identifier: MIT
// The legacy environment-path rewrite (docs/launch.md): every table entry of
// orchestrator.{train,eval}.{source,env} whose non-empty string legacy.id ends (after its last
// '.') in a bundled environment module name gets legacy.id = "primebeaker.environments.<module>".
// Everything else in the file is kept byte for byte.
#pragma once

#include <string>
#include <vector>

namespace pb::toml {
class Document;
}

namespace pb::primerl {

struct EnvironmentRewrite {
  std::vector<std::string> key; // e.g. {"orchestrator","train","source","0","legacy","id"}
  std::string from;
  std::string to;
  std::string location; // FILE:LINE:COL of the old value
};

// The rewrites `document` needs (possibly none). Requires an [orchestrator] table: pb::Error
// exit 3 "RL TOML needs an [orchestrator] table". Pure.
std::vector<EnvironmentRewrite> plan_environment_rewrites(const toml::Document &document);

// The document's text with those rewrites applied, every other byte unchanged. The result is
// re-parsed and checked to differ from the source in exactly those values (pb::Error exit 1
// otherwise). Pure.
std::string rewrite_environment_ids(const toml::Document &document);

} // namespace pb::primerl
