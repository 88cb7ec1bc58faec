// SPDX-License-Identifier: MIT
// libFuzzer target for the lossless parser: for any input it accepts, printing the tree gives
// the input back byte for byte, the tokens tile it, and toml++ agrees that it is valid and means
// the same. Inputs it rejects must be rejected with pb::Error exit 3 (and by toml++ too).
// toml++'s known deviations from TOML 1.0 break the ties (known_tomlpp_deviation below).
#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/reference.hpp>
#include <primebeaker/toml/syntax.hpp>
#include <primebeaker/toml/value.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

// The code point of the UTF-8 sequence at text[at], or 0 when there is none (our parser has
// checked the encoding of what it accepted).
char32_t code_point_at(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const std::size_t left = text.size() - at;
  if (left >= 1 && byte(0) < 0x80) {
    return byte(0);
  }
  if (left >= 2 && (byte(0) & 0xE0) == 0xC0) {
    return (char32_t(byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
  }
  if (left >= 3 && (byte(0) & 0xF0) == 0xE0) {
    return (char32_t(byte(0) & 0x0F) << 12) | (char32_t(byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
  }
  return 0;
}

// Unicode's horizontal whitespace beyond ASCII, as toml++ 3.3 counts it (is_horizontal_whitespace
// in toml++/impl/unicode.h).
bool tomlpp_unicode_space(char32_t c) {
  return c == 0xA0 || c == 0x1680 || c == 0x180E || (c >= 0x2000 && c <= 0x200B) || c == 0x202F ||
         c == 0x205F || c == 0x2060 || c == 0x3000 || c == 0xFEFF;
}

// toml++'s known deviations from TOML 1.0, where CPython's tomllib and our parser agree with the
// specification and toml++ does not. An input that shows one is not compared by meaning. Each is
// listed in tests/fuzz/README.md and docs/toml.md ("toml++'s known deviations") and has a
// regression test of our behaviour in tests/toml/test_conformance.cpp.
//
// 1. After a line-ending backslash in a multi-line basic string, toml++ also trims Unicode
//    horizontal whitespace (U+00A0, U+1680, U+180E, U+2000-U+200B, U+202F, U+205F, U+2060,
//    U+3000 and U+FEFF, the BOM) where TOML trims only spaces, tabs and newlines: `"""a\<LF>
//    <U+FEFF>b"""` is "a\uFEFFb" to TOML and "ab" to toml++.
bool known_tomlpp_deviation(const pb::toml::Document &doc, std::string_view text) {
  const auto &tree = doc.syntax();
  for (std::size_t i = 0; i < tree.token_count(); ++i) {
    const auto token = tree.token(i);
    if (token.kind != pb::toml::syntax::TokenKind::multiline_basic_string) {
      continue;
    }
    const std::string_view string = text.substr(token.begin, token.end - token.begin);
    for (std::size_t at = 3; at + 3 < string.size(); ++at) {
      if (string[at] != '\\') {
        continue;
      }
      std::size_t next = string.find_first_not_of(" \t", at + 1);
      if (next == std::string_view::npos || (string[next] != '\n' && string[next] != '\r')) {
        ++at; // an escape: its character is not a backslash that starts another
        continue;
      }
      next = string.find_first_not_of(" \t\r\n", next);
      if (next != std::string_view::npos && tomlpp_unicode_space(code_point_at(string, next))) {
        return true;
      }
      at = next == std::string_view::npos ? string.size() : next - 1;
    }
  }
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  bool ours = false;
  bool deviation = false;
  pb::toml::Value ours_root;
  try {
    const auto doc = pb::toml::Document::parse(text, "fuzz");
    if (doc.print() != text) {
      std::abort(); // parse -> print must be the identity
    }
    const auto &tree = doc.syntax();
    std::uint32_t at = 0;
    for (std::size_t i = 0; i < tree.token_count(); ++i) {
      const auto token = tree.token(i);
      if (token.begin != at || token.end <= token.begin) {
        std::abort();
      }
      at = token.end;
    }
    if (at != text.size()) {
      std::abort();
    }
    ours = true;
    ours_root = doc.root();
    deviation = known_tomlpp_deviation(doc, text);
  } catch (const pb::Error &e) {
    if (e.code() != 3) {
      std::abort();
    }
  }
  bool theirs = false;
  pb::toml::Value theirs_root;
  try {
    theirs_root = pb::toml::reference_parse(text, "fuzz");
    theirs = true;
  } catch (const pb::Error &) {
  }
  if (ours && theirs && !deviation && !semantically_equal(ours_root, theirs_root)) {
    std::abort(); // both accept: same meaning, but where toml++ is known to be wrong
  }
  if (ours != theirs && std::getenv("PB_FUZZ_STRICT") != nullptr) {
    std::abort(); // disagreement on validity (opt-in: toml++ has known leniencies)
  }
  return 0;
}
