// SPDX-License-Identifier: MIT
// The typed read API over a parsed TOML document: exact TOML types, source positions for
// error messages, keys resolved semantically (however the file spelled them).
#pragma once

#include <primebeaker/core/error.hpp>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pb::toml {

// 1-based line and column (in bytes) of where a value, or a table's header, starts.
// {0, 0} for tables that exist only implicitly.
struct Position {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

enum class Type : std::uint8_t {
  string,
  integer,
  floating,
  boolean,
  offset_datetime,
  local_datetime,
  local_date,
  local_time,
  array,
  table,
};

// toml-test's names: "string", "integer", "float", "bool", "datetime", "datetime-local",
// "date-local", "time-local", plus "array" and "table".
std::string_view type_name(Type type);

// The parts of a date/time value. Which parts are meaningful depends on the type: local dates
// have no time, local times no date, only offset date-times an offset.
struct DateTime {
  int year = 0, month = 0, day = 0;
  int hour = 0, minute = 0, second = 0;
  std::uint32_t nanosecond = 0; // fractional digits past nanoseconds are truncated
  int offset_minutes = 0;
};

class Value;
namespace syntax {
struct Tree;
}
namespace detail {
struct Parsed;
} // namespace detail
using Member = std::pair<std::string, Value>;

// One semantic value. Scalars keep their decoded value and their exact source spelling.
class Value {
public:
  Value() = default;
  static Value make_scalar(Type type, std::string raw, Position position);
  static Value make_string(std::string decoded, std::string raw, Position position);
  static Value make_array(Position position);
  static Value make_table(Position position);

  Type type() const { return m_type; }
  bool is(Type type) const { return m_type == type; }
  Position position() const { return m_position; }

  // Typed accessors: nullptr / nullopt when the value has another type. Integers are
  // never floats and floats never integers (`8` vs `8.0`).
  const std::string *string() const;
  std::optional<std::int64_t> integer() const;
  std::optional<double> floating() const;
  std::optional<bool> boolean() const;
  // Date/time parts of the four date/time types.
  std::optional<DateTime> datetime() const;
  // The exact source text of a scalar (`0xFF`, `'lit'`, `1979-05-27 07:32:00Z`).
  const std::string &raw() const { return m_raw; }

  const std::vector<Value> *array() const;
  const std::vector<Member> *table() const;      // members in document order
  const Value *find(std::string_view key) const; // direct member of a table
  const Value *find_path(std::initializer_list<std::string_view> keys) const;
  const Value *find_path(const std::vector<std::string> &keys) const;

  // Builders used by parsers.
  std::vector<Value> &mutable_array();
  std::vector<Member> &mutable_table();
  Value *mutable_find(std::string_view key);
  void set_position(Position position) { m_position = position; }

  // Semantic equality: same types, same decoded scalars (floats by value, nan == nan),
  // same members regardless of order. Positions and spellings are ignored.
  friend bool semantically_equal(const Value &a, const Value &b);

private:
  Type m_type = Type::table;
  Position m_position;
  std::string m_raw;     // source spelling for scalars
  std::string m_decoded; // decoded text for strings
  std::vector<Value> m_items;
  std::vector<Member> m_members;
};

// A SHA-256 digest (32 raw bytes) of a meaning: equal for two values exactly when
// semantically_equal() holds (docs/toml.md, "Verification"); reference_fingerprint() computes
// the same digest from toml++'s reading of a text.
std::string meaning_fingerprint(const Value &value);

// A parsed TOML file.
class Document {
public:
  // Parses `text`; `source_name` is what error messages call the file.
  // Throws pb::Error (exit 3) "SOURCE:LINE:COL: message" when the text is not valid TOML 1.0.
  static Document parse(std::string text, std::string source_name);
  // Reads and parses a file ("-" is stdin). Missing or unreadable files are exit 3 as well.
  static Document load(const std::filesystem::path &path);
  // Every error parse() finds in `text`, not just the first: after an error the parser goes on
  // at the next line that starts a header or a `key =` (docs/toml.md, "toml check"). Each is
  // the pb::Error parse() would throw for it; in document order, one per line; empty when
  // `text` is valid TOML 1.0.
  static std::vector<Error> check(std::string text, const std::string &source_name);

  const std::string &source_name() const { return m_source_name; }
  const std::string &text() const;
  // The typed values (built on first use; the syntax tree and print() do not need them).
  const Value &root() const;

  // "SOURCE:LINE:COL" of a value, or just "SOURCE" when it has no position; for messages.
  std::string location(const Value &value) const;

  // The lossless syntax tree (include <primebeaker/toml/syntax.hpp>); its tokens cover text()
  // (they are recorded on the first call: the engine itself needs only lines and spans).
  const syntax::Tree &syntax() const;
  // Writes the syntax tree's lines back: equal to text() by construction.
  std::string print() const;
  // Internal model the edit API works on.
  const detail::Parsed &parsed() const { return *m_parsed; }

private:
  std::string m_source_name;
  mutable Value m_root;
  mutable bool m_root_built = false;
  std::shared_ptr<detail::Parsed> m_parsed; // shared by copies; tokens recorded on demand
};

} // namespace pb::toml
