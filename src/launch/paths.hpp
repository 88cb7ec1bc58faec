// SPDX-License-Identifier: MIT
// Path text helpers of the launch module (private).
#pragma once

#include <string>
#include <string_view>

namespace pb::launch {

// Python's pathlib rendering: repeated and trailing slashes and "." components dropped, ".."
// kept (unlike lexically_normal). "" -> ".". Pure.
std::string normalize_path(std::string_view path);

// Whether `path` is `root` or inside it, comparing whole components. Pure.
bool path_is_under(std::string_view path, std::string_view root);

} // namespace pb::launch
