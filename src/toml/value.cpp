// SPDX-License-Identifier: MIT
#include <primebeaker/toml/value.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace pb::toml {

std::string_view type_name(Type type) {
  switch (type) {
  case Type::string: return "string";
  case Type::integer: return "integer";
  case Type::floating: return "float";
  case Type::boolean: return "bool";
  case Type::offset_datetime: return "datetime";
  case Type::local_datetime: return "datetime-local";
  case Type::local_date: return "date-local";
  case Type::local_time: return "time-local";
  case Type::array: return "array";
  case Type::table: return "table";
  }
  return "unknown";
}

Value Value::make_scalar(Type type, std::string raw, Position position) {
  Value v;
  v.m_type = type;
  v.m_raw = std::move(raw);
  v.m_position = position;
  return v;
}

Value Value::make_string(std::string decoded, std::string raw, Position position) {
  Value v = make_scalar(Type::string, std::move(raw), position);
  v.m_decoded = std::move(decoded);
  return v;
}

Value Value::make_array(Position position) {
  Value v;
  v.m_type = Type::array;
  v.m_position = position;
  return v;
}

Value Value::make_table(Position position) {
  Value v;
  v.m_type = Type::table;
  v.m_position = position;
  return v;
}

const std::string* Value::string() const { return m_type == Type::string ? &m_decoded : nullptr; }

namespace {

std::string without_underscores(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c != '_') {
      out += c;
    }
  }
  return out;
}

} // namespace

std::optional<std::int64_t> Value::integer() const {
  if (m_type != Type::integer) {
    return std::nullopt;
  }
  std::string digits = without_underscores(m_raw);
  bool negative = false;
  std::string_view view = digits;
  if (!view.empty() && (view.front() == '+' || view.front() == '-')) {
    negative = view.front() == '-';
    view.remove_prefix(1);
  }
  int base = 10;
  if (view.size() > 2 && view[0] == '0' && (view[1] == 'x' || view[1] == 'o' || view[1] == 'b')) {
    base = view[1] == 'x' ? 16 : view[1] == 'o' ? 8 : 2;
    view.remove_prefix(2);
  }
  std::uint64_t magnitude = 0;
  const auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), magnitude, base);
  if (ec != std::errc() || end != view.data() + view.size()) {
    return std::nullopt;
  }
  if (negative) {
    if (magnitude > static_cast<std::uint64_t>(INT64_MAX) + 1) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(0 - magnitude);
  }
  if (magnitude > static_cast<std::uint64_t>(INT64_MAX)) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(magnitude);
}

std::optional<double> Value::floating() const {
  if (m_type != Type::floating) {
    return std::nullopt;
  }
  std::string text = without_underscores(m_raw);
  std::string_view body = text;
  const bool negative = !body.empty() && body.front() == '-';
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    body.remove_prefix(1);
  }
  if (body == "inf") {
    return negative ? -INFINITY : INFINITY;
  }
  if (body == "nan") {
    return negative ? -NAN : NAN;
  }
  return std::strtod(text.c_str(), nullptr);
}

std::optional<bool> Value::boolean() const {
  if (m_type != Type::boolean) {
    return std::nullopt;
  }
  return m_raw == "true";
}

const std::vector<Value>* Value::array() const {
  return m_type == Type::array ? &m_items : nullptr;
}

const std::vector<Member>* Value::table() const {
  return m_type == Type::table ? &m_members : nullptr;
}

const Value* Value::find(std::string_view key) const {
  if (m_type != Type::table) {
    return nullptr;
  }
  for (const auto& [name, value] : m_members) {
    if (name == key) {
      return &value;
    }
  }
  return nullptr;
}

const Value* Value::find_path(std::initializer_list<std::string_view> keys) const {
  const Value* current = this;
  for (const auto key : keys) {
    current = current->find(key);
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

const Value* Value::find_path(const std::vector<std::string>& keys) const {
  const Value* current = this;
  for (const auto& key : keys) {
    current = current->find(key);
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

std::vector<Value>& Value::mutable_array() { return m_items; }
std::vector<Member>& Value::mutable_table() { return m_members; }

Value* Value::mutable_find(std::string_view key) {
  for (auto& [name, value] : m_members) {
    if (name == key) {
      return &value;
    }
  }
  return nullptr;
}

bool semantically_equal(const Value& a, const Value& b) {
  if (a.m_type != b.m_type) {
    return false;
  }
  switch (a.m_type) {
  case Type::string: return a.m_decoded == b.m_decoded;
  case Type::integer: return a.integer() == b.integer();
  case Type::floating: {
    const double x = *a.floating();
    const double y = *b.floating();
    return (std::isnan(x) && std::isnan(y)) || x == y;
  }
  case Type::boolean: return a.m_raw == b.m_raw;
  case Type::array:
    return a.m_items.size() == b.m_items.size() &&
           std::equal(a.m_items.begin(), a.m_items.end(), b.m_items.begin(),
                      [](const Value& x, const Value& y) { return semantically_equal(x, y); });
  case Type::table:
    if (a.m_members.size() != b.m_members.size()) {
      return false;
    }
    for (const auto& [name, value] : a.m_members) {
      const Value* other = b.find(name);
      if (other == nullptr || !semantically_equal(value, *other)) {
        return false;
      }
    }
    return true;
  default:
    // Date and time values compare by spelling with the 'T'/' ' separator and case unified.
    auto normal = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
        return c == ' ' || c == 't' ? 'T' : c == 'z' ? 'Z' : static_cast<char>(c);
      });
      return s;
    };
    return normal(a.m_raw) == normal(b.m_raw);
  }
}

std::string Document::location(const Value& value) const {
  if (value.position().line == 0) {
    return m_source_name;
  }
  return fmt::format("{}:{}:{}", m_source_name, value.position().line, value.position().column);
}

} // namespace pb::toml
