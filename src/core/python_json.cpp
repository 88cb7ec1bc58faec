// SPDX-License-Identifier: MIT
#include <primebeaker/core/python_json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

namespace pb::python_json {
namespace {

using J = OrderedJson;

void dump_string(std::string_view s, bool ensure_ascii, std::string &out) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    switch (b) {
    case '"':
      out += "\\\"";
      ++i;
      continue;
    case '\\':
      out += "\\\\";
      ++i;
      continue;
    case '\n':
      out += "\\n";
      ++i;
      continue;
    case '\r':
      out += "\\r";
      ++i;
      continue;
    case '\t':
      out += "\\t";
      ++i;
      continue;
    case '\b':
      out += "\\b";
      ++i;
      continue;
    case '\f':
      out += "\\f";
      ++i;
      continue;
    default:
      break;
    }
    if (b < 0x20 || (b == 0x7F && ensure_ascii)) {
      out += fmt::format("\\u{:04x}", b);
      ++i;
      continue;
    }
    const size_t start = i;
    const char32_t c = decode_utf8(s, i);
    if (!ensure_ascii) {
      out.append(s.substr(start, i - start));
    } else if (c >= 0x10000) {
      const char32_t v = c - 0x10000;
      out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
    } else {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    }
  }
  out.push_back('"');
}

void dump_value(const J &v, const DumpOptions &o, std::string &out) {
  switch (v.type()) {
  case J::value_t::null:
    out += "null";
    return;
  case J::value_t::boolean:
    out += v.get<bool>() ? "true" : "false";
    return;
  case J::value_t::number_integer:
    out += std::to_string(v.get<std::int64_t>());
    return;
  case J::value_t::number_unsigned:
    out += std::to_string(v.get<std::uint64_t>());
    return;
  case J::value_t::number_float: {
    const double d = v.get<double>();
    if (std::isnan(d)) {
      out += "NaN";
    } else if (std::isinf(d)) {
      out += d > 0 ? "Infinity" : "-Infinity";
    } else {
      out += float_repr(d);
    }
    return;
  }
  case J::value_t::string:
    dump_string(v.get_ref<const std::string &>(), o.ensure_ascii, out);
    return;
  case J::value_t::array: {
    out.push_back('[');
    bool first = true;
    for (const auto &item : v) {
      if (!first) {
        out += o.item_separator;
      }
      first = false;
      dump_value(item, o, out);
    }
    out.push_back(']');
    return;
  }
  case J::value_t::object: {
    std::vector<std::pair<const std::string *, const J *>> members;
    for (auto it = v.begin(); it != v.end(); ++it) {
      members.emplace_back(&it.key(), &it.value());
    }
    if (o.sort_keys) {
      // Byte order of UTF-8 is code point order, as Python sorts str.
      std::stable_sort(members.begin(), members.end(), [](const auto &a, const auto &b) {
        return *a.first < *b.first;
      });
    }
    out.push_back('{');
    bool first = true;
    for (const auto &[key, value] : members) {
      if (!first) {
        out += o.item_separator;
      }
      first = false;
      dump_string(*key, o.ensure_ascii, out);
      out += o.key_separator;
      dump_value(*value, o, out);
    }
    out.push_back('}');
    return;
  }
  default:
    out += "null";
  }
}

} // namespace

char32_t decode_utf8(std::string_view s, size_t &i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  auto at = [&](size_t k) {
    return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F);
  };
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 >= 0xC2 && b0 < 0xE0 && cont(1)) {
    char32_t c = ((b0 & 0x1F) << 6) | at(1);
    i += 2;
    return c;
  }
  if (b0 >= 0xE0 && b0 < 0xF0 && cont(1) && cont(2)) {
    char32_t c = ((b0 & 0x0F) << 12) | (at(1) << 6) | at(2);
    if (c >= 0x800) {
      i += 3;
      return c;
    }
  }
  if (b0 >= 0xF0 && b0 < 0xF5 && cont(1) && cont(2) && cont(3)) {
    char32_t c = ((b0 & 0x07) << 18) | (at(1) << 12) | (at(2) << 6) | at(3);
    if (c >= 0x10000 && c <= 0x10FFFF) {
      i += 4;
      return c;
    }
  }
  ++i;
  return 0xDC00 + b0;
}

std::string dumps(const OrderedJson &value, const DumpOptions &options) {
  std::string out;
  dump_value(value, options, out);
  return out;
}

std::string float_repr(double value) {
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value > 0 ? "inf" : "-inf";
  }
  std::array<char, 64> buffer{};
  auto [end, ec] = std::to_chars(
      buffer.data(), buffer.data() + buffer.size(), value, std::chars_format::scientific);
  (void)ec;
  std::string_view sci(buffer.data(), static_cast<size_t>(end - buffer.data()));
  std::string out;
  if (sci.front() == '-') {
    out.push_back('-');
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') {
      digits.push_back(c);
    }
  }
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  const int decpt = exponent + 1;
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." +
             digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) {
    out += "." + digits.substr(1);
  }
  out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

} // namespace pb::python_json
