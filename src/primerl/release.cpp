// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/release.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>
#include <tuple>

namespace pb::primerl {

namespace {

struct Known {
  std::string_view version;
  std::string_view alias; // another spelling users write, or ""
  Generation generation;
  SchemaRelease schema;
};

// One row per release whose schema is compiled in (docs/primerl-schema.md). v0.7.1.dev83 is the
// fork the cataloged Beaker images hold; its TOMLs are written in v0.8.0's layout.
constexpr std::array k_known = {
    Known{"v0.7.1.dev83", "", Generation::v0_8, SchemaRelease::v0_7_1_dev83},
    Known{"v0.8.0", "", Generation::v0_8, SchemaRelease::v0_8_0},
    Known{"v0.8.1.dev67", "v0.9", Generation::v0_9, SchemaRelease::v0_9},
};

} // namespace

std::optional<PrimeRl> find_prime_rl(std::string_view version) {
  std::string spelled(version);
  if (!spelled.empty() && spelled.front() != 'v') {
    spelled.insert(spelled.begin(), 'v');
  }
  if (spelled == "v0.9.0") {
    spelled = "v0.9";
  }
  for (const Known &known : k_known) {
    if (spelled == known.version || (!known.alias.empty() && spelled == known.alias)) {
      return PrimeRl{std::string(known.version), known.generation, known.schema};
    }
  }
  return std::nullopt;
}

std::string known_prime_rl_versions() {
  std::vector<std::string> names;
  for (const Known &known : k_known) {
    names.push_back(known.alias.empty() ? std::string(known.version)
                                        : fmt::format("{} ({})", known.version, known.alias));
  }
  return text::join(names, ", ");
}

PrimeRl require_prime_rl(std::string_view version, std::string_view flag) {
  if (auto found = find_prime_rl(version)) {
    return *found;
  }
  throw usage_error(fmt::format("{} '{}': primebeaker reads the TOMLs of Prime-RL {}",
                                flag,
                                version,
                                known_prime_rl_versions()));
}

std::string display_name(const PrimeRl &prime_rl) {
  return prime_rl.generation == Generation::v0_9
             ? fmt::format("Prime-RL {} (v0.9)", prime_rl.version)
             : fmt::format("Prime-RL {}", prime_rl.version);
}

namespace {

// The entrypoints in the order the file's name and its top-level keys make likeliest (Prime-RL's
// per-component files are named infer/orch/train/env... and hold that component's keys), then
// the rest.
std::vector<ConfigRoot> likely_roots(const toml::Document &document) {
  const auto has = [&](const char *key) { return document.root().find(key) != nullptr; };
  const std::string stem = std::filesystem::path(document.source_name()).stem().string();
  const auto named = [&](const char *part) { return stem.find(part) != std::string::npos; };
  std::vector<ConfigRoot> order;
  const auto prefer = [&](bool hint, ConfigRoot root) {
    if (hint && std::find(order.begin(), order.end(), root) == order.end()) {
      order.push_back(root);
    }
  };
  prefer(has("orchestrator") || has("trainer"), ConfigRoot::rl);
  prefer(has("data") && !has("loss"), ConfigRoot::sft);
  prefer(named("infer"), ConfigRoot::inference);
  prefer(named("orch"), ConfigRoot::orchestrator);
  prefer(named("train") && !named("start"), ConfigRoot::trainer);
  prefer(named("env"), ConfigRoot::env_server);
  prefer(named("eval") || has("eval"), ConfigRoot::evals);
  prefer(has("batch_size") || has("group_size") || has("sampling"), ConfigRoot::orchestrator);
  prefer(has("server") || has("parallel") || has("vllm") || has("gpu_memory_utilization"),
         ConfigRoot::inference);
  prefer(has("env"), ConfigRoot::env_server);
  prefer(has("loss") || has("optim"), ConfigRoot::trainer);
  for (const ConfigRoot root : k_config_roots) {
    prefer(true, root);
  }
  return order;
}

} // namespace

Reading read_prime_rl_file(const toml::Document &document,
                           std::optional<ConfigRoot> root,
                           std::optional<PrimeRl> prime_rl) {
  std::vector<PrimeRl> releases;
  if (prime_rl) {
    releases.push_back(*prime_rl);
  } else {
    const Generation keys = detect_generation(document).generation;
    const bool keyed = keys == Generation::v0_8 || keys == Generation::v0_9;
    for (const Known &known : k_known) {
      if (!keyed || known.generation == keys) {
        releases.push_back(PrimeRl{std::string(known.version), known.generation, known.schema});
      }
    }
  }
  const std::vector<ConfigRoot> roots =
      root ? std::vector<ConfigRoot>{*root} : likely_roots(document);
  std::optional<Reading> best;
  for (const ConfigRoot candidate : roots) {
    for (const PrimeRl &release : releases) {
      if (schema_for(release.schema).find_root(root_name(candidate)) == nullptr) {
        continue;
      }
      SchemaCheckOptions options;
      options.release = release.schema;
      Reading reading{release, candidate, check_schema(document, candidate, options), 0};
      reading.errors = static_cast<std::size_t>(
          std::count_if(reading.problems.begin(), reading.problems.end(), [](const auto &p) {
            return p.severity == SchemaProblem::Severity::error;
          }));
      if (reading.errors == 0) {
        return reading;
      }
      if (!best || reading.errors < best->errors) {
        best = std::move(reading);
      }
    }
  }
  if (!best) {
    // Only when `root` names an entrypoint none of the releases has.
    throw usage_error(fmt::format("--root {}: Prime-RL {} has no such entrypoint",
                                  root_name(*root),
                                  releases.front().version));
  }
  return *best;
}

std::optional<Reading> read_prime_rl_config(const toml::Document &document,
                                            std::optional<PrimeRl> prime_rl) {
  const bool given = prime_rl.has_value();
  Reading reading = read_prime_rl_file(document, std::nullopt, std::move(prime_rl));
  if (given) {
    return reading;
  }
  const schema::Schema &schema = schema_for(reading.prime_rl.schema);
  const schema::Root *root = schema.find_root(root_name(reading.root));
  const std::vector<toml::Member> *members = document.root().table();
  if (root == nullptr || members == nullptr) {
    return std::nullopt;
  }
  std::size_t known = 0;
  bool known_table = false;
  for (const auto &[key, value] : *members) {
    if (schema.find_field(root->model, key) != nullptr) {
      ++known;
      known_table = known_table || value.table() != nullptr;
    }
  }
  if (known * 2 <= members->size() || (known < 2 && !known_table)) {
    return std::nullopt;
  }
  return reading;
}

std::vector<SchemaProblem> introduced_problems(const Reading &before_reading,
                                               const toml::Document &after) {
  // A problem without its "FILE:LINE:COL: " (the message starts with its location).
  const auto what = [](const SchemaProblem &problem) {
    return std::tuple(problem.kind, problem.key, problem.message.substr(problem.location.size()));
  };
  std::multiset<std::tuple<SchemaProblem::Kind, std::string, std::string>> before;
  for (const SchemaProblem &problem : before_reading.problems) {
    if (problem.severity == SchemaProblem::Severity::error) {
      before.insert(what(problem));
    }
  }
  SchemaCheckOptions options;
  options.release = before_reading.prime_rl.schema;
  std::vector<SchemaProblem> introduced;
  for (SchemaProblem &problem : check_schema(after, before_reading.root, options)) {
    if (problem.severity != SchemaProblem::Severity::error) {
      continue;
    }
    if (const auto found = before.find(what(problem)); found != before.end()) {
      before.erase(found); // there before the edit
      continue;
    }
    introduced.push_back(std::move(problem));
  }
  return introduced;
}

} // namespace pb::primerl
