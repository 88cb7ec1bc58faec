// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

namespace pb::primerl {

// The environment module names primebeaker bundles (docs/environments.md), sorted: the legacy
// environment-path rewrite (docs/launch.md) maps them to primebeaker.environments.<module>,
// on the client (`toml rewrite-envs`) and in the container (`node rl`). Pure.
const std::vector<std::string> &bundled_environment_modules();

} // namespace pb::primerl
