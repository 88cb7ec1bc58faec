// SPDX-License-Identifier: MIT
// The toml++ second opinion. toml++ is a heavy header, so it stays in this one file.
#include "fingerprint.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/toml/reference.hpp>

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cmath>
#include <fstream>
#include <vector>

namespace pb::toml {
namespace {

Position position_of(const ::toml::node &node) {
  const auto &begin = node.source().begin;
  return {static_cast<std::uint32_t>(begin.line), static_cast<std::uint32_t>(begin.column)};
}

std::string date_text(const ::toml::date &d) {
  return fmt::format("{:04}-{:02}-{:02}", d.year, d.month, d.day);
}

std::string time_text(const ::toml::time &t) {
  return fmt::format("{:02}:{:02}:{:02}.{:09}", t.hour, t.minute, t.second, t.nanosecond);
}

std::string datetime_text(const ::toml::date_time &dt) {
  std::string out = date_text(dt.date) + "T" + time_text(dt.time);
  if (dt.offset) {
    const int minutes = dt.offset->minutes;
    out += fmt::format(
        "{}{:02}:{:02}", minutes < 0 ? '-' : '+', std::abs(minutes) / 60, std::abs(minutes) % 60);
  }
  return out;
}

Value convert(const ::toml::node &node) {
  const Position pos = position_of(node);
  if (const auto *t = node.as_table()) {
    Value table = Value::make_table(pos);
    for (const auto &[key, child] : *t) {
      table.mutable_table().emplace_back(std::string(key.str()), convert(child));
    }
    return table;
  }
  if (const auto *a = node.as_array()) {
    Value array = Value::make_array(pos);
    for (const auto &child : *a) {
      array.mutable_array().push_back(convert(child));
    }
    return array;
  }
  if (const auto *s = node.as_string()) {
    return Value::make_string(s->get(), s->get(), pos);
  }
  if (const auto *i = node.as_integer()) {
    return Value::make_scalar(Type::integer, std::to_string(i->get()), pos);
  }
  if (const auto *f = node.as_floating_point()) {
    const double v = f->get();
    std::string raw = std::isnan(v)   ? "nan"
                      : std::isinf(v) ? (v < 0 ? "-inf" : "inf")
                                      : fmt::format("{:e}", v);
    if (!std::isnan(v) && !std::isinf(v)) {
      raw = fmt::format("{}", v);
      if (raw.find_first_of(".e") == std::string::npos) {
        raw += ".0";
      }
    }
    return Value::make_scalar(Type::floating, raw, pos);
  }
  if (const auto *b = node.as_boolean()) {
    return Value::make_scalar(Type::boolean, b->get() ? "true" : "false", pos);
  }
  if (const auto *d = node.as_date()) {
    return Value::make_scalar(Type::local_date, date_text(d->get()), pos);
  }
  if (const auto *t = node.as_time()) {
    return Value::make_scalar(Type::local_time, time_text(t->get()), pos);
  }
  const auto &dt = node.as_date_time()->get();
  return Value::make_scalar(
      dt.is_local() ? Type::local_datetime : Type::offset_datetime, datetime_text(dt), pos);
}

bool matches(const Value &expected,
             const ::toml::node &actual,
             std::string &path,
             std::string &why) {
  auto mismatch = [&](std::string_view what) {
    why = fmt::format("{} at '{}'", what, path.empty() ? "." : path);
    return false;
  };
  switch (expected.type()) {
  case Type::table: {
    const auto *t = actual.as_table();
    if (t == nullptr) {
      return mismatch("expected a table");
    }
    if (t->size() != expected.table()->size()) {
      return mismatch(
          fmt::format("expected {} keys, found {}", expected.table()->size(), t->size()));
    }
    const std::size_t depth = path.size();
    for (const auto &[name, child] : *expected.table()) {
      path += path.empty() ? "" : ".";
      path += name;
      const auto *other = t->get(name);
      if (other == nullptr) {
        return mismatch("missing key");
      }
      if (!matches(child, *other, path, why)) {
        return false;
      }
      path.resize(depth);
    }
    return true;
  }
  case Type::array: {
    const auto *a = actual.as_array();
    if (a == nullptr) {
      return mismatch("expected an array");
    }
    if (a->size() != expected.array()->size()) {
      return mismatch(
          fmt::format("expected {} elements, found {}", expected.array()->size(), a->size()));
    }
    const std::size_t depth = path.size();
    for (std::size_t i = 0; i < a->size(); ++i) {
      path += fmt::format("[{}]", i);
      if (!matches((*expected.array())[i], *a->get(i), path, why)) {
        return false;
      }
      path.resize(depth);
    }
    return true;
  }
  case Type::string:
    if (const auto *s = actual.as_string(); s == nullptr || s->get() != *expected.string()) {
      return mismatch("different string");
    }
    return true;
  case Type::integer:
    if (const auto *i = actual.as_integer(); i == nullptr || i->get() != expected.integer()) {
      return mismatch("different integer");
    }
    return true;
  case Type::floating: {
    const auto *f = actual.as_floating_point();
    if (f == nullptr) {
      return mismatch("expected a float");
    }
    const double x = f->get();
    const double y = expected.floating().value_or(0);
    if (!((std::isnan(x) && std::isnan(y)) || x == y)) {
      return mismatch("different float");
    }
    return true;
  }
  case Type::boolean:
    if (const auto *b = actual.as_boolean(); b == nullptr || b->get() != expected.boolean()) {
      return mismatch("different boolean");
    }
    return true;
  default: {
    const Value converted = convert(actual);
    if (!semantically_equal(expected, converted)) {
      return mismatch("different date/time");
    }
    return true;
  }
  }
}

// The meaning fingerprint (fingerprint.hpp) of a toml++ node; the std::map of a toml++ table
// already lists its members in key order.
void hash(const ::toml::node &node, detail::MeaningHasher &h) {
  if (const auto *t = node.as_table()) {
    h.table(t->size());
    for (const auto &[key, child] : *t) {
      h.key(key.str());
      hash(child, h);
    }
  } else if (const auto *a = node.as_array()) {
    h.array(a->size());
    for (const auto &child : *a) {
      hash(child, h);
    }
  } else if (const auto *s = node.as_string()) {
    h.string(s->get());
  } else if (const auto *i = node.as_integer()) {
    h.integer(i->get());
  } else if (const auto *f = node.as_floating_point()) {
    h.floating(f->get());
  } else if (const auto *b = node.as_boolean()) {
    h.boolean(b->get());
  } else {
    // As matches() compares date/times: through the same conversion.
    const Value converted = convert(node);
    h.datetime(converted.type(), *converted.datetime());
  }
}

} // namespace

namespace {

// toml++'s reading of `input` (a string_view or a stream), fingerprinted; its DOM is dropped here.
template <typename Input> std::optional<std::string> fingerprint_of(Input &&input) {
  detail::MeaningHasher h;
  try {
    const auto table = ::toml::parse(std::forward<Input>(input), std::string_view("edited"));
    hash(table, h);
  } catch (const ::toml::parse_error &) {
    return std::nullopt;
  }
  return h.finish();
}

} // namespace

std::optional<std::string> reference_fingerprint(std::string_view text) {
  return fingerprint_of(text);
}

std::optional<std::string> reference_fingerprint_file(const std::filesystem::path &path) {
  std::vector<char> buffer(std::size_t{1} << 16);
  std::ifstream file;
  file.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  file.open(path, std::ios::in | std::ios::binary);
  if (!file) {
    return std::nullopt;
  }
  return fingerprint_of(file);
}

Value reference_parse(std::string_view text, std::string_view source_name) {
  try {
    const auto table = ::toml::parse(text, source_name);
    Value root = convert(table);
    root.set_position({});
    return root;
  } catch (const ::toml::parse_error &e) {
    throw input_error(fmt::format("{}:{}:{}: {}",
                                  source_name,
                                  e.source().begin.line,
                                  e.source().begin.column,
                                  e.description()));
  }
}

bool reference_matches(const Value &expected, std::string_view text, std::string &why) {
  ::toml::table table;
  try {
    table = ::toml::parse(text, std::string_view("edited"));
  } catch (const ::toml::parse_error &e) {
    why = fmt::format("toml++ rejects the result at {}:{}: {}",
                      e.source().begin.line,
                      e.source().begin.column,
                      e.description());
    return false;
  }
  std::string path;
  return matches(expected, table, path, why);
}

} // namespace pb::toml
