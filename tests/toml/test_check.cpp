// SPDX-License-Identifier: MIT
// Document::check(), behind `toml check` (docs/toml.md): every independent error of a file,
// with the parser going on at the next line that starts a header or a `key =`.
#include "test_support.hpp"

#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace {

using pb::toml::Document;

std::vector<std::string> check(const std::string &text) {
  std::vector<std::string> out;
  for (const auto &error : Document::check(text, "f.toml")) {
    EXPECT_EQ(error.code(), 3);
    out.emplace_back(error.what());
  }
  return out;
}

using Messages = std::vector<std::string>;

TEST(TomlCheck, ValidTextHasNoErrors) {
  EXPECT_EQ(check(""), Messages{});
  EXPECT_EQ(check("a = 1\n[t]\nb = [1,\n  2]\n"), Messages{});
}

TEST(TomlCheck, ReportsEveryIndependentError) {
  EXPECT_EQ(check("a = 1\nb = [1,,2]\nc = 3\nd = \"x\ne = 5\nc = 4\n"),
            (Messages{"f.toml:2:8: expected a value, found ','",
                      "f.toml:4:7: newline in a single-line string",
                      "f.toml:6:1: key 'c' is already defined (at line 3, column 5)"}));
  // The first error is the one parse() throws.
  try {
    (void)Document::parse("a = 1\nb = [1,,2]\nc = 3\nd = \"x\ne = 5\nc = 4\n", "f.toml");
    FAIL();
  } catch (const pb::Error &e) {
    EXPECT_STREQ(e.what(), "f.toml:2:8: expected a value, found ','");
  }
}

TEST(TomlCheck, LinesOfABrokenArrayAreSkipped) {
  // The elements after the error read neither as `key =` nor as a header: no errors of their own.
  EXPECT_EQ(check("x = [\n  1,\n  2 3,\n  \"four\",\n  [5, 6],\n  [7],\n  { a = 1 },\n]\n"
                  "y = = 2\n"),
            (Messages{"f.toml:3:5: expected ',' or ']' after an array element",
                      "f.toml:9:5: expected a value, found '='"}));
  // A broken header is where checking goes on, and gets its own error.
  EXPECT_EQ(check("x = [1,,\n  2]\n[c\nd = 1\n[[e]] x\n"),
            (Messages{"f.toml:1:8: expected a value, found ','",
                      "f.toml:3:3: expected ']' to close the table header",
                      "f.toml:5:7: expected a newline or a comment after the header"}));
}

TEST(TomlCheck, AfterAnErrorInAMultiLineStringGoesOnAfterTheString) {
  EXPECT_EQ(check("s = \"\"\"\nbad \\d escape\nlooks = like a key\n\"\"\"\nt = 1\nt = 2\n"),
            (Messages{"f.toml:2:5: invalid escape sequence",
                      "f.toml:6:1: key 't' is already defined (at line 5, column 5)"}));
}

TEST(TomlCheck, KeysUnderAFailedHeaderDoNotClashWithTheTableBefore) {
  EXPECT_EQ(check("[a]\nx = 1\n[b\nx = 2\nx = 3\n[a]\n"),
            (Messages{"f.toml:3:3: expected ']' to close the table header",
                      "f.toml:5:1: key 'x' is already defined (at line 4, column 5)",
                      "f.toml:6:2: table 'a' is already defined (at line 1, column 1)"}));
  // A header that is read but cannot be defined: its keys are still checked among themselves.
  EXPECT_EQ(check("a = 1\n[a]\nk = 1\nk = 2\n"),
            (Messages{"f.toml:2:2: key 'a' is already an integer (at line 1, column 5)",
                      "f.toml:4:1: key 'k' is already defined (at line 3, column 5)"}));
}

TEST(TomlCheck, DottedKeysAfterAnErrorInAnInlineTable) {
  // The inline table's section ends with the error: `t.b` still extends the dotted table `t`.
  EXPECT_EQ(check("t.a = 1\nx = { y = 1, y = 2 }\nt.b = 2\nt.a = 3\n"),
            (Messages{"f.toml:2:14: key 'y' is already defined (at line 2, column 11)",
                      "f.toml:4:3: key 't.a' is already defined (at line 1, column 7)"}));
}

TEST(TomlCheck, InvalidUtf8OncePerLine) {
  EXPECT_EQ(check("a = \"\xC3\"\n\xFF = 1\nb = 1\nb = 2\n"),
            (Messages{"f.toml:1:6: invalid UTF-8",
                      "f.toml:2:1: invalid UTF-8",
                      "f.toml:4:1: key 'b' is already defined (at line 3, column 5)"}));
}

} // namespace
