// SPDX-License-Identifier: MIT
// The Python semantics environment logic depends on, ported exactly where a difference would
// change a reward or a byte the model sees (docs/environments.md "Python compatibility"):
// json.loads / json.dumps, str.lower / casefold / strip / split, str.format, float repr.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/core/python_json.hpp>
#include <primebeaker/core/sha2.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pb::environments::py {

// json.loads: NaN, Infinity and -Infinity are accepted, duplicate keys keep the first key's
// position with the last value, control characters inside strings are rejected (strict mode),
// surrounding whitespace is allowed. Integers beyond 64 bits become floats (Python keeps them
// exact; no environment value is that large). Throws JsonError.
struct JsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
OrderedJson loads(std::string_view text);
std::optional<OrderedJson> try_loads(std::string_view text);

struct DumpOptions {
  bool sort_keys = false;
  bool ensure_ascii = false;
  bool compact = false; // separators (",", ":") instead of (", ", ": ")
};
// json.dumps with indent=None (core/python_json.hpp). Floats use Python's repr; NaN/Infinity as
// Python writes them.
std::string dumps(const OrderedJson &value, const DumpOptions &options = {});
// repr(float): shortest round-trip digits, exponent form below 1e-4 and from 1e16.
using python_json::float_repr;
// str(value) of the Python object json.loads would give (for str.format substitution):
// strings as is, True/False/None, dicts and lists as their repr.
std::string str(const OrderedJson &value);
std::string repr(const OrderedJson &value);

// Unicode helpers over UTF-8 text with Python's rules.
bool is_space(char32_t code_point); // str.isspace
std::string strip(std::string_view text);
std::vector<std::string> split(std::string_view text); // str.split() with no argument
std::string lower(std::string_view text);              // str.lower (final sigma, U+0130)
std::string casefold(std::string_view text);           // str.casefold (common full folds)
size_t length(std::string_view text);                  // len(): code points
// The first `count` code points of `text`.
std::string prefix(std::string_view text, size_t count);

// " ".join(text.strip().lower().split()): the label normalisation of every label environment.
std::string normalize_label(std::string_view text);

// str.format over named fields: "{name}", "{name!s}", "{name!r}", "{{" and "}}". Format specs,
// positional fields and attribute/index access are rejected (no template uses them). A name
// not in `values` (a JSON object) throws FormatError naming it.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
std::string format(std::string_view pattern, const OrderedJson &values);

// hashlib.sha256 / sha512 digests (raw bytes) and hex, from core.
using sha2::hex;
using sha2::sha256;
using sha2::sha512;

} // namespace pb::environments::py
