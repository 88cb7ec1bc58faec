// SPDX-License-Identifier: MIT
// The lossless TOML 1.0 parser: one pass over the text that emits a token for every byte,
// records lines, keys and values with their byte spans, and builds the semantic model with
// TOML's definition rules (no table defined twice, no extending inline tables or static arrays,
// dotted keys never reopening a table defined elsewhere).
#include "model.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <span>

namespace pb::toml {
namespace detail {

namespace {

// Below this many members a linear search is fastest.
constexpr std::size_t k_index_from = 12;

std::size_t slot_of(std::string_view key, std::size_t mask) {
  return std::hash<std::string_view>{}(key)&mask;
}

} // namespace

ChildList::~ChildList() {
  delete index();
  std::free(static_cast<void *>(m_block)); // a realloc'ed block of trivially copyable pointers
}

std::size_t ChildList::size() const {
  if (m_block == nullptr) {
    return 0;
  }
  std::uint32_t count = 0;
  std::memcpy(&count, static_cast<const void *>(m_block), sizeof count);
  return count;
}

std::vector<Node *> *ChildList::index() const {
  if (m_block == nullptr) {
    return nullptr;
  }
  std::vector<Node *> *slots = nullptr;
  std::memcpy(&slots, static_cast<const void *>(m_block + 1), sizeof slots);
  return slots;
}

void ChildList::push_back(Node *node, bool indexed) {
  std::uint32_t header[2] = {0, 0}; // size, capacity
  if (m_block != nullptr) {
    std::memcpy(header, static_cast<const void *>(m_block), sizeof header);
  }
  if (header[0] == header[1]) {
    const bool first = m_block == nullptr;
    header[1] = header[1] == 0 ? 4 : header[1] * 2;
    void *grown =
        std::realloc(static_cast<void *>(m_block), (header[1] + k_header) * sizeof(Node *));
    if (grown == nullptr) {
      throw std::bad_alloc();
    }
    m_block = static_cast<Node **>(grown);
    if (first) {
      m_block[1] = nullptr; // no index yet
    }
  }
  m_block[k_header + header[0]] = node;
  ++header[0];
  std::memcpy(static_cast<void *>(m_block), header, sizeof header);
  if (!indexed || header[0] < k_index_from) {
    return;
  }
  std::vector<Node *> *slots = index();
  // At most half full; growing rebuilds (amortised linear, like the list itself).
  if (slots == nullptr || header[0] * 2 > slots->size()) {
    reindex();
    return;
  }
  const std::size_t mask = slots->size() - 1;
  std::size_t i = slot_of(node->name, mask);
  while ((*slots)[i] != nullptr) {
    i = (i + 1) & mask;
  }
  (*slots)[i] = node;
}

void ChildList::reindex() {
  std::vector<Node *> *slots = index();
  if (slots == nullptr) {
    slots = new std::vector<Node *>();
    std::memcpy(static_cast<void *>(m_block + 1), &slots, sizeof slots);
  }
  std::size_t capacity = 32;
  while (capacity < size() * 2) {
    capacity *= 2;
  }
  slots->assign(capacity, nullptr);
  const std::size_t mask = capacity - 1;
  for (Node *child : *this) {
    std::size_t i = slot_of(child->name, mask);
    while ((*slots)[i] != nullptr) {
      i = (i + 1) & mask;
    }
    (*slots)[i] = child;
  }
}

Node *ChildList::find(std::string_view key) const {
  if (const std::vector<Node *> *slots = index()) {
    const std::size_t mask = slots->size() - 1;
    for (std::size_t i = slot_of(key, mask);; i = (i + 1) & mask) {
      Node *slot = (*slots)[i];
      if (slot == nullptr || slot->name == key) {
        return slot;
      }
    }
  }
  for (Node *child : *this) {
    if (child->name == key) {
      return child;
    }
  }
  return nullptr;
}

void Node::add(Node *child) {
  child->parent = this;
  children.push_back(child, type == Type::table);
}

Node *NodeArena::make() {
  if (m_chunks.empty() || m_used == m_chunk_capacity) {
    // Chunks grow with the document: few allocations for big files, little waste for small.
    m_chunk_capacity = m_chunks.empty() ? 16 : std::min<std::size_t>(m_chunk_capacity * 2, 16384);
    m_chunks.push_back(std::make_unique<Node[]>(m_chunk_capacity));
    m_used = 0;
  }
  ++m_size;
  return &m_chunks.back()[m_used++];
}

Position Parsed::position(std::uint32_t offset) const {
  const auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
  const auto line = static_cast<std::uint32_t>(it - line_starts.begin());
  std::uint32_t column = offset - line_starts[line - 1] + 1;
  if (line == 1 && tree.body_begin > 0 && column > tree.body_begin) {
    column -= tree.body_begin; // the BOM is not a column
  }
  return {line, column};
}

Position Parsed::position_of(const Node &node) const {
  if (node.value != npos) {
    return position(tree.values[node.value].span.begin);
  }
  if (node.header != npos) {
    return position(tree.headers[node.header].span.begin);
  }
  if (node.origin == Origin::array_of_tables && !node.children.empty()) {
    return position_of(*node.children.front());
  }
  if (node.name_offset != npos) {
    return position(node.name_offset);
  }
  return {};
}

namespace {

using syntax::KeyValue;
using syntax::Line;
using syntax::LineKind;
using syntax::Span;
using syntax::TokenKind;

// One segment of a (possibly dotted) key with its decoded name, while parsing.
struct KeySegment {
  Span span;
  std::string_view name; // a view of the text, or of Parsed::key_store for escaped keys
};
using Key = std::span<const KeySegment>;

constexpr int max_depth = 256;

bool is_bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_word_char(char c) {
  return is_bare_key_char(c) || c == '.' || c == '+' || c == ':';
}

// Offset of the first byte that is not well-formed UTF-8, or npos.
std::uint32_t invalid_utf8_at(std::string_view s) {
  const auto *b = reinterpret_cast<const unsigned char *>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = b[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return static_cast<std::uint32_t>(i);
    }
    if (i + len > n) {
      return static_cast<std::uint32_t>(i);
    }
    for (std::size_t k = 1; k < len; ++k) {
      if ((b[i + k] & 0xC0) != 0x80) {
        return static_cast<std::uint32_t>(i);
      }
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    const bool overlong =
        (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return static_cast<std::uint32_t>(i);
    }
    i += len;
  }
  return npos;
}

void append_utf8(std::string &out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Reads one string token at s[p] (its opening quote), appending the decoded content to `out`;
// leaves p after the closing quotes. Shared by the parser (which validates every string) and
// decode_string() (which decodes one on demand, when the typed values are built).
struct StringScanner {
  std::string_view s;
  std::uint32_t n;
  std::uint32_t &p;

  [[noreturn]] void fail(std::uint32_t at, std::string message) const {
    throw ParseFailure{std::min(at, n), std::move(message)};
  }
  char peek(std::uint32_t k = 0) const { return p + k < n ? s[p + k] : '\0'; }

  std::uint32_t hex_escape(std::uint32_t digits) {
    std::uint32_t cp = 0;
    const std::uint32_t b = p - 2;
    for (std::uint32_t k = 0; k < digits; ++k) {
      const char c = peek();
      if (!is_hex(c)) {
        fail(p, fmt::format("expected {} hex digits in the unicode escape", digits));
      }
      cp = cp * 16 + static_cast<std::uint32_t>(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
      ++p;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      fail(b, "unicode escape is not a Unicode scalar value");
    }
    return cp;
  }

  void basic_string(bool multiline, std::string &out) { string_body<'"'>(multiline, out); }
  void literal_string(bool multiline, std::string &out) { string_body<'\''>(multiline, out); }

  // Either kind of string: Quote is '"' (basic, with backslash escapes) or '\'' (literal).
  template <char Quote> void string_body(bool multiline, std::string &out) {
    constexpr bool escapes = Quote == '"';
    const std::uint32_t b = p;
    p += multiline ? 3 : 1;
    if (multiline && (peek() == '\n' || (peek() == '\r' && peek(1) == '\n'))) {
      p += peek() == '\n' ? 1 : 2; // a newline right after the opening quotes is trimmed
    }
    for (;;) {
      if (p >= n) {
        fail(b, "unterminated string");
      }
      const auto c = static_cast<unsigned char>(s[p]);
      if (c == Quote) {
        if (!multiline) {
          ++p;
          break;
        }
        std::uint32_t quotes = 0;
        while (peek(quotes) == Quote) {
          ++quotes;
        }
        if (quotes >= 3) {
          if (quotes > 5) {
            fail(p, "too many quotes at the end of a multi-line string");
          }
          out.append(quotes - 3, Quote);
          p += quotes;
          break;
        }
        out.append(quotes, Quote);
        p += quotes;
      } else if (escapes && c == '\\') {
        escape(multiline, out);
      } else if (c == '\n') {
        if (!multiline) {
          fail(p, "newline in a single-line string");
        }
        out += '\n';
        ++p;
      } else if (c == '\r') {
        if (!multiline || peek(1) != '\n') {
          fail(p, "carriage return in a string");
        }
        out += '\n'; // CRLF in a multi-line string reads as LF (as toml++ does)
        p += 2;
      } else if ((c < 0x20 && c != '\t') || c == 0x7F) {
        fail(p, "control character in a string");
      } else {
        const std::uint32_t run = p;
        while (p < n) {
          const auto d = static_cast<unsigned char>(s[p]);
          if (d == Quote || (escapes && d == '\\') || (d < 0x20 && d != '\t') || d == 0x7F) {
            break;
          }
          ++p;
        }
        out.append(s.substr(run, p - run));
      }
    }
  }

  // A backslash escape at p in a basic string, decoded into `out`.
  void escape(bool multiline, std::string &out) {
    ++p;
    const char e = peek();
    ++p;
    switch (e) {
    case 'b':
      out += '\b';
      break;
    case 't':
      out += '\t';
      break;
    case 'n':
      out += '\n';
      break;
    case 'f':
      out += '\f';
      break;
    case 'r':
      out += '\r';
      break;
    case '"':
      out += '"';
      break;
    case '\\':
      out += '\\';
      break;
    case 'u':
      append_utf8(out, hex_escape(4));
      break;
    case 'U':
      append_utf8(out, hex_escape(8));
      break;
    default:
      if (multiline && (e == ' ' || e == '\t' || e == '\n' || e == '\r')) {
        --p;
        while (peek() == ' ' || peek() == '\t') {
          ++p;
        }
        if (!(peek() == '\n' || (peek() == '\r' && peek(1) == '\n'))) {
          fail(p, "a line-ending backslash must be followed only by whitespace");
        }
        while (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
               (peek() == '\r' && peek(1) == '\n')) {
          ++p;
        }
      } else {
        fail(p - 2, "invalid escape sequence");
      }
    }
  }
};

class Parser {
public:
  Parser(std::string_view text, Parsed &out, bool record_tokens, std::vector<ParseFailure> *errors)
      : s(text), n(static_cast<std::uint32_t>(text.size())), m_out(out), t(out.tree),
        m_record_tokens(record_tokens), m_errors(errors) {}

  void run() {
    if (s.size() >= UINT32_MAX - 1) {
      fail(0, "file too large");
    }
    index_lines();
    for (auto bad = invalid_utf8_at(s); bad != npos;) {
      if (m_errors == nullptr) {
        fail(bad, "invalid UTF-8");
      }
      // Each line with invalid UTF-8 once; the parser reads on (strings and comments take the
      // bytes as they are, elsewhere they fail on the same line, which check() reports once).
      m_errors->push_back({bad, "invalid UTF-8"});
      const std::uint32_t next = next_line(bad);
      const auto more = invalid_utf8_at(s.substr(next));
      bad = more == npos ? npos : next + more;
    }
    reserve();
    t.text_size = n;
    m_out.root = make(Type::table, Origin::root);
    m_current = m_out.root;
    if (s.substr(0, 3) == "\xEF\xBB\xBF") {
      p = 3;
      emit(TokenKind::bom, 0);
      t.body_begin = 3;
    }
    while (p < n) {
      if (m_errors == nullptr) {
        top_level_line();
        continue;
      }
      const std::int32_t section = m_section;
      try {
        top_level_line();
      } catch (ParseFailure &failure) {
        m_errors->push_back(std::move(failure));
        recover(section);
      }
    }
    m_out.key_value_line.assign(t.key_values.size(), npos);
    m_out.header_line.assign(t.headers.size(), npos);
    for (std::uint32_t i = 0; i < t.lines.size(); ++i) {
      const auto &line = t.lines[i];
      if (line.kind == LineKind::key_value) {
        m_out.key_value_line[line.item] = i;
      } else if (line.kind == LineKind::table || line.kind == LineKind::array_table) {
        m_out.header_line[line.item] = i;
      }
    }
  }

private:
  std::string_view s;
  std::uint32_t n;
  std::uint32_t p = 0;
  Parsed &m_out;
  syntax::Tree &t;
  Node *m_current = nullptr;
  std::int32_t m_section = 0;
  std::int32_t m_section_seq = 0;
  std::uint32_t m_token_end = 0;
  bool m_record_tokens = false;
  std::vector<KeySegment> m_keys; // a stack: each key being parsed owns its top segments
  // Stacks of the children and commas of the arrays and inline tables being parsed; a finished
  // one moves its top entries to the tree's flat lists.
  std::vector<std::uint32_t> m_child_stack;
  std::vector<std::uint32_t> m_comma_stack;
  std::string m_scratch; // decoded string contents, reused (values are decoded on demand)
  // Collecting every error (check()) instead of throwing the first. For recover(): whether a
  // header is being read, and where the multi-line string being read began (npos: none).
  std::vector<ParseFailure> *m_errors = nullptr;
  bool m_in_header = false;
  std::uint32_t m_open_multiline = npos;

  [[noreturn]] void fail(std::uint32_t at, std::string message) {
    throw ParseFailure{std::min(at, n), std::move(message)};
  }

  // Where the physical line after the one holding `offset` begins (n after the last line).
  std::uint32_t next_line(std::uint32_t offset) const {
    const auto &starts = m_out.line_starts;
    const auto it = std::upper_bound(starts.begin(), starts.end(), offset);
    return it == starts.end() ? n : *it;
  }

  // After a failed top-level line (check() only): go on at the next line that starts a header
  // or a `key =`, past the rest of a multi-line string the error was in, in the state a line
  // starts in. The keys under a header that failed go into a table of their own, checked
  // against each other but never against the table before it.
  void recover(std::int32_t section) {
    std::uint32_t from = std::max(p, m_errors->back().offset);
    if (m_open_multiline != npos) {
      from = multiline_end(m_open_multiline, from);
      m_open_multiline = npos;
    }
    p = next_line(from);
    while (p < n && !starts_statement(p)) {
      p = next_line(p);
    }
    m_token_end = p;
    m_keys.clear();
    m_child_stack.clear();
    m_comma_stack.clear();
    m_section = section;
    if (m_in_header) {
      m_in_header = false;
      m_current = make(Type::table, Origin::header);
      m_section = ++m_section_seq;
    }
  }

  // Where the multi-line string opened at `open` ends, searching from `from` (n when unclosed).
  std::uint32_t multiline_end(std::uint32_t open, std::uint32_t from) const {
    const char quote = s[open];
    const std::string_view close = quote == '"' ? R"(""")" : "'''";
    for (std::uint32_t i = std::max(from, open + 3); i < n; ++i) {
      if (quote == '"' && s[i] == '\\') {
        ++i;
      } else if (s.substr(i, 3) == close) {
        return i + 3;
      }
    }
    return n;
  }

  // Whether the line at `b` starts like a header, `[key` (keys dotted or quoted) followed by
  // brackets not followed by a comma, or the end of the line, or like a key/value, `key =`.
  // Lines of a broken array seldom do (`"x",`, `[1, 2],`, `[3],`).
  bool starts_statement(std::uint32_t b) const {
    const auto blanks = [this](std::uint32_t i) {
      while (i < n && (s[i] == ' ' || s[i] == '\t')) {
        ++i;
      }
      return i;
    };
    std::uint32_t i = blanks(b);
    const bool header = i < n && s[i] == '[';
    if (header) {
      i = blanks(i + (i + 1 < n && s[i + 1] == '[' ? 2 : 1));
    }
    for (;;) {
      if (i < n && is_bare_key_char(s[i])) {
        while (i < n && is_bare_key_char(s[i])) {
          ++i;
        }
      } else if (i < n && (s[i] == '"' || s[i] == '\'')) {
        const char quote = s[i++];
        while (i < n && s[i] != quote && s[i] != '\n') {
          i += quote == '"' && s[i] == '\\' && i + 1 < n && s[i + 1] != '\n' ? 2 : 1;
        }
        if (i >= n || s[i] != quote) {
          return false;
        }
        ++i;
      } else {
        return false;
      }
      i = blanks(i);
      if (i >= n || s[i] != '.') {
        break;
      }
      i = blanks(i + 1);
    }
    if (!header) {
      return i < n && s[i] == '=';
    }
    const std::uint32_t key_end = i;
    while (i < n && s[i] == ']') {
      ++i;
    }
    const bool closed = i > key_end;
    i = blanks(i);
    return i >= n || s[i] == '\n' || s[i] == '\r' || s[i] == '#' || (closed && s[i] != ',');
  }

  // Upper bounds, so that the flat lists never grow by copying (a grown vector briefly holds
  // both copies, which is what sets the peak). Capacity that is never written is never touched,
  // so generous bounds cost address space, not resident memory.
  void reserve() {
    const std::size_t lines = m_out.line_starts.size(); // physical lines: one Line each at most
    t.lines.reserve(lines);
    t.headers.reserve(lines);
    t.key_values.reserve(lines + n / 16);
    t.values.reserve(lines + n / 8);
    t.key_segments.reserve(lines + n / 8);
    t.child_ids.reserve(n / 8 + 4);
    t.comma_offsets.reserve(n / 8 + 4);
    if (m_record_tokens) {
      t.token_begin.reserve(n / 2 + 16);
      t.token_kind.reserve(n / 2 + 16);
    }
  }

  void index_lines() {
    auto &starts = m_out.line_starts;
    const char *data = s.data();
    starts.reserve(static_cast<std::size_t>(std::count(data, data + n, '\n')) + 1);
    starts.push_back(0);
    const char *end = data + n;
    for (const char *c = data; (c = static_cast<const char *>(std::memchr(c, '\n', end - c)));
         ++c) {
      starts.push_back(static_cast<std::uint32_t>(c - data + 1));
    }
  }

  std::string position_text(const Node &node) const {
    const Position pos = m_out.position_of(node);
    if (pos.line == 0) {
      return {};
    }
    return fmt::format(" (at line {}, column {})", pos.line, pos.column);
  }

  Node *make(Type type, Origin origin) {
    Node *node = m_out.nodes.make();
    node->type = type;
    node->origin = origin;
    return node;
  }

  // Scans a string token at p (validating and decoding it into m_scratch) and emits it.
  void string_token(bool literal, bool multiline) {
    const std::uint32_t b = p;
    m_scratch.clear();
    StringScanner scanner{s, n, p};
    m_open_multiline = multiline ? b : npos;
    if (literal) {
      scanner.literal_string(multiline, m_scratch);
      emit(multiline ? TokenKind::multiline_literal_string : TokenKind::literal_string, b);
    } else {
      scanner.basic_string(multiline, m_scratch);
      emit(multiline ? TokenKind::multiline_basic_string : TokenKind::basic_string, b);
    }
    m_open_multiline = npos;
  }

  // The decoded name of the quoted key just scanned from `b`: a view of the text when it is
  // spelled as it reads (no escapes), else a copy kept in the key store.
  std::string_view quoted_key_name(std::uint32_t b) {
    const std::string_view spelled = s.substr(b + 1, p - b - 2);
    if (m_scratch == spelled) {
      return spelled;
    }
    return m_out.key_store.emplace_back(m_scratch);
  }

  char peek(std::uint32_t k = 0) const { return p + k < n ? s[p + k] : '\0'; }
  bool at(std::string_view word) const { return s.substr(p, word.size()) == word; }
  void emit(TokenKind kind, std::uint32_t begin) {
    if (begin != m_token_end || p <= begin) {
      fail(begin, "internal error: tokens do not tile the input");
    }
    if (m_record_tokens) {
      t.token_begin.push_back(begin);
      t.token_kind.push_back(kind);
    }
    m_token_end = p;
  }

  void skip_ws() {
    const std::uint32_t b = p;
    while (p < n && (s[p] == ' ' || s[p] == '\t')) {
      ++p;
    }
    if (p > b) {
      emit(TokenKind::whitespace, b);
    }
  }

  bool newline() {
    const std::uint32_t b = p;
    if (peek() == '\n') {
      ++p;
      ++t.lf_newlines;
    } else if (peek() == '\r') {
      if (peek(1) != '\n') {
        fail(p, "carriage return not followed by a line feed");
      }
      p += 2;
      ++t.crlf_newlines;
    } else {
      return false;
    }
    emit(TokenKind::newline, b);
    return true;
  }

  void comment() {
    const std::uint32_t b = p++;
    while (p < n) {
      const auto c = static_cast<unsigned char>(s[p]);
      if (c == '\n' || (c == '\r' && peek(1) == '\n')) {
        break;
      }
      if ((c < 0x20 && c != '\t') || c == 0x7F) {
        fail(p, "control character in a comment");
      }
      ++p;
    }
    emit(TokenKind::comment, b);
  }

  void top_level_line() {
    Line line;
    line.begin = p;
    skip_ws();
    const char c = peek();
    Span *comment_span = nullptr;
    if (p >= n || c == '\n' || c == '\r') {
      line.kind = LineKind::blank;
    } else if (c == '#') {
      line.kind = LineKind::comment;
      comment();
    } else if (c == '[') {
      m_in_header = true;
      line.item = header();
      m_in_header = false;
      line.kind = t.headers[line.item].array ? LineKind::array_table : LineKind::table;
      comment_span = nullptr;
    } else {
      line.kind = LineKind::key_value;
      line.item = key_value(m_current, 0, false);
    }
    if (line.kind == LineKind::table || line.kind == LineKind::array_table ||
        line.kind == LineKind::key_value) {
      skip_ws();
      if (peek() == '#') {
        const std::uint32_t b = p;
        comment();
        if (line.kind == LineKind::key_value) {
          comment_span = &t.key_values[line.item].comment;
        } else {
          comment_span = &t.headers[line.item].comment;
        }
        *comment_span = {b, p};
      }
    }
    line.content_end = p;
    if (p < n && !newline()) {
      fail(p,
           line.kind == LineKind::key_value ? "expected a newline or a comment after the value"
                                            : "expected a newline or a comment after the header");
    }
    line.end = p;
    t.lines.push_back(line);
  }

  // A simple key: bare, "basic" or 'literal'.
  KeySegment simple_key() {
    KeySegment seg;
    seg.span.begin = p;
    const char c = peek();
    if (is_bare_key_char(c)) {
      while (p < n && is_bare_key_char(s[p])) {
        ++p;
      }
      seg.name = s.substr(seg.span.begin, p - seg.span.begin);
      emit(TokenKind::bare_key, seg.span.begin);
    } else if (c == '"') {
      if (at("\"\"\"")) {
        fail(p, "a multi-line string cannot be a key");
      }
      string_token(false, false);
      seg.name = quoted_key_name(seg.span.begin);
    } else if (c == '\'') {
      if (at("'''")) {
        fail(p, "a multi-line string cannot be a key");
      }
      string_token(true, false);
      seg.name = quoted_key_name(seg.span.begin);
    } else if (p >= n) {
      fail(p, "expected a key, found the end of the file");
    } else if (c == '\n' || c == '\r') {
      fail(p, "expected a key, found the end of the line");
    } else {
      fail(p, fmt::format("expected a key, found '{}'", printable(c)));
    }
    seg.span.end = p;
    return seg;
  }

  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      return fmt::format("\\x{:02X}", u);
    }
    return std::string(1, c);
  }

  // Parses a dotted key onto m_keys; returns its span.
  Span dotted_key() {
    Span span{p, p};
    const std::size_t base = m_keys.size();
    for (;;) {
      m_keys.push_back(simple_key());
      span.end = p;
      skip_ws();
      if (peek() != '.') {
        break;
      }
      ++p;
      emit(TokenKind::dot, p - 1);
      skip_ws();
      if (m_keys.size() - base > max_depth) {
        fail(p, "key has too many parts");
      }
    }
    return span;
  }

  // Records the segments m_keys[base..] in the tree.
  void store_key(std::size_t base, std::uint32_t &first, std::uint32_t &count) {
    first = static_cast<std::uint32_t>(t.key_segments.size());
    count = static_cast<std::uint32_t>(m_keys.size() - base);
    for (std::size_t i = base; i < m_keys.size(); ++i) {
      t.key_segments.push_back(m_keys[i].span);
    }
  }

  static std::string joined(Key segments, std::size_t count) {
    std::string out;
    for (std::size_t i = 0; i < count; ++i) {
      if (i > 0) {
        out += '.';
      }
      out += segments[i].name;
    }
    return out;
  }

  std::uint32_t header() {
    const std::uint32_t id = static_cast<std::uint32_t>(t.headers.size());
    t.headers.emplace_back();
    syntax::Header h;
    h.span.begin = p;
    h.array = at("[[");
    p += h.array ? 2 : 1;
    emit(TokenKind::bracket_open, h.span.begin);
    skip_ws();
    const std::size_t base = m_keys.size();
    dotted_key();
    if (h.array ? !at("]]") : peek() != ']') {
      fail(p,
           h.array ? "expected ']]' to close the array-of-tables header"
                   : "expected ']' to close the table header");
    }
    const std::uint32_t b = p;
    p += h.array ? 2 : 1;
    emit(TokenKind::bracket_close, b);
    h.span.end = p;
    store_key(base, h.key_first, h.key_count);
    define_header(h, Key(m_keys).subspan(base), id);
    m_keys.resize(base);
    t.headers[id] = std::move(h);
    return id;
  }

  void define_header(const syntax::Header &h, Key key, std::uint32_t id) {
    Node *table = m_out.root;
    for (std::size_t i = 0; i + 1 < key.size(); ++i) {
      const auto &seg = key[i];
      Node *child = table->find(seg.name);
      if (child == nullptr) {
        child = make(Type::table, Origin::implicit);
        child->name = seg.name;
        table->add(child);
      } else if (child->origin == Origin::array_of_tables) {
        child = child->children.back();
      } else if (child->type != Type::table) {
        fail(seg.span.begin,
             fmt::format("key '{}' is {}{}, not a table",
                         joined(key, i + 1),
                         article_type(*child),
                         position_text(*child)));
      } else if (child->frozen) {
        fail(seg.span.begin,
             fmt::format("inline table '{}'{} cannot be extended",
                         joined(key, i + 1),
                         position_text(*child)));
      }
      table = child;
    }
    const auto &last = key.back();
    Node *child = table->find(last.name);
    if (!h.array) {
      if (child == nullptr) {
        child = make(Type::table, Origin::header);
        child->name = last.name;
        table->add(child);
      } else if (child->type == Type::table && child->origin == Origin::implicit &&
                 child->dotted_section < 0) {
        child->origin = Origin::header;
      } else if (child->type == Type::table) {
        fail(last.span.begin,
             fmt::format("table '{}' is already defined{}",
                         joined(key, key.size()),
                         position_text(*child)));
      } else {
        fail(last.span.begin,
             fmt::format("key '{}' is already {}{}",
                         joined(key, key.size()),
                         article_type(*child),
                         position_text(*child)));
      }
      child->header = id;
      m_current = child;
    } else {
      Node *array = child;
      if (array == nullptr) {
        array = make(Type::array, Origin::array_of_tables);
        array->name = last.name;
        table->add(array);
      } else if (array->origin != Origin::array_of_tables) {
        fail(last.span.begin,
             fmt::format("key '{}' is already {}{}, not an array of tables",
                         joined(key, key.size()),
                         article_type(*array),
                         position_text(*array)));
      }
      Node *element = make(Type::table, Origin::header);
      element->header = id;
      array->add(element);
      m_current = element;
    }
    m_section = ++m_section_seq;
  }

  // `key = value` into `table`; returns the KeyValue id.
  std::uint32_t key_value(Node *table, int depth, bool inline_entry) {
    const std::uint32_t id = static_cast<std::uint32_t>(t.key_values.size());
    t.key_values.emplace_back();
    KeyValue kv;
    kv.inline_entry = inline_entry;
    const std::size_t base = m_keys.size();
    kv.key_span = dotted_key();
    store_key(base, kv.key_first, kv.key_count);
    if (peek() != '=') {
      fail(p,
           p >= n || peek() == '\n' || peek() == '\r'
               ? "expected '=' after the key, found the end of the line"
               : "expected '=' after the key");
    }
    kv.equals = p++;
    emit(TokenKind::equals, kv.equals);
    skip_ws();
    auto [value_id, node] = value(depth);
    kv.value = value_id;
    node->key_value = id;
    attach(table, Key(m_keys).subspan(base), node);
    m_keys.resize(base);
    t.key_values[id] = std::move(kv);
    return id;
  }

  void attach(Node *table, Key key, Node *node) {
    for (std::size_t i = 0; i + 1 < key.size(); ++i) {
      const auto &seg = key[i];
      Node *child = table->find(seg.name);
      if (child == nullptr) {
        child = make(Type::table, Origin::dotted);
        child->name = seg.name;
        child->name_offset = seg.span.begin;
        child->dotted_section = m_section;
        table->add(child);
      } else {
        if (child->type != Type::table) {
          fail(seg.span.begin,
               fmt::format("key '{}' is already {}{}",
                           joined(key, i + 1),
                           article_type(*child),
                           position_text(*child)));
        }
        if (child->frozen) {
          fail(seg.span.begin,
               fmt::format("inline table '{}'{} cannot be extended",
                           joined(key, i + 1),
                           position_text(*child)));
        }
        if (child->origin == Origin::header ||
            (child->dotted_section >= 0 && child->dotted_section != m_section)) {
          fail(seg.span.begin,
               fmt::format("table '{}' is already defined{}; a dotted key cannot add to it",
                           joined(key, i + 1),
                           position_text(*child)));
        }
        child->dotted_section = m_section;
      }
      table = child;
    }
    const auto &last = key.back();
    if (const Node *existing = table->find(last.name)) {
      fail(last.span.begin,
           fmt::format(
               "key '{}' is already defined{}", joined(key, key.size()), position_text(*existing)));
    }
    node->name = last.name;
    table->add(node);
  }

  std::pair<std::uint32_t, Node *> value(int depth) {
    if (depth > max_depth) {
      fail(p, "values nested too deeply");
    }
    const std::uint32_t id = static_cast<std::uint32_t>(t.values.size());
    t.values.emplace_back();
    const std::uint32_t b = p;
    const char c = peek();
    Node *node = nullptr;
    if (c == '"') {
      node = make(Type::string, Origin::literal);
      string_token(false, at("\"\"\""));
    } else if (c == '\'') {
      node = make(Type::string, Origin::literal);
      string_token(true, at("'''"));
    } else if (c == '[') {
      node = array(depth, id);
    } else if (c == '{') {
      node = inline_table(depth, id);
    } else if (at("true") || at("false")) {
      p += c == 't' ? 4 : 5;
      emit(TokenKind::boolean, b);
      node = make(Type::boolean, Origin::literal);
    } else if (c == '+' || c == '-' || is_digit(c) || c == 'i' || c == 'n') {
      node = make(number_or_datetime(), Origin::literal);
    } else if (p >= n || c == '\n' || c == '\r') {
      fail(p, "expected a value, found the end of the line");
    } else {
      fail(p, fmt::format("expected a value, found '{}'", printable(c)));
    }
    const char next = peek();
    if (p < n && !(next == ' ' || next == '\t' || next == '\n' || next == '\r' || next == '#' ||
                   next == ',' || next == ']' || next == '}')) {
      fail(p, fmt::format("unexpected '{}' after the value", printable(next)));
    }
    node->value = id;
    auto &v = t.values[id];
    v.type = node->type;
    v.span = {b, p};
    return {id, node};
  }

  // Where an array's or inline table's children and commas start on the stacks.
  struct Composite {
    std::size_t children;
    std::size_t commas;
  };
  Composite open_composite() const { return {m_child_stack.size(), m_comma_stack.size()}; }
  void close_composite(Composite c, std::uint32_t id) {
    auto &v = t.values[id];
    v.children_first = static_cast<std::uint32_t>(t.child_ids.size());
    v.children_count = static_cast<std::uint32_t>(m_child_stack.size() - c.children);
    v.commas_first = static_cast<std::uint32_t>(t.comma_offsets.size());
    v.commas_count = static_cast<std::uint32_t>(m_comma_stack.size() - c.commas);
    t.child_ids.insert(t.child_ids.end(),
                       m_child_stack.begin() + static_cast<std::ptrdiff_t>(c.children),
                       m_child_stack.end());
    t.comma_offsets.insert(t.comma_offsets.end(),
                           m_comma_stack.begin() + static_cast<std::ptrdiff_t>(c.commas),
                           m_comma_stack.end());
    m_child_stack.resize(c.children);
    m_comma_stack.resize(c.commas);
  }

  void skip_array_trivia() {
    for (;;) {
      skip_ws();
      if (newline()) {
        continue;
      }
      if (peek() == '#') {
        comment();
        continue;
      }
      return;
    }
  }

  Node *array(int depth, std::uint32_t id) {
    const std::uint32_t b = p++;
    emit(TokenKind::bracket_open, b);
    Node *node = make(Type::array, Origin::literal);
    const Composite composite = open_composite();
    for (;;) {
      skip_array_trivia();
      if (peek() == ']') {
        break;
      }
      if (p >= n) {
        fail(b, "unterminated array");
      }
      auto [child_id, child] = value(depth + 1);
      m_child_stack.push_back(child_id);
      node->add(child);
      skip_array_trivia();
      if (peek() == ',') {
        m_comma_stack.push_back(p++);
        emit(TokenKind::comma, p - 1);
        continue;
      }
      if (peek() == ']') {
        break;
      }
      if (p >= n) {
        fail(b, "unterminated array");
      }
      fail(p, "expected ',' or ']' after an array element");
    }
    ++p;
    emit(TokenKind::bracket_close, p - 1);
    node->frozen = true;
    close_composite(composite, id);
    return node;
  }

  Node *inline_table(int depth, std::uint32_t id) {
    const std::uint32_t b = p++;
    emit(TokenKind::brace_open, b);
    Node *node = make(Type::table, Origin::literal);
    const std::int32_t saved_section = m_section;
    m_section = ++m_section_seq;
    const Composite composite = open_composite();
    skip_ws();
    if (peek() != '}') {
      for (;;) {
        if (peek() == '\n' || peek() == '\r') {
          fail(p, "an inline table must be on one line (TOML 1.0)");
        }
        if (peek() == '}') {
          fail(p, "trailing comma in an inline table (not allowed in TOML 1.0)");
        }
        const std::uint32_t entry = key_value(node, depth + 1, true);
        m_child_stack.push_back(entry);
        skip_ws();
        if (peek() == ',') {
          m_comma_stack.push_back(p++);
          emit(TokenKind::comma, p - 1);
          skip_ws();
          continue;
        }
        if (peek() == '}') {
          break;
        }
        if (p >= n) {
          fail(b, "unterminated inline table");
        }
        if (peek() == '\n' || peek() == '\r') {
          fail(p, "an inline table must be on one line (TOML 1.0)");
        }
        fail(p, "expected ',' or '}' after an inline table entry");
      }
    }
    ++p;
    emit(TokenKind::brace_close, p - 1);
    m_section = saved_section;
    freeze(node);
    close_composite(composite, id);
    return node;
  }

  static void freeze(Node *node) {
    node->frozen = true;
    for (Node *child : node->children) {
      if (!child->frozen) {
        freeze(child);
      }
    }
  }

  // Digits of `base` with single underscores between digits, starting at w[i]; returns the end.
  std::size_t digits(std::string_view w, std::size_t i, int base, std::uint32_t b) {
    auto ok = [base](char c) {
      return base == 16  ? is_hex(c)
             : base == 8 ? (c >= '0' && c <= '7')
             : base == 2 ? (c == '0' || c == '1')
                         : is_digit(c);
    };
    if (i >= w.size() || !ok(w[i])) {
      fail(b + static_cast<std::uint32_t>(i), "expected a digit");
    }
    while (i < w.size()) {
      if (ok(w[i])) {
        ++i;
      } else if (w[i] == '_' && i + 1 < w.size() && ok(w[i + 1])) {
        i += 2;
      } else if (w[i] == '_') {
        fail(b + static_cast<std::uint32_t>(i), "an underscore must be between two digits");
      } else {
        break;
      }
    }
    return i;
  }

  static bool fits_int64(std::string_view w, std::size_t from, int base, bool negative) {
    std::uint64_t value = 0;
    const std::uint64_t limit = negative ? 9223372036854775808ULL : 9223372036854775807ULL;
    for (std::size_t i = from; i < w.size(); ++i) {
      const char c = w[i];
      if (c == '_') {
        continue;
      }
      const auto d = static_cast<std::uint64_t>(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
      if (value > (limit - d) / static_cast<std::uint64_t>(base)) {
        return false;
      }
      value = value * static_cast<std::uint64_t>(base) + d;
    }
    return true;
  }

  Type number_or_datetime() {
    const std::uint32_t b = p;
    while (p < n && is_word_char(s[p])) {
      ++p;
    }
    // `1979-05-27 07:32:00`: a space may separate date and time.
    if (p - b == 10 && is_digit(s[b]) && s[b + 4] == '-' && peek() == ' ' && is_digit(peek(1)) &&
        is_digit(peek(2)) && peek(3) == ':') {
      ++p;
      while (p < n && is_word_char(s[p])) {
        ++p;
      }
    }
    const std::string_view w = s.substr(b, p - b);
    Type type;
    if (w.size() >= 5 && is_digit(w[0]) && is_digit(w[1]) && is_digit(w[2]) && is_digit(w[3]) &&
        w[4] == '-') {
      type = datetime(w, b);
    } else if (w.size() >= 3 && is_digit(w[0]) && is_digit(w[1]) && w[2] == ':') {
      if (time_of_day(w, 0, b) != w.size()) {
        fail(b, "invalid local time");
      }
      type = Type::local_time;
    } else {
      type = number(w, b);
    }
    emit(type == Type::integer    ? TokenKind::integer
         : type == Type::floating ? TokenKind::floating
                                  : TokenKind::datetime,
         b);
    return type;
  }

  Type number(std::string_view w, std::uint32_t b) {
    std::size_t i = 0;
    const bool negative = !w.empty() && w[0] == '-';
    if (!w.empty() && (w[0] == '+' || w[0] == '-')) {
      ++i;
    }
    const std::string_view rest = w.substr(i);
    if (rest == "inf" || rest == "nan") {
      return Type::floating;
    }
    if (rest.size() >= 2 && rest[0] == '0' &&
        (rest[1] == 'x' || rest[1] == 'o' || rest[1] == 'b')) {
      if (i > 0) {
        fail(b, "a sign is not allowed on hexadecimal, octal or binary integers");
      }
      const int base = rest[1] == 'x' ? 16 : rest[1] == 'o' ? 8 : 2;
      const std::size_t end = digits(w, 2, base, b);
      if (end != w.size()) {
        fail(b + static_cast<std::uint32_t>(end), "invalid integer");
      }
      if (!fits_int64(w, 2, base, false)) {
        fail(b, "integer does not fit in 64 bits");
      }
      return Type::integer;
    }
    if (i >= w.size() || !is_digit(w[i])) {
      fail(b, w.empty() ? "expected a value" : fmt::format("invalid value '{}'", w));
    }
    const std::size_t int_begin = i;
    std::size_t end = digits(w, i, 10, b);
    if (w[int_begin] == '0' && end - int_begin > 1) {
      fail(b + static_cast<std::uint32_t>(int_begin), "leading zeros are not allowed");
    }
    bool is_float = false;
    if (end < w.size() && w[end] == '.') {
      is_float = true;
      end = digits(w, end + 1, 10, b);
    }
    if (end < w.size() && (w[end] == 'e' || w[end] == 'E')) {
      is_float = true;
      ++end;
      if (end < w.size() && (w[end] == '+' || w[end] == '-')) {
        ++end;
      }
      end = digits(w, end, 10, b);
    }
    if (end != w.size()) {
      fail(b + static_cast<std::uint32_t>(end), fmt::format("invalid number '{}'", w));
    }
    if (!is_float && !fits_int64(w, int_begin, 10, negative)) {
      fail(b, "integer does not fit in 64 bits");
    }
    return is_float ? Type::floating : Type::integer;
  }

  static int two(std::string_view w, std::size_t i) {
    if (i + 2 > w.size() || !is_digit(w[i]) || !is_digit(w[i + 1])) {
      return -1;
    }
    return (w[i] - '0') * 10 + (w[i + 1] - '0');
  }

  // HH:MM:SS[.frac] at w[i]; returns the end offset.
  std::size_t time_of_day(std::string_view w, std::size_t i, std::uint32_t b) {
    const int hour = two(w, i);
    const int minute = i + 2 < w.size() && w[i + 2] == ':' ? two(w, i + 3) : -1;
    const int second = i + 5 < w.size() && w[i + 5] == ':' ? two(w, i + 6) : -1;
    if (hour < 0 || minute < 0 || second < 0) {
      fail(b + static_cast<std::uint32_t>(i), "invalid time: expected HH:MM:SS");
    }
    if (hour > 23 || minute > 59 || second > 60) {
      fail(b + static_cast<std::uint32_t>(i), "time out of range");
    }
    i += 8;
    if (i < w.size() && w[i] == '.') {
      ++i;
      const std::size_t f = i;
      while (i < w.size() && is_digit(w[i])) {
        ++i;
      }
      if (i == f) {
        fail(b + static_cast<std::uint32_t>(i), "expected digits after the decimal point");
      }
    }
    return i;
  }

  Type datetime(std::string_view w, std::uint32_t b) {
    const int year = two(w, 0) * 100 + two(w, 2);
    const int month = w.size() > 5 ? two(w, 5) : -1;
    const int day = w.size() > 8 && w[7] == '-' ? two(w, 8) : -1;
    if (month < 0 || day < 0) {
      fail(b, "invalid date: expected YYYY-MM-DD");
    }
    static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (month < 1 || month > 12 || day < 1 ||
        day > days[month - 1] + (month == 2 && leap ? 1 : 0)) {
      fail(b, "date out of range");
    }
    if (w.size() == 10) {
      return Type::local_date;
    }
    if (!(w[10] == 'T' || w[10] == 't' || w[10] == ' ')) {
      fail(b + 10, "invalid date-time: expected 'T' between date and time");
    }
    std::size_t i = time_of_day(w, 11, b);
    if (i == w.size()) {
      return Type::local_datetime;
    }
    if ((w[i] == 'Z' || w[i] == 'z') && i + 1 == w.size()) {
      return Type::offset_datetime;
    }
    if (w[i] == '+' || w[i] == '-') {
      const int hour = two(w, i + 1);
      const int minute = i + 3 < w.size() && w[i + 3] == ':' ? two(w, i + 4) : -1;
      if (hour >= 0 && minute >= 0 && i + 6 == w.size()) {
        if (hour > 23 || minute > 59) {
          fail(b + static_cast<std::uint32_t>(i), "time offset out of range");
        }
        return Type::offset_datetime;
      }
    }
    fail(b + static_cast<std::uint32_t>(i), "invalid time offset");
  }
};

} // namespace

std::string decode_string(std::string_view token) {
  std::string out;
  std::uint32_t p = 0;
  StringScanner scanner{token, static_cast<std::uint32_t>(token.size()), p};
  const bool multiline = token.size() >= 6 && token[1] == token[0] && token[2] == token[0];
  if (token.front() == '\'') {
    scanner.literal_string(multiline, out);
  } else {
    scanner.basic_string(multiline, out);
  }
  return out;
}

Value to_value(const Parsed &parsed, std::string_view text, const Node &node) {
  const Position pos = node.origin == Origin::root ? Position{} : parsed.position_of(node);
  switch (node.type) {
  case Type::table: {
    Value table = Value::make_table(pos);
    auto &members = table.mutable_table();
    members.reserve(node.children.size());
    for (const Node *child : node.children) {
      members.emplace_back(std::string(child->name), to_value(parsed, text, *child));
    }
    return table;
  }
  case Type::array: {
    Value array = Value::make_array(pos);
    auto &items = array.mutable_array();
    items.reserve(node.children.size());
    for (const Node *child : node.children) {
      items.push_back(to_value(parsed, text, *child));
    }
    return array;
  }
  default: {
    const auto span = parsed.tree.values[node.value].span;
    const std::string_view raw = text.substr(span.begin, span.end - span.begin);
    if (node.type == Type::string) {
      return Value::make_string(decode_string(raw), std::string(raw), pos);
    }
    return Value::make_scalar(node.type, std::string(raw), pos);
  }
  }
}

void parse_into(std::string_view text,
                Parsed &out,
                bool record_tokens,
                std::vector<ParseFailure> *errors) {
  Parser(text, out, record_tokens, errors).run();
  out.tokens_recorded = record_tokens;
}

void record_tokens(std::string_view text, Parsed &parsed) {
  if (parsed.tokens_recorded) {
    return;
  }
  Parsed again;
  parse_into(text, again, true); // the text parsed before, so this cannot fail
  parsed.tree.token_begin = std::move(again.tree.token_begin);
  parsed.tree.token_kind = std::move(again.tree.token_kind);
  parsed.tokens_recorded = true;
}

std::string_view article_type(const Node &node) {
  switch (node.type) {
  case Type::table:
    return "a table";
  case Type::array:
    return node.origin == Origin::array_of_tables ? "an array of tables" : "an array";
  case Type::string:
    return "a string";
  case Type::integer:
    return "an integer";
  case Type::floating:
    return "a float";
  case Type::boolean:
    return "a boolean";
  default:
    return "a date/time";
  }
}

namespace {

std::string_view trim_spaces(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) {
    return {};
  }
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

// `key:`, `key: value`, `- item`, `---`: the shapes YAML files start with, none of them TOML.
bool yaml_shaped(std::string_view line) {
  line = trim_spaces(line);
  if (line == "---" || line == "-" || line.starts_with("--- ") || line.starts_with("- ")) {
    return true;
  }
  if (line.empty() || line.front() == '[' || line.front() == '#') {
    return false;
  }
  std::size_t colon = 0;
  if (line.front() == '"' || line.front() == '\'') {
    colon = line.find(line.front(), 1);
    if (colon == std::string_view::npos) {
      return false;
    }
    ++colon;
  }
  colon = line.find_first_of(":=", colon);
  if (colon == std::string_view::npos || line[colon] == '=' || colon == 0) {
    return false; // a TOML key has its '=' before any ':'
  }
  return colon + 1 == line.size() || line[colon + 1] == ' ' || line[colon + 1] == '\t';
}

// `[table]`, `key = ...`: a line TOML would read, so its failure is a TOML error.
bool toml_shaped(std::string_view line) {
  line = trim_spaces(line);
  const auto equals = line.find('=');
  return line.starts_with('[') || (equals != std::string_view::npos &&
                                   line.substr(0, equals).find(':') == std::string_view::npos);
}

bool named_like_yaml(std::string_view source) {
  std::string lower(source);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return lower.ends_with(".yaml") || lower.ends_with(".yml");
}

bool only_comments_before(std::string_view text, std::size_t end) {
  std::size_t at = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (at < end) {
    const std::size_t newline = std::min(text.find('\n', at), end);
    const std::string_view line = trim_spaces(text.substr(at, newline - at));
    if (!line.empty() && line.front() != '#') {
      return false;
    }
    at = newline + 1;
  }
  return true;
}

// A YAML file given where TOML is read fails on its first key with "expected '=' after the
// key", which does not tell the user what is wrong: say that it is YAML instead, when its first
// line fails and looks like YAML (or like no TOML, in a file named .yaml/.yml). A file that
// parses as TOML is TOML whatever its name, and other failures keep their location.
std::optional<std::string>
yaml_instead_of_toml(Parsed &parsed, std::string_view source, const ParseFailure &failure) {
  if (parsed.line_starts.empty()) {
    parsed.line_starts.push_back(0);
  }
  const Position pos = parsed.position(failure.offset);
  const std::string_view text = parsed.text;
  const std::size_t begin = std::min<std::size_t>(parsed.line_starts[pos.line - 1], text.size());
  const std::string_view line = trim_spaces(text.substr(begin, text.find('\n', begin) - begin));
  // YAML fails on its first line; a failure further down is a typo in a TOML file, and so is
  // a first line that TOML would read as a header or a `key =`.
  const bool yaml = yaml_shaped(line) || (!toml_shaped(line) && named_like_yaml(source));
  if (!yaml || !only_comments_before(text, begin)) {
    return std::nullopt;
  }
  constexpr std::size_t k_shown = 60;
  const std::string shown =
      line.size() > k_shown ? std::string(line.substr(0, k_shown)) + "..." : std::string(line);
  return fmt::format("{} looks like YAML, not TOML (line {}: '{}'); a TOML file writes `key = "
                     "value` under [table] headers",
                     source,
                     pos.line,
                     shown);
}

} // namespace

// "SOURCE:LINE:COL: message", exit 3; or one line saying the file is YAML (above).
Error located_error(Parsed &parsed, std::string_view source, const ParseFailure &failure) {
  if (parsed.line_starts.empty()) {
    parsed.line_starts.push_back(0);
  }
  if (auto yaml = yaml_instead_of_toml(parsed, source, failure)) {
    return input_error(*yaml);
  }
  const Position pos = parsed.position(failure.offset);
  return input_error(fmt::format("{}:{}:{}: {}", source, pos.line, pos.column, failure.message));
}

} // namespace detail

Document Document::parse(std::string text, std::string source_name) {
  Document doc;
  doc.m_source_name = std::move(source_name);
  auto parsed = std::make_shared<detail::Parsed>();
  parsed->text = std::move(text); // on the heap: names are views of it, so it must never move
  try {
    detail::parse_into(parsed->text, *parsed);
  } catch (const detail::ParseFailure &e) {
    throw located_error(*parsed, doc.m_source_name, e);
  }
  doc.m_parsed = std::move(parsed);
  return doc;
}

std::vector<Error> Document::check(std::string text, const std::string &source_name) {
  detail::Parsed parsed;
  parsed.text = std::move(text);
  std::vector<detail::ParseFailure> failures;
  try {
    detail::parse_into(parsed.text, parsed, false, &failures);
  } catch (detail::ParseFailure &e) { // one the parser cannot go on from (a file too large)
    failures.push_back(std::move(e));
  }
  std::stable_sort(failures.begin(), failures.end(), [](const auto &l, const auto &r) {
    return l.offset < r.offset;
  });
  std::vector<Error> errors;
  if (!failures.empty()) {
    if (auto yaml = detail::yaml_instead_of_toml(parsed, source_name, failures.front())) {
      errors.push_back(input_error(*yaml)); // the lines after it fail too: one error says it
      return errors;
    }
  }
  std::uint32_t last_line = 0;
  for (const auto &failure : failures) {
    // One error per line: invalid UTF-8 is reported first, and may fail the line it is on.
    Error error = located_error(parsed, source_name, failure);
    const std::uint32_t line = parsed.position(failure.offset).line;
    if (line != last_line) {
      errors.push_back(std::move(error));
      last_line = line;
    }
  }
  return errors;
}

Document Document::load(const std::filesystem::path &path) {
  return parse(fs::read_file(path), path.string());
}

const Value &Document::root() const {
  // The typed values are built the first time they are asked for: checking, printing and
  // splicing work on the syntax tree and the model alone.
  if (!m_root_built && m_parsed) {
    m_root = detail::to_value(*m_parsed, m_parsed->text, *m_parsed->root);
    m_root_built = true;
  }
  return m_root;
}

const std::string &Document::text() const {
  static const std::string empty;
  return m_parsed ? m_parsed->text : empty;
}

const syntax::Tree &Document::syntax() const {
  // The token columns are the one part of the tree proportional to tokens rather than lines;
  // the engine itself never needs them, so they are recorded on first request.
  detail::record_tokens(m_parsed->text, *m_parsed);
  return m_parsed->tree;
}

std::string Document::print() const {
  // The lines tile the text after the BOM: untouched spans go straight through.
  const auto &tree = m_parsed->tree;
  std::string out;
  const std::string &text = m_parsed->text;
  out.reserve(text.size());
  out.append(text, 0, tree.body_begin);
  for (const auto &line : tree.lines) {
    out.append(text, line.begin, line.end - line.begin);
  }
  return out;
}

} // namespace pb::toml
