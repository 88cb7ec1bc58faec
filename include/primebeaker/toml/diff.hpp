// SPDX-License-Identifier: MIT
// `toml diff`: the keys added, removed and changed between two TOML documents, compared by
// meaning and shown as written (docs/toml.md, "toml diff"). Pure: parsed documents in, a value
// out; the printers only format that value.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/toml/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pb::toml {

// A key on one side: its value as written, on one line (scalars in their source spelling,
// arrays and inline or standard tables as `[a, b]` / `{ k = v }` of their elements as written,
// a string that spans lines as the equivalent one-line string), and the line of its key.
struct KeySide {
  std::string value;
  std::uint32_t line = 0;
};

// One key that differs. Keys are full paths in `toml get` syntax (`a.b`, `"x.y".z`,
// `orchestrator.env[1].id`): tables (inline or not) are walked into, arrays whose elements are
// all tables are addressed by index, any other array is one value.
struct KeyChange {
  enum class Kind : std::uint8_t { added, removed, changed };
  std::string key;
  std::optional<KeySide> a; // in the first document (removed, changed)
  std::optional<KeySide> b; // in the second document (added, changed)

  Kind kind() const { return !a ? Kind::added : !b ? Kind::removed : Kind::changed; }
};

struct DocumentDiff {
  // In document order, as a line diff orders them: removed and changed keys at their place in
  // A, added keys before the next key of B that A has too.
  std::vector<KeyChange> changes;
  std::string a_name, b_name; // the documents' source names, for FILE:LINE
  bool same() const { return changes.empty(); }
};

// Compares the meanings of `a` and `b` key by key (values by their typed meaning: `1_000` equals
// `1000`, `'x'` equals `"x"`); comments, layout, key order and spelling never count.
DocumentDiff diff_documents(const Document &a, const Document &b);

// One line per change: `+ key = value  (B:12)`, `- key = value  (A:7)`,
// `~ key: old -> new  (A:7, B:9)`; empty when the documents are the same.
std::string diff_text(const DocumentDiff &diff);

// {"same": bool, "added": [{key, b_value, b_line}], "removed": [{key, a_value, a_line}],
//  "changed": [{key, a_value, b_value, a_line, b_line}]}: added keys in B's order, the others in
// A's.
OrderedJson diff_json(const DocumentDiff &diff);

} // namespace pb::toml
