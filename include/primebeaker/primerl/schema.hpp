// SPDX-License-Identifier: MIT
// Prime-RL's config schema, compiled in, and a pure checker of a TOML against it
// (docs/primerl-schema.md). The tables are generated from Prime-RL's pydantic classes by
// tools/extract_schema.py (src/primerl/generated/); the checker finds, in one
// pass, every key Prime-RL would refuse for its shape: unknown keys (with the nearest known one),
// values of the wrong type, numbers out of Field bounds, strings outside a Literal, missing
// required keys and discriminators. What it cannot type exactly it accepts: a false alarm is worse
// than a miss. Cross-field rules (Prime-RL's model validators) stay with Prime-RL in the container.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pb::toml {
class Document;
struct Position;
} // namespace pb::toml

namespace pb::primerl {

class Problems;

namespace schema {

// What a TOML value must be. list/dict: Type::item is the element (dict: value) type; model:
// Type::item is the class; union_of: alternatives [first, first + count); literal: literals
// [first, first + count). `any` accepts everything (not typed precisely), `none` only Prime-RL's
// "None" string for null.
enum class Kind : std::uint8_t {
  any,
  none,
  boolean,
  integer,
  floating,
  string,
  path,
  list,
  dict,
  model,
  union_of,
  literal,
};

// Strings are offsets into Schema::text (NUL-terminated there; 0 is ""), so that the tables are
// constant data without relocations: Schema::str() reads them.
using Text = std::uint32_t;

struct Type {
  Kind kind;
  std::uint16_t item;
  std::uint16_t first;
  std::uint16_t count;
  Text discriminator; // union_of over classes chosen by this key, else ""
};

enum class LiteralKind : std::uint8_t { string, integer, floating, boolean, none };

struct Literal {
  LiteralKind kind;
  Text text; // the decoded string, or the number / true / false as Python writes it
};

// pydantic Field(...) bounds. Bits of `flags` say which are set.
struct Bounds {
  enum : std::uint8_t {
    has_ge = 1,
    has_gt = 2,
    has_le = 4,
    has_lt = 8,
    has_min_length = 16,
    has_max_length = 32,
    finite = 64, // allow_inf_nan=False
  };
  std::uint8_t flags;
  double ge, gt, le, lt;
  std::uint32_t min_length, max_length;
};

struct Field {
  Text name;
  Text aliases;      // alias / validation_alias names, '|'-separated, "" for none
  Text default_text; // the default as the Python source writes it, "" when required
  std::uint16_t type;
  std::uint16_t bounds; // index into Schema::bounds (0 = none)
  bool required;
  std::int16_t default_model; // the class a discriminated union takes when its key is omitted
};

// What a class does with keys it has no field for.
enum class Extra : std::uint8_t {
  forbid,  // refuses them (pydantic_config.BaseConfig)
  ignore,  // drops them silently (plain pydantic.BaseModel)
  allow,   // keeps them
  unknown, // a base class the extractor did not read may add fields: accept them
  // validated as a subclass picked at run time by an id (a verifiers env, taskset, harness
  // or judge plugin's config): the fields declared here are typed, other keys are the
  // subclass's and accepted
  narrowed,
};

struct Class {
  Text name;
  Text module;
  std::uint16_t first_field;
  std::uint16_t field_count;
  Extra extra;
};

// A key Prime-RL removes before validating (a mode="before" validator): in class `model`, the
// table at `field` loses `key` when its `type` is `tag`.
struct Rewrite {
  std::uint16_t model;
  Text field;
  Text tag;
  Text key;
};

// An entrypoint: "rl", "sft", "trainer", "orchestrator", "inference", "env_server".
struct Root {
  Text name;
  std::uint16_t model;
};

struct Schema {
  const char *label; // "Prime-RL v0.8.0", "Prime-RL v0.9 (559b4477)"
  const char *text;  // the string pool
  std::span<const Class> classes;
  std::span<const Field> fields;
  std::span<const Type> types;
  std::span<const std::uint16_t> alternatives;
  std::span<const Literal> literals;
  std::span<const Bounds> bounds;
  std::span<const Rewrite> rewrites;
  std::span<const Root> roots;

  const char *str(Text at) const { return text + at; }
  std::span<const Field> fields_of(std::uint16_t model) const {
    const Class &c = classes[model];
    return fields.subspan(c.first_field, c.field_count);
  }
  const Root *find_root(std::string_view name) const;
  // The field `key` of `model` by name or alias, or nullptr.
  const Field *find_field(std::uint16_t model, std::string_view key) const;
};

// The Prime-RL the cataloged Beaker images hold: v0.7.1.dev83 plus the goncalorafaria/prime-rl
// fork's extensions (src/primerl/generated/schema_v0_7_1_dev83.cpp, generated).
const Schema &prime_rl_v0_7_1_dev83();
// Prime-RL v0.8.0 (src/primerl/generated/schema_v0_8_0.cpp, generated).
const Schema &prime_rl_v0_8_0();
// Prime-RL v0.9: main at 559b4477 (tag v0.8.1.dev67), the commit before the v0.9.0 release,
// with its deps/verifiers v1 classes (src/primerl/generated/schema_v0_9.cpp, generated).
const Schema &prime_rl_v0_9();

} // namespace schema

// Which Prime-RL generation's schema a TOML is checked against.
enum class SchemaRelease { v0_7_1_dev83, v0_8_0, v0_9 };

std::string_view release_name(SchemaRelease release); // "v0.7.1.dev83", "v0.8.0", "v0.9"
const schema::Schema &schema_for(SchemaRelease release);

// Which Prime-RL entrypoint reads the TOML. primebeaker's `rl` and `sft` commands know theirs;
// the others are for per-component TOMLs (`rl --trainer @ file.toml`, `env-server @ ...`) and,
// from v0.9, `evals`. A release's schema may lack a root (Schema::find_root is then nullptr).
enum class ConfigRoot { rl, sft, trainer, orchestrator, inference, env_server, evals };

// Every entrypoint, in the order above.
inline constexpr ConfigRoot k_config_roots[] = {ConfigRoot::rl,
                                                ConfigRoot::sft,
                                                ConfigRoot::trainer,
                                                ConfigRoot::orchestrator,
                                                ConfigRoot::inference,
                                                ConfigRoot::env_server,
                                                ConfigRoot::evals};

std::string_view root_name(ConfigRoot root);                        // "rl", "sft", "env_server"...
std::optional<ConfigRoot> parse_config_root(std::string_view name); // the inverse

struct SchemaProblem {
  enum class Kind {
    unknown_key,      // not a field of its table (suggestion: the nearest field name)
    wrong_type,       // e.g. a string where an integer is wanted
    out_of_bounds,    // a number or length outside the Field bounds
    not_allowed,      // a string outside its Literal values, or an unknown discriminator
    missing_required, // a required key (or a discriminated union's `type`) is absent
  };
  enum class Severity { error, note };

  Kind kind = Kind::unknown_key;
  Severity severity = Severity::error;
  std::string key;        // dotted path as TOML writes it, arrays indexed: a.b[0].c
  std::string location;   // "FILE:LINE:COL" of the key (unknown keys) or the value
  std::uint32_t line = 0; // 1-based; 0 when the document has no position for it
  std::uint32_t column = 0;
  std::string message;    // one line, starting with `location`
  std::string suggestion; // unknown_key / not_allowed: the nearest valid name, or ""
};

std::string_view kind_name(SchemaProblem::Kind kind); // "unknown key", "wrong type", ...

struct SchemaCheckOptions {
  // The generation the TOML is read as. v0.9: unknown keys also say that a TOML for a newer
  // Prime-RL is not supported yet, and v0.8.0 keys that moved name where they went.
  SchemaRelease release = SchemaRelease::v0_8_0;
  // Report required keys that are absent (e.g. [trainer] in an rl TOML, or
  // deployment.num_train_nodes for multi_node).
  bool missing_required = true;
};

// Every problem of `document` read as `options.release`'s `root` entrypoint would read it, in
// document order; pure (reads only the document). Errors and notes in one list.
std::vector<SchemaProblem> check_schema(const toml::Document &document,
                                        ConfigRoot root,
                                        const SchemaCheckOptions &options = {});

// The same, with each error added to `problems` (config.hpp's collector, one line each) unless
// `problems` already reports its location or key; notes are left out. Returns the number added.
std::size_t check_schema(const toml::Document &document,
                         ConfigRoot root,
                         Problems &problems,
                         SchemaRelease release = SchemaRelease::v0_8_0);

} // namespace pb::primerl
