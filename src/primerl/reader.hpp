// SPDX-License-Identifier: MIT
// Private to primerl: the collecting key reader every generation's typed reader uses
// (config.cpp for v0.8.0, v0_9.cpp for v0.9).
#pragma once

#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>

namespace pb::primerl::detail {

using toml::Document;
using toml::Type;
using toml::Value;

// A TOML basic string literal of `text`.
inline std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

inline std::string parent_of(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(key.substr(0, dot));
}

// Reads launch keys for one topology (`what`, e.g. "single-node SFT"), naming the key and its
// line:column in every problem. A missing or invalid value is recorded with the value it
// suggests, and reading goes on with that value, so one pass finds every problem; rules over
// several keys are skipped when one of those keys was already reported (bad()).
class Reader {
public:
  Reader(const Document &document, std::string what, Problems &problems)
      : m_doc(document), m_what(std::move(what)), m_problems(problems) {}

  const Value *find(std::string_view key) const {
    return m_doc.root().find_path(text::split(key, '.'));
  }

  // Whether [key] is a table; a missing one is one problem that the keys found missing in it
  // later join.
  bool table(std::string_view key) {
    const Value *value = find(key);
    if (value == nullptr) {
      m_problems.add_missing_table(
          std::string(key),
          fmt::format("{}: {} needs a [{}] table", m_doc.source_name(), m_what, key));
      return false;
    }
    if (!value->is(Type::table)) {
      m_problems.add_missing_table(std::string(key),
                                   fmt::format("{}: {} must be a table, got {} {}",
                                               m_doc.location(*value),
                                               key,
                                               article(value->type()),
                                               toml::type_name(value->type())));
      return false;
    }
    return true;
  }

  void missing(std::string_view key, const std::string &suggestion) {
    m_bad.insert(std::string(key));
    if (!m_problems.fold_into_missing_table(std::string(key))) {
      std::string where = m_doc.source_name();
      if (const Value *table = find(parent_of(key)); table != nullptr && !parent_of(key).empty()) {
        where = m_doc.location(*table);
      }
      m_problems.add_missing_key(std::string(key),
                                 fmt::format("{}: {} is required for {}", where, key, m_what));
    }
    if (!suggestion.empty()) {
      m_problems.suggest(std::string(key), suggestion);
    }
  }

  void wrong(const Value &value,
             std::string_view key,
             std::string_view expected,
             const std::string &suggestion = {}) {
    m_bad.insert(std::string(key));
    m_problems.add(fmt::format(
        "{}: {} must be {}, got {}", m_doc.location(value), key, expected, shown(value)));
    if (!suggestion.empty()) {
      m_problems.suggest(std::string(key), suggestion, true);
    }
  }

  void rule(const Value *value, const std::string &message) {
    m_problems.add(
        fmt::format("{}: {}", value ? m_doc.location(*value) : m_doc.source_name(), message));
  }

  // A rule's fix is one key's value: say so and suggest it.
  void rule(std::string_view key, const std::string &message, const std::string &suggestion) {
    rule(find(key), message);
    m_problems.suggest(std::string(key), suggestion, find(key) != nullptr);
  }

  // Whether any of `keys` was already reported (rules over them would only repeat it).
  bool bad(std::initializer_list<std::string_view> keys) const {
    return std::any_of(
        keys.begin(), keys.end(), [&](auto key) { return m_bad.count(std::string(key)) > 0; });
  }

  // A true TOML integer >= 1 (booleans and floats rejected). Missing without a fallback, or
  // invalid: reported, and `suggested` is used.
  std::int64_t positive(std::string_view key,
                        std::int64_t suggested,
                        std::optional<std::int64_t> fallback = {}) {
    const Value *value = find(key);
    if (value == nullptr) {
      if (fallback) {
        return *fallback;
      }
      missing(key, std::to_string(suggested));
      return suggested;
    }
    const auto number = value->integer();
    if (!number || *number < 1) {
      wrong(*value, key, "a positive integer", std::to_string(suggested));
      return suggested;
    }
    return *number;
  }

  // positive(), at most `max`: every count that enters GPU arithmetic is bounded first, so the
  // arithmetic cannot overflow (limits.hpp).
  std::int64_t count(std::string_view key,
                     std::int64_t max,
                     std::int64_t suggested,
                     std::optional<std::int64_t> fallback = {}) {
    const std::int64_t number = positive(key, suggested, fallback);
    if (number > max) {
      wrong(*find(key),
            key,
            fmt::format("a positive integer at most {}", max),
            std::to_string(std::min(suggested, max)));
      return std::min(suggested, max);
    }
    return number;
  }

  std::string string(std::string_view key, bool non_empty, const std::string &suggested) {
    const Value *value = find(key);
    if (value == nullptr) {
      missing(key, toml_string(suggested));
      return suggested;
    }
    const std::string *text = value->string();
    if (text == nullptr || (non_empty && text->empty())) {
      wrong(*value, key, non_empty ? "a non-empty string" : "a string", toml_string(suggested));
      return suggested;
    }
    return *text;
  }

  std::optional<std::string> optional_string(std::string_view key) {
    const Value *value = find(key);
    if (value == nullptr) {
      return std::nullopt;
    }
    const std::string *text = value->string();
    if (text == nullptr) {
      wrong(*value, key, "a string");
      return std::nullopt;
    }
    return *text;
  }

  bool boolean(std::string_view key, std::optional<bool> fallback, bool suggested) {
    const Value *value = find(key);
    if (value == nullptr) {
      if (fallback) {
        return *fallback;
      }
      missing(key, suggested ? "true" : "false");
      return suggested;
    }
    const auto flag = value->boolean();
    if (!flag) {
      wrong(*value, key, "true or false", suggested ? "true" : "false");
      return suggested;
    }
    return *flag;
  }

  PathKey path(std::string_view key, const std::string &suggested) {
    return {std::string(key), string(key, true, suggested)};
  }

  // A key Prime-RL defaults: its value as written (checked as a non-empty string), else
  // `prime_rl_default`, recorded as defaulted rather than missing.
  PathKey defaulted_path(std::string_view key, const std::string &prime_rl_default) {
    if (find(key) == nullptr) {
      m_problems.defaulted(
          fmt::format("{} = {} (Prime-RL's default)", key, toml_string(prime_rl_default)));
      return {std::string(key), prime_rl_default};
    }
    return path(key, prime_rl_default);
  }

  void defaulted(std::string text) { m_problems.defaulted(std::move(text)); }

  // A usable default for names: wandb.name when it is a string, else the one the file's path
  // gives (default_experiment_name).
  std::string default_name() const {
    if (const Value *name = find("wandb.name");
        name != nullptr && name->string() != nullptr && !name->string()->empty()) {
      return *name->string();
    }
    return default_experiment_name(m_doc);
  }

  std::optional<std::int64_t> integer_as_written(std::string_view key) const {
    const Value *value = find(key);
    return value ? value->integer() : std::nullopt;
  }

  const Document &doc() const { return m_doc; }
  const std::string &what() const { return m_what; }

private:
  static std::string_view article(Type type) {
    return type == Type::array || type == Type::integer ? "an" : "a";
  }
  static std::string shown(const Value &value) {
    if (value.is(Type::table)) {
      return "a table";
    }
    if (value.is(Type::array)) {
      return "an array";
    }
    std::string spelled = value.raw();
    // A float spelled like an integer (an engine that re-renders "2.0" as "2") would read as
    // a contradiction next to "(float)".
    if (value.is(Type::floating) && spelled.find_first_of(".eEn") == std::string::npos) {
      spelled += ".0";
    }
    return fmt::format("{} ({})", spelled, toml::type_name(value.type()));
  }

  const Document &m_doc;
  std::string m_what;
  Problems &m_problems;
  std::set<std::string> m_bad;
};

inline void require_type(Reader &reader, std::string_view expected) {
  const Value *type = reader.find("deployment.type");
  const std::string *text = type ? type->string() : nullptr;
  // A missing or unknown type is read_deployment_type's problem; here only the other topology.
  if (text != nullptr && (*text == "single_node" || *text == "multi_node") && *text != expected) {
    reader.rule("deployment.type",
                fmt::format("deployment.type must be '{}' here", expected),
                toml_string(expected));
  }
}

// [inference.deployment] of type "disaggregated" (both generations), or nullopt for another type;
// counts read with Prime-RL's defaults (1 each).
std::optional<Disaggregated> read_disaggregated(Reader &reader);

// inference.router.type and inference.kv_cache_offload.type (both generations; an unknown value
// is the schema checker's and reads as the default), refusing what Prime-RL refuses with llm-d:
// routed-expert return (`routed_experts_key`, the generation's spelling).
struct Serving {
  Router router = Router::vllm_router;
  KvOffload kv_offload = KvOffload::none;
};
Serving read_serving(Reader &reader, const char *routed_experts_key);

// Prime-RL runs llm-d's router only in front of several nodes' engines: refused at its key on a
// single node, as Prime-RL's inference config refuses it.
void refuse_single_node_llm_d(Reader &reader);

} // namespace pb::primerl::detail
