// SPDX-License-Identifier: MIT
// The semantic model the parser builds next to the syntax tree: one Node per table, array and
// value, with TOML's definition rules recorded as flags, and links back into the syntax tree so
// that the edit API can find the bytes behind a key path. Internal to the toml module.
//
// Footprint (docs/toml.md, "Footprint"): nodes live in a chunked arena, names are views of the
// source text (only keys with escapes are decoded into the document's key store), string values
// are not decoded until the typed values are asked for, and only tables and arrays own a vector.
#pragma once

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/syntax.hpp>
#include <primebeaker/toml/value.hpp>

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pb::toml::detail {

using syntax::npos;

// How a table or array came to exist.
enum class Origin : std::uint8_t {
  root,
  implicit, // only as the parent of a header: `a` in `[a.b]`
  header,   // `[a]`, or one element of `[[a]]`
  dotted,   // created by a dotted key: `a` in `a.b = 1`
  literal,  // written as a value: inline table, array, scalar
  array_of_tables,
};

struct Node;

// The members or items of a table or array in document order: a pointer-sized handle to one
// heap block, so that the many scalar nodes pay only 8 bytes for it and each table or array
// makes one growing allocation. Block layout: [size, capacity] [lookup index] [items...]. Big
// tables (hundreds of sibling [tables]) get an open-addressing lookup index so that building
// stays linear; small ones are searched.
class ChildList {
public:
  ChildList() = default;
  ChildList(const ChildList &) = delete;
  ChildList &operator=(const ChildList &) = delete;
  ~ChildList();

  std::size_t size() const;
  bool empty() const { return size() == 0; }
  Node *const *begin() const { return m_block == nullptr ? nullptr : m_block + k_header; }
  Node *const *end() const { return begin() + size(); }
  Node *operator[](std::size_t i) const { return m_block[i + k_header]; }
  Node *front() const { return m_block[k_header]; }
  Node *back() const { return m_block[k_header + size() - 1]; }

  // Appends; `indexed`: the owner is a table, so the list keeps a lookup index by name once it
  // is big enough.
  void push_back(Node *node, bool indexed);
  // The member named `key` (tables), or nullptr.
  Node *find(std::string_view key) const;

private:
  static constexpr std::size_t k_header = 2;
  Node **m_block = nullptr;
  std::vector<Node *> *index() const;
  void reindex();
};

struct Node {
  Type type = Type::table;
  Origin origin = Origin::literal;
  bool frozen = false;              // inline tables and static arrays (and all inside them)
  std::int32_t dotted_section = -1; // the section that last extended this table by dotted keys
  std::uint32_t key_value = npos;   // the KeyValue whose key ends at this node
  std::uint32_t value = npos;       // the ValueNode written for this node (literals)
  std::uint32_t header = npos;      // the Header defining it (tables, array-of-tables elements)
  std::uint32_t name_offset = npos; // where its key segment starts (dotted tables)
  std::string_view name;            // decoded key: a view of the text or of Parsed::key_store
  Node *parent = nullptr;
  ChildList children; // members in document order, or array items

  Node *find(std::string_view key) const { return children.find(key); }
  void add(Node *child);
};

// Nodes in chunks that never move (the tree links them by pointer): one allocation per chunk.
class NodeArena {
public:
  Node *make();
  std::size_t size() const { return m_size; }

private:
  std::vector<std::unique_ptr<Node[]>> m_chunks;
  std::size_t m_chunk_capacity = 0;
  std::size_t m_used = 0; // in the last chunk
  std::size_t m_size = 0;
};

struct Parsed {
  std::string text; // the one copy of the source; everything below refers into it
  syntax::Tree tree;
  NodeArena nodes;
  Node *root = nullptr;
  std::deque<std::string> key_store;         // decoded keys that differ from their spelling
  bool tokens_recorded = false;              // tree.token_* filled (on demand: tokens())
  std::vector<std::uint32_t> line_starts;    // offsets where each physical line begins
  std::vector<std::uint32_t> key_value_line; // Line index of each top-level KeyValue, else npos
  std::vector<std::uint32_t> header_line;    // Line index of each Header

  Position position(std::uint32_t offset) const;
  Position position_of(const Node &node) const;
};

// Parses `text` into `out`; throws ParseFailure.
struct ParseFailure {
  std::uint32_t offset;
  std::string message;
};
// `record_tokens`: also fill tree.token_begin/token_kind (4-5 bytes per token, so only on
// demand: Document::syntax()). `errors`: go on after an error at the next line that starts a
// header or a key, collecting every error there (Document::check(); `out` is then unusable).
void parse_into(std::string_view text,
                Parsed &out,
                bool record_tokens = false,
                std::vector<ParseFailure> *errors = nullptr);
// Fills the token columns of an already parsed text.
void record_tokens(std::string_view text, Parsed &parsed);

// pb::Error (exit 3) "SOURCE:LINE:COL: message" for a failure of parsing parsed.text.
Error located_error(Parsed &parsed, std::string_view source, const ParseFailure &failure);

// The decoded content of a string token the parser accepted (quotes, escapes, line-ending
// backslashes and CRLF in multi-line strings resolved).
std::string decode_string(std::string_view token);

// The typed values of the subtree at `node` (built on demand: Document::root()).
Value to_value(const Parsed &parsed, std::string_view text, const Node &node);

// "a table", "an array of tables", "an integer"...: what a node is, for messages.
std::string_view article_type(const Node &node);

} // namespace pb::toml::detail
