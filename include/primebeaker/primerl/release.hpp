// SPDX-License-Identifier: MIT
// The Prime-RL releases primebeaker can launch, by the version an image holds
// (docs/primerl-schema.md "Which Prime-RL reads a TOML"). The image decides which Prime-RL reads
// a TOML: its version comes from the image catalog or from --prime-rl, and names both the config
// generation (how the launch, the node and the checkpoints read the TOML) and the schema that
// checks its keys. The TOML's own keys only confirm it (detect_generation).
#pragma once

#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/schema.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::primerl {

struct PrimeRl {
  std::string version; // as Prime-RL tags it: "v0.7.1.dev83", "v0.8.0", "v0.8.1.dev67"
  Generation generation = Generation::v0_8; // v0_8 or v0_9
  SchemaRelease schema = SchemaRelease::v0_8_0;

  bool operator==(const PrimeRl &) const = default;
};

// The release `version` names ("v0.8.0" or "0.8.0"; "v0.9" and "v0.9.0" are v0.8.1.dev67, the
// commit the v0.9 schema is read from), or nullopt when primebeaker cannot read its TOMLs.
std::optional<PrimeRl> find_prime_rl(std::string_view version);

// The same, or pb::Error exit 2 naming `flag` and the versions primebeaker reads.
PrimeRl require_prime_rl(std::string_view version, std::string_view flag);

// "v0.7.1.dev83, v0.8.0, v0.8.1.dev67 (v0.9)": what find_prime_rl accepts, for messages.
std::string known_prime_rl_versions();

// "Prime-RL v0.8.0" / "Prime-RL v0.8.1.dev67 (v0.9)".
std::string display_name(const PrimeRl &prime_rl);

// How `toml check --prime-rl` reads a file (docs/primerl-schema.md "toml check"): the releases
// `prime_rl` names (all whose generation the keys show, all when they show none), each entrypoint
// of each release (`root`, or every root the release has, the likeliest first); the first
// reading with no error wins, else the one with the fewest errors.
struct Reading {
  PrimeRl prime_rl;
  ConfigRoot root = ConfigRoot::rl;
  std::vector<SchemaProblem> problems; // errors and notes, document order
  std::size_t errors = 0;
};

Reading read_prime_rl_file(const toml::Document &document,
                           std::optional<ConfigRoot> root,
                           std::optional<PrimeRl> prime_rl);

// How `toml set|unset` reads the file it edits (docs/toml.md "Edits of Prime-RL configs"):
// as read_prime_rl_file reads it, when that reading knows more of the file's top-level keys than
// not, and at least two of them or one that is a table; nullopt when the file is no Prime-RL
// config. With `prime_rl` (--prime-rl VERSION), the file is read as that release whatever its
// keys.
std::optional<Reading> read_prime_rl_config(const toml::Document &document,
                                            std::optional<PrimeRl> prime_rl);

// The errors of `after` that `before` (read as `before_reading`) did not have: `after` is read
// as the same release and entrypoint, and problems are compared by kind, key and message
// (without their positions, which an edit moves). Document order.
std::vector<SchemaProblem> introduced_problems(const Reading &before_reading,
                                               const toml::Document &after);

} // namespace pb::primerl
