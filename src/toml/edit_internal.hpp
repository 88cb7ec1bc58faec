// SPDX-License-Identifier: MIT
// What the four parts of the edit API share (internal to the toml module):
//   key_path.cpp  key paths and locating the nodes and values they name;
//   geometry.hpp  line geometry: where bodies end, comment ownership, the file's line endings;
//   splice.cpp    the splice engine that turns a set or unset into byte-range replacements;
//   edit.cpp      verification by re-parse (ours and toml++) and the public edit functions.
// The rules they implement: docs/toml.md, "How edits keep the file".
#pragma once

#include "model.hpp"

#include <primebeaker/toml/edit.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace pb::toml::detail {

// The edit API consumes the values of documents it owns instead of copying them.
struct DocumentAccess {
  static Value &root(Document &doc) {
    doc.root(); // built on first use
    return doc.m_root;
  }
};

// ----- key paths (key_path.cpp)

// The first `count` steps of `path`, written back as a path.
std::string prefix_text(const KeyPath &path, std::size_t count);
// The position of `child` among the members or items of `table`.
std::size_t member_index(const Node &table, const Node *child);
// Resolves an array index against `size`; SIZE_MAX when out of range.
std::size_t normal_index(std::int64_t index, std::size_t size);

// A node of the model with the typed value that mirrors it.
struct Located {
  const Node *node;
  const Value *value;
};
// Every node `path` names (several for `[*]`); throws pb::Error exit 1 when a key is missing.
std::vector<Located> locate(const Document &doc, const KeyPath &path);

// ----- the splice engine (splice.cpp)

// A value literal parsed as `v = LITERAL`, with its own small document.
struct Literal {
  Document doc;
  const Value *value;
  const Node *node;
  std::string text; // trimmed spelling
};
// Throws pb::Error exit 2 with a hint when `literal` is not exactly one TOML value.
Literal parse_literal(std::string_view literal);

// An edit planned but not yet verified: the new text, the meaning it must have and the splices
// that produced it.
struct Outcome {
  std::string text;
  Value expected;
  std::vector<Splice> splices;
};
// `movable_root`: the document's values, which the engine may consume to build `expected`
// without a copy (nullptr: copy them).
Outcome
plan_set(const Document &doc, Value *movable_root, const KeyPath &path, const Literal &literal);
Outcome plan_unset(const Document &doc, Value *movable_root, const KeyPath &path, bool prune);

} // namespace pb::toml::detail
