// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::text {

std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string> &parts, std::string_view separator);
std::string_view trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);

// POSIX shell single-quoting: the result is one word for sh/bash whatever `word` holds.
// For rendering container commands and for display; never for running our own children.
std::string shell_quote(std::string_view word);

// Python's urllib.parse.quote(text, safe=safe): ASCII letters and digits, "_.-~" and the
// characters of `safe` stay as they are; every other byte becomes %XX (uppercase hex), UTF-8
// byte by byte. The same in every locale (no <cctype>).
std::string percent_encode(std::string_view text, std::string_view safe = "");

// Levenshtein distance, for "did you mean" hints.
size_t edit_distance(std::string_view a, std::string_view b);

// A whole decimal integer ("-12", "7"; no sign "+", no spaces, nothing after it), or nullopt
// when `text` is not one or does not fit. The one integer parser of the code base.
std::optional<std::int64_t> parse_integer(std::string_view text);

// The value of one hexadecimal digit (0-9, a-f, A-F), or -1 when `c` is not one.
int hex_digit_value(char c);

} // namespace pb::text
