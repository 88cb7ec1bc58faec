// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace {

using pb::toml::Document;
using pb::toml::Type;

TEST(ReadApi, ExactTypesAndPositions) {
  const auto doc = Document::parse("a = 8\nb = 8.0\n[deployment]\nnum_gpus = 4\n", "t.toml");
  EXPECT_EQ(doc.root().find("a")->integer(), 8);
  EXPECT_FALSE(doc.root().find("a")->floating());
  EXPECT_EQ(doc.root().find("b")->floating(), 8.0);
  EXPECT_FALSE(doc.root().find("b")->integer());
  const auto *gpus = doc.root().find_path({"deployment", "num_gpus"});
  ASSERT_NE(gpus, nullptr);
  EXPECT_EQ(gpus->type(), Type::integer);
  EXPECT_EQ(doc.location(*gpus), "t.toml:4:12");
}

TEST(ReadApi, KeysResolveSemantically) {
  for (const char *text :
       {"[a.b]\nc = 1\n", "[a]\nb.c = 1\n", "a.b.c = 1\n", "a = { b = { c = 1 } }\n"}) {
    const auto doc = Document::parse(text, "t.toml");
    const auto *c = doc.root().find_path({"a", "b", "c"});
    ASSERT_NE(c, nullptr) << text;
    EXPECT_EQ(c->integer(), 1) << text;
  }
}

TEST(ReadApi, InvalidTomlNamesFileLineColumn) {
  const auto error = pb::test::thrown_error([] { Document::parse("a = 1\nb = \n", "bad.toml"); });
  EXPECT_EQ(error.code(), 3);
  EXPECT_EQ(std::string(error.what()).rfind("bad.toml:2:", 0), 0U) << error.what();
}

} // namespace

namespace {

// Found by the fuzzer: a CRLF inside a multi-line string reads as LF (as toml++ reads it), so
// edits of CRLF files with such strings verify.
TEST(ReadApi, CrlfInMultiLineStringsReadsAsLf) {
  const auto doc = Document::parse("a = \"\"\"x\r\ny\"\"\"\r\nb = '''p\r\nq'''\r\n", "t.toml");
  EXPECT_EQ(*doc.root().find("a")->string(), "x\ny");
  EXPECT_EQ(*doc.root().find("b")->string(), "p\nq");
}

} // namespace
