// SPDX-License-Identifier: MIT
// How users spell names, paths and list values: flag spellings, "did you mean", `~`, and the
// items of list flags. One helper each, shared by the CLI, the launch settings parser (CLI and
// YAML), run and the registry URI parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pb::text {

// The "did you mean" candidate: the first of `known` closest to `name` within an edit distance
// of 2 (only close misspellings are worth suggesting), or "" when none is.
std::string closest_match(std::string_view name, const std::vector<std::string> &known);

// Flag and key spellings: "gateway_workers" <-> "gateway-workers" (every '_' / '-' swapped).
std::string kebab_case(std::string_view name);
std::string snake_case(std::string_view name);

// "~" and "~/rest" with `home` ("" leaves the path as is, as does "~user"). Pure.
std::string expand_user(std::string_view path, std::string_view home);

} // namespace pb::text

namespace pb::cli {

// The items of a list option's values: each value is one item, or one JSON list literal of
// strings split into its elements. Throws pb::Error exit 2 naming --<kebab_name> otherwise.
// add_list_option and the launch settings parser (CLI and YAML) share it.
std::vector<std::string> list_values(std::string_view kebab_name,
                                     const std::vector<std::string> &values);

} // namespace pb::cli
