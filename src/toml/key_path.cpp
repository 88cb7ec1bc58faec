// SPDX-License-Identifier: MIT
// Key paths (`a."b.c"[0].d`, `deps[+]`, `x[*]`) and finding what they name, by meaning: a path
// finds a key however the file spelled it (docs/toml.md, "Key paths").
#include "edit_internal.hpp"
#include "geometry.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/toml/format.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <optional>

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

namespace {

// Whether `steps[from..]` name something below `node` (`[*]` taken as its first element).
bool resolves(const Node *node, const std::vector<PathStep> &steps, std::size_t from) {
  for (std::size_t i = from; i < steps.size(); ++i) {
    const PathStep &s = steps[i];
    if (s.kind == PathStep::Kind::key) {
      node = node->type == Type::table ? node->find(s.key) : nullptr;
    } else if (s.kind == PathStep::Kind::append || node->type != Type::array) {
      return false;
    } else {
      const std::size_t at =
          s.kind == PathStep::Kind::all ? 0 : normal_index(s.index, node->children.size());
      node = at < node->children.size() ? node->children[at] : nullptr;
    }
    if (node == nullptr) {
      return false;
    }
  }
  return true;
}

// Whether `a` is `b` with two neighbouring characters swapped ("nmae", "name"): one typo, which
// the edit distance counts as two.
bool one_swap_apart(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  const auto first = std::mismatch(a.begin(), a.end(), b.begin()).first - a.begin();
  const auto i = static_cast<std::size_t>(first);
  return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i] &&
         a.substr(i + 2) == b.substr(i + 2);
}

// The member of `table` spelled closest to `key`: up to one edit in three characters (at least
// one), so that short keys such as `lr` are not "corrected" to any other two letters.
const Node *closest_member(const Node &table, std::string_view key) {
  if (key.size() < 2) {
    return nullptr; // every other one-letter key is one edit away
  }
  const std::size_t allowed = std::max<std::size_t>(1, key.size() / 3);
  const Node *best = nullptr;
  std::size_t best_distance = allowed + 1;
  for (const Node *member : table.children) {
    const std::size_t distance =
        one_swap_apart(key, member->name) ? 1 : text::edit_distance(key, member->name);
    if (distance < best_distance) {
      best = member;
      best_distance = distance;
    }
  }
  return best;
}

// The shallowest table below `table` (breadth first, through tables only) with a member `key`.
const Node *deeper_member(const Node &table, std::string_view key) {
  std::vector<const Node *> level = {&table};
  while (!level.empty()) {
    std::vector<const Node *> next;
    for (const Node *at : level) {
      for (const Node *member : at->children) {
        if (member->type != Type::table) {
          continue;
        }
        if (const Node *found = member->find(key)) {
          return found;
        }
        next.push_back(member);
      }
    }
    level = std::move(next);
  }
  return nullptr;
}

// `path` with step `step` replaced by the keys from `table` down to `found`, and the steps after
// it kept when `keep_rest`.
KeyPath rerouted(
    const KeyPath &path, std::size_t step, const Node &table, const Node *found, bool keep_rest) {
  KeyPath out;
  out.steps.assign(path.steps.begin(), path.steps.begin() + static_cast<std::ptrdiff_t>(step));
  std::vector<std::string> keys;
  for (const Node *at = found; at != &table; at = at->parent) {
    keys.emplace_back(at->name);
  }
  for (auto key = keys.rbegin(); key != keys.rend(); ++key) {
    out.steps.push_back({PathStep::Kind::key, *key, 0});
  }
  if (keep_rest) {
    out.steps.insert(out.steps.end(),
                     path.steps.begin() + static_cast<std::ptrdiff_t>(step) + 1,
                     path.steps.end());
  }
  return out;
}

// What the user likely meant when `table` has no member `path.steps[step]`: a close spelling
// of it (`traner.x` -> `trainer.x`) or the same key deeper (`trainer.lr` ->
// `trainer.optim.lr`), with the rest of the path when it exists there too; else the close
// spelling alone.
std::optional<KeyPath> likely_meant(const KeyPath &path, std::size_t step, const Node &table) {
  const std::string &key = path.steps[step].key;
  const Node *close = closest_member(table, key);
  if (close != nullptr && resolves(close, path.steps, step + 1)) {
    return rerouted(path, step, table, close, true);
  }
  const Node *deeper = deeper_member(table, key);
  if (deeper != nullptr && resolves(deeper, path.steps, step + 1)) {
    return rerouted(path, step, table, deeper, true);
  }
  if (close != nullptr) {
    return rerouted(path, step, table, close, false);
  }
  return std::nullopt;
}

} // namespace

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
      const auto meant = likely_meant(path, step, *at.node);
      throw failure(fmt::format("key '{}' not found in {}{}",
                                path.text(),
                                doc.source_name(),
                                meant ? "; did you mean '" + meant->text() + "'?" : ""));
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
