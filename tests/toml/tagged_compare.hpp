// SPDX-License-Identifier: MIT
// toml-test's comparison rules for tagged JSON (json.go): floats numerically (any nan equals
// nan), date/times as instants to the millisecond, everything else as exact strings.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/toml/value.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace pb::toml::test {

inline double tagged_float(const std::string &text) {
  std::string t = text;
  if (!t.empty() && t[0] == '+') {
    t.erase(0, 1);
  }
  if (t == "nan" || t == "-nan") {
    return NAN;
  }
  if (t == "inf") {
    return INFINITY;
  }
  if (t == "-inf") {
    return -INFINITY;
  }
  return std::strtod(t.c_str(), nullptr);
}

inline long long days_from_civil(long long y, long long m, long long d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const long long yoe = y - era * 400;
  const long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Milliseconds since the epoch (offset applied for offset date-times); local kinds compare
// their wall-clock fields the same way.
inline long long tagged_instant(Type type, const std::string &text) {
  const auto dt = *Value::make_scalar(type, text, {}).datetime();
  long long seconds = 0;
  if (type != Type::local_time) {
    seconds = days_from_civil(dt.year, dt.month, dt.day) * 86400;
  }
  seconds += dt.hour * 3600LL + dt.minute * 60LL + dt.second - dt.offset_minutes * 60LL;
  return seconds * 1000 + dt.nanosecond / 1000000;
}

inline Type tagged_type(const std::string &name) {
  if (name == "datetime")
    return Type::offset_datetime;
  if (name == "datetime-local")
    return Type::local_datetime;
  if (name == "date-local")
    return Type::local_date;
  return Type::local_time;
}

inline bool is_tagged_scalar(const OrderedJson &j) {
  return j.is_object() && j.size() == 2 && j.contains("type") && j.contains("value") &&
         j["type"].is_string() && j["value"].is_string();
}

// Compares an expected tagged JSON (from the corpus) with ours; `where` gets the first
// difference.
inline bool tagged_equal(const OrderedJson &expected,
                         const OrderedJson &actual,
                         std::string &where,
                         const std::string &path = "") {
  if (is_tagged_scalar(expected)) {
    if (!is_tagged_scalar(actual) || expected["type"] != actual["type"]) {
      where = path + ": type differs: " + expected.dump() + " vs " + actual.dump();
      return false;
    }
    const std::string type = expected["type"];
    const std::string a = expected["value"];
    const std::string b = actual["value"];
    bool same = false;
    if (type == "float") {
      const double x = tagged_float(a);
      const double y = tagged_float(b);
      same = (std::isnan(x) && std::isnan(y)) || x == y;
    } else if (type == "datetime" || type == "datetime-local" || type == "date-local" ||
               type == "time-local") {
      same = tagged_instant(tagged_type(type), a) == tagged_instant(tagged_type(type), b);
    } else {
      same = a == b;
    }
    if (!same) {
      where = path + ": " + a + " vs " + b;
    }
    return same;
  }
  if (expected.is_object()) {
    if (!actual.is_object() || actual.size() != expected.size() || is_tagged_scalar(actual)) {
      where = path + ": table differs: " + actual.dump();
      return false;
    }
    for (const auto &[key, value] : expected.items()) {
      if (!actual.contains(key)) {
        where = path + "." + key + ": missing";
        return false;
      }
      if (!tagged_equal(value, actual[key], where, path + "." + key)) {
        return false;
      }
    }
    return true;
  }
  if (expected.is_array()) {
    if (!actual.is_array() || actual.size() != expected.size()) {
      where = path + ": array differs";
      return false;
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (!tagged_equal(expected[i], actual[i], where, path + "[" + std::to_string(i) + "]")) {
        return false;
      }
    }
    return true;
  }
  where = path + ": unexpected JSON " + expected.dump();
  return false;
}

} // namespace pb::toml::test
