// SPDX-License-Identifier: MIT
// The backends behind pb::registry::Registry. Private to the module.
#pragma once

#include <primebeaker/registry/registry.hpp>

#include <filesystem>
#include <memory>

namespace pb::registry::detail {

std::unique_ptr<Registry> open_file_store(const Location &location);
std::unique_ptr<Registry> open_sqlite_store(const Location &location, const OpenOptions &options);
std::unique_ptr<Registry> open_redis_store(const Location &location, const OpenOptions &options);
std::unique_ptr<Registry> open_head_store(const Location &location, const OpenOptions &options);

// Python's str(float) for TTL sidecars and log text.
std::string python_float_text(double value);

} // namespace pb::registry::detail
