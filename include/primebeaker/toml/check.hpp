// SPDX-License-Identifier: MIT
// `toml check --prime-rl` and the schema check of `toml set|unset`: checks of a module above
// toml. The toml module cannot know Prime-RL's config schema (primerl sits above it), so the
// module that owns Prime-RL's launch rules and also adds to the `toml` group (launch, with `toml
// rewrite-envs`) provides them when it registers its commands; both are registered whenever argv
// names `toml` (docs/ARCHITECTURE.md, "The root command").
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace pb::toml {

class Document;

struct ExtraCheckResult {
  std::vector<std::string> errors; // "FILE:L:C: message", one line each
  std::vector<std::string> notes;  // logged at info level (-v)
};

// `root` is what --root says: "auto" or a Prime-RL entrypoint name; `version` what --prime-rl
// VERSION says, or "" for every release the keys allow.
using PrimeRlCheck = std::function<ExtraCheckResult(
    const Document &, const std::string &root, const std::string &version)>;
// Whether `word` spells a Prime-RL version ("v0.8.0", "0.9", "v0.8.1.dev67"): `toml check
// --prime-rl VERSION FILE...` takes such a first operand that is not a file as the version.
bool looks_like_version(const std::string &word);

void provide_prime_rl_check(PrimeRlCheck check);

// `toml set|unset` on a Prime-RL config (docs/toml.md "Edits of Prime-RL configs"): given the
// document before the edit and what --prime-rl VERSION says ("" to detect it), a check of the
// edited document that returns the problems the edit introduces (`errors`, one line each; `notes`:
// how the file was read), or an empty function when the file is no Prime-RL config.
using EditCheck = std::function<ExtraCheckResult(const Document &after)>;
using PrimeRlEditCheck =
    std::function<EditCheck(const Document &before, const std::string &version)>;

void provide_prime_rl_edit_check(PrimeRlEditCheck check);

} // namespace pb::toml
