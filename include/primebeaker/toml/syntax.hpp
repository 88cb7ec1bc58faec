// SPDX-License-Identifier: MIT
// The concrete syntax tree of a TOML document. Every byte of the input belongs to exactly one
// token, so concatenating the tokens gives the input back byte for byte. On top of the tokens,
// the tree records the document's lines (key/value lines, headers, comments, blank lines) and
// the byte spans of keys, values and comments that edits splice. Nothing here copies the text:
// every part is an offset or span into the one source buffer, in flat vectors (docs/toml.md,
// "Footprint").
#pragma once

#include <primebeaker/toml/value.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace pb::toml::syntax {

inline constexpr std::uint32_t npos = UINT32_MAX;

enum class TokenKind : std::uint8_t {
  bom,
  whitespace, // spaces and tabs
  newline,    // LF or CRLF
  comment,    // from '#' to the end of the line, newline excluded
  bare_key,
  basic_string,
  literal_string,
  multiline_basic_string,
  multiline_literal_string,
  integer,
  floating,
  boolean,
  datetime, // any of the four date/time kinds
  dot,
  equals,
  comma,
  bracket_open,  // '[' or '[['
  bracket_close, // ']' or ']]'
  brace_open,
  brace_close,
};

// A token covers text[begin, end).
struct Token {
  TokenKind kind;
  std::uint32_t begin;
  std::uint32_t end;
};

// A half-open byte range of the document text.
struct Span {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

// A value as written: a scalar, an array (children are value ids) or an inline table
// (children are key/value ids). Children and the offsets of the separating commas are ranges of
// the tree's flat lists: read them with Tree::children() and Tree::commas().
struct ValueNode {
  Type type = Type::string;
  Span span;
  std::uint32_t children_first = 0; // Tree::child_ids[children_first, +children_count)
  std::uint32_t children_count = 0;
  std::uint32_t commas_first = 0; // Tree::comma_offsets[commas_first, +commas_count)
  std::uint32_t commas_count = 0;
};

// `key = value`, either on a line of its own or an entry of an inline table.
struct KeyValue {
  std::uint32_t key_first = 0; // its segments: Tree::key_segments[key_first, +key_count)
  std::uint32_t key_count = 0;
  Span key_span;
  std::uint32_t equals = 0;
  std::uint32_t value = npos; // ValueNode id
  Span comment{npos, npos};   // same-line comment of a top-level key/value, if any
  bool inline_entry = false;
};

// `[a.b]` or `[[a.b]]`; span covers the brackets.
struct Header {
  bool array = false;
  std::uint32_t key_first = 0;
  std::uint32_t key_count = 0;
  Span span;
  Span comment{npos, npos};
};

enum class LineKind : std::uint8_t { blank, comment, key_value, table, array_table };

// A top-level line: [begin, end) including its newline (a key/value whose value spans lines
// is one Line). content_end is where the newline starts (== end without a final newline).
// The lines tile the document after the BOM.
struct Line {
  LineKind kind = LineKind::blank;
  std::uint32_t item = npos; // KeyValue or Header id
  std::uint32_t begin = 0;
  std::uint32_t content_end = 0;
  std::uint32_t end = 0;
};

struct Tree {
  // Tokens, stored as columns: token i covers [token_begin[i], token_begin[i + 1]) (the last one
  // ends at text_size), so they tile the text by construction; the parser also checks that it
  // emits them back to back.
  std::vector<std::uint32_t> token_begin;
  std::vector<TokenKind> token_kind;
  std::uint32_t text_size = 0;
  std::size_t token_count() const { return token_begin.size(); }
  Token token(std::size_t i) const {
    return {
        token_kind[i], token_begin[i], i + 1 < token_begin.size() ? token_begin[i + 1] : text_size};
  }
  std::vector<Span> key_segments; // each key segment's bytes (quotes included)
  std::vector<Line> lines;
  std::vector<KeyValue> key_values;
  std::vector<Header> headers;
  std::vector<ValueNode> values;
  std::vector<std::uint32_t> child_ids;     // the children of every array and inline table
  std::vector<std::uint32_t> comma_offsets; // their commas
  std::span<const std::uint32_t> children(const ValueNode &v) const {
    return {child_ids.data() + v.children_first, v.children_count};
  }
  std::span<const std::uint32_t> commas(const ValueNode &v) const {
    return {comma_offsets.data() + v.commas_first, v.commas_count};
  }
  std::uint32_t body_begin = 0; // 3 after a UTF-8 BOM, else 0
  std::uint32_t crlf_newlines = 0;
  std::uint32_t lf_newlines = 0;
};

} // namespace pb::toml::syntax
