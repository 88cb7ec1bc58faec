// SPDX-License-Identifier: MIT
// CPython's json.dumps (indent=None) and repr(float), byte for byte. Shared by the registry's
// record formats and the environments' rendering, which both compare against CPython's output.
#pragma once

#include <primebeaker/core/json.hpp>

#include <string>
#include <string_view>

namespace pb::python_json {

struct DumpOptions {
  bool sort_keys = false;   // keys by code point at every level (stable for equal keys)
  bool ensure_ascii = true; // Python's default: everything beyond ASCII as \uXXXX
  std::string_view item_separator = ", ";
  std::string_view key_separator = ": ";
};

// json.dumps(value, ...): floats as repr(float), NaN and Infinity as Python writes them; keys
// in the order `value` holds them unless sort_keys.
std::string dumps(const OrderedJson &value, const DumpOptions &options = {});

// repr(float): shortest round-trip digits, exponent form below 1e-4 and from 1e16, "nan",
// "inf", "-inf".
std::string float_repr(double value);

// Decodes one code point of UTF-8 text at `i` (advancing it). An invalid byte b decodes as
// U+DC00+b, as Python's surrogateescape would, so nothing is lost when re-encoded.
char32_t decode_utf8(std::string_view text, size_t &i);

} // namespace pb::python_json
