// SPDX-License-Identifier: MIT
// Output forms of values for `toml get --format value|json|tagged-json`.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/toml/value.hpp>

#include <string>

namespace pb::toml {

// toml-test's tagged JSON: scalars as {"type": ..., "value": "..."}, tables as objects in
// document order, arrays as arrays.
OrderedJson to_tagged_json(const Value &value);

// Plain JSON: numbers and booleans as JSON values (nan/inf as strings), date/times as RFC 3339
// strings, tables as objects in document order.
OrderedJson to_json(const Value &value);

// The `value` form: strings decoded, other scalars in their source spelling, arrays of scalars
// one element per line; tables and other arrays as pretty JSON. Ends with a newline.
std::string to_value_text(const Value &value);

// A TOML string literal for `text`: basic quotes with escapes, or literal quotes when the text
// has backslashes and nothing a literal string cannot hold.
std::string quote_string(std::string_view text);

// A key segment as TOML writes it: bare when possible, else a basic string.
std::string quote_key(std::string_view key);

} // namespace pb::toml

namespace pb::toml {

// A unified diff (3 lines of context) from `before` to `after`, both named `name`; empty when
// equal. Lines keep their own line endings; a missing final newline is marked as diff does.
std::string unified_diff(std::string_view before, std::string_view after, std::string_view name);

} // namespace pb::toml
