// SPDX-License-Identifier: MIT
#include <primebeaker/toml/format.hpp>

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace pb::toml {
namespace {

std::string normal_datetime(const Value &value) {
  std::string text = value.raw();
  if (text.size() > 10 && (text[10] == ' ' || text[10] == 't')) {
    text[10] = 'T';
  }
  if (!text.empty() && text.back() == 'z') {
    text.back() = 'Z';
  }
  return text;
}

std::string float_text(const Value &value) {
  const double v = value.floating().value_or(0);
  if (std::isnan(v)) {
    return "nan";
  }
  if (std::isinf(v)) {
    return v < 0 ? "-inf" : "inf";
  }
  return fmt::format("{}", v);
}

bool is_scalar(const Value &value) {
  return !value.is(Type::array) && !value.is(Type::table);
}

} // namespace

OrderedJson to_tagged_json(const Value &value) {
  switch (value.type()) {
  case Type::table: {
    OrderedJson out = OrderedJson::object();
    for (const auto &[name, child] : *value.table()) {
      out[name] = to_tagged_json(child);
    }
    return out;
  }
  case Type::array: {
    OrderedJson out = OrderedJson::array();
    for (const auto &child : *value.array()) {
      out.push_back(to_tagged_json(child));
    }
    return out;
  }
  default:
    break;
  }
  std::string text;
  switch (value.type()) {
  case Type::string:
    text = *value.string();
    break;
  case Type::integer:
    text = std::to_string(value.integer().value_or(0));
    break;
  case Type::floating:
    text = float_text(value);
    break;
  case Type::boolean:
    text = value.raw();
    break;
  default:
    text = normal_datetime(value);
    break;
  }
  OrderedJson out = OrderedJson::object();
  out["type"] = std::string(type_name(value.type()));
  out["value"] = text;
  return out;
}

OrderedJson to_json(const Value &value) {
  switch (value.type()) {
  case Type::table: {
    OrderedJson out = OrderedJson::object();
    for (const auto &[name, child] : *value.table()) {
      out[name] = to_json(child);
    }
    return out;
  }
  case Type::array: {
    OrderedJson out = OrderedJson::array();
    for (const auto &child : *value.array()) {
      out.push_back(to_json(child));
    }
    return out;
  }
  case Type::string:
    return *value.string();
  case Type::integer:
    return value.integer().value_or(0);
  case Type::floating: {
    const double v = value.floating().value_or(0);
    if (std::isnan(v) || std::isinf(v)) {
      return float_text(value);
    }
    return v;
  }
  case Type::boolean:
    return value.boolean().value_or(false);
  default:
    return normal_datetime(value);
  }
}

std::string to_value_text(const Value &value) {
  auto scalar = [](const Value &v) { return v.is(Type::string) ? *v.string() : v.raw(); };
  if (is_scalar(value)) {
    return scalar(value) + "\n";
  }
  if (value.is(Type::array)) {
    bool all_scalars = true;
    for (const auto &item : *value.array()) {
      all_scalars = all_scalars && is_scalar(item);
    }
    if (all_scalars) {
      std::string out;
      for (const auto &item : *value.array()) {
        out += scalar(item);
        out += '\n';
      }
      return out;
    }
  }
  return to_pretty_json(to_json(value));
}

std::string quote_string(std::string_view text) {
  bool needs_escape = false;
  bool has_backslash = false;
  bool literal_ok = true;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      has_backslash = true;
    }
    if (c == '"' || c == '\\' || c < 0x20 || c == 0x7F) {
      needs_escape = true;
    }
    if (c == '\'' || (c < 0x20 && c != '\t') || c == 0x7F) {
      literal_ok = false;
    }
  }
  if (has_backslash && literal_ok) {
    return fmt::format("'{}'", text);
  }
  if (!needs_escape) {
    return fmt::format("\"{}\"", text);
  }
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20 || c == 0x7F) {
        out += fmt::format("\\u{:04X}", c);
      } else {
        out += ch;
      }
    }
  }
  out += '"';
  return out;
}

std::string quote_key(std::string_view key) {
  bool bare = !key.empty();
  for (const char c : key) {
    bare = bare && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-');
  }
  if (bare) {
    return std::string(key);
  }
  std::string quoted = quote_string(key);
  if (quoted.front() == '\'') { // keys: keep basic quotes, always valid
    std::string out = "\"";
    for (const char c : key) {
      if (c == '\\' || c == '"') {
        out += '\\';
      }
      out += c;
    }
    return out + "\"";
  }
  return quoted;
}

} // namespace pb::toml

namespace pb::toml {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const auto nl = text.find('\n', begin);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return lines;
}

void diff_line(std::string &out, char mark, std::string_view line) {
  out += mark;
  out.append(line);
  if (line.empty() || line.back() != '\n') {
    out += "\n\\ No newline at end of file\n";
  }
}

} // namespace

std::string unified_diff(std::string_view before, std::string_view after, std::string_view name) {
  if (before == after) {
    return {};
  }
  const auto a = split_lines(before);
  const auto b = split_lines(after);
  std::size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) {
    ++prefix;
  }
  std::size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
    ++suffix;
  }
  constexpr std::size_t context = 3;
  const std::size_t start = prefix > context ? prefix - context : 0;
  const std::size_t a_end = std::min(a.size(), a.size() - suffix + context);
  const std::size_t b_end = std::min(b.size(), b.size() - suffix + context);
  const std::size_t a_count = a_end - start;
  const std::size_t b_count = b_end - start;
  auto range = [start](std::size_t count) {
    return fmt::format("{},{}", count == 0 ? start : start + 1, count);
  };
  std::string out =
      fmt::format("--- {}\n+++ {}\n@@ -{} +{} @@\n", name, name, range(a_count), range(b_count));
  for (std::size_t i = start; i < prefix; ++i) {
    diff_line(out, ' ', a[i]);
  }
  for (std::size_t i = prefix; i < a.size() - suffix; ++i) {
    diff_line(out, '-', a[i]);
  }
  for (std::size_t i = prefix; i < b.size() - suffix; ++i) {
    diff_line(out, '+', b[i]);
  }
  for (std::size_t i = a.size() - suffix; i < a_end; ++i) {
    diff_line(out, ' ', a[i]);
  }
  return out;
}

} // namespace pb::toml
