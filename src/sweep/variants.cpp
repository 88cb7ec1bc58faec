// SPDX-License-Identifier: MIT
// The variants of a sweep: axes, product or zip, --grid files, and their names (sweep.hpp).
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/sweep/sweep.hpp>
#include <primebeaker/toml/format.hpp>
#include <primebeaker/toml/syntax.hpp>
#include <primebeaker/toml/value.hpp>
#include <primebeaker/yaml/tree.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace pb::sweep {

std::pair<std::string, std::vector<std::string>> parse_axis(const std::string &argument) {
  const auto eq = argument.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == argument.size()) {
    throw usage_error(
        fmt::format("--set {}: expected KEY=V1,V2,... (TOML value literals)", argument));
  }
  std::vector<std::string> values;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (const char c : argument.substr(eq + 1)) {
    if (quote != 0) {
      quote = c == quote ? 0 : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      values.emplace_back(text::trim(current));
      current.clear();
      continue;
    }
    current += c;
  }
  values.emplace_back(text::trim(current));
  for (const auto &value : values) {
    if (value.empty()) {
      throw usage_error(fmt::format("--set {}: an empty value", argument));
    }
  }
  return {std::string(text::trim(std::string_view(argument).substr(0, eq))), values};
}

std::vector<Overrides> combine(const std::vector<std::string> &axes, bool zip) {
  std::vector<std::pair<std::string, std::vector<std::string>>> parsed;
  for (const auto &axis : axes) {
    parsed.push_back(parse_axis(axis));
    for (size_t k = 0; k + 1 < parsed.size(); ++k) {
      if (parsed[k].first == parsed.back().first) {
        throw usage_error(fmt::format("--set {}: {} is swept twice", axis, parsed.back().first));
      }
    }
  }
  std::vector<Overrides> out;
  if (parsed.empty()) {
    return out;
  }
  if (zip) {
    const size_t n = parsed.front().second.size();
    for (size_t k = 0; k < parsed.size(); ++k) {
      if (parsed[k].second.size() != n) {
        throw usage_error(fmt::format("--zip pairs the values in order: --set {} has {}, --set {} "
                                      "has {}",
                                      axes.front(),
                                      n,
                                      axes[k],
                                      parsed[k].second.size()));
      }
    }
    for (size_t i = 0; i < n; ++i) {
      Overrides variant;
      for (const auto &[key, values] : parsed) {
        variant.emplace_back(key, values[i]);
      }
      out.push_back(std::move(variant));
    }
    return out;
  }
  out.emplace_back();
  for (const auto &[key, values] : parsed) {
    std::vector<Overrides> next;
    for (const auto &prefix : out) {
      for (const auto &value : values) {
        Overrides variant = prefix;
        variant.emplace_back(key, value);
        next.push_back(std::move(variant));
      }
    }
    out = std::move(next);
  }
  return out;
}

namespace {

// A YAML scalar or collection as a TOML value literal.
std::string literal_of(const yaml::YamlNode &node, const yaml::YamlDocument &document) {
  using Kind = yaml::YamlNode::Kind;
  switch (node.kind) {
  case Kind::boolean:
    return node.boolean ? "true" : "false";
  case Kind::integer:
    return std::to_string(node.integer);
  case Kind::floating:
    return node.text;
  case Kind::string:
    return nlohmann::json(node.text).dump();
  case Kind::sequence: {
    std::vector<std::string> items;
    for (const auto &item : node.items) {
      items.push_back(literal_of(item, document));
    }
    return "[" + text::join(items, ", ") + "]";
  }
  case Kind::mapping: {
    std::vector<std::string> members;
    for (const auto &member : node.members) {
      members.push_back(member.key + " = " + literal_of(member.value, document));
    }
    return "{ " + text::join(members, ", ") + " }";
  }
  default:
    throw input_error(
        fmt::format("{}: a null value cannot be set in TOML", document.location(node.mark)));
  }
}

// A TOML value as a TOML value literal on one line: strings quoted, other scalars as spelled.
std::string literal_of(const toml::Value &value) {
  if (const std::string *text = value.string()) {
    return toml::quote_string(*text);
  }
  if (const auto *items = value.array()) {
    std::vector<std::string> parts;
    for (const auto &item : *items) {
      parts.push_back(literal_of(item));
    }
    return "[" + text::join(parts, ", ") + "]";
  }
  if (const auto *members = value.table()) {
    std::vector<std::string> parts;
    for (const auto &[key, member] : *members) {
      parts.push_back(toml::quote_key(key) + " = " + literal_of(member));
    }
    return "{ " + text::join(parts, ", ") + " }";
  }
  return value.raw();
}

// "SOURCE:LINE:COL" of the key that holds `value` in a TOML grid: the first segment of its
// `key = value` (`trainer` of `trainer.optim.lr = 1e-5`), else the value's own place.
std::string key_location(const toml::Document &document, const toml::Value &value) {
  const toml::Position position = value.position();
  if (position.line == 0) {
    return document.location(value);
  }
  const std::string &text = document.text();
  std::uint32_t line_start = 0;
  for (std::uint32_t line = 1; line < position.line; ++line) {
    line_start = static_cast<std::uint32_t>(text.find('\n', line_start) + 1);
  }
  const toml::syntax::Tree &tree = document.syntax();
  std::uint32_t offset = line_start + position.column - 1;
  if (position.line == 1) {
    offset += tree.body_begin; // the parser does not count a BOM as a column
  }
  for (const auto &kv : tree.key_values) {
    if (kv.value != toml::syntax::npos && kv.key_count > 0 &&
        tree.values[kv.value].span.begin == offset) {
      const std::uint32_t key = tree.key_segments[kv.key_first].begin;
      const std::string_view before = std::string_view(text).substr(0, key);
      const auto line = 1 + std::count(before.begin(), before.end(), '\n');
      const auto newline = before.rfind('\n');
      auto column = key - (newline == std::string_view::npos ? 0 : newline + 1) + 1;
      if (line == 1) {
        column -= tree.body_begin;
      }
      return fmt::format("{}:{}:{}", document.source_name(), line, column);
    }
  }
  return document.location(value);
}

} // namespace

Grid read_grid(const std::string &text, const std::string &source_name) {
  Grid out;
  const bool is_toml = text::starts_with(
      std::string_view(source_name).substr(source_name.size() > 5 ? source_name.size() - 5 : 0),
      ".toml");
  if (is_toml) {
    const auto document = toml::Document::parse(text, source_name);
    const toml::Value *variants = document.root().find("variant");
    if (variants == nullptr || variants->array() == nullptr) {
      throw input_error(source_name + ": a TOML grid is a list of [[variant]] tables");
    }
    for (const auto &table : *variants->array()) {
      if (table.table() == nullptr) {
        throw input_error(document.location(table) + ": each variant is a [[variant]] table");
      }
      Overrides variant;
      std::vector<std::string> origins;
      // Dotted keys inside a [[variant]] are nested tables: walk to the leaves, in order.
      const std::function<void(const std::string &, const toml::Value &)> walk =
          [&](const std::string &key, const toml::Value &value) {
            if (value.table() == nullptr) {
              variant.emplace_back(key, literal_of(value));
              origins.push_back(key_location(document, value));
              return;
            }
            for (const auto &[child, child_value] : *value.table()) {
              walk(key.empty() ? child : key + "." + child, child_value);
            }
          };
      walk("", table);
      if (variant.empty()) {
        throw input_error(document.location(table) + ": an empty variant");
      }
      out.variants.push_back(std::move(variant));
      out.origins.push_back(std::move(origins));
    }
    return out;
  }
  const auto document = yaml::parse_yaml(text, source_name);
  if (document.root.kind != yaml::YamlNode::Kind::sequence) {
    throw input_error(document.location(document.root.mark) +
                      ": a YAML grid is a list of mappings (- KEY: VALUE ...)");
  }
  for (const auto &item : document.root.items) {
    if (!item.is_mapping() || item.members.empty()) {
      throw input_error(document.location(item.mark) +
                        ": each variant is a mapping of dotted TOML keys to values");
    }
    Overrides variant;
    std::vector<std::string> origins;
    for (const auto &member : item.members) {
      variant.emplace_back(member.key, literal_of(member.value, document));
      origins.push_back(document.location(member.key_mark));
    }
    out.variants.push_back(std::move(variant));
    out.origins.push_back(std::move(origins));
  }
  if (out.variants.empty()) {
    throw input_error(source_name + ": the grid has no variants");
  }
  return out;
}

std::vector<Overrides> parse_grid(const std::string &text, const std::string &source_name) {
  return read_grid(text, source_name).variants;
}

std::string variant_suffix(const Overrides &overrides) {
  std::vector<std::string> parts;
  for (const auto &[key, literal] : overrides) {
    const auto dot = key.rfind('.');
    std::string part = (dot == std::string::npos ? key : key.substr(dot + 1)) + "-";
    for (const char c : literal) {
      const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
      if (safe) {
        part += c;
      } else if (c != '"' && c != '\'' && !part.empty() && part.back() != '-') {
        part += '-';
      }
    }
    while (!part.empty() && part.back() == '-') {
      part.pop_back();
    }
    parts.push_back(part);
  }
  return text::join(parts, "_");
}

std::string variant_name(const std::string &base, const Overrides &overrides) {
  std::string name = base + "-" + variant_suffix(overrides);
  constexpr size_t k_max = 128;
  if (name.size() <= k_max) {
    return name;
  }
  std::string whole;
  for (const auto &[key, literal] : overrides) {
    whole += key + "=" + literal + "\n";
  }
  const std::string hash = sha2::sha256_hex(whole).substr(0, 8);
  name.resize(k_max - hash.size() - 1);
  while (!name.empty() && (name.back() == '-' || name.back() == '_' || name.back() == '.')) {
    name.pop_back();
  }
  return name + "-" + hash;
}

} // namespace pb::sweep
