// SPDX-License-Identifier: MIT
// Key paths (`a."b.c"[0].d`, `deps[+]`, `x[*]`) and finding what they name, by meaning: a path
// finds a key however the file spelled it (docs/toml.md, "Key paths").
#include "edit_internal.hpp"
#include "geometry.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/format.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::toml {

namespace {

using detail::Node;
using detail::Origin;
using detail::Parsed;
using syntax::LineKind;
using syntax::npos;
using syntax::Span;

[[noreturn]] void bad_path(std::string_view text, std::size_t column, std::string_view what) {
  throw usage_error(fmt::format("bad key path '{}': {} at column {}", text, what, column + 1));
}

// Decodes a quoted key segment by letting the TOML parser read it as a key.
std::string decode_quoted_key(std::string_view path, std::size_t begin, std::size_t end) {
  std::string source(path.substr(begin, end - begin));
  source += " = 0\n";
  try {
    const Document doc = Document::parse(source, "path");
    return doc.root().table()->front().first;
  } catch (const Error &e) {
    bad_path(path, begin, "invalid quoted key");
  }
}

bool is_bare(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

} // namespace

KeyPath KeyPath::parse(std::string_view text) {
  KeyPath path;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto skip_ws = [&] {
    while (i < n && (text[i] == ' ' || text[i] == '\t')) {
      ++i;
    }
  };
  skip_ws();
  if (i < n && text[i] == '.') {
    ++i;
    skip_ws();
  }
  if (i == n) {
    return path; // the root
  }
  for (;;) {
    skip_ws();
    PathStep step;
    if (i >= n) {
      bad_path(text, i, "expected a key");
    }
    if (is_bare(text[i])) {
      const std::size_t b = i;
      while (i < n && is_bare(text[i])) {
        ++i;
      }
      step.key.assign(text.substr(b, i - b));
    } else if (text[i] == '"' || text[i] == '\'') {
      const char quote = text[i];
      const std::size_t b = i++;
      while (i < n && text[i] != quote) {
        i += (quote == '"' && text[i] == '\\' && i + 1 < n) ? 2 : 1;
      }
      if (i >= n) {
        bad_path(text, b, "unterminated quoted key");
      }
      ++i;
      step.key = decode_quoted_key(text, b, i);
    } else {
      bad_path(text, i, fmt::format("unexpected '{}'", text[i]));
    }
    path.steps.push_back(std::move(step));
    skip_ws();
    while (i < n && text[i] == '[') {
      const std::size_t b = i++;
      skip_ws();
      PathStep index;
      if (i < n && text[i] == '+') {
        index.kind = PathStep::Kind::append;
        ++i;
      } else if (i < n && text[i] == '*') {
        index.kind = PathStep::Kind::all;
        ++i;
      } else {
        index.kind = PathStep::Kind::index;
        const bool negative = i < n && text[i] == '-';
        if (negative) {
          ++i;
        }
        const std::size_t digits = i;
        std::int64_t value = 0;
        while (i < n && text[i] >= '0' && text[i] <= '9') {
          if (value > 100000000000LL) {
            bad_path(text, b, "index too large");
          }
          value = value * 10 + (text[i] - '0');
          ++i;
        }
        if (i == digits) {
          bad_path(text, b, "expected an index: [n], [-n], [+] or [*]");
        }
        index.index = negative ? -value : value;
      }
      skip_ws();
      if (i >= n || text[i] != ']') {
        bad_path(text, i, "expected ']'");
      }
      ++i;
      path.steps.push_back(std::move(index));
      skip_ws();
    }
    if (i == n) {
      break;
    }
    if (text[i] != '.') {
      bad_path(text, i, "expected '.' or '['");
    }
    ++i;
  }
  return path;
}

std::string KeyPath::text() const {
  if (steps.empty()) {
    return ".";
  }
  std::string out;
  for (const auto &step : steps) {
    switch (step.kind) {
    case PathStep::Kind::key:
      if (!out.empty()) {
        out += '.';
      }
      out += quote_key(step.key);
      break;
    case PathStep::Kind::index:
      out += fmt::format("[{}]", step.index);
      break;
    case PathStep::Kind::append:
      out += "[+]";
      break;
    case PathStep::Kind::all:
      out += "[*]";
      break;
    }
  }
  return out;
}

namespace detail {

std::string prefix_text(const KeyPath &path, std::size_t count) {
  KeyPath prefix;
  prefix.steps.assign(path.steps.begin(), path.steps.begin() + static_cast<std::ptrdiff_t>(count));
  return prefix.text();
}

std::size_t member_index(const Node &table, const Node *child) {
  return static_cast<std::size_t>(std::find(table.children.begin(), table.children.end(), child) -
                                  table.children.begin());
}

std::size_t normal_index(std::int64_t index, std::size_t size) {
  const std::int64_t resolved = index < 0 ? static_cast<std::int64_t>(size) + index : index;
  if (resolved < 0 || resolved >= static_cast<std::int64_t>(size)) {
    return SIZE_MAX;
  }
  return static_cast<std::size_t>(resolved);
}

static void locate_all(const Document &doc,
                       const KeyPath &path,
                       std::size_t step,
                       Located at,
                       std::vector<Located> &out) {
  if (step == path.steps.size()) {
    out.push_back(at);
    return;
  }
  const PathStep &s = path.steps[step];
  const std::string where = prefix_text(path, step);
  if (s.kind == PathStep::Kind::key) {
    if (at.node->type != Type::table) {
      throw failure(fmt::format("key '{}' not found in {}: '{}' is {}{}",
                                path.text(),
                                doc.source_name(),
                                where,
                                detail::article_type(*at.node),
                                at.node->type == Type::array ? " (index it with [n])" : ""));
    }
    const Node *child = at.node->find(s.key);
    if (child == nullptr) {
      throw failure(fmt::format("key '{}' not found in {}", path.text(), doc.source_name()));
    }
    const std::size_t i = member_index(*at.node, child);
    locate_all(doc, path, step + 1, {child, &(*at.value->table())[i].second}, out);
    return;
  }
  if (at.node->type != Type::array) {
    throw failure(fmt::format("key '{}' not found in {}: '{}' is {}, not an array",
                              path.text(),
                              doc.source_name(),
                              where,
                              detail::article_type(*at.node)));
  }
  const auto &items = at.node->children;
  if (s.kind == PathStep::Kind::all) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      locate_all(doc, path, step + 1, {items[i], &(*at.value->array())[i]}, out);
    }
    return;
  }
  if (s.kind == PathStep::Kind::append) {
    throw usage_error("[+] (append) only works with `toml set`");
  }
  const std::size_t i = normal_index(s.index, items.size());
  if (i == SIZE_MAX) {
    throw failure(fmt::format("key '{}' not found in {}: index {} is out of range ('{}' has {} "
                              "elements)",
                              path.text(),
                              doc.source_name(),
                              s.index,
                              where,
                              items.size()));
  }
  locate_all(doc, path, step + 1, {items[i], &(*at.value->array())[i]}, out);
}

std::vector<Located> locate(const Document &doc, const KeyPath &path) {
  std::vector<Located> out;
  locate_all(doc, path, 0, {doc.parsed().root, &doc.root()}, out);
  return out;
}

} // namespace detail

std::vector<const Value *> lookup(const Document &doc, const KeyPath &path) {
  std::vector<const Value *> out;
  for (const auto &found : detail::locate(doc, path)) {
    out.push_back(found.value);
  }
  return out;
}

std::string source_text(const Document &doc, const KeyPath &path) {
  if (path.steps.empty()) {
    return doc.text();
  }
  std::string out;
  const detail::Geometry g(doc);
  for (const auto &found : detail::locate(doc, path)) {
    const detail::Node &node = *found.node;
    if (node.value != syntax::npos) {
      const syntax::Span span = g.t.values[node.value].span;
      out.append(g.text.substr(span.begin, span.end - span.begin));
      out += '\n';
      continue;
    }
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
    g.collect_lines(node, ranges, false);
    detail::Geometry::merge(ranges);
    for (const auto &[first, last] : ranges) {
      const std::uint32_t begin = g.offset_of_line(first);
      const std::uint32_t end = g.offset_of_line(last);
      out.append(g.text.substr(begin, end - begin));
    }
  }
  return out;
}

} // namespace pb::toml
