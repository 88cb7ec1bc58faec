// SPDX-License-Identifier: MIT
// The canonical fingerprint of a TOML meaning (docs/toml.md, "Verification"): a SHA-256 over a
// serialisation in which two meanings are equal exactly when semantically_equal() (and toml++'s
// comparison in reference_tomlpp.cpp) says they are. Tables list their members sorted by key
// bytes (the order of toml++'s std::map), arrays and arrays of tables are both arrays, integers
// and booleans are exact, floats are compared by bits with every NaN one value and -0.0 equal to
// 0.0, date/times by their type and parts. Every part is tagged and length-prefixed, so the
// serialisation is unambiguous. Internal to the toml module.
#pragma once

#include <primebeaker/core/sha2.hpp>
#include <primebeaker/toml/value.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace pb::toml::detail {

class MeaningHasher {
public:
  // A table of `members` members: call key() then the member's value for each, sorted by key.
  void table(std::size_t members);
  void key(std::string_view name);
  // An array of `items` items: their values follow in order.
  void array(std::size_t items);
  void string(std::string_view decoded);
  void integer(std::optional<std::int64_t> value);
  void floating(double value);
  void boolean(bool value);
  void datetime(Type type, const DateTime &parts);
  // A whole typed value (tables' members sorted here).
  void value(const Value &value);
  // The 32-byte digest; the hasher starts over.
  std::string finish();

private:
  void tag(char c);
  void number(std::uint64_t n);
  void bytes(std::string_view data);
  void flush();
  sha2::Sha256 m_sha;
  std::string m_buffer;
};

} // namespace pb::toml::detail
