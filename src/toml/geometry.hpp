// SPDX-License-Identifier: MIT
// Line geometry for edits: the document's top-level lines, where a table's body ends, which
// comment lines a key or header owns, and which line ending new text takes (docs/toml.md,
// "How edits keep the file"). Internal to the toml module.
#pragma once

#include "model.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

namespace pb::toml::detail {

class Geometry {
public:
  using LineKind = syntax::LineKind;

  explicit Geometry(const Document &doc)
      : m_doc(doc), m_parsed(doc.parsed()), t(doc.parsed().tree), text(doc.text()) {}

  const Document &m_doc;
  const Parsed &m_parsed;
  const syntax::Tree &t;
  std::string_view text;

  std::uint32_t line_count() const { return static_cast<std::uint32_t>(t.lines.size()); }
  const syntax::Line &line(std::uint32_t i) const { return t.lines[i]; }
  bool is_header(std::uint32_t i) const {
    return t.lines[i].kind == LineKind::table || t.lines[i].kind == LineKind::array_table;
  }
  bool has_newline(std::uint32_t i) const { return t.lines[i].end > t.lines[i].content_end; }
  std::string_view eol_of(std::uint32_t i) const {
    const auto &l = t.lines[i];
    return text.substr(l.content_end, l.end - l.content_end);
  }
  std::string_view dominant_eol() const { return t.crlf_newlines > t.lf_newlines ? "\r\n" : "\n"; }
  // The EOL to use for text inserted after line i.
  std::string_view eol_near(std::uint32_t i) const {
    if (i < line_count() && has_newline(i)) {
      return eol_of(i);
    }
    return dominant_eol();
  }

  // First line of the comment block directly above line i (no blank line between).
  std::uint32_t owned_start(std::uint32_t i) const {
    while (i > 0 && t.lines[i - 1].kind == LineKind::comment) {
      --i;
    }
    return i;
  }

  std::uint32_t next_header_line(std::uint32_t i) const {
    for (++i; i < line_count(); ++i) {
      if (is_header(i)) {
        return i;
      }
    }
    return line_count();
  }

  std::uint32_t first_header_line() const {
    for (std::uint32_t i = 0; i < line_count(); ++i) {
      if (is_header(i)) {
        return i;
      }
    }
    return line_count();
  }

  std::uint32_t offset_of_line(std::uint32_t i) const {
    return i < line_count() ? t.lines[i].begin : static_cast<std::uint32_t>(text.size());
  }

  // Where the body of the header at line h ends for insertion: before the trailing blank lines
  // and before the comment block owned by the next header.
  std::uint32_t insertion_line_after_body(std::uint32_t h) const {
    const std::uint32_t next = next_header_line(h);
    std::uint32_t k = next < line_count() ? owned_start(next) : next;
    k = std::max(k, h + 1);
    while (k > h + 1 && t.lines[k - 1].kind == LineKind::blank) {
      --k;
    }
    return k;
  }

  // Last top-level key/value line in [from, to); npos if none.
  std::uint32_t last_key_value_line(std::uint32_t from, std::uint32_t to) const {
    for (std::uint32_t i = to; i > from; --i) {
      if (t.lines[i - 1].kind == LineKind::key_value) {
        return i - 1;
      }
    }
    return npos;
  }

  // The most common number of blank lines before a header (1 when there is nothing to copy).
  std::uint32_t usual_blank_lines() const {
    std::map<std::uint32_t, std::uint32_t> counts;
    for (std::uint32_t i = 1; i < line_count(); ++i) {
      if (!is_header(i)) {
        continue;
      }
      std::uint32_t k = owned_start(i);
      std::uint32_t blanks = 0;
      while (k > 0 && t.lines[k - 1].kind == LineKind::blank) {
        --k;
        ++blanks;
      }
      if (k > 0) {
        ++counts[blanks];
      }
    }
    std::uint32_t best = 1;
    std::uint32_t best_count = 0;
    for (const auto &[blanks, count] : counts) {
      if (count > best_count) {
        best = blanks;
        best_count = count;
      }
    }
    return std::min<std::uint32_t>(best, 2);
  }

  // The header and body of every header-defined table in the subtree, plus the top-level
  // key/value lines of its dotted keys, as line ranges [first, last).
  void collect_lines(const Node &node,
                     std::vector<std::pair<std::uint32_t, std::uint32_t>> &out,
                     bool with_owned_comments) const {
    if (node.header != npos) {
      const std::uint32_t h = m_parsed.header_line[node.header];
      const std::uint32_t next = next_header_line(h);
      std::uint32_t end = next;
      if (with_owned_comments && next < line_count()) {
        end = std::max(owned_start(next), h + 1);
      }
      out.emplace_back(with_owned_comments ? owned_start(h) : h, end);
    } else if (node.key_value != npos && !t.key_values[node.key_value].inline_entry) {
      const std::uint32_t l = m_parsed.key_value_line[node.key_value];
      out.emplace_back(with_owned_comments ? owned_start(l) : l, l + 1);
      return;
    }
    if (node.value != npos) {
      return;
    }
    for (const Node *child : node.children) {
      collect_lines(*child, out, with_owned_comments);
    }
  }

  static void merge(std::vector<std::pair<std::uint32_t, std::uint32_t>> &ranges) {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
    for (const auto &r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    ranges = std::move(merged);
  }

  // The last line that belongs to the node's subtree (header or key/value line).
  std::uint32_t last_line_of(const Node &node) const {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
    collect_lines(node, ranges, false);
    std::uint32_t last = npos;
    for (const auto &r : ranges) {
      if (last == npos || r.first > last) {
        last = r.first;
      }
    }
    return last;
  }
};

} // namespace pb::toml::detail
