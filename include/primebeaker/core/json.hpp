// SPDX-License-Identifier: MIT
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace pb {

// Results keep the key order they were built in (Python PrimeBeaker's order).
using OrderedJson = nlohmann::ordered_json;

// The house JSON form for stdout: 2-space indent, UTF-8 kept, one trailing newline.
std::string to_pretty_json(const OrderedJson &value);
void print_json(std::ostream &out, const OrderedJson &value);

// Python's truthiness of a JSON value, what `a or b` and `if value:` test: null is false, a bool
// is itself, a number is false only when zero (NaN is true), a string, array or object is false
// only when empty. The one definition for every module: nlohmann's empty() is false for every
// string, so testing it alone takes "" for true.
bool truthy(const nlohmann::json &value);
bool truthy(const OrderedJson &value);

} // namespace pb
