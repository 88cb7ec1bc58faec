// SPDX-License-Identifier: MIT
// The serve request parser (json_line.hpp). nlohmann's own parser reads a character at a time
// through an input adapter and grows every string one push_back at a time; on serve's ~2 KiB
// score requests it was the largest user-space cost after the thread hand-off
// (bench/environments_runtime/README.md). This one scans strings with a table, copies each once,
// and moves object members into place (an ordered_map reallocating would copy its const keys).
#include <primebeaker/environments_runtime/json_line.hpp>
#include <primebeaker/environments_runtime/serve.hpp>

#include <fmt/format.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pb::environments_runtime {
namespace {

using J = OrderedJson;
using Members = J::object_t::Container; // std::vector<std::pair<const std::string, J>>

constexpr int k_max_depth = 4096;

// What Parser::walk does with a value: builds it (returning it), or only checks it.
enum class Walk { build, check };
struct Checked {}; // what a check returns
template <Walk mode> using Walked = std::conditional_t<mode == Walk::build, OrderedJson, Checked>;
constexpr size_t k_linear_duplicate_check = 32; // members; beyond, a hash of the keys

// 1 for bytes a string can hold as they are: printable ASCII but '"' and '\\'.
constexpr std::array<unsigned char, 256> k_plain = [] {
  std::array<unsigned char, 256> table{};
  for (int c = 0x20; c < 0x80; ++c) {
    table[static_cast<size_t>(c)] = c == '"' || c == '\\' ? 0 : 1;
  }
  return table;
}();

class Parser {
public:
  Parser(std::string_view text, std::vector<std::pair<std::string, J>> &members)
      : m_begin(text.data()), m_p(text.data()), m_end(text.data() + text.size()),
        m_members(members) {
    m_members.clear();
  }
  // Over [from, to) of a text starting at `begin` (offsets in messages count from `begin`).
  Parser(const char *begin,
         const char *from,
         const char *to,
         std::vector<std::pair<std::string, J>> &members)
      : m_begin(begin), m_p(from), m_end(to), m_members(members) {}

  // The value of a top-level member, whose text [from, to) was checked by RequestLine.
  J member_value(bool score_row) {
    m_score = score_row;
    m_in_score_row = score_row;
    J result = walk<Walk::build>(1);
    if (m_p != m_end) {
      fail("unexpected text after the value");
    }
    return result;
  }

  // RequestLine's pass over the text: the top-level members' keys and value ranges, every value
  // checked by walk<Walk::check>, nothing built. False when the text is not an object.
  bool scan_object(std::vector<RequestLine::Member> &out) {
    skip_space();
    if (m_p >= m_end || *m_p != '{') {
      return false;
    }
    ++m_p;
    skip_space();
    bool score = false;
    if (m_p < m_end && *m_p == '}') {
      ++m_p;
    } else {
      std::unordered_map<std::string, size_t> index; // only for large objects
      for (;;) {
        if (m_p >= m_end || *m_p != '"') {
          fail("expected a string key");
        }
        std::string key;
        string<Walk::build>(key);
        skip_space();
        expect(':', "expected ':'");
        skip_space();
        const char *begin = m_p;
        walk<Walk::check>(1);
        const bool score_row = score && key == "row";
        if (key == "op" && *begin == '"') {
          std::string op;
          Parser text(m_begin, begin, m_p, m_members);
          text.string<Walk::build>(op);
          score = score || op == "score";
        }
        // A repeated key keeps its first position and takes the last value, as nlohmann does.
        size_t found = SIZE_MAX;
        if (out.size() <= k_linear_duplicate_check) {
          for (size_t i = 0; i < out.size(); ++i) {
            if (out[i].key == key) {
              found = i;
              break;
            }
          }
        } else {
          if (index.empty()) {
            for (size_t i = 0; i < out.size(); ++i) {
              index.emplace(out[i].key, i);
            }
          }
          if (const auto hit = index.find(key); hit != index.end()) {
            found = hit->second;
          }
        }
        if (found != SIZE_MAX) {
          out[found].begin = begin;
          out[found].end = m_p;
          out[found].score_row = score_row;
        } else {
          out.push_back({std::move(key), begin, m_p, score_row, std::nullopt});
          if (!index.empty()) {
            index.emplace(out.back().key, out.size() - 1);
          }
        }
        if (!next_member()) {
          break;
        }
      }
    }
    skip_space();
    if (m_p != m_end) {
      fail("unexpected text after the value");
    }
    return true;
  }

  J document() {
    skip_space();
    J result = walk<Walk::build>(0);
    skip_space();
    if (m_p != m_end) {
      fail("unexpected text after the value");
    }
    return result;
  }

private:
  [[noreturn]] void fail(const char *why) const {
    throw RequestError("bad_request", fmt::format("not JSON: {} at byte {}", why, m_p - m_begin));
  }

  void skip_space() {
    while (m_p < m_end && (*m_p == ' ' || *m_p == '\n' || *m_p == '\r' || *m_p == '\t')) {
      ++m_p;
    }
  }

  void expect(char c, const char *why) {
    if (m_p >= m_end || *m_p != c) {
      fail(why);
    }
    ++m_p;
  }

  // The one walk over the JSON value at m_p, nested `depth` deep (a container opened here is
  // depth + 1 deep). Walk::build returns what nlohmann builds; Walk::check refuses exactly what
  // build refuses, with the same messages at the same offsets, and builds nothing (strings are
  // scanned, never copied): RequestLine's pass over a line, and a score row's record fields.
  template <Walk mode> Walked<mode> walk(int depth) {
    if (m_p >= m_end) {
      fail("unexpected end of input");
    }
    switch (*m_p) {
    case '{':
      return object<mode>(depth + 1);
    case '[':
      return array<mode>(depth + 1);
    case '"': {
      if constexpr (mode == Walk::build) {
        std::string text;
        string<mode>(text);
        return J(std::move(text));
      } else {
        string<mode>(m_discard);
        return {};
      }
    }
    case 't':
      literal("true");
      return built<mode>(true);
    case 'f':
      literal("false");
      return built<mode>(false);
    case 'n':
      literal("null");
      return built<mode>(nullptr);
    default:
      if (*m_p == '-' || (*m_p >= '0' && *m_p <= '9')) {
        J parsed = number(); // checked either way; a number allocates nothing
        if constexpr (mode == Walk::build) {
          return parsed;
        } else {
          return {};
        }
      }
      fail("unexpected character");
    }
  }

  // `value` as walk<mode> returns it.
  template <Walk mode, typename T> static Walked<mode> built(T &&value) {
    if constexpr (mode == Walk::build) {
      return J(std::forward<T>(value));
    } else {
      return {};
    }
  }

  void literal(const char *word) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(m_end - m_p) < n || std::memcmp(m_p, word, n) != 0) {
      fail("invalid literal");
    }
    m_p += n;
  }

  template <Walk mode> Walked<mode> object(int depth) {
    if (depth > k_max_depth) {
      fail("nesting too deep");
    }
    ++m_p; // '{'
    skip_space();
    if (m_p < m_end && *m_p == '}') {
      ++m_p;
      return built<mode>(J::value_t::object);
    }
    if constexpr (mode == Walk::check) {
      for (;;) {
        if (m_p >= m_end || *m_p != '"') {
          fail("expected a string key");
        }
        string<mode>(m_discard);
        skip_space();
        expect(':', "expected ':'");
        skip_space();
        walk<mode>(depth);
        if (!next_member()) {
          return {};
        }
      }
    } else {
      const size_t base = m_members.size();
      std::unordered_map<std::string, size_t> index; // only for large objects
      for (;;) {
        if (m_p >= m_end || *m_p != '"') {
          fail("expected a string key");
        }
        std::string key;
        string<mode>(key);
        skip_space();
        expect(':', "expected ':'");
        skip_space();
        if (depth == 2 && m_in_score_row && is_record_field(key)) {
          walk<Walk::check>(depth); // checked, not kept
          if (next_member()) {
            continue;
          }
          break;
        }
        if (depth == 1) {
          m_in_score_row = m_score && key == "row";
        }
        J member = walk<mode>(depth);
        if (depth == 1) {
          m_in_score_row = false;
          m_score = m_score || (key == "op" && member == "score");
        }
        // A repeated key keeps its first position and takes the last value, as nlohmann does.
        const size_t count = m_members.size() - base;
        size_t found = SIZE_MAX;
        if (count <= k_linear_duplicate_check) {
          for (size_t i = base; i < m_members.size(); ++i) {
            if (m_members[i].first == key) {
              found = i;
              break;
            }
          }
          if (found == SIZE_MAX && count == k_linear_duplicate_check) {
            for (size_t i = base; i < m_members.size(); ++i) {
              index.emplace(m_members[i].first, i);
            }
          }
        } else if (const auto hit = index.find(key); hit != index.end()) {
          found = hit->second;
        } else {
          index.emplace(key, m_members.size());
        }
        if (found != SIZE_MAX) {
          m_members[found].second = std::move(member);
        } else {
          m_members.emplace_back(std::move(key), std::move(member));
        }
        if (!next_member()) {
          break;
        }
      }
      J result(J::value_t::object);
      Members &members = result.get_ref<J::object_t &>();
      members.reserve(m_members.size() - base);
      for (size_t i = base; i < m_members.size(); ++i) {
        members.emplace_back(std::move(m_members[i].first), std::move(m_members[i].second));
      }
      m_members.resize(base);
      return result;
    }
  }

  // After a member: true at ',' (another follows), false at the closing '}'.
  bool next_member() {
    skip_space();
    if (m_p < m_end && *m_p == ',') {
      ++m_p;
      skip_space();
      return true;
    }
    expect('}', "expected ',' or '}'");
    return false;
  }

  static bool is_record_field(const std::string &key) {
    return key == "prompt" || key == "answer" || key == "completion";
  }

  template <Walk mode> Walked<mode> array(int depth) {
    if (depth > k_max_depth) {
      fail("nesting too deep");
    }
    ++m_p; // '['
    skip_space();
    Walked<mode> result = built<mode>(J::value_t::array);
    if (m_p < m_end && *m_p == ']') {
      ++m_p;
      return result;
    }
    for (;;) {
      if constexpr (mode == Walk::build) {
        result.template get_ref<J::array_t &>().push_back(walk<mode>(depth));
      } else {
        walk<mode>(depth);
      }
      skip_space();
      if (m_p < m_end && *m_p == ',') {
        ++m_p;
        skip_space();
        continue;
      }
      expect(']', "expected ',' or ']'");
      return result;
    }
  }

  unsigned hex4() {
    if (m_end - m_p < 4) {
      fail("truncated \\u escape");
    }
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *m_p++;
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail("invalid \\u escape");
      }
    }
    return code;
  }

  static void append_utf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  void escape(std::string &out) {
    ++m_p; // '\\'
    if (m_p >= m_end) {
      fail("unterminated string");
    }
    const char c = *m_p++;
    switch (c) {
    case '"':
    case '\\':
    case '/':
      out += c;
      return;
    case 'b':
      out += '\b';
      return;
    case 'f':
      out += '\f';
      return;
    case 'n':
      out += '\n';
      return;
    case 'r':
      out += '\r';
      return;
    case 't':
      out += '\t';
      return;
    case 'u': {
      unsigned code = hex4();
      if (code >= 0xDC00 && code <= 0xDFFF) {
        fail("lone low surrogate");
      }
      if (code >= 0xD800 && code <= 0xDBFF) {
        if (m_end - m_p < 2 || m_p[0] != '\\' || m_p[1] != 'u') {
          fail("high surrogate without a low surrogate");
        }
        m_p += 2;
        const unsigned low = hex4();
        if (low < 0xDC00 || low > 0xDFFF) {
          fail("high surrogate without a low surrogate");
        }
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      append_utf8(out, code);
      return;
    }
    default:
      --m_p;
      fail("invalid escape");
    }
  }

  // One UTF-8 sequence starting at m_p (a byte >= 0x80), validated as nlohmann does: no
  // overlong forms, no encoded surrogates, nothing above U+10FFFF.
  void utf8_sequence() {
    const auto byte = [this](ptrdiff_t i) { return static_cast<unsigned char>(m_p[i]); };
    const unsigned char lead = byte(0);
    const ptrdiff_t left = m_end - m_p;
    auto continuation = [&](ptrdiff_t i, unsigned char low = 0x80, unsigned char high = 0xBF) {
      return i < left && byte(i) >= low && byte(i) <= high;
    };
    if (lead >= 0xC2 && lead <= 0xDF && continuation(1)) {
      m_p += 2;
    } else if (lead == 0xE0 && continuation(1, 0xA0) && continuation(2)) {
      m_p += 3;
    } else if (((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) &&
               continuation(1) && continuation(2)) {
      m_p += 3;
    } else if (lead == 0xED && continuation(1, 0x80, 0x9F) && continuation(2)) {
      m_p += 3;
    } else if (lead == 0xF0 && continuation(1, 0x90) && continuation(2) && continuation(3)) {
      m_p += 4;
    } else if (lead >= 0xF1 && lead <= 0xF3 && continuation(1) && continuation(2) &&
               continuation(3)) {
      m_p += 4;
    } else if (lead == 0xF4 && continuation(1, 0x80, 0x8F) && continuation(2) && continuation(3)) {
      m_p += 4;
    } else {
      fail("invalid UTF-8");
    }
  }

  // Past the run of plain ASCII at m_p: sixteen bytes a step with SSE2 (a signed compare below
  // 0x20 also catches every byte >= 0x80), a table otherwise.
  void skip_plain() {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (m_end - m_p >= 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(m_p));
      const __m128i special =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
                       _mm_cmplt_epi8(bytes, space));
      const int mask = _mm_movemask_epi8(special);
      if (mask != 0) {
        m_p += __builtin_ctz(static_cast<unsigned>(mask));
        return;
      }
      m_p += 16;
    }
#endif
    while (m_p < m_end && k_plain[static_cast<unsigned char>(*m_p)]) {
      ++m_p;
    }
  }

  // The string at m_p (its opening quote), decoded onto `out` with Walk::build; Walk::check
  // checks the same and keeps nothing (escapes are decoded into m_discard, cleared first).
  template <Walk mode> void string(std::string &out) {
    ++m_p; // '"'
    const char *run = m_p;
    for (;;) {
      skip_plain();
      if (m_p >= m_end) {
        fail("unterminated string");
      }
      const auto c = static_cast<unsigned char>(*m_p);
      if (k_plain[c]) {
        ++m_p;
      } else if (c == '"') {
        if constexpr (mode == Walk::build) {
          out.append(run, m_p);
        }
        ++m_p;
        return;
      } else if (c == '\\') {
        if constexpr (mode == Walk::build) {
          out.append(run, m_p);
          escape(out);
          run = m_p;
        } else {
          out.clear();
          escape(out);
        }
      } else if (c < 0x20) {
        fail("control character in a string");
      } else {
        utf8_sequence();
      }
    }
  }

  J number() {
    const char *start = m_p;
    const bool negative = *m_p == '-';
    if (negative) {
      ++m_p;
    }
    auto digits = [this] {
      const char *first = m_p;
      while (m_p < m_end && *m_p >= '0' && *m_p <= '9') {
        ++m_p;
      }
      return m_p - first;
    };
    if (m_p >= m_end || *m_p < '0' || *m_p > '9') {
      fail("invalid number");
    }
    if (*m_p == '0') {
      ++m_p;
    } else {
      digits();
    }
    bool integer = true;
    if (m_p < m_end && *m_p == '.') {
      ++m_p;
      integer = false;
      if (digits() == 0) {
        fail("invalid number");
      }
    }
    if (m_p < m_end && (*m_p == 'e' || *m_p == 'E')) {
      ++m_p;
      integer = false;
      if (m_p < m_end && (*m_p == '+' || *m_p == '-')) {
        ++m_p;
      }
      if (digits() == 0) {
        fail("invalid number");
      }
    }
    if (integer) {
      if (negative) {
        std::int64_t value = 0;
        if (std::from_chars(start, m_p, value).ec == std::errc()) {
          return J(value);
        }
      } else {
        std::uint64_t value = 0;
        if (std::from_chars(start, m_p, value).ec == std::errc()) {
          return J(value);
        }
      }
    }
    double value = 0;
    const auto parsed = std::from_chars(start, m_p, value);
    if (parsed.ec == std::errc::result_out_of_range) {
      // Beyond double's range: what strtod (and so nlohmann) gives, +-inf or 0.
      value = std::strtod(std::string(start, m_p).c_str(), nullptr);
    } else if (parsed.ec != std::errc()) {
      fail("invalid number");
    }
    return J(value);
  }

  const char *m_begin;
  const char *m_p;
  const char *m_end;
  std::vector<std::pair<std::string, J>> &m_members; // of the objects being parsed, a stack
  bool m_score = false;                              // the top-level "op" so far is "score"
  bool m_in_score_row = false;                       // parsing that score request's "row"
  std::string m_discard;
};

} // namespace

OrderedJson parse_json(std::string_view text) {
  thread_local std::vector<std::pair<std::string, OrderedJson>> members; // reused: no growth
  return Parser(text, members).document();
}

namespace {
// RequestLine's member lists, kept for the next line of the thread (no allocation per request).
thread_local std::vector<RequestLine::Member> t_spare_members;
} // namespace

RequestLine::RequestLine(std::string_view text) : m_text(text) {
  thread_local std::vector<std::pair<std::string, OrderedJson>> members;
  m_members.swap(t_spare_members);
  m_members.clear();
  m_members.reserve(24);
  m_object = Parser(text, members).scan_object(m_members);
  if (!m_object) {
    m_whole = parse_json(text);
  }
}

RequestLine::~RequestLine() {
  m_members.clear();
  if (m_members.capacity() > t_spare_members.capacity()) {
    m_members.swap(t_spare_members);
  }
}

std::optional<std::string_view> RequestLine::text(std::string_view key) const {
  const Member *found = member(key);
  if (found == nullptr) {
    return std::nullopt;
  }
  return std::string_view(found->begin, static_cast<size_t>(found->end - found->begin));
}

const RequestLine::Member *RequestLine::member(std::string_view key) const {
  for (const Member &m : m_members) {
    if (m.key == key) {
      return &m;
    }
  }
  return nullptr;
}

RequestLine::Member *RequestLine::member(std::string_view key) {
  return const_cast<Member *>(std::as_const(*this).member(key));
}

OrderedJson RequestLine::materialize(const Member &member) const {
  thread_local std::vector<std::pair<std::string, OrderedJson>> members;
  members.clear();
  return Parser(m_text.data(), member.begin, member.end, members).member_value(member.score_row);
}

const OrderedJson *RequestLine::find(std::string_view key) {
  Member *found = member(key);
  if (found == nullptr) {
    return nullptr;
  }
  if (!found->value) {
    found->value = materialize(*found);
  }
  return &*found->value;
}

std::optional<std::string_view> RequestLine::plain_string(std::string_view key) const {
  const Member *found = member(key);
  if (found == nullptr || *found->begin != '"') {
    return std::nullopt;
  }
  const std::string_view inner(found->begin + 1,
                               static_cast<size_t>(found->end - found->begin - 2));
  if (inner.find('\\') != std::string_view::npos) {
    return std::nullopt;
  }
  return inner;
}

OrderedJson RequestLine::take(std::string_view key, OrderedJson fallback) {
  Member *found = member(key);
  if (found == nullptr) {
    return fallback;
  }
  OrderedJson value = found->value ? std::move(*found->value) : materialize(*found);
  found->value = OrderedJson();
  return value;
}

OrderedJson RequestLine::build() {
  if (!m_object) {
    return std::move(m_whole);
  }
  OrderedJson result(OrderedJson::value_t::object);
  auto &out = result.get_ref<OrderedJson::object_t &>();
  out.reserve(m_members.size());
  for (Member &m : m_members) {
    out.emplace_back(std::move(m.key), m.value ? std::move(*m.value) : materialize(m));
  }
  m_members.clear();
  return result;
}

} // namespace pb::environments_runtime
