// SPDX-License-Identifier: MIT
// The environment-path rewrite as byte splices on the source text: only the rewritten string
// literals change, so comments and layout survive (decisions.md §2).
#include <primebeaker/core/error.hpp>
#include <primebeaker/launch/rewrite_envs.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace pb::launch {

using toml::Type;
using toml::Value;

const std::vector<std::string> &bundled_environment_modules() {
  static const std::vector<std::string> modules = {
      "articulated_harness_env",
      "jtc_code_tool_label_env",
      "jtc_label_env",
      "jtc_multiple_choice_accuracy_env",
      "jtc_reward_model_env",
      "jtc_rubrichub_judge_env",
      "jtc_search_agent_env",
      "jtc_search_agent_visit_env",
      "jtc_search_agent_visit_judge_env",
      "jtc_search_agent_webterminal_env",
      "jtc_search_agent_webterminal_judge_env",
      "jtc_search_visit_agent_env",
      "jtc_search_visit_agent_judge_env",
      "jtc_terminal_tool_label_env",
      "jtc_tool_label_env",
      "podman_terminal_env",
  };
  return modules;
}

std::vector<EnvironmentRewrite> plan_environment_rewrites(const toml::Document &document) {
  const Value *orchestrator = document.root().find("orchestrator");
  if (orchestrator == nullptr || !orchestrator->is(Type::table)) {
    throw input_error(
        fmt::format("{}: RL TOML needs an [orchestrator] table", document.source_name()));
  }
  const auto &modules = bundled_environment_modules();
  std::vector<EnvironmentRewrite> rewrites;
  for (const char *split : {"train", "eval"}) {
    for (const char *collection : {"source", "env"}) {
      const Value *entries = orchestrator->find_path({split, collection});
      if (entries == nullptr || !entries->is(Type::array)) {
        continue;
      }
      for (size_t i = 0; i < entries->array()->size(); ++i) {
        const Value &entry = (*entries->array())[i];
        const Value *id = entry.is(Type::table) ? entry.find_path({"legacy", "id"}) : nullptr;
        if (id == nullptr || id->string() == nullptr || id->string()->empty()) {
          continue;
        }
        const std::string &old_id = *id->string();
        const auto dot = old_id.rfind('.');
        const std::string module = dot == std::string::npos ? old_id : old_id.substr(dot + 1);
        if (!std::binary_search(modules.begin(), modules.end(), module)) {
          continue;
        }
        const std::string new_id = "primebeaker.environments." + module;
        if (new_id == old_id) {
          continue;
        }
        rewrites.push_back({{"orchestrator", split, collection, std::to_string(i), "legacy", "id"},
                            old_id,
                            new_id,
                            document.location(*id)});
      }
    }
  }
  return rewrites;
}

namespace {

// Byte offset of a 1-based line and byte column.
size_t offset_of(const std::string &text, std::uint32_t line, std::uint32_t column) {
  size_t offset = 0;
  for (std::uint32_t current = 1; current < line; ++current) {
    offset = text.find('\n', offset);
    if (offset == std::string::npos) {
      return std::string::npos;
    }
    ++offset;
  }
  return offset + column - 1;
}

// Length of the TOML string literal starting at `offset` (basic, literal, or multi-line).
size_t literal_length(const std::string &text, size_t offset) {
  const char quote = text[offset];
  if (quote != '"' && quote != '\'') {
    return std::string::npos;
  }
  const std::string triple(3, quote);
  if (text.compare(offset, 3, triple) == 0) {
    size_t pos = offset + 3;
    for (;;) {
      pos = text.find(triple, pos);
      if (pos == std::string::npos) {
        return pos;
      }
      if (quote == '"') {
        size_t backslashes = 0;
        while (pos - backslashes > offset + 3 && text[pos - backslashes - 1] == '\\') {
          ++backslashes;
        }
        if (backslashes % 2 == 1) {
          ++pos;
          continue;
        }
      }
      // Up to two extra quotes may belong to the content ("""a"""" ends after the 4th).
      size_t end = pos + 3;
      while (end < text.size() && text[end] == quote && end - pos < 5) {
        ++end;
      }
      return end - offset;
    }
  }
  for (size_t pos = offset + 1; pos < text.size(); ++pos) {
    if (text[pos] == '\n') {
      return std::string::npos;
    }
    if (quote == '"' && text[pos] == '\\') {
      ++pos;
      continue;
    }
    if (text[pos] == quote) {
      return pos - offset + 1;
    }
  }
  return std::string::npos;
}

Value *mutable_at(Value &root, const std::vector<std::string> &key) {
  Value *current = &root;
  for (const auto &part : key) {
    if (current->is(Type::array)) {
      current = &current->mutable_array().at(std::stoul(part));
    } else {
      current = current->mutable_find(part);
    }
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

const Value *value_at(const Value &root, const std::vector<std::string> &key) {
  const Value *current = &root;
  for (const auto &part : key) {
    if (current->is(Type::array)) {
      current = &current->array()->at(std::stoul(part));
    } else {
      current = current->find(part);
    }
    if (current == nullptr) {
      return nullptr;
    }
  }
  return current;
}

} // namespace

std::string rewrite_environment_ids(const toml::Document &document) {
  const auto rewrites = plan_environment_rewrites(document);
  const std::string &source = document.text();
  struct Splice {
    size_t offset;
    size_t length;
    std::string replacement;
  };
  std::vector<Splice> splices;
  for (const auto &rewrite : rewrites) {
    const Value *old_value = value_at(document.root(), rewrite.key);
    const auto position = old_value->position();
    const size_t offset = offset_of(source, position.line, position.column);
    const size_t length =
        offset < source.size() ? literal_length(source, offset) : std::string::npos;
    if (length == std::string::npos) {
      throw failure(fmt::format("{}: cannot locate the string literal of legacy.id to rewrite",
                                rewrite.location));
    }
    // A basic string: valid TOML for any module name, and JSON escaping is TOML escaping here.
    splices.push_back({offset, length, nlohmann::json(rewrite.to).dump()});
  }
  std::sort(splices.begin(), splices.end(), [](const Splice &a, const Splice &b) {
    return a.offset > b.offset;
  });
  std::string result = source;
  for (const auto &splice : splices) {
    result.replace(splice.offset, splice.length, splice.replacement);
  }

  // Verify: the result parses, and equals the source with exactly these values changed.
  const auto reparsed = toml::Document::parse(result, document.source_name());
  Value expected = document.root();
  for (const auto &rewrite : rewrites) {
    Value *target = mutable_at(expected, rewrite.key);
    *target = Value::make_string(rewrite.to, nlohmann::json(rewrite.to).dump(), target->position());
  }
  if (!semantically_equal(expected, reparsed.root())) {
    throw failure(fmt::format("{}: the environment rewrite did not verify; nothing written",
                              document.source_name()));
  }
  return result;
}

} // namespace pb::launch
