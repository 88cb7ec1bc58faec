// SPDX-License-Identifier: MIT
// `--set KEY=VALUE` on `sft|rl preview|submit` and `rl resume` (docs/launch.md "Overrides"): the
// lossless TOML engine applied to a copy of the TOML, and problems reported at the argument.
#pragma once

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/value.hpp>

#include <string>
#include <vector>

namespace pb::launch {

struct Override {
  std::string key;      // dotted TOML key
  std::string literal;  // a TOML value literal, typed as `toml set` types it
  std::string argument; // as given, for messages
  std::string shown;    // how messages name it when not "--set <argument>" (a launch default)
};
// Exit 2 naming the argument when one is not KEY=VALUE or sets a key twice.
std::vector<Override> parse_overrides(const std::vector<std::string> &arguments);
// The TOML text with every override applied by the lossless engine (exit 2 at the argument).
std::string apply_overrides(const toml::Document &document, const std::vector<Override> &overrides);
// `error` told in the user's terms: each "<copy>:L:C" that points at a line an override wrote
// becomes the "--set KEY=VALUE" that wrote it, and every other place in the copy becomes the same
// place in the original file (its line there, which the edits may have moved).
Error at_override_arguments(const Error &error,
                            const toml::Document &original,
                            const toml::Document &copy,
                            const std::vector<Override> &overrides);

} // namespace pb::launch
