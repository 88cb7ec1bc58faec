// SPDX-License-Identifier: MIT
// `toml diff` (docs/toml.md): the pure diff of two documents on small cases, every corpus file
// against itself and against edited copies (a key added, removed, changed; comments only;
// reformatted), and the command's output and exit codes through the real binary.
#include "test_support.hpp"

#include <primebeaker/toml/diff.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/format.hpp>
#include <primebeaker/toml/syntax.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

namespace {

namespace fs = std::filesystem;
using pb::test::run_primebeaker;
using pb::test::TempDir;
using pb::toml::diff_documents;
using pb::toml::diff_text;
using pb::toml::Document;
using pb::toml::DocumentDiff;

Document doc(const std::string &text, const std::string &name = "a.toml") {
  return Document::parse(text, name);
}

std::string text_diff(const std::string &a, const std::string &b) {
  return diff_text(diff_documents(doc(a), doc(b, "b.toml")));
}

TEST(TomlDiff, SameMeaningIsSame) {
  const std::vector<std::pair<std::string, std::string>> same = {
      {"x = 1\n", "x=1 # c\n"},
      {"x = 1_000\n", "x = 1000\n"},
      {"x = 0x10\n", "x = 16\n"},
      {"s = 'a'\n", "s = \"a\"\n"},
      {"s = \"\"\"\nab\"\"\"\n", "s = \"ab\"\n"},
      {"f = 1.50\n", "f = 1.5\n"},
      {"d = 1979-05-27T07:32:00Z\n", "d = 1979-05-27 07:32:00z\n"},
      {"a = [1, 2]\n", "a = [\n  1,  # one\n  2,\n]\n"},
      {"[t]\nx = 1\ny = 2\n", "t = { y = 2, x = 1 }\n"},
      {"[t]\nx = 1\n", "t.x = 1\n"},
      {"[a.b]\nc = 1\n", "a = { b = { c = 1 } }\n"},
      {"[[e]]\nid = 1\n[[e]]\nid = 2\n", "e = [{ id = 1 }, { id = 2 }]\n"},
      {"[t]\n", "t = {}\n"},
      {"", "# only a comment\n\n"},
      {"b = 2\na = 1\n", "a = 1\nb = 2\n"},
  };
  for (const auto &[a, b] : same) {
    SCOPED_TRACE(a + "vs\n" + b);
    const DocumentDiff diff = diff_documents(doc(a), doc(b));
    EXPECT_TRUE(diff.same()) << diff_text(diff);
  }
}

TEST(TomlDiff, AddedRemovedChangedWithLinesAndValuesAsWritten) {
  const std::string a = R"(# config
name = "run"      # the name
steps = 1_000
tags = ["x",
        'y']

[model]
name = "m"
gone = true
)";
  const std::string b = R"(name = "run"
steps = 2_000
tags = ["x", 'z']
new = 0x1F

[model]
name = "m"
extra = { a = 1, "b c" = [1.0] }
)";
  EXPECT_EQ(text_diff(a, b),
            "~ steps: 1_000 -> 2_000  (a.toml:3, b.toml:2)\n"
            "~ tags: [\"x\", 'y'] -> [\"x\", 'z']  (a.toml:4, b.toml:3)\n"
            "+ new = 0x1F  (b.toml:4)\n"
            "- model.gone = true  (a.toml:9)\n"
            "+ model.extra.a = 1  (b.toml:8)\n"
            "+ model.extra.\"b c\" = [1.0]  (b.toml:8)\n");
}

TEST(TomlDiff, ArraysOfTablesByIndex) {
  const std::string a = R"([orchestrator]
batch_size = 8

[[orchestrator.env]]
id = "math"

[[orchestrator.env]]
id = "code"
args = { n = 1 }
)";
  const std::string b = R"([orchestrator]
batch_size = 8

[[orchestrator.env]]
id = "math"

[[orchestrator.env]]
id = "code-v2"
args = { n = 1 }

[[orchestrator.env]]
id = "wordle"
)";
  EXPECT_EQ(text_diff(a, b),
            "~ orchestrator.env[1].id: \"code\" -> \"code-v2\"  (a.toml:8, b.toml:8)\n"
            "+ orchestrator.env[2].id = \"wordle\"  (b.toml:12)\n");
  EXPECT_EQ(text_diff(b, a),
            "~ orchestrator.env[1].id: \"code-v2\" -> \"code\"  (a.toml:8, b.toml:8)\n"
            "- orchestrator.env[2].id = \"wordle\"  (a.toml:12)\n");
}

TEST(TomlDiff, TypesAndShapesDiffer) {
  // 1 and 1.0 are different values; a table becoming a scalar is a removal and an addition.
  EXPECT_EQ(text_diff("x = 1\n", "x = 1.0\n"), "~ x: 1 -> 1.0  (a.toml:1, b.toml:1)\n");
  EXPECT_EQ(text_diff("[t]\nk = 1\n", "t = 2\n"), "- t.k = 1  (a.toml:2)\n+ t = 2  (b.toml:1)\n");
  // An empty table is a key of its own; a string over lines is shown on one line.
  EXPECT_EQ(text_diff("[t]\n", "[t]\nk = 1\n"), "- t = {}  (a.toml:1)\n+ t.k = 1  (b.toml:2)\n");
  EXPECT_EQ(text_diff("s = 'a'\n", "s = \"\"\"\na\nb\"\"\"\n"),
            "~ s: 'a' -> \"a\\nb\"  (a.toml:1, b.toml:1)\n");
}

TEST(TomlDiff, JsonForm) {
  const auto diff =
      diff_documents(doc("a = 1\nb = 2\nc = 3\n"), doc("a = 1\nc = 30  # new\nd = 'x'\n"));
  EXPECT_EQ(pb::toml::diff_json(diff), pb::OrderedJson::parse(R"({
    "same": false,
    "added": [{"key": "d", "b_value": "'x'", "b_line": 3}],
    "removed": [{"key": "b", "a_value": "2", "a_line": 2}],
    "changed": [{"key": "c", "a_value": "3", "b_value": "30", "a_line": 3, "b_line": 2}]
  })"));
  // Keys in another order: the text places each added key before the next key both have (in
  // A's order), the JSON lists added keys in B's order.
  const auto crossed =
      diff_documents(doc("s2 = 1\ns1 = 1\n"), doc("x = 1\ns1 = 1\ny = 1\ns2 = 1\n", "b.toml"));
  EXPECT_EQ(diff_text(crossed), "+ y = 1  (b.toml:3)\n+ x = 1  (b.toml:1)\n");
  EXPECT_EQ(pb::toml::diff_json(crossed)["added"], pb::OrderedJson::parse(R"([
    {"key": "x", "b_value": "1", "b_line": 1}, {"key": "y", "b_value": "1", "b_line": 3}])"));
  EXPECT_EQ(pb::toml::diff_json(diff_documents(doc("a = 1\n"), doc("a=1\n"))),
            pb::OrderedJson::parse(R"({"same": true, "added": [], "removed": [], "changed": []})"));
}

// ---- the corpus ----

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> out;
  const fs::path corpus = pb::test::shared_dir() / "corpus";
  for (const char *folder : {"prime-rl", "primebeaker-examples"}) {
    for (const auto &entry : fs::directory_iterator(corpus / folder)) {
      if (entry.path().extension() == ".toml") {
        out.push_back(entry.path());
      }
    }
  }
  const fs::path toml_test = corpus / "toml-test" / "tests";
  std::ifstream list(toml_test / "files-toml-1.0.0");
  for (std::string line; std::getline(list, line);) {
    if (line.rfind("valid/", 0) == 0 && line.ends_with(".toml")) {
      out.push_back(toml_test / line);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::uint32_t line_at(const std::string &text, std::size_t offset) {
  return static_cast<std::uint32_t>(std::count(text.begin(), text.begin() + offset, '\n') + 1);
}

// The first scalar reached through tables only (no arrays) whose table has another member, so
// that removing it leaves no empty table behind: its path, or nothing.
std::optional<std::vector<std::string>> scalar_key(const pb::toml::Value &table,
                                                   std::vector<std::string> &path) {
  for (const auto &[name, member] : *table.table()) {
    path.push_back(name);
    if (member.table() != nullptr) {
      if (auto found = scalar_key(member, path)) {
        return found;
      }
    } else if (member.array() == nullptr && table.table()->size() > 1) {
      return path;
    }
    path.pop_back();
  }
  return std::nullopt;
}

std::string path_text(const std::vector<std::string> &keys) {
  pb::toml::KeyPath path;
  for (const auto &key : keys) {
    path.steps.push_back({pb::toml::PathStep::Kind::key, key, 0});
  }
  return path.text();
}

// A value on one line, as the diff shows it.
std::string one_line(const pb::toml::Value &value) {
  return value.raw().find('\n') == std::string::npos ? value.raw()
                                                     : pb::toml::quote_string(*value.string());
}

// The same document written differently: no indentation but four spaces before every key/value
// line, no spaces around '=', spaces inside header brackets and around the dots of their keys,
// and CRLF line endings (a CRLF in a multi-line string reads as LF).
std::string reformatted(const Document &d) {
  const auto &tree = d.syntax();
  const std::string &text = d.text();
  const auto bytes = [&text](std::uint32_t b, std::uint32_t e) { return text.substr(b, e - b); };
  std::string lf = text.substr(0, tree.body_begin);
  for (const auto &line : tree.lines) {
    if (line.kind == pb::toml::syntax::LineKind::key_value) {
      const auto &kv = tree.key_values[line.item];
      lf += "    " + bytes(kv.key_span.begin, kv.key_span.end) + "=" +
            bytes(tree.values[kv.value].span.begin, line.end);
    } else if (line.kind == pb::toml::syntax::LineKind::table ||
               line.kind == pb::toml::syntax::LineKind::array_table) {
      const auto &h = tree.headers[line.item];
      lf += h.array ? "[[ " : "[ ";
      for (std::uint32_t i = 0; i < h.key_count; ++i) {
        const auto &seg = tree.key_segments[h.key_first + i];
        lf += (i > 0 ? " . " : "") + bytes(seg.begin, seg.end);
      }
      lf += (h.array ? " ]]" : " ]") + bytes(h.span.end, line.end);
    } else {
      lf += bytes(line.begin, line.end);
    }
  }
  std::string out;
  for (std::size_t i = 0; i < lf.size(); ++i) {
    if (lf[i] == '\n' && (i == 0 || lf[i - 1] != '\r')) {
      out += '\r';
    }
    out += lf[i];
  }
  return out;
}

TEST(TomlDiff, EveryCorpusFileAgainstItselfAndEditedCopies) {
  const auto files = corpus_files();
  ASSERT_GE(files.size(), 230U);
  std::size_t edited = 0;
  std::size_t real_edited = 0; // of the 29 real configs
  for (const auto &file : files) {
    SCOPED_TRACE(file.string());
    const std::string text = pb::test::read_file(file);
    const Document a = doc(text);
    EXPECT_TRUE(diff_documents(a, doc(text)).same());

    // Comments only: a line above everything (after a BOM) and a line at the end.
    std::string commented = text;
    commented.insert(a.syntax().body_begin, "# added above\n");
    commented += (text.empty() || text.back() == '\n' ? "" : "\n") + std::string("# at the end\n");
    const auto same_comments = diff_documents(a, doc(commented));
    EXPECT_TRUE(same_comments.same()) << diff_text(same_comments);
    // Reformatted.
    const std::string reformat = reformatted(a);
    EXPECT_TRUE(reformat != text || a.root().table()->empty());
    const auto same_layout = diff_documents(a, doc(reformat));
    EXPECT_TRUE(same_layout.same()) << diff_text(same_layout) << reformat;

    // A key added at the root.
    const std::string with_added = pb::toml::set(a, "pb_diff_added", "12345");
    const auto added = diff_documents(a, doc(with_added));
    const std::size_t added_at = with_added.find("pb_diff_added"); // spaced like its neighbours
    ASSERT_NE(added_at, std::string::npos);
    EXPECT_EQ(diff_text(added),
              fmt::format("+ pb_diff_added = 12345  (a.toml:{})\n", line_at(with_added, added_at)));

    std::vector<std::string> keys;
    const auto key = scalar_key(a.root(), keys);
    if (!key) { // no table with two keys
      continue;
    }
    ++edited;
    real_edited += file.string().find("toml-test") == std::string::npos ? 1 : 0;
    const std::string name = path_text(*key);
    const pb::toml::Value &old = *a.root().find_path(*key);
    const std::uint32_t old_line = old.position().line;

    // The same key removed.
    const auto removed = diff_documents(a, doc(pb::toml::unset(a, name)));
    EXPECT_EQ(diff_text(removed),
              fmt::format("- {} = {}  (a.toml:{})\n", name, one_line(old), old_line));

    // The same key changed: B's line is where the edit put the new value.
    const auto edit = pb::toml::set_detailed(a, name, "\"pb-diff-changed\"");
    ASSERT_EQ(edit.splices.size(), 1U);
    const std::uint32_t new_line = line_at(text, edit.splices.front().begin);
    const auto changed = diff_documents(a, doc(edit.text));
    EXPECT_EQ(diff_text(changed),
              fmt::format("~ {}: {} -> \"pb-diff-changed\"  (a.toml:{}, a.toml:{})\n",
                          name,
                          one_line(old),
                          old_line,
                          new_line));
  }
  EXPECT_GE(edited, 120U);
  EXPECT_GE(real_edited, 25U);
}

// ---- through the binary ----

class TomlDiffCommand : public ::testing::Test {
protected:
  TempDir dir;
  std::string a = (dir / "a.toml").string();
  std::string b = (dir / "b.toml").string();
};

TEST_F(TomlDiffCommand, ExitZeroWhenSameOneWhenDifferent) {
  pb::test::write_file(a, "[model]\nname = \"m\" # the model\nsteps = 1_000\n");
  pb::test::write_file(b, "model = { steps = 1000, name = 'm' }\n");
  auto r = run_primebeaker({"toml", "diff", a, b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  r = run_primebeaker({"toml", "diff", a, b, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\n  \"same\": true,\n  \"added\": [],\n  \"removed\": [],\n  \"changed\": []\n}\n");

  pb::test::write_file(b, "[model]\nname = \"n\"\nseed = 7\n");
  r = run_primebeaker({"toml", "diff", a, b});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // FILE:LINE on both sides, with the files as given.
  EXPECT_EQ(r.out,
            "~ model.name: \"m\" -> \"n\"  (" + a + ":2, " + b + ":2)\n" +
                "- model.steps = 1_000  (" + a + ":3)\n" + "+ model.seed = 7  (" + b + ":3)\n");
  EXPECT_EQ(r.err, "");
  r = run_primebeaker({"toml", "diff", a, b, "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(pb::OrderedJson::parse(r.out), pb::OrderedJson::parse(R"({
    "same": false,
    "added": [{"key": "model.seed", "b_value": "7", "b_line": 3}],
    "removed": [{"key": "model.steps", "a_value": "1_000", "a_line": 3}],
    "changed": [{"key": "model.name", "a_value": "\"m\"", "b_value": "\"n\"",
                 "a_line": 2, "b_line": 2}]
  })"));

  pb::test::RunOptions in; // either side may be stdin
  in.stdin_data = "[model]\nname = \"m\"\nsteps = 1000\n";
  EXPECT_EQ(run_primebeaker({"toml", "diff", a, "-"}, in).exit_code, 0);
  EXPECT_EQ(run_primebeaker({"toml", "diff", "-", "-"}, in).exit_code, 2);
}

TEST_F(TomlDiffCommand, BadInputIsExitThreeWithOneErrorLine) {
  pb::test::write_file(a, "x = 1\n");
  pb::test::write_file(b, "x = 1\ny = [1,,2]\nz = \n");
  const std::string missing = (dir / "missing.toml").string();
  auto r = run_primebeaker({"toml", "diff", a, b});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "primebeaker: error: " + b + ":2:8: expected a value, found ','\n");
  EXPECT_EQ(r.out, "");
  r = run_primebeaker({"toml", "diff", missing, a});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "primebeaker: error: cannot read " + missing + ": No such file or directory\n");
  r = run_primebeaker({"toml", "diff", a, missing, "--json"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
}

TEST_F(TomlDiffCommand, CorpusFilesAgainstThemselves) {
  for (const auto &file : corpus_files()) {
    if (file.string().find("toml-test") != std::string::npos) {
      continue; // the pure diff covers them; the binary runs on the real configs
    }
    const auto r = run_primebeaker({"toml", "diff", file.string(), file.string()});
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.out << r.err;
    EXPECT_EQ(r.out, "");
  }
}

} // namespace
