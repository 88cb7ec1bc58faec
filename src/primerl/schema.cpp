// SPDX-License-Identifier: MIT
// The schema checker (docs/primerl-schema.md): one walk of the TOML's values against the
// generated tables, reading them as pydantic's lax mode reads tomli's output (ints are floats,
// numeric strings are numbers, "None" is null), and, under v0.9, where the v0.8.0 keys it refuses
// went. Each release is its own table: the cataloged image's v0.7.1.dev83 fork too.
#include <primebeaker/core/spelling.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/schema.hpp>
#include <primebeaker/toml/syntax.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>

namespace pb::primerl {

using toml::Document;
using toml::Position;
using toml::Value;

namespace schema {

const Root *Schema::find_root(std::string_view name) const {
  for (const Root &root : roots) {
    if (name == str(root.name)) {
      return &root;
    }
  }
  return nullptr;
}

const Field *Schema::find_field(std::uint16_t model, std::string_view key) const {
  for (const Field &field : fields_of(model)) {
    if (key == str(field.name)) {
      return &field;
    }
  }
  for (const Field &field : fields_of(model)) {
    std::string_view aliases = str(field.aliases);
    while (!aliases.empty()) {
      const auto bar = aliases.find('|');
      if (aliases.substr(0, bar) == key) {
        return &field;
      }
      aliases = bar == std::string_view::npos ? std::string_view() : aliases.substr(bar + 1);
    }
  }
  return nullptr;
}

} // namespace schema

namespace {

using schema::Kind;
using Problem = SchemaProblem;

// v0.8.0 keys that Prime-RL v0.9 refuses but has elsewhere (its `feat!` PRs keep no alias):
// the message names the new key. `to` is relative to the table that holds the key ("../": to
// its parent). With `per_key`, the key holds a table whose members moved one by one: `to` is
// where a member goes, or "" for the destination of `key` itself plus the member's name.
struct MovedKey {
  const char *model; // class name (module: `module`, or any when "")
  const char *module;
  const char *key; // "wandb", or "parallel.tp" for a member of a per_key table
  const char *to;
  const char *origin;
  bool per_key = false;
};

const MovedKey k_moved_in_v0_9[] = {
    {"RLConfig", "", "wandb", "monitors.wandb", "#3275"},
    {"RLConfig", "", "file_monitor", "monitors.file", "#3275"},
    {"RLConfig", "", "clean_output_dir", "clean", "#3268"},
    {"SFTConfig", "", "wandb", "monitors.wandb", "#3275"},
    {"SFTConfig", "", "file_monitor", "monitors.file", "#3275"},
    {"SFTConfig", "", "clean_output_dir", "clean", "#3268"},
    {"TrainerConfig", "", "wandb", "monitors.wandb", "#3275"},
    {"TrainerConfig", "", "file_monitor", "monitors.file", "#3275"},
    {"OrchestratorConfig", "", "wandb", "monitors.wandb", "#3275"},
    {"OrchestratorConfig", "", "file_monitor", "monitors.file", "#3275"},
    {"OrchestratorConfig", "", "prime_monitor", "monitors.prime", "#3275"},
    {"OrchestratorConfig", "", "max_inflight_episodes", "concurrency.max_inflight", "#3285"},
    {"SharedCheckpointConfig", "", "resume_step", "../resume.step", "#3268"},
    {"CheckpointConfig", "", "resume_step", "../resume.step", "#3268"},
    {"InferenceConfig", "", "parallel", "vllm", "#3202", true},
    {"InferenceConfig", "", "parallel.tp", "vllm.tensor_parallel_size", "#3202"},
    {"InferenceConfig", "", "parallel.dp", "vllm.data_parallel_size", "#3202"},
    {"InferenceConfig", "", "model", "vllm", "#3202", true},
    {"InferenceConfig", "", "model.name", "vllm.model", "#3202"},
    {"InferenceConfig", "", "vllm_extra", "vllm", "#3202", true},
    // v0 environments are gone; primebeaker's own are v1 tasksets (docs/environments-runtime.md).
    {"TrainSourceConfig", "", "legacy", "env.taskset", "#3226"},
    {"EvalSourceConfig", "", "legacy", "env.taskset", "#3226"},
    {"SingleNodeDeploymentConfig", "prime_rl.configs.sft", "num_gpus", "num_train_gpus", "#3256"},
    {"MultiNodeDeploymentConfig", "prime_rl.configs.sft", "num_nodes", "num_train_nodes", "#3256"},
};

const MovedKey *
find_moved_key(const schema::Schema &schema, const schema::Class &model, std::string_view key) {
  for (const MovedKey &entry : k_moved_in_v0_9) {
    if (key == entry.key && std::strcmp(schema.str(model.name), entry.model) == 0 &&
        (*entry.module == '\0' || std::strcmp(schema.str(model.module), entry.module) == 0)) {
      return &entry;
    }
  }
  return nullptr;
}

bool is_bare_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// A TOML basic string of `text` (keys that are not bare, values in messages).
std::string toml_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + '"';
}

std::string child_path(const std::string &path, std::string_view key) {
  std::string segment = is_bare_key(key) ? std::string(key) : toml_quote(key);
  return path.empty() ? segment : path + "." + segment;
}

// What a value is, for messages: `a string ("lots")`, `an integer (5)`, `a table`.
std::string describe_value(const Value &value) {
  auto shown = [&](std::string text) {
    if (text.size() > 40) {
      text = text.substr(0, 37) + "...";
    }
    return text;
  };
  switch (value.type()) {
  case toml::Type::string:
    return fmt::format("a string ({})", shown(toml_quote(*value.string())));
  case toml::Type::integer:
    return fmt::format("an integer ({})", shown(value.raw()));
  case toml::Type::floating:
    return fmt::format("a float ({})", shown(value.raw()));
  case toml::Type::boolean:
    return fmt::format("a boolean ({})", value.raw());
  case toml::Type::array:
    return "an array";
  case toml::Type::table:
    return "a table";
  default:
    return fmt::format("a date/time ({})", shown(value.raw()));
  }
}

// Whether a finite `value` has no fractional part. Not std::floor: the lean release link takes
// libm from its static archive, where floor is resolved per CPU and cannot link
// (cmake/PbLean.cmake).
bool whole(double value) {
  return std::fabs(value) >= 0x1p53 || value == static_cast<double>(static_cast<long long>(value));
}

std::string format_number(double value) {
  if (std::fabs(value) < 1e15 && whole(value)) {
    return fmt::format("{}", static_cast<long long>(value));
  }
  return fmt::format("{}", value);
}

std::string describe_bounds(const schema::Bounds &b) {
  std::vector<std::string> parts;
  if (b.flags & schema::Bounds::has_ge) {
    parts.push_back(">= " + format_number(b.ge));
  }
  if (b.flags & schema::Bounds::has_gt) {
    parts.push_back("> " + format_number(b.gt));
  }
  if (b.flags & schema::Bounds::has_le) {
    parts.push_back("<= " + format_number(b.le));
  }
  if (b.flags & schema::Bounds::has_lt) {
    parts.push_back("< " + format_number(b.lt));
  }
  return text::join(parts, " and ");
}

// pydantic's lax str -> bool.
bool is_bool_string(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  for (const char *word :
       {"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"}) {
    if (text == word) {
      return true;
    }
  }
  return false;
}

// A number pydantic's lax mode reads from a string (surrounding whitespace and '_' separators
// allowed; "inf" and "nan" included), or nullopt.
std::optional<double> number_in_string(std::string_view text) {
  std::string digits;
  for (const char c : text::trim(text)) {
    if (c != '_') {
      digits += c;
    }
  }
  if (digits.empty()) {
    return std::nullopt;
  }
  char *end = nullptr;
  const double value = std::strtod(digits.c_str(), &end); // out of range: inf or 0, as Python
  if (end != digits.c_str() + digits.size()) {
    return std::nullopt;
  }
  return value;
}

// A key path of the schema reachable through tables only (a field, a nested class, a union of
// classes; not through arrays or dicts, so each path is one `toml set` can write), with its last
// segment and depth.
struct KeyPath {
  std::string path;
  std::string_view leaf;
  int depth = 0;
};

void collect_key_paths(const schema::Schema &schema,
                       std::uint16_t model,
                       const std::string &prefix,
                       int depth,
                       std::vector<std::uint16_t> &open,
                       std::vector<KeyPath> &out) {
  constexpr int k_max_depth = 8;
  open.push_back(model);
  for (const schema::Field &field : schema.fields_of(model)) {
    const std::string_view name = schema.str(field.name);
    std::string path = child_path(prefix, name);
    // The classes a table at this field may be: the field's class, or a union's.
    std::vector<std::uint16_t> nested;
    const std::function<void(std::uint16_t)> tables = [&](std::uint16_t type_id) {
      const schema::Type &type = schema.types[type_id];
      if (type.kind == Kind::model) {
        nested.push_back(type.item);
      } else if (type.kind == Kind::union_of) {
        for (std::uint16_t i = 0; i < type.count; ++i) {
          tables(schema.alternatives[type.first + i]);
        }
      }
    };
    tables(field.type);
    out.push_back({path, name, depth});
    if (depth + 1 >= k_max_depth) {
      continue;
    }
    for (const std::uint16_t inner : nested) {
      if (std::find(open.begin(), open.end(), inner) == open.end()) {
        collect_key_paths(schema, inner, path, depth + 1, open, out);
      }
    }
  }
  open.pop_back();
}

// Every key path of `model` (docs/primerl-schema.md "What is checked": the suggestion searches
// the whole schema), each once, shallowest first.
std::vector<KeyPath> key_paths(const schema::Schema &schema, std::uint16_t model) {
  std::vector<KeyPath> all;
  std::vector<std::uint16_t> open;
  collect_key_paths(schema, model, "", 0, open, all);
  std::stable_sort(
      all.begin(), all.end(), [](const auto &a, const auto &b) { return a.depth < b.depth; });
  std::vector<KeyPath> out;
  std::set<std::string> seen;
  for (KeyPath &entry : all) {
    if (seen.insert(entry.path).second) {
      out.push_back(std::move(entry));
    }
  }
  return out;
}

class Checker {
public:
  Checker(const schema::Schema &schema,
          std::uint16_t root,
          const Document &document,
          const SchemaCheckOptions &options,
          std::vector<Problem> &out)
      : m_schema(schema), m_root(root), m_document(document), m_options(options), m_out(&out),
        m_release(release_name(options.release)) {}

  void check_model(std::uint16_t model,
                   const Value &table,
                   const std::string &path,
                   const std::vector<std::string_view> &dropped = {}) {
    const schema::Class &cls = m_schema.classes[model];
    for (const auto &[key, value] : *table.table()) {
      if (std::find(dropped.begin(), dropped.end(), key) != dropped.end()) {
        continue;
      }
      const std::string here = child_path(path, key);
      const schema::Field *field = m_schema.find_field(model, key);
      if (field == nullptr) {
        if (cls.extra == schema::Extra::forbid) {
          unknown_key(model, key, value, path, here);
        }
        continue;
      }
      check_field(model, *field, value, here);
    }
    if (m_options.missing_required) {
      for (const schema::Field &field : m_schema.fields_of(model)) {
        if (field.required && !has_member(table, field)) {
          missing(table, path, m_schema.str(field.name), "");
        }
      }
    }
  }

private:
  const schema::Schema &m_schema;
  std::uint16_t m_root;             // the entrypoint's class
  std::vector<KeyPath> m_key_paths; // of m_root, listed when a first unknown key needs them
  const Document &m_document;
  const SchemaCheckOptions &m_options;
  std::vector<Problem> *m_out;
  std::string_view m_release; // "v0.8.0", for messages
  // Line starts of the text (built when a first position is needed).
  std::vector<std::uint32_t> m_line_starts;
  std::uint32_t m_body_begin = 0;

  bool has_member(const Value &table, const schema::Field &field) const {
    if (table.find(m_schema.str(field.name)) != nullptr) {
      return true;
    }
    for (const std::string &alias : text::split(m_schema.str(field.aliases), '|')) {
      if (!alias.empty() && table.find(alias) != nullptr) {
        return true;
      }
    }
    return false;
  }

  // -- positions ------------------------------------------------------------------------

  void build_line_starts() {
    const std::string &text = m_document.text();
    m_line_starts.push_back(0);
    for (std::size_t i = text.find('\n'); i != std::string::npos; i = text.find('\n', i + 1)) {
      m_line_starts.push_back(static_cast<std::uint32_t>(i + 1));
    }
    m_body_begin = m_document.syntax().body_begin;
  }

  Position position_at(std::uint32_t offset) const {
    const auto it = std::upper_bound(m_line_starts.begin(), m_line_starts.end(), offset);
    const auto line = static_cast<std::uint32_t>(it - m_line_starts.begin());
    std::uint32_t column = offset - m_line_starts[line - 1] + 1;
    if (line == 1 && m_body_begin > 0 && column > m_body_begin) {
      column -= m_body_begin; // the BOM is not a column (as the parser counts)
    }
    return {line, column};
  }

  // The key that holds `value` (the last segment of its key or [header]), or the value's own
  // position. Only problems ask, so the syntax tree is searched rather than indexed.
  Position key_position(const Value &value) {
    const Position position = value.position();
    if (position.line == 0) {
      return first_position(value);
    }
    if (m_line_starts.empty()) {
      build_line_starts();
    }
    if (position.line > m_line_starts.size()) {
      return position;
    }
    std::uint32_t offset = m_line_starts[position.line - 1] + position.column - 1;
    if (position.line == 1) {
      offset += m_body_begin;
    }
    const toml::syntax::Tree &tree = m_document.syntax();
    for (const auto &kv : tree.key_values) {
      if (kv.value != toml::syntax::npos && kv.key_count > 0 &&
          tree.values[kv.value].span.begin == offset) {
        return position_at(tree.key_segments[kv.key_first + kv.key_count - 1].begin);
      }
    }
    for (const auto &header : tree.headers) {
      if (header.key_count > 0 && header.span.begin == offset) {
        return position_at(tree.key_segments[header.key_first + header.key_count - 1].begin);
      }
    }
    return position;
  }

  // A table that exists only implicitly ([a.b] defines a) has no position: use its first
  // member's.
  static Position first_position(const Value &value) {
    if (value.position().line != 0) {
      return value.position();
    }
    if (const auto *members = value.table()) {
      for (const auto &member : *members) {
        const Position p = first_position(member.second);
        if (p.line != 0) {
          return p;
        }
      }
    }
    if (const auto *items = value.array()) {
      for (const Value &item : *items) {
        const Position p = first_position(item);
        if (p.line != 0) {
          return p;
        }
      }
    }
    return {};
  }

  // -- problems ---------------------------------------------------------------------------

  void add(Problem::Kind kind,
           Problem::Severity severity,
           const std::string &key,
           Position position,
           const std::string &text,
           std::string suggestion = {}) {
    Problem problem;
    problem.kind = kind;
    problem.severity = severity;
    problem.key = key;
    problem.line = position.line;
    problem.column = position.column;
    problem.location =
        position.line == 0
            ? m_document.source_name()
            : fmt::format("{}:{}:{}", m_document.source_name(), position.line, position.column);
    problem.message = problem.location + ": " + text;
    problem.suggestion = std::move(suggestion);
    m_out->push_back(std::move(problem));
  }

  void error(Problem::Kind kind,
             const std::string &key,
             Position position,
             const std::string &text,
             std::string suggestion = {}) {
    add(kind, Problem::Severity::error, key, position, text, std::move(suggestion));
  }

  void unknown_key(std::uint16_t model,
                   std::string_view key,
                   const Value &value,
                   const std::string &table_path,
                   const std::string &path) {
    const schema::Class &cls = m_schema.classes[model];
    const bool v0_9 = m_options.release == SchemaRelease::v0_9;
    if (v0_9 && moved_key(cls, key, value, table_path, path)) {
      return;
    }
    std::vector<std::string> known;
    for (const schema::Field &field : m_schema.fields_of(model)) {
      known.emplace_back(m_schema.str(field.name));
    }
    std::string suggestion = text::closest_match(key, known);
    std::string text =
        fmt::format("unknown key {} ({} has no such key)", path, m_schema.str(cls.name));
    if (!suggestion.empty()) {
      text += fmt::format("; did you mean '{}'?", suggestion);
    } else if (const auto elsewhere = keys_elsewhere(key); !elsewhere.empty()) {
      // Not a near name of its table: the same (or a close) name at another table.
      suggestion = elsewhere.front();
      std::vector<std::string> quoted;
      for (const auto &other : elsewhere) {
        quoted.push_back("'" + other + "'");
      }
      const std::string last = quoted.back();
      quoted.pop_back();
      text += fmt::format(
          "; did you mean {}{}?", quoted.empty() ? "" : text::join(quoted, ", ") + " or ", last);
    }
    if (v0_9) {
      // The newest schema compiled in: a key it does not know may be a newer release's.
      text += fmt::format("{} a Prime-RL newer than {}, primebeaker does not support it yet",
                          suggestion.empty() ? "; if this TOML is for" : " If this TOML is for",
                          m_release);
    }
    error(Problem::Kind::unknown_key, path, key_position(value), text, std::move(suggestion));
  }

  // The full paths of the schema whose last segment is `key` or closest to it (one edit for
  // names of up to four characters, two for longer ones), shallowest first, at most three.
  std::vector<std::string> keys_elsewhere(std::string_view key) {
    if (m_key_paths.empty()) {
      m_key_paths = key_paths(m_schema, m_root);
    }
    const std::size_t allowed = key.size() <= 4 ? 1 : 2;
    std::size_t best = allowed + 1;
    std::vector<std::string> found;
    for (const KeyPath &entry : m_key_paths) {
      const std::size_t distance = text::edit_distance(key, entry.leaf);
      if (distance < best) {
        best = distance;
        found.clear();
      }
      if (distance == best && found.size() < 3) {
        found.push_back(entry.path);
      }
    }
    return found;
  }

  // A v0.8.0 key that v0.9 moved: reported with where it went (each member of a table whose
  // members moved one by one). False when `key` did not move.
  bool moved_key(const schema::Class &cls,
                 std::string_view key,
                 const Value &value,
                 const std::string &table_path,
                 const std::string &path) {
    const MovedKey *moved = find_moved_key(m_schema, cls, key);
    if (moved == nullptr) {
      return false;
    }
    const auto destination = [&](std::string_view to) {
      std::string base = table_path;
      while (to.substr(0, 3) == "../") {
        const auto dot = base.rfind('.');
        base = dot == std::string::npos ? std::string() : base.substr(0, dot);
        to.remove_prefix(3);
      }
      return base.empty() ? std::string(to) : base + "." + std::string(to);
    };
    const auto report = [&](const std::string &where, const Value &at, std::string to) {
      error(Problem::Kind::unknown_key,
            where,
            key_position(at),
            fmt::format("unknown key {} ({} has no such key); Prime-RL {} moved it to {} ({})",
                        where,
                        m_schema.str(cls.name),
                        m_release,
                        to,
                        moved->origin),
            to);
    };
    if (!moved->per_key || value.table() == nullptr || value.table()->empty()) {
      report(path, value, destination(moved->to));
      return true;
    }
    for (const auto &[member, item] : *value.table()) {
      const MovedKey *exact = find_moved_key(m_schema, cls, std::string(key) + "." + member);
      const std::string to = exact != nullptr ? exact->to : child_path(moved->to, member);
      report(child_path(path, member), item, destination(to));
    }
    return true;
  }

  void missing(const Value &table,
               const std::string &path,
               std::string_view key,
               const std::string &what) {
    const std::string full = child_path(path, key);
    const std::string text =
        path.empty() ? fmt::format("{} is required{}", full, what)
                     : fmt::format("{} is required: [{}] has no {}{}", full, path, key, what);
    error(Problem::Kind::missing_required,
          full,
          path.empty() ? Position{} : key_position(table),
          text);
  }

  void wrong_type(const std::string &path, const Value &value, std::uint16_t type) {
    error(Problem::Kind::wrong_type,
          path,
          value.position().line ? value.position() : key_position(value),
          fmt::format("{} must be {}, not {}", path, describe(type), describe_value(value)));
  }

  // -- types ------------------------------------------------------------------------------

  std::string describe(std::uint16_t type_id, int depth = 0) const {
    const schema::Type &type = m_schema.types[type_id];
    switch (type.kind) {
    case Kind::any:
      return "anything";
    case Kind::none:
      return "\"None\"";
    case Kind::boolean:
      return "a boolean";
    case Kind::integer:
      return "an integer";
    case Kind::floating:
      return "a number";
    case Kind::string:
      return "a string";
    case Kind::path:
      return "a path (string)";
    case Kind::list:
      return depth > 1 ? "an array" : "an array of " + plural(type.item);
    case Kind::dict:
    case Kind::model:
      return "a table";
    case Kind::literal:
      return literal_list(type);
    case Kind::union_of: {
      std::vector<std::string> parts;
      const auto add_part = [&](std::string part) {
        if (std::find(parts.begin(), parts.end(), part) == parts.end()) {
          parts.push_back(std::move(part));
        }
      };
      for (std::uint16_t i = 0; i < type.count; ++i) {
        const std::uint16_t alt = m_schema.alternatives[type.first + i];
        if (only_booleans(alt)) { // `true, false, a table`, not `one of true, false, a table`
          const schema::Type &lits = m_schema.types[alt];
          for (std::uint16_t j = 0; j < lits.count; ++j) {
            add_part(m_schema.str(m_schema.literals[lits.first + j].text));
          }
        } else {
          add_part(describe(alt, depth + 1));
        }
      }
      if (parts.size() == 2) {
        return parts[0] + " or " + parts[1];
      }
      std::string out;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        out += (i == 0 ? "" : i + 1 == parts.size() ? ", or " : ", ") + parts[i];
      }
      return out;
    }
    }
    return "anything";
  }

  std::string plural(std::uint16_t type_id) const {
    switch (m_schema.types[type_id].kind) {
    case Kind::boolean:
      return "booleans";
    case Kind::integer:
      return "integers";
    case Kind::floating:
      return "numbers";
    case Kind::string:
    case Kind::path:
      return "strings";
    case Kind::model:
    case Kind::dict:
      return "tables";
    case Kind::literal:
      return literal_list(m_schema.types[type_id]);
    default:
      return "values";
    }
  }

  std::string literal_list(const schema::Type &type) const {
    std::vector<std::string> parts;
    for (std::uint16_t i = 0; i < type.count; ++i) {
      const schema::Literal &lit = m_schema.literals[type.first + i];
      const char *text = m_schema.str(lit.text);
      parts.push_back(lit.kind == schema::LiteralKind::string ? toml_quote(text) : text);
    }
    return parts.size() == 1 ? parts[0] : "one of " + text::join(parts, ", ");
  }

  // A Literal of booleans only (a BeforeValidator's normalised inputs).
  bool only_booleans(std::uint16_t type_id) const {
    const schema::Type &type = m_schema.types[type_id];
    if (type.kind != Kind::literal || type.count == 0) {
      return false;
    }
    for (std::uint16_t i = 0; i < type.count; ++i) {
      if (m_schema.literals[type.first + i].kind != schema::LiteralKind::boolean) {
        return false;
      }
    }
    return true;
  }

  bool admits_none(std::uint16_t type_id) const {
    const schema::Type &type = m_schema.types[type_id];
    if (type.kind == Kind::none || type.kind == Kind::any) {
      return true;
    }
    if (type.kind == Kind::union_of) {
      for (std::uint16_t i = 0; i < type.count; ++i) {
        if (admits_none(m_schema.alternatives[type.first + i])) {
          return true;
        }
      }
    }
    if (type.kind == Kind::literal) {
      for (std::uint16_t i = 0; i < type.count; ++i) {
        if (m_schema.literals[type.first + i].kind == schema::LiteralKind::none) {
          return true;
        }
      }
    }
    return false;
  }

  void check_field(std::uint16_t model,
                   const schema::Field &field,
                   const Value &value,
                   const std::string &path) {
    // BaseConfig turns the string "None" into null for every field, before typing.
    if (const std::string *text = value.string(); text != nullptr && *text == "None") {
      if (!admits_none(field.type)) {
        error(Problem::Kind::wrong_type,
              path,
              value.position(),
              fmt::format(
                  "{} = \"None\" means null, but {} must be {}", path, path, describe(field.type)));
      }
      return;
    }
    std::vector<std::string_view> dropped;
    for (const schema::Rewrite &rewrite : m_schema.rewrites) {
      if (rewrite.model == model && rewrite.field == field.name /* one pool entry per string */ &&
          value.table()) {
        const Value *tag = value.find("type");
        if (tag != nullptr && tag->string() && *tag->string() == m_schema.str(rewrite.tag)) {
          dropped.emplace_back(m_schema.str(rewrite.key));
        }
      }
    }
    const schema::Bounds *bounds = field.bounds == 0 ? nullptr : &m_schema.bounds[field.bounds];
    check(field.type, value, path, bounds, field.default_model, dropped);
  }

  // Checks `value` against `type_id`, adding what is wrong.
  void check(std::uint16_t type_id,
             const Value &value,
             const std::string &path,
             const schema::Bounds *bounds,
             std::int16_t default_model,
             const std::vector<std::string_view> &dropped) {
    const schema::Type &type = m_schema.types[type_id];
    switch (type.kind) {
    case Kind::any:
      return;
    case Kind::none:
      wrong_type(path, value, type_id);
      return;
    case Kind::boolean:
      if (!value.boolean() &&
          !(value.integer() && (*value.integer() == 0 || *value.integer() == 1)) &&
          !(value.floating() && (*value.floating() == 0.0 || *value.floating() == 1.0)) &&
          !(value.string() && is_bool_string(*value.string()))) {
        wrong_type(path, value, type_id);
      }
      return;
    case Kind::integer:
    case Kind::floating:
      check_number(type.kind == Kind::integer, value, path, bounds);
      return;
    case Kind::string:
    case Kind::path:
      if (value.string() == nullptr) {
        wrong_type(path, value, type_id);
      } else if (bounds != nullptr) {
        check_length(path, value, value.string()->size(), *bounds);
      }
      return;
    case Kind::list:
      if (const auto *items = value.array()) {
        for (std::size_t i = 0; i < items->size(); ++i) {
          check(type.item, (*items)[i], fmt::format("{}[{}]", path, i), nullptr, -1, {});
        }
        if (bounds != nullptr) {
          check_length(path, value, items->size(), *bounds);
        }
      } else {
        wrong_type(path, value, type_id);
      }
      return;
    case Kind::dict:
      if (const auto *members = value.table()) {
        for (const auto &[key, item] : *members) {
          check(type.item, item, child_path(path, key), nullptr, -1, {});
        }
      } else {
        wrong_type(path, value, type_id);
      }
      return;
    case Kind::model:
      if (value.table() != nullptr) {
        check_model(type.item, value, path, dropped);
      } else {
        wrong_type(path, value, type_id);
      }
      return;
    case Kind::literal:
      check_literal(type_id, value, path);
      return;
    case Kind::union_of:
      if (type.discriminator != 0) {
        check_tagged(type, value, path, default_model, dropped);
      } else {
        check_union(type_id, value, path, bounds, default_model, dropped);
      }
      return;
    }
  }

  // A number as lax mode reads it (an int is a float, an integral float an int, booleans and
  // numeric strings are numbers), then its bounds: the one check behind every integer and
  // float.
  void check_number(bool integer,
                    const Value &value,
                    const std::string &path,
                    const schema::Bounds *bounds) {
    const auto refuse = [&] {
      error(Problem::Kind::wrong_type,
            path,
            value.position().line ? value.position() : key_position(value),
            fmt::format("{} must be {}, not {}",
                        path,
                        integer ? "an integer" : "a number",
                        describe_value(value)));
    };
    std::optional<double> number;
    if (value.integer()) {
      number = static_cast<double>(*value.integer());
    } else if (value.floating()) {
      number = *value.floating();
      if (integer && !(std::isfinite(*number) && whole(*number))) {
        refuse(); // pydantic refuses a fractional part
        return;
      }
    } else if (value.boolean()) {
      return; // lax mode reads true/false as 1/0
    } else if (value.string()) {
      const auto parsed = number_in_string(*value.string());
      if (!parsed || (integer && !(std::isfinite(*parsed) && whole(*parsed)))) {
        refuse();
      }
      return; // numeric strings are accepted; their bounds are left to Prime-RL
    } else {
      refuse();
      return;
    }
    if (bounds == nullptr || std::isnan(*number)) {
      return;
    }
    const double v = *number;
    const auto flags = bounds->flags;
    const bool fails = ((flags & schema::Bounds::has_ge) && !(v >= bounds->ge)) ||
                       ((flags & schema::Bounds::has_gt) && !(v > bounds->gt)) ||
                       ((flags & schema::Bounds::has_le) && !(v <= bounds->le)) ||
                       ((flags & schema::Bounds::has_lt) && !(v < bounds->lt));
    if (fails) {
      error(Problem::Kind::out_of_bounds,
            path,
            value.position(),
            fmt::format("{} = {} is out of bounds: it must be {}",
                        path,
                        value.raw(),
                        describe_bounds(*bounds)));
    } else if ((flags & schema::Bounds::finite) && !std::isfinite(v)) {
      error(Problem::Kind::out_of_bounds,
            path,
            value.position(),
            fmt::format("{} = {} is out of bounds: it must be finite", path, value.raw()));
    }
  }

  void check_length(const std::string &path,
                    const Value &value,
                    std::size_t length,
                    const schema::Bounds &bounds) {
    if ((bounds.flags & schema::Bounds::has_min_length) && length < bounds.min_length) {
      error(Problem::Kind::out_of_bounds,
            path,
            value.position(),
            fmt::format("{} is too short: it needs at least {} item(s)", path, bounds.min_length));
    } else if ((bounds.flags & schema::Bounds::has_max_length) && length > bounds.max_length) {
      error(Problem::Kind::out_of_bounds,
            path,
            value.position(),
            fmt::format("{} is too long: it takes at most {} item(s)", path, bounds.max_length));
    }
  }

  void check_literal(std::uint16_t type_id, const Value &value, const std::string &path) {
    const schema::Type &type = m_schema.types[type_id];
    bool strings = false;
    bool integers = false;
    bool booleans = false;
    bool others = false;
    std::vector<std::string> names;
    for (std::uint16_t i = 0; i < type.count; ++i) {
      const schema::Literal &lit = m_schema.literals[type.first + i];
      if (lit.kind == schema::LiteralKind::string) {
        strings = true;
        names.emplace_back(m_schema.str(lit.text));
        if (value.string() && *value.string() == m_schema.str(lit.text)) {
          return;
        }
      } else if (lit.kind == schema::LiteralKind::integer) {
        integers = true;
        if (value.integer() && fmt::format("{}", *value.integer()) == m_schema.str(lit.text)) {
          return;
        }
      } else if (lit.kind == schema::LiteralKind::boolean) {
        booleans = true;
        if (value.boolean() &&
            (*value.boolean() ? "true" : "false") == std::string_view(m_schema.str(lit.text))) {
          return;
        }
      } else {
        others = true;
      }
    }
    if (value.string() && strings) {
      std::string suggestion = text::closest_match(*value.string(), names);
      std::string text = fmt::format("{} = {} is not allowed: it must be {}",
                                     path,
                                     toml_quote(*value.string()),
                                     literal_list(type));
      if (!suggestion.empty()) {
        text += fmt::format("; did you mean \"{}\"?", suggestion);
      }
      error(Problem::Kind::not_allowed, path, value.position(), text, std::move(suggestion));
      return;
    }
    if (value.integer() && integers) {
      error(Problem::Kind::not_allowed,
            path,
            value.position(),
            fmt::format(
                "{} = {} is not allowed: it must be {}", path, value.raw(), literal_list(type)));
      return;
    }
    // Anything but a string for string literals (and the like) is refused; mixed kinds that
    // lax mode might coerce are accepted. Booleans alone take only a TOML boolean: they are
    // the `v is True` / `v is False` cases of a BeforeValidator (docs/primerl-schema.md,
    // "Before-validators").
    const bool booleans_only = booleans && !strings && !integers && !others;
    const bool sure = (strings && !integers && !booleans && !others && !value.string()) ||
                      (integers && !strings && !booleans && !others && !value.string() &&
                       !value.integer() && !value.floating() && !value.boolean()) ||
                      booleans_only;
    if (sure) {
      wrong_type(path, value, type_id);
    }
  }

  // A discriminated union: the key (usually `type`) picks the class.
  void check_tagged(const schema::Type &type,
                    const Value &value,
                    const std::string &path,
                    std::int16_t default_model,
                    const std::vector<std::string_view> &dropped) {
    const std::string_view discriminator = m_schema.str(type.discriminator);
    if (value.table() == nullptr) {
      error(Problem::Kind::wrong_type,
            path,
            value.position(),
            fmt::format("{} must be a table, not {}", path, describe_value(value)));
      return;
    }
    std::vector<std::string> tags;
    std::vector<std::uint16_t> models;
    for (std::uint16_t i = 0; i < type.count; ++i) {
      const schema::Type &alt = m_schema.types[m_schema.alternatives[type.first + i]];
      if (alt.kind != Kind::model) {
        continue;
      }
      const schema::Field *tag_field = m_schema.find_field(alt.item, discriminator);
      if (tag_field == nullptr || m_schema.types[tag_field->type].kind != Kind::literal) {
        continue;
      }
      const schema::Type &lits = m_schema.types[tag_field->type];
      for (std::uint16_t j = 0; j < lits.count; ++j) {
        tags.emplace_back(m_schema.str(m_schema.literals[lits.first + j].text));
        models.push_back(alt.item);
      }
    }
    const Value *tag = value.find(discriminator);
    if (tag == nullptr) {
      if (default_model >= 0 &&
          std::find(models.begin(), models.end(), default_model) != models.end()) {
        check_model(static_cast<std::uint16_t>(default_model), value, path, dropped);
      } else {
        std::vector<std::string> shown;
        for (const auto &t : tags) {
          shown.push_back(toml_quote(t));
        }
        missing(value,
                path,
                discriminator,
                fmt::format(" to choose among {}", text::join(shown, ", ")));
      }
      return;
    }
    const std::string tag_path = child_path(path, discriminator);
    if (tag->string() == nullptr) {
      error(Problem::Kind::wrong_type,
            tag_path,
            tag->position(),
            fmt::format("{} must be a string, not {}", tag_path, describe_value(*tag)));
      return;
    }
    for (std::size_t i = 0; i < tags.size(); ++i) {
      if (tags[i] == *tag->string()) {
        check_model(models[i], value, path, dropped);
        return;
      }
    }
    std::vector<std::string> shown;
    for (const auto &t : tags) {
      shown.push_back(toml_quote(t));
    }
    std::string suggestion = text::closest_match(*tag->string(), tags);
    std::string text = fmt::format("{} = {} is not allowed: it must be one of {}",
                                   tag_path,
                                   toml_quote(*tag->string()),
                                   text::join(shown, ", "));
    if (!suggestion.empty()) {
      text += fmt::format("; did you mean \"{}\"?", suggestion);
    }
    error(Problem::Kind::not_allowed, tag_path, tag->position(), text, std::move(suggestion));
  }

  // Whether an alternative is the one a value of this TOML type was meant for.
  bool shaped_for(std::uint16_t type_id, const Value &value) const {
    const schema::Type &type = m_schema.types[type_id];
    switch (type.kind) {
    case Kind::model:
    case Kind::dict:
      return value.table() != nullptr;
    case Kind::union_of:
      if (type.discriminator != 0) {
        return value.table() != nullptr;
      }
      for (std::uint16_t i = 0; i < type.count; ++i) {
        if (shaped_for(m_schema.alternatives[type.first + i], value)) {
          return true;
        }
      }
      return false;
    case Kind::list:
      return value.array() != nullptr;
    case Kind::integer:
    case Kind::floating:
      return value.integer() || value.floating();
    case Kind::boolean:
      return value.boolean().has_value();
    case Kind::string:
    case Kind::path:
      return value.string() != nullptr;
    case Kind::literal:
      for (std::uint16_t i = 0; i < type.count; ++i) {
        const auto kind = m_schema.literals[type.first + i].kind;
        if ((kind == schema::LiteralKind::string && value.string()) ||
            (kind == schema::LiteralKind::integer && value.integer()) ||
            (kind == schema::LiteralKind::boolean && value.boolean())) {
          return true;
        }
      }
      return false;
    default:
      return false;
    }
  }

  void check_union(std::uint16_t type_id,
                   const Value &value,
                   const std::string &path,
                   const schema::Bounds *bounds,
                   std::int16_t default_model,
                   const std::vector<std::string_view> &dropped) {
    const schema::Type &type = m_schema.types[type_id];
    std::vector<Problem> trial;
    std::vector<Problem> *saved = m_out;
    std::vector<std::uint16_t> shaped;
    for (std::uint16_t i = 0; i < type.count; ++i) {
      const std::uint16_t alt = m_schema.alternatives[type.first + i];
      trial.clear();
      m_out = &trial;
      check(alt, value, path, bounds, default_model, dropped);
      m_out = saved;
      if (std::none_of(trial.begin(), trial.end(), [](const Problem &p) {
            return p.severity == Problem::Severity::error;
          })) {
        m_out->insert(m_out->end(), trial.begin(), trial.end()); // its notes
        return;
      }
      if (shaped_for(alt, value)) {
        shaped.push_back(alt);
      }
    }
    // No alternative fits. One meant for this shape of value says best what is wrong, unless it
    // is a bare Literal among other scalars (`int | Literal["auto"]`): name them all.
    if (shaped.size() == 1 && m_schema.types[shaped[0]].kind != Kind::literal) {
      check(shaped[0], value, path, bounds, default_model, dropped);
      return;
    }
    if (shaped.size() == 1 && value.string()) {
      std::vector<std::string> names;
      const schema::Type &lits = m_schema.types[shaped[0]];
      for (std::uint16_t j = 0; j < lits.count; ++j) {
        if (m_schema.literals[lits.first + j].kind == schema::LiteralKind::string) {
          names.emplace_back(m_schema.str(m_schema.literals[lits.first + j].text));
        }
      }
      std::string suggestion = text::closest_match(*value.string(), names);
      std::string text = fmt::format("{} = {} is not allowed: it must be {}",
                                     path,
                                     toml_quote(*value.string()),
                                     describe(type_id));
      if (!suggestion.empty()) {
        text += fmt::format("; did you mean \"{}\"?", suggestion);
      }
      error(Problem::Kind::not_allowed, path, value.position(), text, std::move(suggestion));
      return;
    }
    wrong_type(path, value, type_id);
  }
};

} // namespace

std::string_view root_name(ConfigRoot root) {
  switch (root) {
  case ConfigRoot::rl:
    return "rl";
  case ConfigRoot::sft:
    return "sft";
  case ConfigRoot::trainer:
    return "trainer";
  case ConfigRoot::orchestrator:
    return "orchestrator";
  case ConfigRoot::inference:
    return "inference";
  case ConfigRoot::env_server:
    return "env_server";
  case ConfigRoot::evals:
    return "evals";
  }
  return "rl";
}

std::optional<ConfigRoot> parse_config_root(std::string_view name) {
  for (const ConfigRoot root : k_config_roots) {
    if (name == root_name(root)) {
      return root;
    }
  }
  return std::nullopt;
}

std::string_view kind_name(SchemaProblem::Kind kind) {
  switch (kind) {
  case SchemaProblem::Kind::unknown_key:
    return "unknown key";
  case SchemaProblem::Kind::wrong_type:
    return "wrong type";
  case SchemaProblem::Kind::out_of_bounds:
    return "out of bounds";
  case SchemaProblem::Kind::not_allowed:
    return "not allowed";
  case SchemaProblem::Kind::missing_required:
    return "missing required";
  }
  return "unknown key";
}

std::string_view release_name(SchemaRelease release) {
  switch (release) {
  case SchemaRelease::v0_7_1_dev83:
    return "v0.7.1.dev83";
  case SchemaRelease::v0_9:
    return "v0.9";
  case SchemaRelease::v0_8_0:
    break;
  }
  return "v0.8.0";
}

const schema::Schema &schema_for(SchemaRelease release) {
  switch (release) {
  case SchemaRelease::v0_7_1_dev83:
    return schema::prime_rl_v0_7_1_dev83();
  case SchemaRelease::v0_9:
    return schema::prime_rl_v0_9();
  case SchemaRelease::v0_8_0:
    break;
  }
  return schema::prime_rl_v0_8_0();
}

std::vector<SchemaProblem>
check_schema(const Document &document, ConfigRoot root, const SchemaCheckOptions &options) {
  const schema::Schema &schema = schema_for(options.release);
  const schema::Root *entry = schema.find_root(root_name(root));
  std::vector<SchemaProblem> problems;
  if (entry == nullptr) {
    return problems;
  }
  Checker checker(schema, entry->model, document, options, problems);
  checker.check_model(entry->model, document.root(), "");
  // Document order: problems by position (those without one, like a missing [trainer], last).
  std::stable_sort(problems.begin(), problems.end(), [](const auto &a, const auto &b) {
    const auto key = [](const SchemaProblem &p) {
      return std::pair(p.line == 0 ? UINT32_MAX : p.line, p.column);
    };
    return key(a) < key(b);
  });
  return problems;
}

std::size_t
check_schema(const Document &document, ConfigRoot root, Problems &problems, SchemaRelease release) {
  SchemaCheckOptions options;
  options.release = release;
  std::size_t errors = 0;
  for (const SchemaProblem &problem : check_schema(document, root, options)) {
    if (problem.severity == SchemaProblem::Severity::error &&
        !problems.already_reports(problem.line != 0 ? problem.location : "", problem.key)) {
      problems.add(problem.message);
      ++errors;
    }
  }
  return errors;
}

} // namespace pb::primerl
