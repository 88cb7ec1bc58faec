// SPDX-License-Identifier: MIT
#pragma once

#include <map>
#include <optional>
#include <string>

namespace pb::env {

// The value of an environment variable, if set (empty counts as set).
std::optional<std::string> get(const std::string &name);

// A snapshot of the whole environment, for plans that must not read it themselves.
std::map<std::string, std::string> snapshot();

} // namespace pb::env
