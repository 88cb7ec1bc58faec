// SPDX-License-Identifier: MIT
// The diff of two documents' meanings, key by key (include/primebeaker/toml/diff.hpp).
#include <primebeaker/toml/diff.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/format.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <unordered_map>

namespace pb::toml {
namespace {

// A key the diff compares: a scalar, an array that is not an array of tables, or an empty table.
struct Leaf {
  std::string key;
  const Value *value;
  Position position;
};

bool before(Position l, Position r) {
  return std::tie(l.line, l.column) < std::tie(r.line, r.column);
}

bool is_array_of_tables(const Value &value) {
  const auto *items = value.array();
  return items != nullptr && !items->empty() &&
         std::all_of(
             items->begin(), items->end(), [](const Value &item) { return item.is(Type::table); });
}

void collect(const Value &value, KeyPath &path, std::vector<Leaf> &out) {
  if (const auto *members = value.table(); members != nullptr && !members->empty()) {
    for (const auto &[name, member] : *members) {
      path.steps.push_back({PathStep::Kind::key, name, 0});
      collect(member, path, out);
      path.steps.pop_back();
    }
  } else if (is_array_of_tables(value)) {
    const auto &items = *value.array();
    for (std::size_t i = 0; i < items.size(); ++i) {
      path.steps.push_back({PathStep::Kind::index, {}, static_cast<std::int64_t>(i)});
      collect(items[i], path, out);
      path.steps.pop_back();
    }
  } else if (!path.steps.empty()) {
    out.push_back({path.text(), &value, value.position()});
  }
}

// The leaves of a document in the order their keys appear in the file.
std::vector<Leaf> leaves(const Document &doc) {
  std::vector<Leaf> out;
  KeyPath path;
  collect(doc.root(), path, out);
  std::stable_sort(out.begin(), out.end(), [](const Leaf &l, const Leaf &r) {
    return before(l.position, r.position);
  });
  return out;
}

// A value as written, on one line: only the layout of arrays and tables is normalised.
std::string written(const Value &value) {
  if (const auto *text = value.string()) {
    const bool spans_lines = value.raw().find_first_of("\r\n") != std::string::npos;
    return spans_lines ? quote_string(*text) : value.raw();
  }
  if (const auto *items = value.array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < items->size(); ++i) {
      out += (i > 0 ? ", " : "") + written((*items)[i]);
    }
    return out + "]";
  }
  if (const auto *members = value.table()) {
    if (members->empty()) {
      return "{}";
    }
    std::string out = "{ ";
    for (std::size_t i = 0; i < members->size(); ++i) {
      const auto &[name, member] = (*members)[i];
      out += (i > 0 ? ", " : "") + quote_key(name) + " = " + written(member);
    }
    return out + " }";
  }
  return value.raw();
}

KeySide side(const Leaf &leaf) {
  return {written(*leaf.value), leaf.position.line};
}

} // namespace

DocumentDiff diff_documents(const Document &a, const Document &b) {
  const std::vector<Leaf> old_leaves = leaves(a);
  const std::vector<Leaf> new_leaves = leaves(b);
  std::unordered_map<std::string_view, std::size_t> in_a;
  in_a.reserve(old_leaves.size());
  for (std::size_t i = 0; i < old_leaves.size(); ++i) {
    in_a.emplace(old_leaves[i].key, i);
  }

  // Each change sorts at a place in A: its own key's, or for an added key, just before the key
  // that follows it in B and is in A too (the end of A when none does), as in a line diff.
  struct Placed {
    Position in_a;
    bool added;
    Position in_b;
    KeyChange change;
  };
  std::vector<Placed> placed;
  std::vector<bool> matched(old_leaves.size(), false);
  Position next{UINT32_MAX, UINT32_MAX};
  for (auto leaf = new_leaves.rbegin(); leaf != new_leaves.rend(); ++leaf) {
    const auto found = in_a.find(leaf->key);
    if (found == in_a.end()) {
      placed.push_back({next, true, leaf->position, {leaf->key, std::nullopt, side(*leaf)}});
      continue;
    }
    const Leaf &old = old_leaves[found->second];
    matched[found->second] = true;
    next = old.position;
    if (!semantically_equal(*old.value, *leaf->value)) {
      placed.push_back({old.position, false, {}, {leaf->key, side(old), side(*leaf)}});
    }
  }
  for (std::size_t i = 0; i < old_leaves.size(); ++i) {
    if (!matched[i]) {
      const Leaf &old = old_leaves[i];
      placed.push_back({old.position, false, {}, {old.key, side(old), std::nullopt}});
    }
  }
  std::sort(placed.begin(), placed.end(), [](const Placed &l, const Placed &r) {
    if (before(l.in_a, r.in_a) || before(r.in_a, l.in_a)) {
      return before(l.in_a, r.in_a);
    }
    if (l.added != r.added) {
      return l.added;
    }
    return before(l.in_b, r.in_b);
  });
  DocumentDiff diff;
  diff.a_name = a.source_name();
  diff.b_name = b.source_name();
  diff.changes.reserve(placed.size());
  for (auto &p : placed) {
    diff.changes.push_back(std::move(p.change));
  }
  return diff;
}

std::string diff_text(const DocumentDiff &diff) {
  std::string out;
  for (const auto &c : diff.changes) {
    switch (c.kind()) {
    case KeyChange::Kind::added:
      out += fmt::format("+ {} = {}  ({}:{})\n", c.key, c.b->value, diff.b_name, c.b->line);
      break;
    case KeyChange::Kind::removed:
      out += fmt::format("- {} = {}  ({}:{})\n", c.key, c.a->value, diff.a_name, c.a->line);
      break;
    case KeyChange::Kind::changed:
      out += fmt::format("~ {}: {} -> {}  ({}:{}, {}:{})\n",
                         c.key,
                         c.a->value,
                         c.b->value,
                         diff.a_name,
                         c.a->line,
                         diff.b_name,
                         c.b->line);
      break;
    }
  }
  return out;
}

OrderedJson diff_json(const DocumentDiff &diff) {
  const auto entry = [](const KeyChange &c) {
    OrderedJson out = {{"key", c.key}};
    if (c.a) {
      out["a_value"] = c.a->value;
    }
    if (c.b) {
      out["b_value"] = c.b->value;
    }
    if (c.a) {
      out["a_line"] = c.a->line;
    }
    if (c.b) {
      out["b_line"] = c.b->line;
    }
    return out;
  };
  // Each list in its own document's order: added keys in B's, the others in A's (as they are).
  std::vector<const KeyChange *> added_in_b;
  OrderedJson removed = OrderedJson::array();
  OrderedJson changed = OrderedJson::array();
  for (const auto &c : diff.changes) {
    switch (c.kind()) {
    case KeyChange::Kind::added:
      added_in_b.push_back(&c);
      break;
    case KeyChange::Kind::removed:
      removed.push_back(entry(c));
      break;
    case KeyChange::Kind::changed:
      changed.push_back(entry(c));
      break;
    }
  }
  std::stable_sort(added_in_b.begin(), added_in_b.end(), [](const auto *l, const auto *r) {
    return l->b->line < r->b->line;
  });
  OrderedJson added = OrderedJson::array();
  for (const KeyChange *c : added_in_b) {
    added.push_back(entry(*c));
  }
  return {{"same", diff.same()},
          {"added", std::move(added)},
          {"removed", std::move(removed)},
          {"changed", std::move(changed)}};
}

} // namespace pb::toml
