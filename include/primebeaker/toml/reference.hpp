// SPDX-License-Identifier: MIT
// A second opinion on TOML: Debian's toml++ (a DOM parser, independent of our CST parser).
// Used to verify every edit before it is written and, in tests, as a conformance oracle.
#pragma once

#include <primebeaker/toml/value.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace pb::toml {

// Parses `text` with toml++ into a Value (positions from toml++, raw spellings normalised).
// Throws pb::Error (exit 3) "SOURCE:LINE:COL: message" on invalid TOML.
Value reference_parse(std::string_view text, std::string_view source_name);

// True when toml++ parses `text` to exactly the meaning of `expected` (types, decoded values,
// members regardless of order). Otherwise false with a one-line reason in `why`.
bool reference_matches(const Value &expected, std::string_view text, std::string &why);

// meaning_fingerprint() of what toml++ reads in `text`, computed from toml++'s DOM (dropped
// before returning); nullopt when toml++ rejects the text.
std::optional<std::string> reference_fingerprint(std::string_view text);
// The same of a file, which toml++ reads through a small buffer (only its DOM is held);
// nullopt also when the file cannot be opened.
std::optional<std::string> reference_fingerprint_file(const std::filesystem::path &path);

} // namespace pb::toml
