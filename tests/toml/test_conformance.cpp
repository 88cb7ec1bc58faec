// SPDX-License-Identifier: MIT
// The conformance gate: toml-test's TOML 1.0 list (../shared/corpus/toml-test). Every valid file
// round-trips byte for byte through the CST and decodes to its .json expectation; every invalid
// file is rejected with exit 3 and FILE:LINE:COL.
#include "tagged_compare.hpp"
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/format.hpp>
#include <primebeaker/toml/reference.hpp>
#include <primebeaker/toml/syntax.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>

namespace {

namespace fs = std::filesystem;
using pb::toml::Document;

fs::path corpus() {
  return pb::test::shared_dir() / "corpus" / "toml-test" / "tests";
}

std::vector<std::string> listed(const std::string &prefix) {
  std::ifstream list(corpus() / "files-toml-1.0.0");
  std::vector<std::string> out;
  for (std::string line; std::getline(list, line);) {
    if (line.rfind(prefix, 0) == 0 && line.size() > 5 && line.substr(line.size() - 5) == ".toml") {
      out.push_back(line);
    }
  }
  return out;
}

// Every byte in exactly one token, in order.
::testing::AssertionResult tokens_tile(const Document &doc) {
  std::uint32_t at = 0;
  const auto &tree = doc.syntax();
  for (std::size_t i = 0; i < tree.token_count(); ++i) {
    const auto token = tree.token(i);
    if (token.begin != at || token.end <= token.begin) {
      return ::testing::AssertionFailure() << "token gap or overlap at byte " << at;
    }
    at = token.end;
  }
  if (at != doc.text().size()) {
    return ::testing::AssertionFailure() << "tokens end at " << at << " of " << doc.text().size();
  }
  return ::testing::AssertionSuccess();
}

TEST(Conformance, ValidFilesRoundTripAndDecode) {
  const auto files = listed("valid/");
  ASSERT_EQ(files.size(), 210U);
  int passed = 0;
  for (const auto &name : files) {
    SCOPED_TRACE(name);
    const std::string text = pb::test::read_file(corpus() / name);
    const std::string json_name = name.substr(0, name.size() - 5) + ".json";
    const auto expected = pb::OrderedJson::parse(pb::test::read_file(corpus() / json_name));
    try {
      const Document doc = Document::parse(text, name);
      ASSERT_EQ(doc.print(), text) << "round trip differs";
      ASSERT_TRUE(tokens_tile(doc));
      std::string where;
      ASSERT_TRUE(
          pb::toml::test::tagged_equal(expected, pb::toml::to_tagged_json(doc.root()), where))
          << where;
      // The second opinion agrees with our reading.
      ASSERT_TRUE(semantically_equal(doc.root(), pb::toml::reference_parse(text, name)));
      ++passed;
    } catch (const pb::Error &e) {
      ADD_FAILURE() << "rejected: " << e.what();
    }
  }
  EXPECT_EQ(passed, 210);
  std::cout << "[conformance] valid passed: " << passed << "/" << files.size() << '\n';
}

TEST(Conformance, InvalidFilesAreRejectedWithLineAndColumn) {
  const auto files = listed("invalid/");
  ASSERT_EQ(files.size(), 499U);
  const std::regex located(R"(^invalid/[^:]+\.toml:[0-9]+:[0-9]+: .+)");
  int rejected = 0;
  for (const auto &name : files) {
    SCOPED_TRACE(name);
    const std::string text = pb::test::read_file(corpus() / name);
    const auto error = pb::test::thrown_error([&] { (void)Document::parse(text, name); });
    EXPECT_EQ(error.code(), 3);
    EXPECT_TRUE(std::regex_match(std::string(error.what()), located)) << error.what();
    rejected += error.code() == 3 ? 1 : 0;
  }
  EXPECT_EQ(rejected, 499);
  std::cout << "[conformance] invalid rejected: " << rejected << "/" << files.size() << '\n';
}

// Document::check() finds an error exactly where parse() throws one, and the first error
// parse() throws is among those check() reports.
TEST(Conformance, CheckAgreesWithParse) {
  for (const auto &name : listed("invalid/")) {
    SCOPED_TRACE(name);
    const std::string text = pb::test::read_file(corpus() / name);
    const auto errors = Document::check(text, name);
    ASSERT_FALSE(errors.empty());
    try {
      (void)Document::parse(text, name);
      ADD_FAILURE() << "parse() accepted it";
    } catch (const pb::Error &e) {
      EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), [&e](const pb::Error &c) {
        return std::string_view(c.what()) == e.what();
      })) << e.what();
    }
  }
  for (const auto &name : listed("valid/")) {
    EXPECT_TRUE(Document::check(pb::test::read_file(corpus() / name), name).empty()) << name;
  }
}

// The same gate through the real binary: `toml check` over all invalid files reports at least
// one FILE:LINE:COL line for each (every error, the first after `primebeaker: error: `, the
// others indented under it) and exits 3; over all valid files it exits 0.
TEST(Conformance, CheckCommandOverTheWholeList) {
  std::vector<std::string> args{"toml", "check"};
  for (const auto &name : listed("invalid/")) {
    args.push_back((corpus() / name).string());
  }
  auto r = pb::test::run_primebeaker(args);
  EXPECT_EQ(r.exit_code, 3);
  const std::regex line(R"(^(primebeaker: error: |  )(/.+\.toml):[0-9]+:[0-9]+: .+$)");
  std::set<std::string> reported;
  std::istringstream err(r.err);
  for (std::string l; std::getline(err, l);) {
    std::smatch match;
    EXPECT_TRUE(std::regex_match(l, match, line)) << l;
    EXPECT_EQ(match[1] == "primebeaker: error: ", reported.empty()) << l;
    reported.insert(match[2]);
  }
  EXPECT_EQ(reported.size(), 499U);

  args.resize(2);
  for (const auto &name : listed("valid/")) {
    args.push_back((corpus() / name).string());
  }
  r = pb::test::run_primebeaker(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// `toml get - . --format tagged-json` is a toml-test decoder (stdin in, tagged JSON out).
TEST(Conformance, GetIsATomlTestDecoder) {
  for (const std::string name : {"valid/spec-1.0.0/table-0.toml",
                                 "valid/datetime/milliseconds.toml",
                                 "valid/string/multiline-quotes.toml",
                                 "valid/float/inf-and-nan.toml"}) {
    SCOPED_TRACE(name);
    pb::test::RunOptions options;
    options.stdin_data = pb::test::read_file(corpus() / name);
    const auto r =
        pb::test::run_primebeaker({"toml", "get", "-", ".", "--format", "tagged-json"}, options);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto expected = pb::OrderedJson::parse(
        pb::test::read_file(corpus() / (name.substr(0, name.size() - 5) + ".json")));
    std::string where;
    EXPECT_TRUE(pb::toml::test::tagged_equal(expected, pb::OrderedJson::parse(r.out), where))
        << where;
    // and --format toml reproduces the input byte for byte
    const auto raw =
        pb::test::run_primebeaker({"toml", "get", "-", ".", "--format", "toml"}, options);
    EXPECT_EQ(raw.out, *options.stdin_data);
  }
}

// toml++'s known deviations from TOML 1.0 (docs/toml.md "toml++'s known deviations"; the fuzz
// harness does not compare meanings on them, tests/fuzz/fuzz_toml.cpp): we read these as TOML
// and CPython's tomllib do (`python3 -c 'import tomllib; print(ascii(tomllib.loads(T)))'` gives
// each expectation), and toml++ 3.3 does not.
TEST(Conformance, TomlppKnownDeviationsReadAsTomllibReadsThem) {
  struct Case {
    std::string text;
    std::string tomllib; // the decoded value of `a`
  };
  // 1. A line-ending backslash trims spaces, tabs and newlines only: a BOM or another Unicode
  //    space after them is kept.
  const std::vector<Case> cases = {
      {"a = \"\"\"x\\\n\xef\xbb\xbfy\"\"\"\n", "x\xef\xbb\xbfy"},
      {"a = \"\"\"x\\  \r\n \n\t\xef\xbb\xbf y\"\"\"\n", "x\xef\xbb\xbf y"},
      {"a = \"\"\"x\\\n\xc2\xa0y\"\"\"\n", "x\xc2\xa0y"},
      {"a = \"\"\"x\\\n\xe3\x80\x80\"\"\"\n", "x\xe3\x80\x80"},
  };
  for (const auto &c : cases) {
    const auto doc = pb::toml::Document::parse(c.text, "deviation.toml");
    ASSERT_NE(doc.root().find("a"), nullptr) << c.text;
    EXPECT_EQ(*doc.root().find("a")->string(), c.tomllib) << c.text;
    // toml++ trims them too. A toml++ that reads them as TOML does fails here: then drop the
    // deviation from the harness and the docs.
    const auto theirs = pb::toml::reference_parse(c.text, "deviation.toml");
    ASSERT_NE(theirs.find("a"), nullptr) << c.text;
    EXPECT_NE(*theirs.find("a")->string(), c.tomllib) << c.text;
  }
}

} // namespace
