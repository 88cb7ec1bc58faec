// SPDX-License-Identifier: MIT
// The JSON behind the HTTP routes (docs/watcher.md "HTTP routes"), over a read-only database.
#pragma once

#include "database.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace pb::watcher::detail {

// /api/models: one entry per output directory (training run), filtered by `query`.
OrderedJson list_models(Database &db, const std::string &query, std::int64_t limit);

// /api/models/{id}; nullopt for an unknown id.
std::optional<OrderedJson> model_detail(Database &db, std::int64_t model_id);

// Hyperparameters summarised from a stored training TOML; {} when it does not parse.
OrderedJson training_hyperparameters(const std::optional<std::string> &raw_toml);

} // namespace pb::watcher::detail
