// SPDX-License-Identifier: MIT
// Prime-RL's own TOMLs (the shared corpus's prime-rl-repo: every configs/, examples/ and k8s/
// TOML at v0.8.0 and at main 559b4477), read in place: each loads under its own release's schema
// and under the reading `toml check --prime-rl` picks with no flags; seeded mistakes (a misspelt
// table header, a misspelt key, a wrong type) are each named at their FILE:LINE.
#include "test_support.hpp"

#include <primebeaker/primerl/release.hpp>
#include <primebeaker/primerl/schema.hpp>
#include <primebeaker/toml/value.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

namespace pb::primerl {
namespace {

namespace fs = std::filesystem;

struct CorpusFile {
  fs::path path;
  std::string name;   // relative to prime-rl-repo/, e.g. "v0.8.0/configs/basic/wordle/rl.toml"
  std::string commit; // "v0.8.0" or "main-559b4477"
};

std::vector<CorpusFile> prime_rl_repo() {
  const fs::path root = test::shared_dir() / "corpus" / "prime-rl-repo";
  std::vector<CorpusFile> files;
  for (const auto &entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().extension() == ".toml") {
      const std::string name = fs::relative(entry.path(), root).string();
      files.push_back({entry.path(), name, name.substr(0, name.find('/'))});
    }
  }
  std::sort(
      files.begin(), files.end(), [](const auto &a, const auto &b) { return a.name < b.name; });
  return files;
}

std::string dump(const Reading &reading) {
  std::string out =
      fmt::format("  read as {} `{}`:\n", display_name(reading.prime_rl), root_name(reading.root));
  for (const auto &p : reading.problems) {
    out += "    " + p.message + "\n";
  }
  return out;
}

// The release the corpus folder was copied from.
PrimeRl release_of(const CorpusFile &file) {
  return *find_prime_rl(file.commit == "v0.8.0" ? "v0.8.0" : "v0.8.1.dev67");
}

TEST(PrimeRlCorpus, HoldsBothCommitsWholly) {
  const auto files = prime_rl_repo();
  const auto at = [&](const std::string &commit) {
    return std::count_if(
        files.begin(), files.end(), [&](const auto &f) { return f.commit == commit; });
  };
  EXPECT_EQ(files.size(), 135u);
  EXPECT_EQ(at("v0.8.0"), 68);
  EXPECT_EQ(at("main-559b4477"), 67);
}

// Prime-RL's tests/unit/test_configs.py: every file loads under one of its release's entrypoints.
TEST(PrimeRlCorpus, EveryFileLoadsUnderItsOwnRelease) {
  std::map<std::string, int> by_root;
  for (const auto &file : prime_rl_repo()) {
    const auto document = toml::Document::load(file.path);
    const Reading reading = read_prime_rl_file(document, std::nullopt, release_of(file));
    EXPECT_EQ(reading.errors, 0u) << file.name << " refused by its own release:\n" << dump(reading);
    ++by_root[file.commit + " " + std::string(root_name(reading.root))];
  }
  for (const auto &[root, count] : by_root) {
    std::cout << "[ prime-rl corpus ] " << root << ": " << count << "\n";
  }
  // The per-component files and the evals entrypoint are read as what they are.
  EXPECT_EQ(by_root["main-559b4477 evals"], 1);
  EXPECT_GE(by_root["v0.8.0 trainer"] + by_root["v0.8.0 orchestrator"] +
                by_root["v0.8.0 inference"] + by_root["v0.8.0 env_server"],
            7);
}

// `toml check --prime-rl` with no flags: the reading the keys and the file's shape pick.
TEST(PrimeRlCorpus, EveryFileIsAcceptedByTheReadingDetectionPicks) {
  for (const auto &file : prime_rl_repo()) {
    const auto document = toml::Document::load(file.path);
    const Reading reading = read_prime_rl_file(document, std::nullopt, std::nullopt);
    EXPECT_EQ(reading.errors, 0u) << file.name << ":\n" << dump(reading);
    // Keys of one generation are never read by the other's Prime-RL.
    const Generation keys = detect_generation(document).generation;
    if (keys == Generation::v0_8 || keys == Generation::v0_9) {
      EXPECT_EQ(reading.prime_rl.generation, keys) << file.name;
    }
  }
}

// One seeded mistake: the text with one line changed, and the line the checker must name.
struct Mutation {
  std::string what;
  std::string text;
  std::size_t line = 0; // 1-based
};

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::string joined(const std::vector<std::string> &lines) {
  std::string out;
  for (const auto &line : lines) {
    out += line + "\n";
  }
  return out;
}

bool is_bare_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

// Tables whose keys are free-form, or typed by a plugin picked at run time, where a wrong key is
// rightly accepted (docs/primerl-schema.md "What is not typed").
bool free_form(const std::string &header) {
  for (const char *part : {"args",
                           "env_vars",
                           "extra",
                           "kwargs",
                           "vllm",
                           "env",
                           "source",
                           "harness",
                           "taskset",
                           "runtime",
                           "renderer",
                           "judges",
                           "agent"}) {
    if (header.find(part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::vector<Mutation> mutations(const std::string &text) {
  std::vector<Mutation> out;
  const auto lines = lines_of(text);
  std::string header; // the current [table], "" at the top
  bool header_done = false, top_key_done = false, type_done = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string &line = lines[i];
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') {
      continue;
    }
    if (line[first] == '[') {
      const bool array = line.compare(first, 2, "[[") == 0;
      const auto start = first + (array ? 2 : 1);
      const auto end = line.find(']', start);
      header = line.substr(start, end - start);
      if (!header_done) {
        // [orchestrator.train] -> [orchestratorx.train]: the root has no such key.
        auto changed = lines;
        auto dot = changed[i].find_first_of(".]", start);
        changed[i].insert(dot, "x");
        out.push_back({"misspelt table header", joined(changed), i + 1});
        header_done = true;
      }
      continue;
    }
    std::size_t key_end = first;
    while (key_end < line.size() && is_bare_key_char(line[key_end])) {
      ++key_end;
    }
    const auto equals = line.find_first_not_of(" \t", key_end);
    if (key_end == first || equals == std::string::npos || line[equals] != '=') {
      continue; // a continuation line of a multi-line value, or a dotted/quoted key
    }
    if (header.empty() && !top_key_done) {
      auto changed = lines;
      changed[i].insert(key_end, "_typo");
      out.push_back({"misspelt key", joined(changed), i + 1});
      top_key_done = true;
    }
    const auto value = line.find_first_not_of(" \t", equals + 1);
    const bool integer = value != std::string::npos &&
                         std::isdigit(static_cast<unsigned char>(line[value])) &&
                         line.find_first_not_of("0123456789_ \t", value) == std::string::npos;
    if (!type_done && integer && !free_form(header)) {
      auto changed = lines;
      changed[i] = line.substr(0, value) + "\"not a number\"";
      out.push_back({"wrong type", joined(changed), i + 1});
      type_done = true;
    }
  }
  return out;
}

TEST(PrimeRlCorpus, EverySeededMistakeIsNamedAtItsLine) {
  std::size_t seeded = 0;
  for (const auto &file : prime_rl_repo()) {
    const std::string text = test::read_file(file.path);
    for (const auto &mutation : mutations(text)) {
      const auto document = toml::Document::parse(mutation.text, file.name);
      const std::string at = fmt::format("{}:{}:", file.name, mutation.line);
      for (const bool auto_read : {true, false}) {
        const Reading reading = read_prime_rl_file(
            document, std::nullopt, auto_read ? std::nullopt : std::optional(release_of(file)));
        const bool named = std::any_of(
            reading.problems.begin(), reading.problems.end(), [&](const SchemaProblem &p) {
              return p.severity == SchemaProblem::Severity::error && p.location.rfind(at, 0) == 0;
            });
        EXPECT_TRUE(named) << file.name << ": " << mutation.what << " at line " << mutation.line
                           << (auto_read ? " (auto)" : " (its release)") << " not named:\n"
                           << dump(reading);
      }
      ++seeded;
    }
  }
  std::cout << "[ prime-rl corpus ] seeded mistakes named: " << seeded << "\n";
  EXPECT_GE(seeded, 300u);
}

} // namespace
} // namespace pb::primerl
