// SPDX-License-Identifier: MIT
#include <primebeaker/core/process.hpp>
#include <primebeaker/core/text.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

namespace {

TEST(ShellQuote, SurvivesBashUnchanged) {
  const std::vector<std::string> words = {
      "plain", "a b", "it's", "$(id)", "`x`", "\"q\"", "line\nbreak", "ünï", "", "*", "a;b|c&d"};
  for (const auto &w : words) {
    pb::proc::Command c;
    c.argv = {"bash", "-c", "printf %s " + pb::text::shell_quote(w)};
    const auto r = pb::proc::SystemRunner().run(c);
    EXPECT_EQ(r.out, w) << "word: " << w;
  }
}

TEST(Text, SplitJoinTrim) {
  EXPECT_EQ(pb::text::split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(pb::text::join({"a", "b"}, ", "), "a, b");
  EXPECT_EQ(pb::text::trim("  x y \n"), "x y");
  EXPECT_EQ(pb::text::edit_distance("preveiw", "preview"), 2U);
}

TEST(Text, ParseIntegerTakesAWholeDecimalIntegerOnly) {
  EXPECT_EQ(pb::text::parse_integer("0"), 0);
  EXPECT_EQ(pb::text::parse_integer("-12"), -12);
  EXPECT_EQ(pb::text::parse_integer("9223372036854775807"), INT64_MAX);
  for (const char *bad : {"", " 1", "1 ", "+1", "1.5", "0x10", "12a", "-", "9223372036854775808"}) {
    EXPECT_FALSE(pb::text::parse_integer(bad).has_value()) << bad;
  }
}

TEST(Text, HexDigitValue) {
  EXPECT_EQ(pb::text::hex_digit_value('0'), 0);
  EXPECT_EQ(pb::text::hex_digit_value('9'), 9);
  EXPECT_EQ(pb::text::hex_digit_value('a'), 10);
  EXPECT_EQ(pb::text::hex_digit_value('F'), 15);
  for (const char c : {'g', 'G', '/', ':', '@', '`', ' ', '\0'}) {
    EXPECT_EQ(pb::text::hex_digit_value(c), -1) << int(c);
  }
}

// As Python's urllib.parse.quote: `quote("a b/ü~é:x", safe="")`, `quote(..., safe=":/")`.
TEST(Text, PercentEncodeIsPythonsQuote) {
  EXPECT_EQ(pb::text::percent_encode("a b/\xc3\xbc~\xc3\xa9:x"), "a%20b%2F%C3%BC~%C3%A9%3Ax");
  EXPECT_EQ(pb::text::percent_encode("/w/a b:c?", ":/"), "/w/a%20b:c%3F");
  EXPECT_EQ(pb::text::percent_encode(""), "");
  EXPECT_EQ(pb::text::percent_encode(std::string("a\0b", 3)), "a%00b");
  // Every byte: only ASCII letters, digits and "_.-~" stay, whatever the locale calls a letter.
  for (int byte = 0; byte < 256; ++byte) {
    const char c = static_cast<char>(byte);
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' || c == '~';
    char escaped[4];
    std::snprintf(escaped, sizeof escaped, "%%%02X", byte);
    EXPECT_EQ(pb::text::percent_encode(std::string(1, c)),
              unreserved ? std::string(1, c) : std::string(escaped))
        << byte;
  }
}

} // namespace
