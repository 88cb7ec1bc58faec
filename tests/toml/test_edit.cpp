// SPDX-License-Identifier: MIT
// The edit battery: exact outputs for the before/after examples the engine was designed on
// (replacing a value, adding keys, tables and array elements, removing with comments) and the
// placement, style and comment-ownership rules of docs/toml.md.
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

namespace {

using pb::toml::Document;

std::string set(const std::string &text, const std::string &path, const std::string &literal) {
  return pb::toml::set(Document::parse(text, "t.toml"), path, literal);
}
std::string set_s(const std::string &text, const std::string &path, const std::string &value) {
  return pb::toml::set_string(Document::parse(text, "t.toml"), path, value);
}
std::string unset(const std::string &text, const std::string &path, bool prune = false) {
  return pb::toml::unset(Document::parse(text, "t.toml"), path, {false, prune});
}
int error_code(const std::function<void()> &f) {
  return pb::test::thrown_error(f).code();
}

// Replacing a value keeps spacing, alignment and the comment.
TEST(Edit, ReplaceKeepsSpacingAndComment) {
  EXPECT_EQ(set("[server]\nport    = 8080   # default port\n", "server.port", "9090"),
            "[server]\nport    = 9090   # default port\n");
  EXPECT_EQ(set("a = 'x'  # c\n", "a", "0xFF"), "a = 0xFF  # c\n");
}

// B: a new key copies its siblings' indentation.
TEST(Edit, NewKeyCopiesIndentation) {
  EXPECT_EQ(set("[server]\n  host = \"a\"\n  port = 1\n\n[client]\n", "server.timeout", "30"),
            "[server]\n  host = \"a\"\n  port = 1\n  timeout = 30\n\n[client]\n");
}

TEST(Edit, NewKeyKeepsAlignedEquals) {
  EXPECT_EQ(set("[s]\nhost    = \"a\"\nport    = 1\n", "s.ttl", "5"),
            "[s]\nhost    = \"a\"\nport    = 1\nttl     = 5\n");
}

// C: a new root key goes after the last root key, before the first header.
TEST(Edit, NewRootKeyBeforeFirstHeader) {
  EXPECT_EQ(set("name = \"x\"\n\n[server]\nhost = \"a\"\n", "version", "\"1.0\""),
            "name = \"x\"\nversion = \"1.0\"\n\n[server]\nhost = \"a\"\n");
  EXPECT_EQ(set("# top comment\n\n[server]\nhost = \"a\"\n", "version", "1"),
            "# top comment\n\nversion = 1\n\n[server]\nhost = \"a\"\n");
}

// D: a new sub-table goes after the last descendant of its parent.
TEST(Edit, NewSubTableAfterLastDescendant) {
  const std::string in = "[dependencies]\na = \"1\"\n\n[dependencies.b]\nversion = \"2\"\n\n"
                         "[dev-dependencies]\nx = \"1\"\n";
  EXPECT_EQ(set(in, "dependencies.c.version", "\"3\""),
            "[dependencies]\na = \"1\"\n\n[dependencies.b]\nversion = \"2\"\n\n[dependencies.c]\n"
            "version = \"3\"\n\n[dev-dependencies]\nx = \"1\"\n");
}

TEST(Edit, NewTopLevelTableAtEnd) {
  EXPECT_EQ(set("a = 1\n\n[model]\nname = \"m\"\n", "ckpt.resume_step", "500"),
            "a = 1\n\n[model]\nname = \"m\"\n\n[ckpt]\nresume_step = 500\n");
  EXPECT_EQ(set("a = 1\n", "ckpt.resume_step", "500"), "a = 1\nckpt.resume_step = 500\n");
}

// E: dotted parents stay dotted.
TEST(Edit, DottedParentStaysDotted) {
  EXPECT_EQ(set("site.name = \"x\"\nother = 1\n", "site.url", "\"u\""),
            "site.name = \"x\"\nsite.url = \"u\"\nother = 1\n");
  EXPECT_EQ(set("[a]\nb.c = 1\nz = 2\n", "a.b.d", "3"), "[a]\nb.c = 1\nb.d = 3\nz = 2\n");
}

// F: arrays follow their own layout.
TEST(Edit, ArrayAppendFollowsLayout) {
  const std::string in = "deps = [\n    \"a\",\n    \"b\",\n]\none = [\"a\", \"b\"]\n";
  EXPECT_EQ(set(in, "deps[+]", "\"c\""),
            "deps = [\n    \"a\",\n    \"b\",\n    \"c\",\n]\none = [\"a\", \"b\"]\n");
  EXPECT_EQ(set(in, "one[+]", "\"c\""),
            "deps = [\n    \"a\",\n    \"b\",\n]\none = [\"a\", \"b\", \"c\"]\n");
  EXPECT_EQ(set("x = [\n  1,\n  2 # two\n]\n", "x[+]", "3"), "x = [\n  1,\n  2, # two\n  3\n]\n");
  EXPECT_EQ(set("x = []\n", "x[+]", "1"), "x = [1]\n");
  EXPECT_EQ(set("x = [1,2,]\n", "x[+]", "3"), "x = [1,2,3,]\n");
  EXPECT_EQ(set("x = [1, 2]\n", "x[0]", "7"), "x = [7, 2]\n");
  EXPECT_EQ(set("x = [1, 2]\n", "x[-1]", "7"), "x = [1, 7]\n");
  EXPECT_EQ(set("a = 1\n", "new[+]", "\"v\""), "a = 1\nnew = [\"v\"]\n");
}

// G: removing an element keeps the neighbour's same-line comment.
TEST(Edit, RemoveArrayElementKeepsNeighbourComment) {
  EXPECT_EQ(unset("deps = [\n    \"numpy\",    # essential\n    \"requests\",\n]\n", "deps[1]"),
            "deps = [\n    \"numpy\",    # essential\n]\n");
  EXPECT_EQ(unset("x = [1, 2, 3]\n", "x[1]"), "x = [1, 3]\n");
  EXPECT_EQ(unset("x = [1, 2, 3]\n", "x[-1]"), "x = [1, 2]\n");
  EXPECT_EQ(unset("x = [1]\n", "x[0]"), "x = []\n");
}

// H: unset removes the key's own comments, not the section comment.
TEST(Edit, UnsetRemovesOwnedComments) {
  EXPECT_EQ(
      unset("# Build settings\n[build]\n# number of parallel jobs\njobs = 4   # tuned for CI\n"
            "target = \"x86_64\"\n",
            "build.jobs"),
      "# Build settings\n[build]\ntarget = \"x86_64\"\n");
  // A comment separated by a blank line belongs to nobody and stays.
  EXPECT_EQ(unset("a = 1\n# about a section\n\nb = 2\n", "b"), "a = 1\n# about a section\n");
}

// I: inline tables stay on one line with their own spacing.
TEST(Edit, InlineTableEntries) {
  EXPECT_EQ(set("dep = { version = \"1\", features = [\"x\"] }\n", "dep.optional", "true"),
            "dep = { version = \"1\", features = [\"x\"], optional = true }\n");
  EXPECT_EQ(set("tight = {a=1}\n", "tight.b", "2"), "tight = {a=1, b=2}\n");
  EXPECT_EQ(set("e = {}\n", "e.k", "1"), "e = { k = 1 }\n");
  EXPECT_EQ(set("t = { a = { b = 1 } }\n", "t.a.c", "2"), "t = { a = { b = 1, c = 2 } }\n");
  EXPECT_EQ(set("t = { a.b = 1 }\n", "t.a.c", "2"), "t = { a.b = 1, a.c = 2 }\n");
  EXPECT_EQ(set("t = { a = 1 }\n", "t.a", "2"), "t = { a = 2 }\n");
  EXPECT_EQ(unset("t = { a = 1, b = 2, c = 3 }\n", "t.b"), "t = { a = 1, c = 3 }\n");
  EXPECT_EQ(unset("t = { a = 1, b = 2 }\n", "t.b"), "t = { a = 1 }\n");
  EXPECT_EQ(unset("t = { a = 1 }\n", "t.a"), "t = {}\n");
}

// J: BOM, CRLF and a missing final newline are file properties.
TEST(Edit, BomCrlfAndNoFinalNewline) {
  EXPECT_EQ(set("\xEF\xBB\xBF"
                "a = 1\r\nb = 2",
                "c",
                "3"),
            "\xEF\xBB\xBF"
            "a = 1\r\nb = 2\r\nc = 3");
  EXPECT_EQ(set("[t]\r\nx = 1\r\n", "t.y", "2"), "[t]\r\nx = 1\r\ny = 2\r\n");
  EXPECT_EQ(set("[t]\r\nx = 1\r\n", "u.y", "2"), "[t]\r\nx = 1\r\n\r\n[u]\r\ny = 2\r\n");
  EXPECT_EQ(set("[t]\nx = 1", "u.y", "2"), "[t]\nx = 1\n\n[u]\ny = 2");
  EXPECT_EQ(unset("a = 1\nb = 2", "b"), "a = 1");
  EXPECT_EQ(unset("a = 1\r\nb = 2\r\n", "a"), "b = 2\r\n");
  EXPECT_EQ(set("", "a", "1"), "a = 1\n");
  EXPECT_EQ(set("\xEF\xBB\xBF", "a", "1"),
            "\xEF\xBB\xBF"
            "a = 1\n");
}

// K: interleaved dotted keys are never regrouped.
TEST(Edit, InterleavedDottedKeysStay) {
  EXPECT_EQ(set("hello.world = \"a\"\ngoodbye = \"b\"\nhello.moon = \"c\"\n", "goodbye", "\"B\""),
            "hello.world = \"a\"\ngoodbye = \"B\"\nhello.moon = \"c\"\n");
}

// L: no scope capture: a new nested key next to dotted keys is a dotted line.
TEST(Edit, NoScopeCapture) {
  EXPECT_EQ(set("a.b = 1\nz = 2\n", "a.c.d", "3"), "a.b = 1\na.c.d = 3\nz = 2\n");
}

TEST(Edit, KeysResolveSemanticallyForEdits) {
  EXPECT_EQ(set("[a.b]\nc = 1\n", "a.b.c", "2"), "[a.b]\nc = 2\n");
  EXPECT_EQ(set("[a]\nb.c = 1\n", "a.b.c", "2"), "[a]\nb.c = 2\n");
  EXPECT_EQ(set("a.b.c = 1\n", "a.b.c", "2"), "a.b.c = 2\n");
  EXPECT_EQ(set("a = { b = { c = 1 } }\n", "a.b.c", "2"), "a = { b = { c = 2 } }\n");
}

TEST(Edit, QuotedKeysWithDots) {
  EXPECT_EQ(set("\"a.b\" = 1\n", "\"a.b\"", "2"), "\"a.b\" = 2\n");
  EXPECT_EQ(set("x = 1\n", "\"a.b\".c", "2"), "x = 1\n\"a.b\".c = 2\n");
  EXPECT_EQ(set("[t]\nx = 1\n", "t.'key with space'", "2"), "[t]\nx = 1\n\"key with space\" = 2\n");
  EXPECT_EQ(set("[t]\n1 = 1\n", "t.1", "2"), "[t]\n1 = 2\n");
  EXPECT_EQ(set("\"\" = 1\n", "\"\"", "2"), "\"\" = 2\n");
}

TEST(Edit, ArraysOfTables) {
  const std::string in =
      "[[bin]]\nname = \"a\"\n\n[[bin]]\nname = \"b\"\n[bin.opts]\nx = 1\n\n[other]\nk = 1\n";
  EXPECT_EQ(
      set(in, "bin[0].name", "\"A\""),
      "[[bin]]\nname = \"A\"\n\n[[bin]]\nname = \"b\"\n[bin.opts]\nx = 1\n\n[other]\nk = 1\n");
  EXPECT_EQ(set(in, "bin[-1].path", "\"p\""),
            "[[bin]]\nname = \"a\"\n\n[[bin]]\nname = \"b\"\npath = \"p\"\n[bin.opts]\nx = "
            "1\n\n[other]\nk = 1\n");
  EXPECT_EQ(set(in, "bin[0].path", "\"p\""),
            "[[bin]]\nname = \"a\"\npath = \"p\"\n\n[[bin]]\nname = \"b\"\n[bin.opts]\nx = "
            "1\n\n[other]\nk = 1\n");
  EXPECT_EQ(set(in, "bin[+]", "{ name = \"c\", path = \"p\" }"),
            "[[bin]]\nname = \"a\"\n\n[[bin]]\nname = \"b\"\n[bin.opts]\nx = 1\n\n[[bin]]\nname = "
            "\"c\"\npath = \"p\"\n\n[other]\nk = 1\n");
  EXPECT_EQ(set(in, "bin[+].name", "\"c\""),
            "[[bin]]\nname = \"a\"\n\n[[bin]]\nname = \"b\"\n[bin.opts]\nx = 1\n\n[[bin]]\nname = "
            "\"c\"\n\n[other]\nk = 1\n");
  EXPECT_EQ(unset(in, "bin[0]"), "[[bin]]\nname = \"b\"\n[bin.opts]\nx = 1\n\n[other]\nk = 1\n");
  EXPECT_EQ(unset(in, "bin[1]"), "[[bin]]\nname = \"a\"\n\n[other]\nk = 1\n");
  EXPECT_EQ(unset(in, "bin"), "[other]\nk = 1\n");
}

TEST(Edit, UnsetTables) {
  const std::string in = "[a]\nx = 1\n\n# about b\n[b]\ny = 2\n\n[c]\nz = 3\n";
  EXPECT_EQ(unset(in, "b"), "[a]\nx = 1\n\n[c]\nz = 3\n");
  EXPECT_EQ(unset(in, "c"), "[a]\nx = 1\n\n# about b\n[b]\ny = 2\n");
  EXPECT_EQ(unset(in, "b.y"), "[a]\nx = 1\n\n# about b\n[b]\n\n[c]\nz = 3\n");
  EXPECT_EQ(unset(in, "b.y", true), "[a]\nx = 1\n\n[c]\nz = 3\n");
  EXPECT_EQ(unset("[a.b]\nc = 1\n[d]\ne = 1\n", "a.b"), "[d]\ne = 1\n");
  EXPECT_EQ(unset("x.y = 1\nx.z = 2\nw = 3\n", "x"), "w = 3\n");
}

TEST(Edit, StringValues) {
  EXPECT_EQ(set_s("a = 1\n", "b", "plain"), "a = 1\nb = \"plain\"\n");
  EXPECT_EQ(set_s("a = 1\n", "b", "C:\\path"), "a = 1\nb = 'C:\\path'\n");
  EXPECT_EQ(set_s("a = 1\n", "b", "say \"hi\"\nbye"), "a = 1\nb = \"say \\\"hi\\\"\\nbye\"\n");
  EXPECT_EQ(set_s("a = 1\n", "a", "2018"), "a = \"2018\"\n");
  EXPECT_EQ(Document::parse(set_s("a = 1\n", "a", "2018"), "t").root().find("a")->string() !=
                nullptr,
            true);
}

TEST(Edit, EditorChainsEdits) {
  const auto doc = Document::parse(
      "# resume\nclean_output_dir = true  # wipe\n\n[ckpt]\n\n[wandb]\nname = \"a\"\n", "t.toml");
  const std::string out = pb::toml::Editor(doc)
                              .set("clean_output_dir", "false")
                              .set("ckpt.resume_step", "500")
                              .set_string("wandb.name", "a-resume")
                              .text();
  EXPECT_EQ(out,
            "# resume\nclean_output_dir = false  # wipe\n\n[ckpt]\nresume_step = "
            "500\n\n[wandb]\nname = \"a-resume\"\n");
}

TEST(Edit, RefusalsAndTheirExitCodes) {
  EXPECT_EQ(error_code([] { set("a = 1\n", "a.b", "2"); }), 2);   // conflicting path
  EXPECT_EQ(error_code([] { set("a = 1\n", "a..b", "2"); }), 2);  // bad path
  EXPECT_EQ(error_code([] { set("a = 1\n", "b", "hello"); }), 2); // not a literal
  EXPECT_EQ(error_code([] { set("a = 1\n", "b", "0.2.0"); }), 2);
  EXPECT_EQ(error_code([] { set("a = 1\n", "b", "1 # c"); }), 2);
  EXPECT_EQ(error_code([] { set("x = [1]\n", "x[5]", "2"); }), 2); // out of range
  EXPECT_EQ(error_code([] { set("[t]\nk = 1\n", "t", "3"); }), 2); // a [table] section
  EXPECT_EQ(error_code([] { unset("a = 1\n", "b"); }), 1);         // missing
  EXPECT_EQ(error_code([] { set("a = [", "a", "1"); }), 3);        // invalid TOML
  EXPECT_EQ(pb::toml::unset(Document::parse("a = 1\n", "t"), "b", {true, false}), "a = 1\n");
}

} // namespace
