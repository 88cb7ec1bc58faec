// SPDX-License-Identifier: MIT
// Randomized differential test: random edits on the corpus files. For each edit, independently
// of the engine's own verification: the output parses with toml++, means the old document with
// exactly the intended change (checked against toml++'s reading of the input), and equals the
// input with the engine's splices applied, where each splice is of the expected kind (a changed
// value replaces exactly the old value's bytes; an added key only inserts; an unset only
// deletes). PB_RANDOM_SEED=N picks another seed (the failing seed is printed).
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/format.hpp>
#include <primebeaker/toml/reference.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace {

using pb::toml::Document;
using pb::toml::Type;
using pb::toml::Value;

struct Target {
  std::string path;
  std::vector<std::string> keys; // semantic path: keys, and "#n" for array indexes
  const Value *value;
};

void collect(const Value &value,
             const std::string &path,
             std::vector<std::string> &keys,
             std::vector<Target> &out) {
  out.push_back({path, keys, &value});
  if (const auto *table = value.table()) {
    for (const auto &[name, child] : *table) {
      keys.push_back(name);
      collect(child,
              path.empty() ? pb::toml::quote_key(name) : path + "." + pb::toml::quote_key(name),
              keys,
              out);
      keys.pop_back();
    }
  } else if (const auto *array = value.array()) {
    for (std::size_t i = 0; i < array->size(); ++i) {
      keys.push_back("#" + std::to_string(i));
      collect((*array)[i], path + "[" + std::to_string(i) + "]", keys, out);
      keys.pop_back();
    }
  }
}

// Navigates a toml++-read Value by a semantic path; nullptr when absent.
Value *at(Value &root, const std::vector<std::string> &keys, std::size_t count) {
  Value *v = &root;
  for (std::size_t i = 0; i < count && v != nullptr; ++i) {
    if (keys[i][0] == '#' && v->array()) {
      const auto index = std::stoul(keys[i].substr(1));
      v = index < v->array()->size() ? &v->mutable_array()[index] : nullptr;
    } else {
      v = v->is(Type::table) ? v->mutable_find(keys[i]) : nullptr;
    }
  }
  return v;
}

void erase(Value &root, const std::vector<std::string> &keys) {
  Value *parent = at(root, keys, keys.size() - 1);
  ASSERT_NE(parent, nullptr);
  const std::string &last = keys.back();
  if (last[0] == '#' && parent->array()) {
    auto &items = parent->mutable_array();
    items.erase(items.begin() + static_cast<std::ptrdiff_t>(std::stoul(last.substr(1))));
    return;
  }
  auto &members = parent->mutable_table();
  members.erase(
      std::find_if(members.begin(), members.end(), [&](const auto &m) { return m.first == last; }));
}

// Tables left empty may vanish (they existed only through their keys), and so does an array of
// tables whose last [[element]] went: compare without empty tables and arrays.
void drop_empty_tables(Value &v) {
  if (v.is(Type::array)) {
    for (auto &item : v.mutable_array()) {
      drop_empty_tables(item);
    }
    return;
  }
  if (!v.is(Type::table)) {
    return;
  }
  auto &members = v.mutable_table();
  for (auto &m : members) {
    drop_empty_tables(m.second);
  }
  members.erase(std::remove_if(members.begin(),
                               members.end(),
                               [](const auto &m) {
                                 return (m.second.is(Type::table) && m.second.table()->empty()) ||
                                        (m.second.is(Type::array) && m.second.array()->empty());
                               }),
                members.end());
}

std::string random_literal(std::mt19937 &rng) {
  static const char *const literals[] = {
      "0",
      "-17",
      "0xBEEF",
      "1_000",
      "3.25",
      "-0.5e-3",
      "inf",
      "nan",
      "true",
      "false",
      "\"text\"",
      "'C:\\dir'",
      "\"tab\\tand \\u00e9\"",
      "\"quote \\\" inside\"",
      "1979-05-27",
      "07:32:00",
      "1979-05-27T07:32:00Z",
      "1979-05-27 07:32:00.5+01:00",
      "[]",
      "[1, 2, 3]",
      "[\"a\", [1.5, true]]",
      "{}",
      "{ a = 1, b = \"x\" }",
      "{x.y = 2}",
      "\"\"\"multi\nline\"\"\"",
      "'''raw\nlines'''",
      "[\n  1,\n  2,\n]",
  };
  return literals[rng() % std::size(literals)];
}

std::string random_key(std::mt19937 &rng) {
  static const char *const keys[] = {
      "new_key", "k-2", "x", "1", "\"with.dot\"", "'with space'", "\"é\"", "\"\""};
  return keys[rng() % std::size(keys)];
}

struct Stats {
  int edits = 0;
  int refused = 0;
};

void one_edit(const Document &doc, std::mt19937 &rng, Stats &stats, std::string &out) {
  std::vector<Target> targets;
  std::vector<std::string> keys;
  collect(doc.root(), "", keys, targets);
  const Target &target = targets[rng() % targets.size()];
  Value before = pb::toml::reference_parse(doc.text(), "before");
  const int op = static_cast<int>(rng() % 4);
  pb::toml::EditResult result;
  std::string literal = random_literal(rng);
  std::vector<std::string> changed = target.keys; // the semantic path that changes
  std::string path = target.path;
  enum { replace, add, append, remove } kind;
  if (op == 0 && !target.keys.empty()) {
    kind = replace;
  } else if (op == 1 && target.value->is(Type::table)) {
    kind = add;
    const std::string key = random_key(rng);
    path = path.empty() ? key : path + "." + key;
    changed.push_back(Document::parse(key + " = 0\n", "k").root().table()->front().first);
    if (target.value->find(changed.back()) != nullptr) {
      kind = replace;
    }
  } else if (op == 2 && target.value->is(Type::array)) {
    kind = append;
    path += "[+]";
    changed.push_back("#" + std::to_string(target.value->array()->size()));
  } else if (!target.keys.empty()) {
    kind = remove;
  } else {
    return;
  }
  try {
    result = kind == remove ? pb::toml::unset_detailed(doc, path)
                            : pb::toml::set_detailed(doc, path, literal);
  } catch (const pb::Error &e) {
    // Refusals are allowed only as usage errors (e.g. replacing a [table] with a value, or
    // appending a non-table to an array of tables); a failed verification is a bug.
    ASSERT_EQ(e.code(), 2) << path << " = " << literal << ": " << e.what();
    ++stats.refused;
    return;
  }
  ++stats.edits;
  SCOPED_TRACE(path + (kind == remove ? " (unset)" : " = " + literal));

  // (a) toml++ reads the output
  Value after = pb::toml::reference_parse(result.text, "after");
  // (b) it means the old document with exactly this change
  Value expected = before;
  if (kind == remove) {
    erase(expected, changed);
  } else {
    const Value literal_value =
        pb::toml::reference_parse("v = " + literal + "\n", "v").table()->front().second;
    Value *slot = at(after, changed, changed.size());
    ASSERT_NE(slot, nullptr);
    EXPECT_TRUE(semantically_equal(*slot, literal_value));
    if (kind == replace) {
      *at(expected, changed, changed.size()) = literal_value;
    } else if (kind == append) {
      at(expected, changed, changed.size() - 1)->mutable_array().push_back(literal_value);
    } else {
      at(expected, changed, changed.size() - 1)
          ->mutable_table()
          .emplace_back(changed.back(), literal_value);
    }
  }
  drop_empty_tables(expected);
  drop_empty_tables(after);
  EXPECT_TRUE(semantically_equal(expected, after));
  // (c) nothing outside the splices changed, and the splices have the expected shape
  std::string rebuilt;
  std::uint32_t pos = 0;
  for (const auto &s : result.splices) {
    ASSERT_GE(s.begin, pos);
    ASSERT_LE(s.end, doc.text().size());
    rebuilt.append(doc.text(), pos, s.begin - pos);
    rebuilt += s.text;
    pos = s.end;
    if (kind == add || kind == append) {
      EXPECT_EQ(s.begin, s.end) << "an addition must only insert";
    }
    if (kind == remove) {
      EXPECT_TRUE(s.text.empty()) << "an unset must only delete";
    }
  }
  rebuilt.append(doc.text(), pos);
  EXPECT_EQ(rebuilt, result.text);
  if (kind == replace && result.splices.size() == 1 && !target.value->is(Type::table) &&
      !target.value->is(Type::array)) {
    const auto &s = result.splices.front();
    EXPECT_EQ(doc.text().substr(s.begin, s.end - s.begin), target.value->raw());
    EXPECT_EQ(s.text, literal);
  }
  out = result.text;
}

TEST(RandomEdits, DifferentialOnCorpusFiles) {
  unsigned seed = 20261202;
  if (const char *env = std::getenv("PB_RANDOM_SEED")) {
    seed = static_cast<unsigned>(std::strtoul(env, nullptr, 10));
  }
  std::cout << "[random-edits] seed " << seed << '\n';
  std::mt19937 rng(seed);
  Stats stats;
  for (const char *folder : {"prime-rl", "primebeaker-examples"}) {
    for (const auto &entry :
         std::filesystem::directory_iterator(pb::test::shared_dir() / "corpus" / folder)) {
      if (entry.path().extension() != ".toml") {
        continue;
      }
      SCOPED_TRACE(entry.path().string());
      std::string text = pb::test::read_file(entry.path());
      // Chains of edits: each edit works on the previous one's output.
      for (int i = 0; i < 25 && !::testing::Test::HasFatalFailure(); ++i) {
        std::string next = text;
        one_edit(Document::parse(text, entry.path().string()), rng, stats, next);
        text = std::move(next);
      }
    }
  }
  std::cout << "[random-edits] " << stats.edits << " edits checked, " << stats.refused
            << " refused as usage errors\n";
  EXPECT_GT(stats.edits, 400);
}

} // namespace
