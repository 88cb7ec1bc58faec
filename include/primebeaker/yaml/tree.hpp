// SPDX-License-Identifier: MIT
// A small position-carrying YAML tree for the strict primebeaker.*/v1 configuration files.
// yaml-cpp stays inside yaml_tree.cpp; everything else works on these plain values.
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pb::yaml {

// 1-based line and column of a node in its file; {0, 0} when unknown.
struct YamlMark {
  int line = 0;
  int column = 0;
};

struct YamlMember;

// One resolved YAML value. Plain scalars are typed the way PyYAML's safe loader types them
// (Python PrimeBeaker read these files with PyYAML): null, booleans (true/yes/on...), integers,
// floats; quoted or explicitly tagged `!!str` scalars are strings.
struct YamlNode {
  enum class Kind : std::uint8_t { null, boolean, integer, floating, string, sequence, mapping };
  Kind kind = Kind::null;
  std::string text; // the scalar as written (for strings: the value)
  bool boolean = false;
  std::int64_t integer = 0;
  double floating = 0.0;
  std::vector<YamlNode> items;
  std::vector<YamlMember> members; // in document order; keys are unique
  YamlMark mark;

  bool is_mapping() const { return kind == Kind::mapping; }
  bool is_string() const { return kind == Kind::string; }
  // The member named `key`, or nullptr.
  const YamlMember *find(std::string_view key) const;
};

struct YamlMember {
  std::string key; // non-string keys are stringified, as Python PrimeBeaker did
  YamlMark key_mark;
  YamlNode value;
};

// A parsed file: its name for messages and its single document.
struct YamlDocument {
  std::string source_name;
  YamlNode root;
  // "SOURCE:LINE:COL", or "SOURCE" when the mark is unknown; for error messages.
  std::string location(YamlMark mark) const;
};

// Parses `text` (one document). Throws pb::Error (exit 3) "SOURCE:LINE:COL: message" for invalid
// YAML, several documents, duplicate keys or non-scalar keys. Pure: no I/O.
YamlDocument parse_yaml(const std::string &text, std::string source_name);

// The node as JSON (mappings keep their order). Pure.
OrderedJson to_json(const YamlNode &node);

// Which leftovers count as an unresolved variable after expansion.
enum class UnresolvedRule : std::uint8_t {
  any_dollar,      // run YAML: any remaining '$' is an error
  variable_syntax, // services YAML: only "$NAME" or "${...}" is an error
};

// Expands $NAME and ${NAME} in every string value (not keys) like Python's os.path.expandvars,
// using `env`; unset names stay as written. A value left with an unresolved variable per `rule`
// throws pb::Error (exit 3) at its location, quoting the original value. Pure.
YamlNode expand_environment(const YamlDocument &document,
                            const YamlNode &node,
                            const std::map<std::string, std::string> &env,
                            UnresolvedRule rule,
                            std::string_view what);

// "a plain string" / "an integer" ... for type error messages.
std::string_view describe_kind(YamlNode::Kind kind);

} // namespace pb::yaml
