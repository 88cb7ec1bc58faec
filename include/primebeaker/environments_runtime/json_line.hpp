// SPDX-License-Identifier: MIT
// The request parser of `environments serve --stdio` (docs/environments-runtime.md
// "Performance"): one JSON text to an OrderedJson, the values nlohmann's parser gives (integers
// >= 0 unsigned, negative signed, beyond 64 bits double; duplicate keys keep the first position
// and the last value; strict RFC 8259: no NaN, no comments, no control characters or invalid
// UTF-8 in strings, no lone surrogates), about five times faster: strings are scanned a word at a
// time and copied once, object members are moved, never copied, into place. One omission: in a
// request whose "op" ("score") comes before its "row", the row's own "prompt", "answer" and
// "completion" are checked but not kept: the scorers read the record's top-level copies, and
// the row's were a third of a single-turn score request.
#pragma once

#include <primebeaker/core/json.hpp>

#include <string_view>

namespace pb::environments_runtime {

// Throws RequestError{"bad_request", "not JSON: <reason> at byte <offset>"}.
OrderedJson parse_json(std::string_view text);

} // namespace pb::environments_runtime
