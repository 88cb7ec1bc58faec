// SPDX-License-Identifier: MIT
// The strict YAML tree: yaml-cpp nodes turned into YamlNode values and every yaml-cpp exception
// into a pb::Error with a file:line:column. Besides this file only the watcher's catalog reads
// yaml-cpp itself (docs/ARCHITECTURE.md "Rules").
#include <primebeaker/core/error.hpp>
#include <primebeaker/yaml/tree.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <regex>
#include <set>

namespace pb::yaml {
namespace {

YamlMark mark_of(const YAML::Mark &mark) {
  if (mark.is_null()) {
    return {};
  }
  return {mark.line + 1, mark.column + 1};
}

bool is_one_of(const std::string &text, std::initializer_list<const char *> words) {
  for (const char *word : words) {
    if (text == word) {
      return true;
    }
  }
  return false;
}

std::string without_underscores(std::string text) {
  std::erase(text, '_');
  return text;
}

// Integers the way PyYAML (YAML 1.1) reads them: decimal, 0x hex, 0b binary, 0 octal.
std::optional<std::int64_t> as_integer(const std::string &text) {
  static const std::regex decimal("[-+]?(0|[1-9][0-9_]*)");
  static const std::regex hex("[-+]?0x[0-9a-fA-F_]+");
  static const std::regex binary("[-+]?0b[01_]+");
  static const std::regex octal("[-+]?0[0-7_]+");
  int base = 0;
  std::string digits = text;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
  }
  if (std::regex_match(text, decimal)) {
    base = 10;
  } else if (std::regex_match(text, hex)) {
    base = 16;
  } else if (std::regex_match(text, binary)) {
    base = 2;
  } else if (std::regex_match(text, octal)) {
    base = 8;
  } else {
    return std::nullopt;
  }
  digits = without_underscores(digits);
  if (digits[0] == '-' || digits[0] == '+') {
    digits.erase(0, 1);
  }
  if (base == 16 || base == 2) {
    digits.erase(0, 2);
  }
  if (digits.empty()) {
    return std::nullopt;
  }
  try {
    size_t used = 0;
    const auto magnitude = std::stoull(digits, &used, base);
    if (used != digits.size()) {
      return std::nullopt;
    }
    const auto limit = static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max());
    if (magnitude > limit + (negative ? 1ULL : 0ULL)) {
      return std::nullopt;
    }
    if (negative) {
      return magnitude == limit + 1ULL ? std::numeric_limits<std::int64_t>::min()
                                       : -static_cast<std::int64_t>(magnitude);
    }
    return static_cast<std::int64_t>(magnitude);
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

// Floats as PyYAML reads them, plus YAML 1.2's exponent forms (`1e3`, `1.5e3`) that users expect.
std::optional<double> as_float(const std::string &text) {
  static const std::regex number(
      "[-+]?(([0-9][0-9_]*)\\.[0-9_]*|\\.[0-9_]+|[0-9][0-9_]*)([eE][-+]?[0-9]+)?");
  if (is_one_of(text, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"})) {
    return std::numeric_limits<double>::infinity();
  }
  if (is_one_of(text, {"-.inf", "-.Inf", "-.INF"})) {
    return -std::numeric_limits<double>::infinity();
  }
  if (is_one_of(text, {".nan", ".NaN", ".NAN"})) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (!std::regex_match(text, number)) {
    return std::nullopt;
  }
  try {
    return std::stod(without_underscores(text));
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

YamlNode resolve_scalar(const YAML::Node &node) {
  YamlNode result;
  result.mark = mark_of(node.Mark());
  result.text = node.Scalar();
  const std::string &tag = node.Tag();
  if (tag != "?") { // quoted ("!") or explicitly tagged: a string, whatever it looks like
    result.kind = YamlNode::Kind::string;
    return result;
  }
  const std::string &text = result.text;
  if (is_one_of(text, {"~", "null", "Null", "NULL", ""})) {
    result.kind = YamlNode::Kind::null;
  } else if (is_one_of(text, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})) {
    result.kind = YamlNode::Kind::boolean;
    result.boolean = true;
  } else if (is_one_of(text, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})) {
    result.kind = YamlNode::Kind::boolean;
  } else if (const auto integer = as_integer(text)) {
    result.kind = YamlNode::Kind::integer;
    result.integer = *integer;
  } else if (const auto floating = as_float(text)) {
    result.kind = YamlNode::Kind::floating;
    result.floating = *floating;
  } else {
    result.kind = YamlNode::Kind::string;
  }
  return result;
}

YamlNode convert(const YAML::Node &node, const std::string &source_name) {
  YamlNode result;
  result.mark = mark_of(node.Mark());
  switch (node.Type()) {
  case YAML::NodeType::Undefined:
  case YAML::NodeType::Null:
    if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
      result.kind = YamlNode::Kind::string; // `key: ""` or `!!str` with no text
    }
    return result;
  case YAML::NodeType::Scalar:
    return resolve_scalar(node);
  case YAML::NodeType::Sequence:
    result.kind = YamlNode::Kind::sequence;
    for (const auto &item : node) {
      result.items.push_back(convert(item, source_name));
    }
    return result;
  case YAML::NodeType::Map: {
    result.kind = YamlNode::Kind::mapping;
    std::map<std::string, YamlMark> seen;
    for (const auto &entry : node) {
      const YAML::Node &key = entry.first;
      const YamlMark key_mark = mark_of(key.Mark());
      if (!key.IsScalar() && !key.IsNull()) {
        throw input_error(fmt::format("{}:{}:{}: mapping keys must be plain scalars",
                                      source_name,
                                      key_mark.line,
                                      key_mark.column));
      }
      std::string name = key.IsNull() ? "null" : key.Scalar();
      if (const auto it = seen.find(name); it != seen.end()) {
        throw input_error(fmt::format("{}:{}:{}: duplicate key '{}' (first given at line {})",
                                      source_name,
                                      key_mark.line,
                                      key_mark.column,
                                      name,
                                      it->second.line));
      }
      seen.emplace(name, key_mark);
      result.members.push_back({name, key_mark, convert(entry.second, source_name)});
    }
    return result;
  }
  }
  return result;
}

// One step of os.path.expandvars: the variable at `text[at]` ('$'), if it has the
// `$name` (\w+, ASCII) or `${anything-but-brace}` shape. Returns {length, name}.
std::optional<std::pair<size_t, std::string>> variable_at(std::string_view text, size_t at) {
  if (at + 1 >= text.size()) {
    return std::nullopt;
  }
  const auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  if (text[at + 1] == '{') {
    const size_t close = text.find('}', at + 2);
    if (close == std::string_view::npos) {
      return std::nullopt;
    }
    return std::pair{close - at + 1, std::string(text.substr(at + 2, close - at - 2))};
  }
  size_t end = at + 1;
  while (end < text.size() && word(text[end])) {
    ++end;
  }
  if (end == at + 1) {
    return std::nullopt;
  }
  return std::pair{end - at, std::string(text.substr(at + 1, end - at - 1))};
}

bool has_unresolved(std::string_view text, UnresolvedRule rule) {
  for (size_t at = text.find('$'); at != std::string_view::npos; at = text.find('$', at + 1)) {
    if (rule == UnresolvedRule::any_dollar) {
      return true;
    }
    if (at + 1 < text.size()) {
      const char next = text[at + 1];
      if (next == '{') {
        if (text.find('}', at + 2) != std::string_view::npos) {
          return true;
        }
      } else if (std::isalpha(static_cast<unsigned char>(next)) != 0 || next == '_') {
        return true;
      }
    }
  }
  return false;
}

} // namespace

const YamlMember *YamlNode::find(std::string_view key) const {
  for (const auto &member : members) {
    if (member.key == key) {
      return &member;
    }
  }
  return nullptr;
}

std::string YamlDocument::location(YamlMark mark) const {
  if (mark.line == 0) {
    return source_name;
  }
  return fmt::format("{}:{}:{}", source_name, mark.line, mark.column);
}

YamlDocument parse_yaml(const std::string &text, std::string source_name) {
  YamlDocument document;
  document.source_name = std::move(source_name);
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception &e) {
    const YamlMark mark = mark_of(e.mark);
    throw input_error(fmt::format("{}: invalid YAML: {}", document.location(mark), e.msg));
  }
  if (documents.size() > 1) {
    throw input_error(fmt::format(
        "{}: expected one YAML document, found {}", document.source_name, documents.size()));
  }
  if (!documents.empty()) {
    try {
      document.root = convert(documents.front(), document.source_name);
    } catch (const YAML::Exception &e) {
      throw input_error(
          fmt::format("{}: invalid YAML: {}", document.location(mark_of(e.mark)), e.msg));
    }
  }
  return document;
}

OrderedJson to_json(const YamlNode &node) {
  switch (node.kind) {
  case YamlNode::Kind::null:
    return nullptr;
  case YamlNode::Kind::boolean:
    return node.boolean;
  case YamlNode::Kind::integer:
    return node.integer;
  case YamlNode::Kind::floating:
    return node.floating;
  case YamlNode::Kind::string:
    return node.text;
  case YamlNode::Kind::sequence: {
    OrderedJson array = OrderedJson::array();
    for (const auto &item : node.items) {
      array.push_back(to_json(item));
    }
    return array;
  }
  case YamlNode::Kind::mapping: {
    OrderedJson object = OrderedJson::object();
    for (const auto &member : node.members) {
      object[member.key] = to_json(member.value);
    }
    return object;
  }
  }
  return nullptr;
}

YamlNode expand_environment(const YamlDocument &document,
                            const YamlNode &node,
                            const std::map<std::string, std::string> &env,
                            UnresolvedRule rule,
                            std::string_view what) {
  YamlNode result = node;
  if (node.kind == YamlNode::Kind::string) {
    std::string expanded;
    const std::string &text = node.text;
    size_t at = 0;
    while (at < text.size()) {
      if (text[at] == '$') {
        if (const auto variable = variable_at(text, at)) {
          const auto it = env.find(variable->second);
          if (it != env.end()) {
            expanded += it->second;
          } else {
            expanded += text.substr(at, variable->first);
          }
          at += variable->first;
          continue;
        }
      }
      expanded += text[at++];
    }
    if (has_unresolved(expanded, rule)) {
      throw input_error(fmt::format("{}: unresolved environment variable in {} value '{}'",
                                    document.location(node.mark),
                                    what,
                                    node.text));
    }
    result.text = std::move(expanded);
  }
  for (auto &item : result.items) {
    item = expand_environment(document, item, env, rule, what);
  }
  for (auto &member : result.members) {
    member.value = expand_environment(document, member.value, env, rule, what);
  }
  return result;
}

std::string_view describe_kind(YamlNode::Kind kind) {
  switch (kind) {
  case YamlNode::Kind::null:
    return "null";
  case YamlNode::Kind::boolean:
    return "a boolean";
  case YamlNode::Kind::integer:
    return "an integer";
  case YamlNode::Kind::floating:
    return "a float";
  case YamlNode::Kind::string:
    return "a string";
  case YamlNode::Kind::sequence:
    return "a list";
  case YamlNode::Kind::mapping:
    return "a mapping";
  }
  return "a value";
}

} // namespace pb::yaml
