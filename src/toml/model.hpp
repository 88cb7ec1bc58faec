// SPDX-License-Identifier: MIT
// The semantic model the parser builds next to the syntax tree: one Node per table, array and
// value, with TOML's definition rules recorded as flags, and links back into the syntax tree so
// that the edit API can find the bytes behind a key path. Internal to the toml module.
#pragma once

#include <primebeaker/toml/syntax.hpp>
#include <primebeaker/toml/value.hpp>

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
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

struct Node {
  Type type = Type::table;
  Origin origin = Origin::literal;
  bool frozen = false;              // inline tables and static arrays (and all inside them)
  std::int32_t dotted_section = -1; // the section that last extended this table by dotted keys
  std::uint32_t key_value = npos;   // the KeyValue whose key ends at this node
  std::uint32_t value = npos;       // the ValueNode written for this node (literals)
  std::uint32_t header = npos;      // the Header defining it (tables, array-of-tables elements)
  std::uint32_t name_offset = npos; // where its key segment starts (dotted tables)
  std::string name;
  std::string decoded; // strings
  Node *parent = nullptr;
  std::vector<Node *> children; // members in document order, or array items

  Node *find(std::string_view key) const;
  void add(Node *child);

private:
  std::unique_ptr<std::unordered_map<std::string_view, Node *>> m_index;
};

struct Parsed {
  syntax::Tree tree;
  std::deque<Node> nodes;
  Node *root = nullptr;
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
void parse_into(std::string_view text, Parsed &out);

// "a table", "an array of tables", "an integer"...: what a node is, for messages.
std::string_view article_type(const Node &node);

} // namespace pb::toml::detail
