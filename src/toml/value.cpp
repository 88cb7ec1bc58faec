// SPDX-License-Identifier: MIT
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace pb::toml {

std::string_view type_name(Type type) {
  switch (type) {
  case Type::string:
    return "string";
  case Type::integer:
    return "integer";
  case Type::floating:
    return "float";
  case Type::boolean:
    return "bool";
  case Type::offset_datetime:
    return "datetime";
  case Type::local_datetime:
    return "datetime-local";
  case Type::local_date:
    return "date-local";
  case Type::local_time:
    return "time-local";
  case Type::array:
    return "array";
  case Type::table:
    return "table";
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

const std::string *Value::string() const {
  return m_type == Type::string ? &m_decoded : nullptr;
}

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

std::optional<DateTime> Value::datetime() const {
  if (m_type != Type::offset_datetime && m_type != Type::local_datetime &&
      m_type != Type::local_date && m_type != Type::local_time) {
    return std::nullopt;
  }
  DateTime dt;
  std::string_view s = m_raw;
  auto number = [&s](std::size_t width) {
    int value = 0;
    for (std::size_t i = 0; i < width && i < s.size(); ++i) {
      value = value * 10 + (s[i] - '0');
    }
    s.remove_prefix(std::min(width, s.size()));
    return value;
  };
  if (m_type != Type::local_time) {
    dt.year = number(4);
    s.remove_prefix(1);
    dt.month = number(2);
    s.remove_prefix(1);
    dt.day = number(2);
    if (s.empty()) {
      return dt;
    }
    s.remove_prefix(1); // 'T', 't' or ' '
  }
  dt.hour = number(2);
  s.remove_prefix(1);
  dt.minute = number(2);
  s.remove_prefix(1);
  dt.second = number(2);
  if (!s.empty() && s.front() == '.') {
    s.remove_prefix(1);
    std::uint32_t scale = 100000000;
    while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
      dt.nanosecond += static_cast<std::uint32_t>(s.front() - '0') * scale;
      scale /= 10;
      s.remove_prefix(1);
    }
  }
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    const int sign = s.front() == '-' ? -1 : 1;
    s.remove_prefix(1);
    const int hours = number(2);
    s.remove_prefix(1);
    dt.offset_minutes = sign * (hours * 60 + number(2));
  }
  return dt;
}

const std::vector<Value> *Value::array() const {
  return m_type == Type::array ? &m_items : nullptr;
}

const std::vector<Member> *Value::table() const {
  return m_type == Type::table ? &m_members : nullptr;
}

const Value *Value::find(std::string_view key) const {
  if (m_type != Type::table) {
    return nullptr;
  }
  for (const auto &[name, value] : m_members) {
    if (name == key) {
      return &value;
    }
  }
  return nullptr;
}

const Value *Value::find_path(std::initializer_list<std::string_view> keys) const {
  const Value *current = this;
  for (const auto key : keys) {
    current = current->find(key);
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

const Value *Value::find_path(const std::vector<std::string> &keys) const {
  const Value *current = this;
  for (const auto &key : keys) {
    current = current->find(key);
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

std::vector<Value> &Value::mutable_array() {
  return m_items;
}
std::vector<Member> &Value::mutable_table() {
  return m_members;
}

Value *Value::mutable_find(std::string_view key) {
  for (auto &[name, value] : m_members) {
    if (name == key) {
      return &value;
    }
  }
  return nullptr;
}

bool semantically_equal(const Value &a, const Value &b) {
  if (a.m_type != b.m_type) {
    return false;
  }
  switch (a.m_type) {
  case Type::string:
    return a.m_decoded == b.m_decoded;
  case Type::integer:
    return a.integer() == b.integer();
  case Type::floating: {
    const double x = *a.floating();
    const double y = *b.floating();
    return (std::isnan(x) && std::isnan(y)) || x == y;
  }
  case Type::boolean:
    return a.m_raw == b.m_raw;
  case Type::array:
    return a.m_items.size() == b.m_items.size() &&
           std::equal(a.m_items.begin(),
                      a.m_items.end(),
                      b.m_items.begin(),
                      [](const Value &x, const Value &y) { return semantically_equal(x, y); });
  case Type::table: {
    const auto &x = a.m_members;
    const auto &y = b.m_members;
    if (x.size() != y.size()) {
      return false;
    }
    // Same order is the common case; otherwise sort both sides by name (linear find would be
    // quadratic on files with thousands of sibling tables).
    bool same_order = true;
    for (std::size_t i = 0; i < x.size() && same_order; ++i) {
      same_order = x[i].first == y[i].first;
    }
    if (same_order) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!semantically_equal(x[i].second, y[i].second)) {
          return false;
        }
      }
      return true;
    }
    std::vector<const Member *> xs;
    std::vector<const Member *> ys;
    xs.reserve(x.size());
    ys.reserve(y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      xs.push_back(&x[i]);
      ys.push_back(&y[i]);
    }
    const auto by_name = [](const Member *l, const Member *r) { return l->first < r->first; };
    std::sort(xs.begin(), xs.end(), by_name);
    std::sort(ys.begin(), ys.end(), by_name);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (xs[i]->first != ys[i]->first || !semantically_equal(xs[i]->second, ys[i]->second)) {
        return false;
      }
    }
    return true;
  }
  default: {
    const auto l = *a.datetime();
    const auto r = *b.datetime();
    return l.year == r.year && l.month == r.month && l.day == r.day && l.hour == r.hour &&
           l.minute == r.minute && l.second == r.second && l.nanosecond == r.nanosecond &&
           l.offset_minutes == r.offset_minutes;
  }
  }
}

std::string Document::location(const Value &value) const {
  if (value.position().line == 0) {
    return m_source_name;
  }
  return fmt::format("{}:{}:{}", m_source_name, value.position().line, value.position().column);
}

} // namespace pb::toml
