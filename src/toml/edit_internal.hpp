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

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::toml::detail {

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

// How the meaning an edit asks for differs from the document's, by the nodes it touches: the
// rest of the meaning is the document's own, read from its nodes when needed (so no typed copy
// of a big document is made to describe a small edit).
struct Change {
  enum class Kind : std::uint8_t {
    replace, // `node` now means `value`
    remove,  // `node` is gone from its table or array
    add,     // `node` gains the member `name` (tables) or the last item (arrays) `value`
  };
  Kind kind = Kind::replace;
  const Node *node = nullptr;
  std::string name;
  Value value;
};

// An edit planned but not yet verified: the splices (sorted, in the original text's offsets)
// and the meaning they must produce.
struct Outcome {
  std::vector<Splice> splices;
  std::vector<Change> changes;
};
Outcome plan_set(const Document &doc, const KeyPath &path, const Literal &literal);
Outcome plan_unset(const Document &doc, const KeyPath &path, bool prune);

// The new text: `text` with the (sorted) splices applied, as one string or piece by piece.
std::string apply(std::string_view text, const std::vector<Splice> &splices);
template <typename Sink>
void for_each_piece(std::string_view text, const std::vector<Splice> &splices, Sink &&sink) {
  std::uint32_t at = 0;
  for (const auto &s : splices) {
    sink(text.substr(at, s.begin - at));
    sink(std::string_view(s.text));
    at = s.end;
  }
  sink(text.substr(at));
}

// ----- the intended meaning (fingerprint.cpp)

// The document's meaning with `changes` applied, as typed values or as its fingerprint
// (fingerprint.hpp).
Value expected_value(const Document &doc, const std::vector<Change> &changes);
std::string expected_fingerprint(const Document &doc, const std::vector<Change> &changes);

// ----- editing files (edit.cpp)

// What `toml set|unset FILE` runs (docs/toml.md, "Verification"): plans the edit of `loaded`
// (as Document::load() read it; its file is read again only if verification fails) with `plan`,
// streams the new text into a temporary sibling of `target` and frees the document; toml++ then
// reads the temporary back and the fingerprint of its meaning must equal the intended one before
// the temporary is renamed over `target`. On a mismatch the temporary is removed and the edit is
// redone in memory with the detailed comparison, whose error names the difference. `before_write`
// runs after planning, before the temporary is created.
using Planner = std::function<Outcome(const Document &)>;
void edit_file(Document &&loaded,
               const std::filesystem::path &target,
               const std::string &what,
               const Planner &plan,
               const std::function<void()> &before_write);

} // namespace pb::toml::detail
