// SPDX-License-Identifier: MIT
// The splice engine: a set or unset becomes a list of byte-range replacements of the original
// text, with new text styled after its neighbours, and the meaning the result must have
// (docs/toml.md, "How edits keep the file"). Nothing here re-parses; edit.cpp verifies.
#include "edit_internal.hpp"
#include "geometry.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/format.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::toml {

namespace {

using detail::Change;
using detail::Geometry;
using detail::Literal;
using detail::member_index;
using detail::Node;
using detail::normal_index;
using detail::Origin;
using detail::Outcome;
using detail::Parsed;
using detail::prefix_text;
using syntax::LineKind;
using syntax::npos;
using syntax::Span;

std::string key_text(const std::vector<std::string> &keys) {
  std::string out;
  for (const auto &key : keys) {
    if (!out.empty()) {
      out += '.';
    }
    out += quote_key(key);
  }
  return out;
}

// Names from `ancestor` (exclusive) down to `node` (inclusive), skipping array elements.
std::vector<std::string> relative_names(const Node *ancestor, const Node *node) {
  std::vector<std::string> names;
  for (const Node *n = node; n != ancestor && n->parent != nullptr; n = n->parent) {
    if (n->parent != nullptr && n->parent->type == Type::array) {
      continue;
    }
    names.emplace_back(n->name);
  }
  std::reverse(names.begin(), names.end());
  return names;
}

class Engine {
public:
  // `movable_root`: the document's values, which the engine may consume to build the expected
  // result without a copy (nullptr: copy them).
  explicit Engine(const Document &doc)
      : m_doc(doc), g(doc), t(doc.parsed().tree), text(doc.text()) {}

  Outcome set(const KeyPath &path, const Literal &literal) {
    Outcome out;
    const Node *node = m_doc.parsed().root;
    std::size_t i = 0;
    for (; i < path.steps.size(); ++i) {
      const PathStep &s = path.steps[i];
      const std::string where = prefix_text(path, i);
      if (s.kind == PathStep::Kind::all) {
        throw usage_error("[*] only works with `toml get`");
      }
      if (s.kind == PathStep::Kind::key) {
        if (node->type != Type::table) {
          throw usage_error(
              fmt::format("cannot set '{}': '{}' is {}, not a table{}",
                          path.text(),
                          where.empty() ? "." : where,
                          detail::article_type(*node),
                          node->type == Type::array ? " (index it with [n] or [+])" : ""));
        }
        const Node *child = node->find(s.key);
        if (child == nullptr) {
          break;
        }
        node = child;
        continue;
      }
      if (node->type != Type::array) {
        throw usage_error(fmt::format("cannot set '{}': '{}' is {}, not an array",
                                      path.text(),
                                      where,
                                      detail::article_type(*node)));
      }
      if (s.kind == PathStep::Kind::append) {
        break;
      }
      const std::size_t index = normal_index(s.index, node->children.size());
      if (index == SIZE_MAX) {
        throw usage_error(fmt::format("cannot set '{}': index {} is out of range ('{}' has {} "
                                      "elements; use [+] to append)",
                                      path.text(),
                                      s.index,
                                      where,
                                      node->children.size()));
      }
      node = node->children[index];
    }

    if (i == path.steps.size()) {
      replace(path, *node, literal);
      out.changes.push_back({Change::Kind::replace, node, {}, *literal.value});
    } else if (path.steps[i].kind == PathStep::Kind::append) {
      std::vector<std::string> rest = remaining_keys(path, i + 1);
      Value element = nest(rest, *literal.value);
      append(path, *node, rest, literal);
      out.changes.push_back({Change::Kind::add, node, {}, std::move(element)});
    } else {
      std::vector<std::string> rest = remaining_keys(path, i);
      bool wrap_in_array = false;
      if (path.steps.back().kind == PathStep::Kind::append &&
          rest.size() + i + 1 == path.steps.size()) {
        wrap_in_array = true; // `new[+] = v` creates `new = [v]`
      }
      std::string value_text = wrap_in_array ? "[" + literal.text + "]" : literal.text;
      Value value = *literal.value;
      if (wrap_in_array) {
        Value array = Value::make_array({});
        array.mutable_array().push_back(std::move(value));
        value = std::move(array);
      }
      add_key(path, *node, rest, value_text);
      const std::vector<std::string> below(rest.begin() + 1, rest.end());
      out.changes.push_back({Change::Kind::add, node, rest.front(), nest(below, value)});
    }
    out.splices = sorted_splices();
    return out;
  }

  Outcome unset(const KeyPath &path, bool prune) {
    Outcome out;
    if (path.steps.empty()) {
      throw usage_error("cannot unset the document root");
    }
    std::vector<const Node *> chain{m_doc.parsed().root};
    for (std::size_t i = 0; i < path.steps.size(); ++i) {
      const PathStep &s = path.steps[i];
      const Node *node = chain.back();
      const Node *child = nullptr;
      if (s.kind == PathStep::Kind::key) {
        child = node->type == Type::table ? node->find(s.key) : nullptr;
      } else if (s.kind == PathStep::Kind::index && node->type == Type::array) {
        const std::size_t index = normal_index(s.index, node->children.size());
        if (index != SIZE_MAX) {
          child = node->children[index];
        }
      } else if (s.kind != PathStep::Kind::index) {
        throw usage_error(
            fmt::format("cannot unset '{}': [+] and [*] do not name one element", path.text()));
      }
      if (child == nullptr) {
        throw failure(fmt::format("key '{}' not found in {}", path.text(), m_doc.source_name()));
      }
      chain.push_back(child);
    }
    remove(*chain.back());
    out.changes.push_back({Change::Kind::remove, chain.back(), {}, {}});
    // Tables that exist only through their children vanish with the last one; empty [tables]
    // go too with --prune.
    for (std::size_t k = chain.size() - 2; k > 0; --k) {
      const Node *table = chain[k];
      // Only its member (or item) on the chain was removed from it.
      const bool empty = table->children.size() == 1;
      if (!empty) {
        break;
      }
      const bool vanishes = table->origin == Origin::implicit || table->origin == Origin::dotted ||
                            table->origin == Origin::array_of_tables;
      const bool prunable = prune && table->origin == Origin::header;
      if (!vanishes && !prunable) {
        break;
      }
      if (prunable) {
        remove(*table);
      }
      out.changes.push_back({Change::Kind::remove, table, {}, {}});
    }
    flush_removed_lines();
    out.splices = sorted_splices();
    return out;
  }

private:
  const Document &m_doc;
  Geometry g;
  const syntax::Tree &t;
  std::string_view text;
  std::vector<Splice> m_splices;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> m_removed_lines;

  void splice(std::uint32_t begin, std::uint32_t end, std::string replacement) {
    m_splices.push_back({begin, end, std::move(replacement)});
  }

  std::vector<Splice> sorted_splices() {
    std::stable_sort(m_splices.begin(), m_splices.end(), [](const Splice &a, const Splice &b) {
      return a.begin < b.begin;
    });
    std::uint32_t at = 0;
    for (const auto &s : m_splices) {
      if (s.begin < at) {
        throw failure("internal error: overlapping edits");
      }
      at = s.end;
    }
    return std::move(m_splices);
  }

  static std::vector<std::string> remaining_keys(const KeyPath &path, std::size_t from) {
    std::vector<std::string> keys;
    for (std::size_t k = from; k < path.steps.size(); ++k) {
      const auto &s = path.steps[k];
      if (s.kind == PathStep::Kind::key) {
        keys.push_back(s.key);
      } else if (s.kind == PathStep::Kind::append && k + 1 == path.steps.size() && !keys.empty()) {
        break; // handled by the caller: `new[+]`
      } else {
        throw usage_error(fmt::format("cannot set '{}': '{}' does not exist, so it cannot be "
                                      "indexed",
                                      path.text(),
                                      prefix_text(path, k)));
      }
    }
    return keys;
  }

  static Value nest(const std::vector<std::string> &keys, const Value &leaf) {
    if (keys.empty()) {
      return leaf;
    }
    Value root = Value::make_table({});
    Value *at = &root;
    for (std::size_t k = 0; k + 1 < keys.size(); ++k) {
      at->mutable_table().emplace_back(keys[k], Value::make_table({}));
      at = &at->mutable_table().back().second;
    }
    at->mutable_table().emplace_back(keys.back(), leaf);
    return root;
  }

  // ----- replacing an existing value

  void replace(const KeyPath &path, const Node &node, const Literal &literal) {
    if (node.value == npos) {
      throw usage_error(fmt::format("cannot set '{}': it is {} written as [header] sections or "
                                    "dotted keys; set its keys, or unset it first",
                                    path.text(),
                                    detail::article_type(node)));
    }
    const Span span = t.values[node.value].span;
    splice(span.begin, span.end, literal.text);
  }

  // ----- appending to an array

  void append(const KeyPath &path,
              const Node &array,
              const std::vector<std::string> &rest,
              const Literal &literal) {
    if (array.origin == Origin::array_of_tables) {
      append_table(path, array, rest, literal);
      return;
    }
    if (array.value == npos) {
      throw usage_error(fmt::format("cannot append to '{}'", path.text()));
    }
    std::string element = literal.text;
    if (!rest.empty()) {
      element = "{ " + key_text(rest) + " = " + literal.text + " }";
    }
    append_element(array.value, element);
  }

  void append_element(std::uint32_t array_id, const std::string &element) {
    const auto &v = t.values[array_id];
    const auto children = t.children(v);
    const auto commas = t.commas(v);
    if (children.empty()) {
      splice(v.span.begin + 1, v.span.begin + 1, element);
      return;
    }
    const auto &last = t.values[children.back()].span;
    const bool trailing_comma = commas.size() == children.size();
    std::string sep = " ";
    if (!commas.empty() && children.size() > 1) {
      const auto next = t.values[children[1]].span.begin;
      const auto gap = text.substr(commas[0] + 1, next - commas[0] - 1);
      if (gap.find_first_not_of(" \t") == std::string_view::npos) {
        sep = std::string(gap);
      }
    }
    std::uint32_t line_start = 0;
    std::uint32_t line_end = 0;
    std::string_view eol;
    if (own_line(last.begin,
                 last.end,
                 trailing_comma ? commas.back() : npos,
                 line_start,
                 line_end,
                 eol)) {
      const std::string indent(text.substr(line_start, last.begin - line_start));
      if (trailing_comma) {
        splice(line_end, line_end, indent + element + "," + std::string(eol));
      } else {
        splice(last.end, last.end, ",");
        splice(line_end, line_end, indent + element + std::string(eol));
      }
      return;
    }
    if (trailing_comma) {
      splice(commas.back() + 1, commas.back() + 1, sep + element + ",");
    } else {
      splice(last.end, last.end, "," + sep + element);
    }
  }

  // Whether [begin, end) (plus an optional comma at `comma`) sits alone on its line; sets the
  // line's bounds (end after the newline) and its newline.
  bool own_line(std::uint32_t begin,
                std::uint32_t end,
                std::uint32_t comma,
                std::uint32_t &line_start,
                std::uint32_t &line_end,
                std::string_view &eol) const {
    std::uint32_t b = begin;
    while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == '\t')) {
      --b;
    }
    if (b == 0 || text[b - 1] != '\n') {
      return false;
    }
    line_start = b;
    std::uint32_t e = end;
    auto skip_ws = [&] {
      while (e < text.size() && (text[e] == ' ' || text[e] == '\t')) {
        ++e;
      }
    };
    skip_ws();
    if (comma != npos) {
      if (e != comma) {
        return false;
      }
      ++e;
      skip_ws();
    }
    if (e < text.size() && text[e] == '#') {
      while (e < text.size() && text[e] != '\n' && text[e] != '\r') {
        ++e;
      }
    }
    if (text.substr(e, 2) == "\r\n") {
      eol = text.substr(e, 2);
      line_end = e + 2;
      return true;
    }
    if (e < text.size() && text[e] == '\n') {
      eol = text.substr(e, 1);
      line_end = e + 1;
      return true;
    }
    return false;
  }

  void append_table(const KeyPath &path,
                    const Node &array,
                    const std::vector<std::string> &rest,
                    const Literal &literal) {
    std::vector<std::string> body;
    if (!rest.empty()) {
      body.push_back(key_text(rest) + " = " + literal.text);
    } else {
      if (!literal.value->is(Type::table) || literal.node->value == npos) {
        throw usage_error(fmt::format("cannot append to the array of tables '{}': the value must "
                                      "be a table literal like '{{ name = \"x\" }}'",
                                      path.text()));
      }
      const auto &lt = literal.doc.parsed().tree;
      const std::string_view ltext = literal.doc.text();
      for (const auto kv_id : lt.children(lt.values[literal.node->value])) {
        const auto &kv = lt.key_values[kv_id];
        const auto end = lt.values[kv.value].span.end;
        body.emplace_back(ltext.substr(kv.key_span.begin, end - kv.key_span.begin));
      }
    }
    const Node &last = *array.children.back();
    const auto &header = t.headers[last.header];
    const std::string header_text(
        text.substr(header.span.begin, header.span.end - header.span.begin));
    // Copy the layout of the last element's first key line.
    const std::uint32_t h = g.m_parsed.header_line[last.header];
    const std::uint32_t ref = g.last_key_value_line(h + 1, g.next_header_line(h));
    insert_table(last, header_text, body, ref);
  }

  // Inserts `[header]` + body lines after the subtree of `after`.
  void insert_table(const Node &after,
                    const std::string &header,
                    const std::vector<std::string> &body_keys,
                    std::uint32_t style_line) {
    const std::uint32_t last = g.last_line_of(after);
    std::uint32_t k = last == npos ? g.line_count() : g.insertion_line_after_body(last);
    if (last != npos && !g.is_header(last)) {
      k = std::max(k, last + 1);
    }
    insert_table_at(k, header, body_keys, style_line);
  }

  void insert_table_at(std::uint32_t k,
                       const std::string &header,
                       const std::vector<std::string> &body_keys,
                       std::uint32_t style_line) {
    const std::uint32_t at = g.offset_of_line(k);
    const bool at_end = k >= g.line_count();
    const std::string eol(k > 0 ? g.eol_near(k - 1) : g.dominant_eol());
    std::string out;
    const bool empty_doc = text.size() <= t.body_begin;
    const bool no_final_newline =
        at_end && !empty_doc && g.line_count() > 0 && !g.has_newline(g.line_count() - 1);
    if (no_final_newline) {
      out += eol;
    }
    if (!empty_doc && at > t.body_begin) {
      for (std::uint32_t b = g.usual_blank_lines(); b > 0; --b) {
        out += eol;
      }
    }
    out += header;
    for (const auto &line : body_keys) {
      out += eol;
      out += styled_line(style_line, line, /*root=*/false);
    }
    if (!no_final_newline) {
      out += eol;
    }
    splice(at, at, out);
  }

  // `key = value` with the indentation and spacing of the key/value at `style_line` (raw text
  // of the form "key = value"; only the part up to the first " = " is the key).
  std::string styled_line(std::uint32_t style_line, const std::string &entry, bool root) const {
    const auto eq = entry.find(" = ");
    const std::string key = entry.substr(0, eq);
    const std::string value = entry.substr(eq + 3);
    if (style_line == npos) {
      return key + " = " + value;
    }
    const auto &line = t.lines[style_line];
    const auto &kv = t.key_values[line.item];
    std::string indent(text.substr(line.begin, kv.key_span.begin - line.begin));
    if (root) {
      indent.clear();
    }
    std::string before(text.substr(kv.key_span.end, kv.equals - kv.key_span.end));
    const std::string after(
        text.substr(kv.equals + 1, t.values[kv.value].span.begin - kv.equals - 1));
    if (before.size() > 1 && before.find_first_not_of(' ') == std::string::npos) {
      // Aligned '=' signs: keep the column when the new key is short enough.
      const std::size_t column = kv.equals - line.begin;
      const std::size_t used = indent.size() + key.size();
      before.assign(column > used ? column - used : 1, ' ');
    }
    return indent + key + before + "=" + after + value;
  }

  // The key/value line nearest before `line` (any table), for style; npos if none.
  std::uint32_t style_before(std::uint32_t line) const {
    const std::uint32_t found = g.last_key_value_line(0, std::min(line, g.line_count()));
    if (found != npos) {
      return found;
    }
    return g.last_key_value_line(0, g.line_count());
  }

  // ----- adding a missing key

  void add_key(const KeyPath &path,
               const Node &node,
               const std::vector<std::string> &rest,
               const std::string &value_text) {
    if (node.frozen || node.value != npos) {
      const Node *inline_table = &node;
      while (inline_table->value == npos || t.values[inline_table->value].type != Type::table) {
        inline_table = inline_table->parent;
      }
      std::vector<std::string> keys = relative_names(inline_table, &node);
      keys.insert(keys.end(), rest.begin(), rest.end());
      add_inline_entry(inline_table->value, key_text(keys), value_text);
      return;
    }
    switch (node.origin) {
    case Origin::root:
    case Origin::header: {
      if (rest.size() == 1 || !has_header_children(node)) {
        add_body_line(node, key_text(rest) + " = " + value_text);
        return;
      }
      std::vector<std::string> table = relative_names(nullptr, &node);
      table.insert(table.end(), rest.begin(), rest.end() - 1);
      if (node.origin == Origin::root) {
        const std::uint32_t k = last_body_end();
        insert_table_at(k,
                        "[" + key_text(table) + "]",
                        {quote_key(rest.back()) + " = " + value_text},
                        style_before(k));
      } else {
        insert_table(node,
                     "[" + key_text(table) + "]",
                     {quote_key(rest.back()) + " = " + value_text},
                     style_before(g.last_line_of(node) + 1));
      }
      return;
    }
    case Origin::implicit: {
      std::vector<std::string> table = relative_names(nullptr, &node);
      table.insert(table.end(), rest.begin(), rest.end() - 1);
      insert_table(node,
                   "[" + key_text(table) + "]",
                   {quote_key(rest.back()) + " = " + value_text},
                   style_before(g.last_line_of(node) + 1));
      return;
    }
    case Origin::dotted: {
      const std::uint32_t last = g.last_line_of(node);
      const Node *body = node.parent;
      while (body->origin != Origin::root && body->origin != Origin::header) {
        body = body->parent;
      }
      std::vector<std::string> keys = relative_names(body, &node);
      keys.insert(keys.end(), rest.begin(), rest.end());
      insert_line_after(last, styled_line(last, key_text(keys) + " = " + value_text, false));
      return;
    }
    default:
      throw usage_error(fmt::format("cannot set '{}' here", path.text()));
    }
  }

  static bool has_header_children(const Node &node) {
    return std::any_of(node.children.begin(), node.children.end(), [](const Node *c) {
      return c->origin == Origin::header || c->origin == Origin::implicit ||
             c->origin == Origin::array_of_tables;
    });
  }

  // The line index before which a new [table] at the end of the document goes.
  std::uint32_t last_body_end() const {
    std::uint32_t k = g.line_count();
    while (k > 0 && g.line(k - 1).kind == LineKind::blank) {
      --k;
    }
    return k;
  }

  void insert_line_after(std::uint32_t line, const std::string &content) {
    const auto &l = t.lines[line];
    if (!g.has_newline(line)) {
      splice(l.end, l.end, std::string(g.dominant_eol()) + content);
    } else {
      splice(l.end, l.end, content + std::string(g.eol_of(line)));
    }
  }

  void add_body_line(const Node &table, const std::string &entry) {
    std::uint32_t from = 0;
    std::uint32_t to = g.first_header_line();
    if (table.origin == Origin::header) {
      from = g.m_parsed.header_line[table.header] + 1;
      to = g.next_header_line(from - 1);
    }
    const std::uint32_t last = g.last_key_value_line(from, to);
    const bool root = table.origin == Origin::root;
    if (last != npos) {
      insert_line_after(last, styled_line(last, entry, root && !is_indented_root(last)));
      return;
    }
    const std::string line = styled_line(style_before(from), entry, root);
    if (!root) {
      insert_line_after(from - 1, line);
      return;
    }
    // An empty root body: before the first header's comment block, or at the end.
    const bool empty_doc = text.size() <= t.body_begin;
    if (to < g.line_count()) {
      const std::uint32_t k = g.owned_start(to);
      const std::string eol(g.eol_near(k));
      const std::uint32_t blanks = g.usual_blank_lines();
      std::string out = line + eol;
      for (std::uint32_t b = std::max<std::uint32_t>(blanks, 1); b > 0; --b) {
        out += eol;
      }
      splice(g.offset_of_line(k), g.offset_of_line(k), out);
    } else if (empty_doc) {
      splice(static_cast<std::uint32_t>(text.size()),
             static_cast<std::uint32_t>(text.size()),
             line + std::string(g.dominant_eol()));
    } else {
      insert_line_after(g.line_count() - 1, line);
    }
  }

  bool is_indented_root(std::uint32_t line) const {
    const auto &l = t.lines[line];
    return t.key_values[l.item].key_span.begin > l.begin;
  }

  void add_inline_entry(std::uint32_t table_id, const std::string &key, const std::string &value) {
    const auto &v = t.values[table_id];
    const auto children = t.children(v);
    const auto commas = t.commas(v);
    if (children.empty()) {
      splice(v.span.begin + 1, v.span.end - 1, " " + key + " = " + value + " ");
      return;
    }
    const auto &ref = t.key_values[children.front()];
    const auto &last = t.key_values[children.back()];
    std::string sep = " ";
    if (children.size() > 1) {
      const auto next = t.key_values[children[1]].key_span.begin;
      sep.assign(text.substr(commas[0] + 1, next - commas[0] - 1));
    }
    const std::string eq(
        text.substr(ref.key_span.end, t.values[ref.value].span.begin - ref.key_span.end));
    const auto end = t.values[last.value].span.end;
    splice(end, end, "," + sep + key + eq + value);
  }

  // ----- removing

  void remove(const Node &node) {
    if (node.key_value != npos && t.key_values[node.key_value].inline_entry) {
      remove_inline_entry(node);
      return;
    }
    if (node.parent != nullptr && node.parent->value != npos && node.parent->type == Type::array) {
      remove_array_element(node);
      return;
    }
    if (node.frozen && node.value == npos) {
      throw usage_error("cannot remove a dotted part of an entry inside an inline table; unset "
                        "the whole entry");
    }
    if (node.value == npos && node.header == npos && node.key_value == npos &&
        node.origin != Origin::implicit && node.origin != Origin::dotted &&
        node.origin != Origin::array_of_tables) {
      throw usage_error("cannot remove this value");
    }
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
    g.collect_lines(node, ranges, true);
    m_removed_lines.insert(m_removed_lines.end(), ranges.begin(), ranges.end());
  }

  // Turns the removed line ranges into splices (after merging: an unset with --prune may remove
  // a table and, inside it, the key that left it empty).
  void flush_removed_lines() {
    Geometry::merge(m_removed_lines);
    std::uint32_t floor = 0;
    for (auto [first, last] : m_removed_lines) {
      remove_lines(first, last, floor);
      floor = last;
    }
    m_removed_lines.clear();
  }

  void remove_lines(std::uint32_t first, std::uint32_t last, std::uint32_t floor) {
    const std::uint32_t n = g.line_count();
    // Removing the start of the document: do not leave it starting with blank lines.
    if (first == 0) {
      while (last < n && g.line(last).kind == LineKind::blank) {
        ++last;
      }
    }
    std::uint32_t begin = g.offset_of_line(first);
    const std::uint32_t end = g.offset_of_line(last);
    if (last >= n) {
      // Removing through the end of the file: take the blank lines before it too, and keep the
      // file's final-newline state.
      std::uint32_t k = first;
      while (k > floor && g.line(k - 1).kind == LineKind::blank) {
        --k;
      }
      begin = g.offset_of_line(k);
      const bool had_final_newline = g.has_newline(n - 1);
      if (!had_final_newline && k > floor) {
        begin = g.line(k - 1).content_end;
      }
    }
    splice(begin, end, "");
  }

  void remove_inline_entry(const Node &node) {
    const Node *table = node.parent;
    while (table->value == npos) {
      table = table->parent; // a dotted key inside an inline table
    }
    const auto &v = t.values[table->value];
    const auto children = t.children(v);
    // Find the entry holding this node (its key may be dotted: `{ a.b = 1 }`).
    const Node *holder = &node;
    while (holder->key_value == npos || !t.key_values[holder->key_value].inline_entry) {
      holder = holder->parent;
    }
    const auto pos = std::find(children.begin(), children.end(), holder->key_value);
    const std::size_t k = static_cast<std::size_t>(pos - children.begin());
    if (holder != &node) {
      throw usage_error("cannot remove part of a dotted key inside an inline table; unset the "
                        "whole entry");
    }
    auto entry_span = [&](std::size_t i) {
      const auto &kv = t.key_values[children[i]];
      return Span{kv.key_span.begin, t.values[kv.value].span.end};
    };
    const Span e = entry_span(k);
    if (k + 1 < children.size()) {
      splice(e.begin, entry_span(k + 1).begin, "");
    } else if (k > 0) {
      splice(entry_span(k - 1).end, e.end, "");
    } else {
      splice(v.span.begin + 1, v.span.end - 1, "");
    }
  }

  void remove_array_element(const Node &node) {
    const auto &v = t.values[node.parent->value];
    const auto children = t.children(v);
    const auto commas = t.commas(v);
    const std::size_t k = member_index(*node.parent, &node);
    const Span e = t.values[children[k]].span;
    const std::uint32_t comma = k < commas.size() ? commas[k] : npos;
    std::uint32_t line_start = 0;
    std::uint32_t line_end = 0;
    std::string_view eol;
    if (own_line(e.begin, e.end, comma, line_start, line_end, eol)) {
      splice(line_start, line_end, "");
      return;
    }
    if (k + 1 < children.size()) {
      splice(e.begin, t.values[children[k + 1]].span.begin, "");
    } else if (k > 0) {
      splice(t.values[children[k - 1]].span.end, comma != npos ? comma + 1 : e.end, "");
    } else {
      splice(e.begin, comma != npos ? comma + 1 : e.end, "");
    }
  }
};

} // namespace

namespace detail {

Literal parse_literal(std::string_view literal) {
  const auto begin = literal.find_first_not_of(" \t\r\n");
  const auto end = literal.find_last_not_of(" \t\r\n");
  if (begin == std::string_view::npos) {
    throw usage_error("bad value: empty (use -s '' for an empty string)");
  }
  std::string trimmed(literal.substr(begin, end - begin + 1));
  std::string source = "v = " + trimmed + "\n";
  Literal out{Document(), nullptr, nullptr, trimmed};
  try {
    out.doc = Document::parse(std::move(source), "value");
  } catch (const Error &e) {
    Error error = usage_error(fmt::format("bad value literal '{}': not a TOML value", trimmed));
    const std::string message = e.what();
    if (const auto colon = message.find(": "); colon != std::string::npos) {
      error.add_context(message.substr(colon + 2));
    }
    error.add_context(fmt::format("for the string, write '\"{}\"' or use -s/--string", trimmed));
    throw error;
  }
  const auto &members = *out.doc.root().table();
  if (members.size() != 1 || members.front().first != "v" ||
      out.doc.syntax().key_values.size() == 0 ||
      out.doc.parsed().root->children.front()->key_value != 0) {
    throw usage_error(fmt::format("bad value literal '{}': expected exactly one value", trimmed));
  }
  for (const auto kind : out.doc.syntax().token_kind) {
    if (kind == syntax::TokenKind::comment) {
      throw usage_error(fmt::format("bad value literal '{}': comments are not allowed", trimmed));
    }
  }
  out.value = &members.front().second;
  out.node = out.doc.parsed().root->children.front();
  return out;
}

Outcome plan_set(const Document &doc, const KeyPath &path, const Literal &literal) {
  return Engine(doc).set(path, literal);
}

Outcome plan_unset(const Document &doc, const KeyPath &path, bool prune) {
  return Engine(doc).unset(path, prune);
}

std::string apply(std::string_view text, const std::vector<Splice> &splices) {
  std::string out;
  out.reserve(text.size() + 256);
  for_each_piece(text, splices, [&out](std::string_view piece) { out.append(piece); });
  return out;
}

} // namespace detail

} // namespace pb::toml
