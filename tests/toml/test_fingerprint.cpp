// SPDX-License-Identifier: MIT
// The meaning fingerprint that verifies `toml set|unset FILE` (docs/toml.md, "Verification"):
// ours (from typed values, and from a document's nodes with an edit's changes) and toml++'s
// (from its DOM) must agree exactly, and equal fingerprints must mean semantically_equal().
// Then the streaming file edit itself: a wrong intended meaning is refused with the detailed
// message and leaves the directory as it was.
#include "edit_internal.hpp"
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/reference.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <fstream>

namespace {

namespace fs = std::filesystem;
using pb::toml::Document;
using pb::toml::meaning_fingerprint;
using pb::toml::reference_fingerprint;

fs::path toml_test() {
  return pb::test::shared_dir() / "corpus" / "toml-test" / "tests";
}

// Every file our parser accepts: toml-test's valid files (the 1.0 list and the rest of valid/,
// skipping what TOML 1.0 does not allow) and the TOML files of the real corpus.
std::vector<fs::path> accepted_files() {
  std::vector<fs::path> out;
  const fs::path corpus = pb::test::shared_dir() / "corpus";
  for (const fs::path &root : {toml_test() / "valid",
                               corpus / "prime-rl",
                               corpus / "primebeaker-examples",
                               corpus / "primebeaker-eval-configs"}) {
    if (!fs::exists(root)) {
      continue;
    }
    for (const auto &entry : fs::recursive_directory_iterator(root)) {
      if (entry.is_regular_file() && entry.path().extension() == ".toml") {
        out.push_back(entry.path());
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Document parse(const std::string &text) {
  return Document::parse(text, "t.toml");
}

std::string ours(const std::string &text) {
  return meaning_fingerprint(parse(text).root());
}

TEST(Sha256Stream, PiecesGiveTheOneShotDigest) {
  EXPECT_EQ(pb::sha2::hex(pb::sha2::sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string data;
  for (int i = 0; i < 1000; ++i) {
    data += std::to_string(i * 7919) + ",";
  }
  for (const std::size_t piece : {1U, 3U, 55U, 64U, 65U, 1000U}) {
    pb::sha2::Sha256 hasher;
    for (std::size_t at = 0; at < data.size(); at += piece) {
      hasher.update(std::string_view(data).substr(at, piece));
    }
    EXPECT_EQ(hasher.finish(), pb::sha2::sha256(data)) << piece;
  }
  pb::sha2::Sha256 again; // starts over after finish()
  again.update("abc");
  EXPECT_EQ(again.finish(), pb::sha2::sha256("abc"));
}

TEST(MeaningFingerprint, EqualExactlyWhereTheComparisonIsEqual) {
  // Same meaning, different spelling or order.
  EXPECT_EQ(ours("a = 1\nb = 2\n"), ours("b = 2\na = 1\n"));
  EXPECT_EQ(ours("a = 0x10\n"), ours("a = 16\n"));
  EXPECT_EQ(ours("a = nan\n"), ours("a = -nan\n"));
  EXPECT_EQ(ours("a = 0.0\n"), ours("a = -0.0\n"));
  EXPECT_EQ(ours("a = 1e2\n"), ours("a = 100.0\n"));
  EXPECT_EQ(ours("[[t]]\nx = 1\n"), ours("t = [{ x = 1 }]\n"));
  EXPECT_EQ(ours("a.b = 1\n"), ours("[a]\nb = 1\n"));
  EXPECT_EQ(ours("d = 1979-05-27T07:32:00Z\n"), ours("d = 1979-05-27 07:32:00+00:00\n"));
  EXPECT_EQ(ours("s = 'x\\y'\n"), ours("s = \"x\\\\y\"\n"));
  // Different meanings.
  EXPECT_NE(ours("a = 1\n"), ours("a = 1.0\n"));
  EXPECT_NE(ours("a = 1\n"), ours("a = \"1\"\n"));
  EXPECT_NE(ours("a = true\n"), ours("a = false\n"));
  EXPECT_NE(ours("a = inf\n"), ours("a = -inf\n"));
  EXPECT_NE(ours("ab.c = 1\n"), ours("a.bc = 1\n"));
  EXPECT_NE(ours("a = [1, 2]\n"), ours("a = [2, 1]\n"));
  EXPECT_NE(ours("a = []\n"), ours("a = {}\n"));
  EXPECT_NE(ours("a = ['ab', 'c']\n"), ours("a = ['a', 'bc']\n"));
  EXPECT_NE(ours("d = 1979-05-27T07:32:00\n"), ours("d = 1979-05-27T07:32:00Z\n"));
  EXPECT_NE(ours("d = 1979-05-27T07:32:00Z\n"), ours("d = 1979-05-27T07:32:00+01:00\n"));
  EXPECT_NE(ours("t = 07:32:00.5\n"), ours("t = 07:32:00.25\n"));
  EXPECT_NE(ours("d = 1979-05-27\n"), ours("d = 1979-05-28\n"));
}

// Ours from typed values and toml++'s from its DOM agree on every file both read, and equal
// fingerprints are equal meanings for every pair of toml-test's valid files.
TEST(MeaningFingerprint, OursAndTomlppAgreeOnTheCorpus) {
  struct Read {
    fs::path file;
    pb::toml::Value value;
    std::string fingerprint;
  };
  std::vector<Read> reads;
  for (const auto &file : accepted_files()) {
    SCOPED_TRACE(file.string());
    const std::string text = pb::test::read_file(file);
    pb::toml::Value value;
    try {
      value = parse(text).root();
    } catch (const pb::Error &) {
      continue; // beyond TOML 1.0 (toml-test's valid/ also holds 1.1 files)
    }
    const auto theirs = reference_fingerprint(text);
    ASSERT_TRUE(theirs.has_value()) << "toml++ rejects a file we accept";
    const std::string mine = meaning_fingerprint(value);
    ASSERT_EQ(mine, *theirs);
    EXPECT_EQ(pb::toml::reference_fingerprint_file(file), theirs);
    EXPECT_EQ(mine.size(), 32U);
    if (file.string().find("toml-test") != std::string::npos) {
      reads.push_back({file, std::move(value), mine});
    }
  }
  EXPECT_GE(reads.size(), 210U);
  for (std::size_t i = 0; i < reads.size(); ++i) {
    for (std::size_t j = i + 1; j < reads.size(); ++j) {
      EXPECT_EQ(reads[i].fingerprint == reads[j].fingerprint,
                semantically_equal(reads[i].value, reads[j].value))
          << reads[i].file << " vs " << reads[j].file;
    }
  }
}

// The intended meaning of an edit read from the document's nodes plus its changes: the same
// fingerprint as its typed form, and as toml++'s reading of the spliced text.
TEST(MeaningFingerprint, EditsReadFromNodesAgreeWithTypedValuesAndTomlpp) {
  using namespace pb::toml;
  int checked = 0;
  for (const auto &file : accepted_files()) {
    const std::string text = pb::test::read_file(file);
    std::optional<Document> doc;
    try {
      doc = Document::parse(text, file.string());
    } catch (const pb::Error &) {
      continue;
    }
    SCOPED_TRACE(file.string());
    std::vector<detail::Outcome> outcomes;
    const auto plan = [&](auto &&planner) {
      try {
        outcomes.push_back(planner());
      } catch (const pb::Error &e) {
        EXPECT_EQ(e.code(), 2) << e.what(); // a usage error (e.g. no such edit) is fine
      }
    };
    const auto literal = detail::parse_literal("[1, { a = 'x' }]");
    plan([&] { return detail::plan_set(*doc, KeyPath::parse("pb_added.deep.key"), literal); });
    for (const auto &member : *doc->root().table()) {
      KeyPath path;
      path.steps.push_back({PathStep::Kind::key, member.first, 0});
      plan([&] { return detail::plan_set(*doc, path, literal); });
      plan([&] { return detail::plan_unset(*doc, path, true); });
      if (const auto *items = member.second.array(); items != nullptr && !items->empty()) {
        path.steps.push_back({PathStep::Kind::append, {}, 0});
        plan([&] { return detail::plan_set(*doc, path, detail::parse_literal("{ z = 1 }")); });
        path.steps.back() = {PathStep::Kind::index, {}, -1};
        plan([&] { return detail::plan_unset(*doc, path, false); });
      }
    }
    for (const auto &outcome : outcomes) {
      const std::string from_nodes = detail::expected_fingerprint(*doc, outcome.changes);
      EXPECT_EQ(from_nodes, meaning_fingerprint(detail::expected_value(*doc, outcome.changes)));
      EXPECT_EQ(reference_fingerprint(detail::apply(text, outcome.splices)), from_nodes);
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

class StreamedEdit : public ::testing::Test {
protected:
  pb::test::TempDir dir;
  fs::path file = dir / "f.toml";
  void SetUp() override { pb::test::write_file(file, "# keep\n[a]\nb = 1  # note\nc = 'x'\n"); }
  Document load() { return Document::load(file); }
};

TEST_F(StreamedEdit, SetAndUnsetWriteOnlyTheSplices) {
  pb::toml::set_file(load(), file, "a.b", "2");
  EXPECT_EQ(pb::test::read_file(file), "# keep\n[a]\nb = 2  # note\nc = 'x'\n");
  pb::toml::unset_file(load(), dir / "out.toml", "a.c");
  EXPECT_EQ(pb::test::read_file(dir / "out.toml"), "# keep\n[a]\nb = 2  # note\n");
  pb::toml::unset_file(load(), file, "a.zz", {true, false}); // --if-exists: unchanged
  EXPECT_EQ(pb::test::read_file(file), "# keep\n[a]\nb = 2  # note\nc = 'x'\n");
  EXPECT_PB_ERROR(pb::toml::unset_file(load(), file, "a.zz"), 1, "key 'a.zz' not found");
}

// The planner is the engine with the intended meaning (or the text) deliberately broken, as a
// bug in either would break it: the fingerprints differ, and the edit is refused with the
// detailed comparison's message, writing nothing and leaving no temporary behind.
TEST_F(StreamedEdit, WrongMeaningOrTextIsRefusedWithTheDetailedMessage) {
  using namespace pb::toml;
  const std::string before = pb::test::tree_digest(dir.path());
  const KeyPath path = KeyPath::parse("a.b");
  const detail::Literal literal = detail::parse_literal("2");
  const auto wrong_meaning = [&](const Document &doc) {
    detail::Outcome outcome = detail::plan_set(doc, path, literal);
    outcome.changes.front().value = Value::make_scalar(Type::integer, "3", {});
    return outcome;
  };
  bool asked_to_write = false;
  EXPECT_PB_ERROR(
      detail::edit_file(load(), file, "set a.b", wrong_meaning, [&] { asked_to_write = true; }),
      1,
      "set a.b: edit verification failed, nothing written: different integer at 'a.b'");
  EXPECT_TRUE(asked_to_write);
  EXPECT_EQ(pb::test::tree_digest(dir.path()), before);

  const auto wrong_text = [&](const Document &doc) {
    detail::Outcome outcome = detail::plan_set(doc, path, literal);
    outcome.splices.front().text = "2 2";
    return outcome;
  };
  EXPECT_PB_ERROR(detail::edit_file(load(), file, "set a.b", wrong_text, {}),
                  1,
                  "set a.b: edit verification failed, nothing written: toml++ rejects the result "
                  "at 3:");
  EXPECT_EQ(pb::test::tree_digest(dir.path()), before);

  const auto wrong_member = [&](const Document &doc) {
    detail::Outcome outcome = detail::plan_unset(doc, KeyPath::parse("a.c"), false);
    outcome.changes.front().node = doc.parsed().root->find("a")->find("b");
    return outcome;
  };
  EXPECT_PB_ERROR(detail::edit_file(load(), dir / "new.toml", "unset a.c", wrong_member, {}),
                  1,
                  "unset a.c: edit verification failed, nothing written: missing key at 'a.c'");
  EXPECT_EQ(pb::test::tree_digest(dir.path()), before);
}

} // namespace
