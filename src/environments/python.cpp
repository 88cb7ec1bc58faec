// SPDX-License-Identifier: MIT
// Python semantics the environments depend on (docs/environments.md "Python compatibility").
#include <primebeaker/core/python_json.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/python.hpp>

#include <fmt/format.h>

#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cwctype>
#include <iterator>
#include <limits>

namespace pb::environments::py {
namespace {

using J = OrderedJson;

// ---- UTF-8 ----------------------------------------------------------------------------------

using python_json::decode_utf8;

void encode(char32_t c, std::string &out) {
  if (c >= 0xDC80 && c <= 0xDCFF) {
    out.push_back(static_cast<char>(c - 0xDC00)); // a raw byte kept through decode_utf8()
  } else if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    out.push_back(decode_utf8(s, i));
  }
  return out;
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    encode(c, out);
  }
  return out;
}

locale_t utf8_locale() {
  static locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
    return l;
  }();
  return loc;
}

char32_t simple_lower(char32_t c) {
  if (c < 0x80) {
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  }
  if (c >= 0xDC80 && c <= 0xDCFF) {
    return c;
  }
  locale_t loc = utf8_locale();
  if (loc == static_cast<locale_t>(nullptr)) {
    return c;
  }
  return static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), loc));
}

bool is_cased_letter(char32_t c) {
  if (c < 0x80) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  }
  locale_t loc = utf8_locale();
  return loc != static_cast<locale_t>(nullptr) &&
         (iswupper_l(static_cast<wint_t>(c), loc) || iswlower_l(static_cast<wint_t>(c), loc));
}

// ---- json.loads -------------------------------------------------------------------------------

struct Reader {
  std::string_view s;
  size_t i = 0;

  [[noreturn]] void fail(const std::string &what) const {
    throw JsonError(fmt::format("{}: char {}", what, i));
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) {
      ++i;
    }
  }
  bool literal(std::string_view word) {
    if (s.substr(i, word.size()) == word) {
      i += word.size();
      return true;
    }
    return false;
  }
  unsigned hex4() {
    if (i + 4 > s.size()) {
      fail("Invalid \\uXXXX escape");
    }
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = text::hex_digit_value(s[i + k]);
      if (h < 0) {
        fail("Invalid \\uXXXX escape");
      }
      v = v * 16 + static_cast<unsigned>(h);
    }
    i += 4;
    return v;
  }
  std::string string() {
    ++i; // opening quote
    std::string out;
    while (true) {
      if (i >= s.size()) {
        fail("Unterminated string starting at");
      }
      const char c = s[i];
      if (c == '"') {
        ++i;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail("Invalid control character at");
      }
      if (c != '\\') {
        out.push_back(c);
        ++i;
        continue;
      }
      ++i;
      if (i >= s.size()) {
        fail("Unterminated string starting at");
      }
      const char e = s[i++];
      switch (e) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        char32_t cp = hex4();
        if (cp >= 0xD800 && cp < 0xDC00 && s.substr(i, 2) == "\\u") {
          const size_t save = i;
          i += 2;
          const unsigned low = hex4();
          if (low >= 0xDC00 && low < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else {
            i = save;
          }
        }
        if (cp >= 0xD800 && cp < 0xE000) {
          cp = 0xFFFD; // a lone surrogate has no UTF-8 form
        }
        encode(cp, out);
        break;
      }
      default:
        --i;
        fail("Invalid \\escape");
      }
    }
  }
  J number() {
    const size_t start = i;
    if (s[i] == '-') {
      ++i;
    }
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) {
      i = start;
      fail("Expecting value");
    }
    if (s[i] == '0') {
      ++i;
    } else {
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        ++i;
      }
    }
    bool is_float = false;
    if (i + 1 < s.size() && s[i] == '.' && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      is_float = true;
      i += 1;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        ++i;
      }
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      size_t k = i + 1;
      if (k < s.size() && (s[k] == '+' || s[k] == '-')) {
        ++k;
      }
      if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
        is_float = true;
        i = k;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
          ++i;
        }
      }
    }
    const std::string token(s.substr(start, i - start));
    if (!is_float) {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
      if (ec == std::errc() && p == token.data() + token.size()) {
        return v;
      }
      std::uint64_t u = 0;
      auto [p2, ec2] = std::from_chars(token.data(), token.data() + token.size(), u);
      if (ec2 == std::errc() && p2 == token.data() + token.size()) {
        return u;
      }
    }
    return std::strtod(token.c_str(), nullptr);
  }
  J value(int depth) {
    if (depth > 1000) {
      fail("Nesting too deep");
    }
    ws();
    if (i >= s.size()) {
      fail("Expecting value");
    }
    const char c = s[i];
    if (c == '"') {
      return string();
    }
    if (c == '{') {
      ++i;
      J obj = J::object();
      ws();
      if (i < s.size() && s[i] == '}') {
        ++i;
        return obj;
      }
      while (true) {
        ws();
        if (i >= s.size() || s[i] != '"') {
          fail("Expecting property name enclosed in double quotes");
        }
        std::string key = string();
        ws();
        if (i >= s.size() || s[i] != ':') {
          fail("Expecting ':' delimiter");
        }
        ++i;
        obj[key] = value(depth + 1);
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == '}') {
          ++i;
          return obj;
        }
        fail("Expecting ',' delimiter");
      }
    }
    if (c == '[') {
      ++i;
      J arr = J::array();
      ws();
      if (i < s.size() && s[i] == ']') {
        ++i;
        return arr;
      }
      while (true) {
        arr.push_back(value(depth + 1));
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == ']') {
          ++i;
          return arr;
        }
        fail("Expecting ',' delimiter");
      }
    }
    if (literal("null")) {
      return nullptr;
    }
    if (literal("true")) {
      return true;
    }
    if (literal("false")) {
      return false;
    }
    if (literal("NaN")) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (literal("Infinity")) {
      return std::numeric_limits<double>::infinity();
    }
    if (literal("-Infinity")) {
      return -std::numeric_limits<double>::infinity();
    }
    return number();
  }
};

std::string repr_string(std::string_view s) {
  // Python's repr: single quotes unless the text has ' and no ".
  const bool use_double =
      s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char q = use_double ? '"' : '\'';
  std::string out(1, q);
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b == static_cast<unsigned char>(q) || b == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(b));
      ++i;
    } else if (b == '\n') {
      out += "\\n";
      ++i;
    } else if (b == '\r') {
      out += "\\r";
      ++i;
    } else if (b == '\t') {
      out += "\\t";
      ++i;
    } else if (b < 0x20 || b == 0x7F) {
      out += fmt::format("\\x{:02x}", b);
      ++i;
    } else {
      const size_t start = i;
      decode_utf8(s, i);
      out.append(s.substr(start, i - start));
    }
  }
  out.push_back(q);
  return out;
}

} // namespace

OrderedJson loads(std::string_view text) {
  Reader reader{text};
  J value = reader.value(0);
  reader.ws();
  if (reader.i != text.size()) {
    reader.fail("Extra data");
  }
  return value;
}

std::optional<OrderedJson> try_loads(std::string_view text) {
  try {
    return loads(text);
  } catch (const JsonError &) {
    return std::nullopt;
  }
}

std::string dumps(const OrderedJson &value, const DumpOptions &options) {
  return python_json::dumps(value,
                            {.sort_keys = options.sort_keys,
                             .ensure_ascii = options.ensure_ascii,
                             .item_separator = options.compact ? "," : ", ",
                             .key_separator = options.compact ? ":" : ": "});
}

std::string repr(const OrderedJson &value) {
  switch (value.type()) {
  case J::value_t::null:
    return "None";
  case J::value_t::boolean:
    return value.get<bool>() ? "True" : "False";
  case J::value_t::number_float:
    return float_repr(value.get<double>());
  case J::value_t::string:
    return repr_string(value.get_ref<const std::string &>());
  case J::value_t::array: {
    std::string out = "[";
    bool first = true;
    for (const auto &item : value) {
      out += first ? "" : ", ";
      first = false;
      out += repr(item);
    }
    return out + "]";
  }
  case J::value_t::object: {
    std::string out = "{";
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      out += first ? "" : ", ";
      first = false;
      out += repr_string(it.key()) + ": " + repr(it.value());
    }
    return out + "}";
  }
  default:
    return value.dump();
  }
}

std::string str(const OrderedJson &value) {
  return value.is_string() ? value.get<std::string>() : repr(value);
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::string strip(std::string_view text) {
  // Walk in from both ends, decoding only the characters looked at (no UTF-32 copy).
  size_t begin = 0;
  while (begin < text.size()) {
    size_t next = begin;
    if (!is_space(decode_utf8(text, next))) {
      break;
    }
    begin = next;
  }
  size_t end = text.size();
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80 &&
           end - start < 4) {
      --start;
    }
    size_t next = start;
    if (!is_space(decode_utf8(text, next)) || next != end) {
      break;
    }
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> parts;
  std::string current;
  bool in_word = false;
  for (size_t i = 0; i < text.size();) {
    const size_t start = i;
    const char32_t c = decode_utf8(text, i);
    if (is_space(c)) {
      if (in_word) {
        parts.push_back(std::move(current));
        current.clear();
        in_word = false;
      }
    } else {
      current.append(text.substr(start, i - start));
      in_word = true;
    }
  }
  if (in_word) {
    parts.push_back(std::move(current));
  }
  return parts;
}

std::string lower(std::string_view text) {
  if (std::all_of(
          text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    std::string out(text);
    for (char &c : out) {
      if (c >= 'A' && c <= 'Z') {
        c = static_cast<char>(c + 32);
      }
    }
    return out;
  }
  const auto cps = to_u32(text);
  std::u32string out;
  out.reserve(cps.size());
  for (size_t k = 0; k < cps.size(); ++k) {
    const char32_t c = cps[k];
    if (c == 0x130) {
      out += U"i\u0307";
    } else if (c == 0x3A3) {
      // Final_Sigma: after a cased letter and not before one.
      const bool after = k > 0 && is_cased_letter(cps[k - 1]);
      const bool before = k + 1 < cps.size() && is_cased_letter(cps[k + 1]);
      out.push_back(after && !before ? 0x3C2 : 0x3C3);
    } else {
      out.push_back(simple_lower(c));
    }
  }
  return to_utf8(out);
}

std::string casefold(std::string_view text) {
  const auto cps = to_u32(text);
  std::u32string out;
  out.reserve(cps.size());
  for (const char32_t c : cps) {
    switch (c) {
    case 0xDF:
    case 0x1E9E:
      out += U"ss";
      continue;
    case 0x130:
      out += U"i\u0307";
      continue;
    case 0x149:
      out += U"\u02BCn";
      continue;
    case 0x1F0:
      out += U"j\u030C";
      continue;
    case 0x390:
      out += U"\u03B9\u0308\u0301";
      continue;
    case 0x3B0:
      out += U"\u03C5\u0308\u0301";
      continue;
    case 0x587:
      out += U"\u0565\u0582";
      continue;
    case 0xFB00:
      out += U"ff";
      continue;
    case 0xFB01:
      out += U"fi";
      continue;
    case 0xFB02:
      out += U"fl";
      continue;
    case 0xFB03:
      out += U"ffi";
      continue;
    case 0xFB04:
      out += U"ffl";
      continue;
    case 0xFB05:
    case 0xFB06:
      out += U"st";
      continue;
    case 0xB5:
      out.push_back(0x3BC);
      continue;
    case 0x17F:
      out.push_back('s');
      continue;
    case 0x345:
    case 0x1FBE:
      out.push_back(0x3B9);
      continue;
    case 0x3C2:
      out.push_back(0x3C3);
      continue;
    case 0x3D0:
      out.push_back(0x3B2);
      continue;
    case 0x3D1:
      out.push_back(0x3B8);
      continue;
    case 0x3D5:
      out.push_back(0x3C6);
      continue;
    case 0x3D6:
      out.push_back(0x3C0);
      continue;
    case 0x3F0:
      out.push_back(0x3BA);
      continue;
    case 0x3F1:
      out.push_back(0x3C1);
      continue;
    case 0x3F5:
      out.push_back(0x3B5);
      continue;
    case 0x1E9B:
      out.push_back(0x1E61);
      continue;
    default:
      break;
    }
    if (c >= 0x13F8 && c <= 0x13FD) {
      out.push_back(c - 8); // Cherokee folds to the uppercase letters
    } else if (c >= 0xAB70 && c <= 0xABBF) {
      out.push_back(c - 0xAB70 + 0x13A0);
    } else if (c == 0x3A3) {
      out.push_back(0x3C3);
    } else {
      out.push_back(simple_lower(c));
    }
  }
  return to_utf8(out);
}

size_t length(std::string_view text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size();) {
    decode_utf8(text, i);
    ++n;
  }
  return n;
}

std::string prefix(std::string_view text, size_t count) {
  size_t i = 0;
  for (size_t n = 0; n < count && i < text.size(); ++n) {
    decode_utf8(text, i);
  }
  return std::string(text.substr(0, i));
}

std::string normalize_label(std::string_view text) {
  std::string out;
  for (const auto &word : split(lower(strip(text)))) {
    if (!out.empty()) {
      out.push_back(' ');
    }
    out += word;
  }
  return out;
}

std::string format(std::string_view pattern, const OrderedJson &values) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      throw FormatError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = pattern.find('}', i + 1);
    if (close == std::string_view::npos) {
      throw FormatError("Single '{' encountered in format string");
    }
    std::string_view field = pattern.substr(i + 1, close - i - 1);
    char conversion = 's';
    if (const auto bang = field.find('!'); bang != std::string_view::npos) {
      if (bang + 2 != field.size() || (field[bang + 1] != 's' && field[bang + 1] != 'r')) {
        throw FormatError(fmt::format("unsupported conversion in field '{{{}}}'", field));
      }
      conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    if (field.empty() || field.find_first_of(":.[{") != std::string_view::npos ||
        std::isdigit(static_cast<unsigned char>(field[0]))) {
      throw FormatError(fmt::format(
          "unsupported replacement field '{{{}}}' (only named fields like {{name}})", field));
    }
    const std::string name(field);
    if (!values.is_object() || !values.contains(name)) {
      throw FormatError(fmt::format("missing template variable '{}'", name));
    }
    out += conversion == 'r' ? repr(values.at(name)) : str(values.at(name));
    i = close;
  }
  return out;
}

} // namespace pb::environments::py
