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

} // namespace pb
