// SPDX-License-Identifier: MIT
// The Prime-RL v0.9 schema (main at 559b4477, docs/primerl-schema.md): its tables, verifiers' v1
// env classes typed where the sources allow, no false alarm on the corpus's 559b4477 TOMLs (all
// of Prime-RL's own at that commit: test_prime_rl_corpus.cpp), planted
// mistakes named at FILE:LINE:COL, and the v0.8.0 keys v0.9 refuses named with where they went.
#include "test_support.hpp"

#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/schema.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

namespace pb::primerl {
namespace {

namespace fs = std::filesystem;
using Kind = SchemaProblem::Kind;
using Severity = SchemaProblem::Severity;

// Prime-RL main at this commit is what the v0.9 schema was generated from.
constexpr const char *k_commit = "559b4477";

SchemaCheckOptions v0_9() {
  SchemaCheckOptions options;
  options.release = SchemaRelease::v0_9;
  return options;
}

// Snippets leave out [trainer]: required keys are tested with v0.8.0 (test_schema.cpp).
std::vector<SchemaProblem> check(const std::string &text, ConfigRoot root = ConfigRoot::rl) {
  SchemaCheckOptions options = v0_9();
  options.missing_required = false;
  return check_schema(toml::Document::parse(text, "t.toml"), root, options);
}

std::vector<SchemaProblem> errors_of(const std::vector<SchemaProblem> &problems) {
  std::vector<SchemaProblem> out;
  std::copy_if(problems.begin(), problems.end(), std::back_inserter(out), [](const auto &p) {
    return p.severity == Severity::error;
  });
  return out;
}

std::string dump(const std::vector<SchemaProblem> &problems) {
  std::string out;
  for (const auto &p : problems) {
    out += "  " + p.message + "\n";
  }
  return out;
}

const SchemaProblem *find_key(const std::vector<SchemaProblem> &problems, const std::string &key) {
  for (const auto &p : problems) {
    if (p.key == key) {
      return &p;
    }
  }
  return nullptr;
}

// The corpus's TOMLs of Prime-RL main at 559b4477 (read in place).
std::vector<fs::path> corpus_files() {
  std::vector<fs::path> out;
  const fs::path dir = test::shared_dir() / "corpus" / "prime-rl";
  if (!fs::exists(dir)) {
    return out;
  }
  for (const auto &entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(std::string("main-") + k_commit + "-", 0) == 0 &&
        entry.path().extension() == ".toml") {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// -- the tables --------------------------------------------------------------------------------

TEST(SchemaV09Tables, HaveTheEntrypointsAndVerifiersEnvClasses) {
  const auto &s = schema::prime_rl_v0_9();
  EXPECT_STREQ(s.label, "Prime-RL v0.9 (559b4477)");
  EXPECT_EQ(&schema_for(SchemaRelease::v0_9), &s);
  EXPECT_EQ(&schema_for(SchemaRelease::v0_8_0), &schema::prime_rl_v0_8_0());
  EXPECT_EQ(release_name(SchemaRelease::v0_9), "v0.9");
  EXPECT_EQ(release_name(SchemaRelease::v0_8_0), "v0.8.0");
  for (const char *root : {"rl", "sft", "trainer", "orchestrator", "inference", "env_server"}) {
    EXPECT_NE(s.find_root(root), nullptr) << root;
  }
  const auto class_of = [&](const char *name) -> const schema::Class * {
    for (const auto &cls : s.classes) {
      if (std::string_view(s.str(cls.name)) == name) {
        return &cls;
      }
    }
    return nullptr;
  };
  // What verifiers narrows by an id accepts the keys of the subclass it picks.
  for (const char *name :
       {"SingleAgentEnvConfig", "TasksetConfig", "TaskConfig", "HarnessConfig", "JudgeConfig"}) {
    ASSERT_NE(class_of(name), nullptr) << name;
    EXPECT_EQ(class_of(name)->extra, schema::Extra::narrowed) << name;
  }
  for (const char *name : {"AgentConfig", "ServeConfig", "ElasticPoolConfig", "PrimeConfig"}) {
    ASSERT_NE(class_of(name), nullptr) << name;
    EXPECT_EQ(class_of(name)->extra, schema::Extra::forbid) << name;
  }
  // The v0.9 shape: [resume], [run], [monitors], [inference.vllm] (extra allowed).
  const std::uint16_t rl = s.find_root("rl")->model;
  for (const char *key : {"resume", "run", "monitors", "clean"}) {
    EXPECT_NE(s.find_field(rl, key), nullptr) << key;
  }
  for (const char *key : {"wandb", "clean_output_dir"}) {
    EXPECT_EQ(s.find_field(rl, key), nullptr) << key;
  }
  ASSERT_NE(class_of("VllmConfig"), nullptr);
  EXPECT_EQ(class_of("VllmConfig")->extra, schema::Extra::allow);
  std::cout << "[ schema v0.9 ] " << s.classes.size() << " classes, " << s.fields.size()
            << " fields, " << s.types.size() << " types\n";
}

// -- verdicts on small TOMLs -------------------------------------------------------------------

TEST(SchemaV09Check, TypesTheVerifiersEnvBlocks) {
  const auto problems = check(R"([[orchestrator.train.source]]
env.taskset.id = "my-taskset"
env.taskset.difficulty = "hard"     # a taskset's own knob: its config subclass's
env.player.model = "x"              # a role another env declares
env.agent.max_turns = "many"
env.agent.harnes = { id = "bash" }
[orchestrator.train.source.env.agent.runtime]
type = "dockr"
[orchestrator.train.source.env.agent.harness]
id = "bash"
tool_timeout = "slow"
extra_knob = 1                      # a harness subclass's
[orchestrator.train.source.serve.pool]
multiplex = 0                       # the default pool is elastic
[[orchestrator.eval.source]]
env.taskset.id = "e"
serve.pool = { type = "static", num_workers = 2 }
serve.max_concurrent = 0
)");
  std::map<std::string, std::pair<Kind, std::string>> got;
  for (const auto &p : problems) {
    got[p.key] = {p.kind, p.location};
  }
  const std::map<std::string, std::pair<Kind, std::string>> want = {
      {"orchestrator.train.source[0].env.agent.max_turns", {Kind::wrong_type, "t.toml:5:23"}},
      {"orchestrator.train.source[0].env.agent.harnes", {Kind::unknown_key, "t.toml:6:11"}},
      {"orchestrator.train.source[0].env.agent.runtime.type", {Kind::not_allowed, "t.toml:8:8"}},
      {"orchestrator.train.source[0].env.agent.harness.tool_timeout",
       {Kind::wrong_type, "t.toml:11:16"}},
      {"orchestrator.train.source[0].serve.pool.multiplex", {Kind::out_of_bounds, "t.toml:14:13"}},
      {"orchestrator.eval.source[0].serve.max_concurrent", {Kind::out_of_bounds, "t.toml:18:24"}},
  };
  EXPECT_EQ(got, want) << dump(problems);
  const auto *runtime = find_key(problems, "orchestrator.train.source[0].env.agent.runtime.type");
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(runtime->suggestion, "docker");
  const auto *harness = find_key(problems, "orchestrator.train.source[0].env.agent.harnes");
  ASSERT_NE(harness, nullptr);
  EXPECT_EQ(harness->suggestion, "harness");
}

// trainer.model.full_offload is Annotated[OptimizerInBackwardOffloadConfig | None,
// BeforeValidator(...)]: true -> {}, false -> None, the rest validated as declared
// (docs/primerl-schema.md "Before-validators"). Exactly those are accepted, under every root
// that holds the trainer's ModelConfig.
TEST(SchemaV09Check, BeforeValidatorFieldTakesTrueFalseOrItsTable) {
  const char *const perhaps_message =
      "must be true, false, a table, or \"None\", not a string (\"perhaps\")";
  const struct {
    ConfigRoot root;
    const char *table; // the header of the ModelConfig table
    const char *key;   // full_offload's key path under that root
  } roots[] = {
      {ConfigRoot::rl, "[trainer.model]", "trainer.model.full_offload"},
      {ConfigRoot::trainer, "[model]", "model.full_offload"},
      {ConfigRoot::sft, "[model]", "model.full_offload"},
  };
  for (const auto &r : roots) {
    const std::string head = std::string(r.table) + "\nname = \"m\"\n";
    for (const char *accepted : {"true",
                                 "false",
                                 "{}",
                                 "{ numa_bind = false }",
                                 "{ cpu_optimizer_backend = \"torch\", numa_bind = true }",
                                 "\"None\""}) {
      const auto problems = check(head + "full_offload = " + accepted + "\n", r.root);
      EXPECT_TRUE(problems.empty()) << r.key << " = " << accepted << "\n" << dump(problems);
    }
    // A [...full_offload] section is the table.
    const std::string section = std::string(r.table).substr(0, std::strlen(r.table) - 1) +
                                ".full_offload]\ncpu_optimizer_backend = \"native\"\n";
    const auto sectioned = check(head + section, r.root);
    EXPECT_TRUE(sectioned.empty()) << section << dump(sectioned);
    // "perhaps": one wrong-type line at the value's line:column.
    const auto perhaps = check(head + "full_offload = \"perhaps\"\n", r.root);
    ASSERT_EQ(perhaps.size(), 1u) << dump(perhaps);
    EXPECT_EQ(perhaps[0].kind, Kind::wrong_type);
    EXPECT_EQ(perhaps[0].key, r.key);
    EXPECT_EQ(perhaps[0].location, "t.toml:3:16");
    EXPECT_EQ(perhaps[0].message, std::string("t.toml:3:16: ") + r.key + " " + perhaps_message);
    // Only TOML booleans are `v is True` / `v is False`: lax bool strings and numbers are not.
    for (const char *refused : {"\"true\"", "\"yes\"", "1", "0", "0.0", "[true]"}) {
      const auto problems = check(head + "full_offload = " + refused + "\n", r.root);
      ASSERT_EQ(problems.size(), 1u) << refused << dump(problems);
      EXPECT_EQ(problems[0].kind, Kind::wrong_type) << problems[0].message;
      EXPECT_EQ(problems[0].location, "t.toml:3:16");
    }
    // A table is checked as the class.
    const auto table = check(head + "full_offload = { numa_bnd = false, cpu_optimizer_backend = "
                                    "\"fast\" }\n",
                             r.root);
    ASSERT_EQ(table.size(), 2u) << dump(table);
    EXPECT_EQ(table[0].kind, Kind::unknown_key);
    EXPECT_EQ(table[0].key, std::string(r.key) + ".numa_bnd");
    EXPECT_EQ(table[0].suggestion, "numa_bind");
    EXPECT_EQ(table[1].kind, Kind::not_allowed);
    EXPECT_EQ(table[1].key, std::string(r.key) + ".cpu_optimizer_backend");
  }
  // Through the Problems overload (preview, submit, toml check): the same single line.
  const auto document = toml::Document::parse(
      "[trainer]\n[orchestrator]\n[trainer.model]\nfull_offload = \"perhaps\"\n", "t.toml");
  Problems problems(document);
  EXPECT_EQ(check_schema(document, ConfigRoot::rl, problems, SchemaRelease::v0_9), 1u);
  ASSERT_EQ(problems.lines().size(), 1u);
  EXPECT_EQ(problems.lines()[0],
            std::string("t.toml:4:16: trainer.model.full_offload ") + perhaps_message);
}

TEST(SchemaV09Check, UnknownKeysSayANewerPrimeRlIsNotSupportedYet) {
  const auto problems = check("[trainer]\nmax_step = 2\n[orchestrator]\nzzz_key = 1\n");
  ASSERT_EQ(problems.size(), 2u) << dump(problems);
  EXPECT_EQ(problems[0].message,
            "t.toml:2:1: unknown key trainer.max_step (TrainerConfig has no such key); did you "
            "mean 'max_steps'? If this TOML is for a Prime-RL newer than v0.9, primebeaker does "
            "not support it yet");
  EXPECT_EQ(problems[1].message,
            "t.toml:4:1: unknown key orchestrator.zzz_key (OrchestratorConfig has no such key); "
            "if this TOML is for a Prime-RL newer than v0.9, primebeaker does not support it yet");
  // Only unknown keys say so.
  const auto typed = check("[orchestrator]\nbatch_size = \"lots\"\n");
  ASSERT_EQ(typed.size(), 1u) << dump(typed);
  EXPECT_EQ(typed[0].message.find("newer"), std::string::npos) << typed[0].message;
  // v0.8.0 messages are unchanged.
  const auto old = check_schema(
      toml::Document::parse("[trainer]\nmax_step = 2\n[orchestrator]\n", "t.toml"), ConfigRoot::rl);
  ASSERT_EQ(old.size(), 1u) << dump(old);
  EXPECT_EQ(old[0].message.find("newer"), std::string::npos) << old[0].message;
}

TEST(SchemaV09Check, V080KeysAreUnknownAndNameWhereTheyWent) {
  const auto problems = check(R"(clean_output_dir = true
[wandb]
project = "p"
[ckpt]
resume_step = 10
[trainer.ckpt]
resume_step = 10
[inference.parallel]
tp = 2
[orchestrator]
max_inflight_episodes = 64
)");
  std::map<std::string, std::string> suggestion;
  for (const auto &p : problems) {
    EXPECT_EQ(p.kind, Kind::unknown_key) << p.message;
    suggestion[p.key] = p.suggestion;
  }
  const std::map<std::string, std::string> want = {
      {"clean_output_dir", "clean"},
      {"wandb", "monitors.wandb"},
      {"ckpt.resume_step", "resume.step"},
      {"trainer.ckpt.resume_step", "trainer.resume.step"},
      {"inference.parallel.tp", "inference.vllm.tensor_parallel_size"},
      {"orchestrator.max_inflight_episodes", "orchestrator.concurrency.max_inflight"},
  };
  EXPECT_EQ(suggestion, want) << dump(problems);
  const auto *tp = find_key(problems, "inference.parallel.tp");
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->message,
            "t.toml:9:1: unknown key inference.parallel.tp (InferenceConfig has no such key); "
            "Prime-RL v0.9 moved it to inference.vllm.tensor_parallel_size (#3202)");
  EXPECT_EQ(find_key(problems, "wandb")->location, "t.toml:2:2");
  // Each suggestion is a key v0.9 knows: the corrected TOML is clean.
  const auto fixed = check(R"(clean = true
[monitors.wandb]
project = "p"
[ckpt]
[resume]
step = 10
[trainer.ckpt]
[trainer.resume]
step = 10
[inference.vllm]
tensor_parallel_size = 2
[orchestrator.concurrency]
max_inflight = 64
)");
  EXPECT_TRUE(fixed.empty()) << dump(fixed);
  // SFT's deployment renames (#3256).
  const auto sft = check("[deployment]\nnum_gpus = 2\n", ConfigRoot::sft);
  ASSERT_EQ(sft.size(), 1u) << dump(sft);
  EXPECT_EQ(sft[0].suggestion, "deployment.num_train_gpus");
}

TEST(SchemaV09Check, NoImageNotesAndTheImageKeysAreV09s) {
  // The cataloged image's differences are from v0.8.0; under v0.9 its keys are v0.9's.
  const auto problems = check("[trainer.optim]\neps = 1e-12\n[orchestrator]\n"
                              "env_server_base_port = 6000\n[orchestrator.eval]\n"
                              "retrigger_on_resume = true\n");
  ASSERT_EQ(problems.size(), 1u) << dump(problems);
  EXPECT_EQ(problems[0].key, "trainer.optim.eps");
  EXPECT_EQ(problems[0].kind, Kind::unknown_key);
  EXPECT_EQ(problems[0].severity, Severity::error);
}

TEST(SchemaV09Check, ProblemsOverloadTakesTheRelease) {
  const auto document = toml::Document::parse("clean_output_dir = true\n[trainer]\n", "t.toml");
  Problems old_problems(document);
  EXPECT_EQ(check_schema(document, ConfigRoot::rl, old_problems), 1u); // [orchestrator] only
  Problems problems(document);
  EXPECT_EQ(check_schema(document, ConfigRoot::rl, problems, SchemaRelease::v0_9), 2u);
  ASSERT_EQ(problems.lines().size(), 2u); // and [orchestrator]
  EXPECT_EQ(problems.lines()[0],
            "t.toml:1:1: unknown key clean_output_dir (RLConfig has no such key); Prime-RL v0.9 "
            "moved it to clean (#3268)");
}

// -- the corpus --------------------------------------------------------------------------------

TEST(SchemaV09Corpus, NoErrorOnThe559b4477Tomls) {
  const auto files = corpus_files();
  ASSERT_EQ(files.size(), 3u);
  for (const auto &path : files) {
    const auto problems = check_schema(toml::Document::load(path), ConfigRoot::rl, v0_9());
    // The wordle TOML's env.player: the wordle taskset package (verifiers'
    // environments/wordle) exports TextArenaEnv, whose config declares the role `player`.
    EXPECT_TRUE(problems.empty()) << path << ":\n" << dump(problems);
  }
}

// One planted mistake and where the checker must put it.
struct Planted {
  std::string path;    // key path for toml::Editor::set
  std::string literal; // the value written
  Kind kind;
  std::string key;     // the problem's key
  bool at_key = false; // located at the key (unknown keys) rather than the value
};

const std::vector<Planted> k_plants = {
    {"max_stesp", "10", Kind::unknown_key, "max_stesp", true},
    {"orchestrator.batch_size", "\"lots\"", Kind::wrong_type, "orchestrator.batch_size"},
    {"trainer.model.impl", "\"fast\"", Kind::not_allowed, "trainer.model.impl"},
    {"orchestrator.concurrency.min_inflight",
     "0",
     Kind::out_of_bounds,
     "orchestrator.concurrency.min_inflight"},
    {"orchestrator.train.source[0].env.taskset.task.stops",
     "\"none\"",
     Kind::wrong_type,
     "orchestrator.train.source[0].env.taskset.task.stops"},
};

TEST(SchemaV09Corpus, EveryPlantedMistakeIsNamedAtItsPlaceInOneRun) {
  test::TempDir dir;
  std::size_t edited = 0;
  for (const auto &path : corpus_files()) {
    std::string text = test::read_file(path);
    {
      toml::Editor editor(toml::Document::parse(text, path.filename().string()));
      for (const auto &plant : k_plants) {
        editor.set(plant.path, plant.literal);
      }
      text = editor.text();
    }
    const fs::path copy = dir / path.filename().string();
    test::write_file(copy, text);
    const auto document = toml::Document::load(copy);
    // Where each mistake is, found independently of the checker: the value by key path; for
    // the unknown key, its text on the value's line.
    std::map<std::string, std::pair<Kind, std::string>> want;
    for (const auto &plant : k_plants) {
      const toml::Value *value = toml::lookup(document, toml::KeyPath::parse(plant.path)).at(0);
      const toml::Position at = value->position();
      std::string location = copy.string() + ":" + std::to_string(at.line) + ":";
      if (plant.at_key) {
        std::istringstream lines(text);
        std::string line;
        for (std::uint32_t n = 1; std::getline(lines, line); ++n) {
          if (n == at.line) {
            location += std::to_string(line.find(plant.key) + 1);
          }
        }
      } else {
        location += std::to_string(at.column);
      }
      want[plant.key] = {plant.kind, location};
    }
    std::map<std::string, std::pair<Kind, std::string>> got;
    const auto problems = check_schema(document, ConfigRoot::rl, v0_9());
    for (const auto &p : errors_of(problems)) {
      got[p.key] = {p.kind, p.location};
    }
    EXPECT_EQ(got, want) << path << ":\n" << dump(problems);
    ++edited;
  }
  EXPECT_EQ(edited, 3u);
}

// v0.8.0 generation TOMLs read as v0.9: each v0.8.0-only key is an error, none is silent.
TEST(SchemaV09Corpus, V080CorpusTomlsHaveV080OnlyKeysUnderV09) {
  const fs::path file = test::shared_dir() / "corpus" / "prime-rl" /
                        "v0.8.0-configs-ci-integration-reverse-text-resume.toml";
  ASSERT_TRUE(fs::exists(file));
  const auto document = toml::Document::load(file);
  EXPECT_TRUE(errors_of(check_schema(document, ConfigRoot::rl)).empty());
  const auto problems = errors_of(check_schema(document, ConfigRoot::rl, v0_9()));
  EXPECT_FALSE(problems.empty());
  for (const auto &p : problems) {
    EXPECT_EQ(p.kind, Kind::unknown_key) << p.message;
  }
  std::cout << "[ schema v0.9 ] " << file.filename().string() << " under v0.9:\n" << dump(problems);
}

// The checker's cost on the largest corpus v0.9 TOML, printed once (docs/primerl-schema.md).
TEST(SchemaV09Corpus, CostOnTheLargestCorpusToml) {
  fs::path largest;
  for (const auto &path : corpus_files()) {
    if (largest.empty() || fs::file_size(path) > fs::file_size(largest)) {
      largest = path;
    }
  }
  ASSERT_FALSE(largest.empty());
  const auto document = toml::Document::load(largest);
  (void)document.root();
  const SchemaCheckOptions options = v0_9();
  constexpr int rounds = 200;
  std::size_t found = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) {
    found += check_schema(document, ConfigRoot::rl, options).size();
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const double us =
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count() / 1000.0 / rounds;
  std::cout << "[ schema v0.9 ] " << largest.filename().string() << " (" << fs::file_size(largest)
            << " bytes): " << us << " us per check of the parsed "
            << "document (" << found << " problems)\n";
  EXPECT_EQ(found, 0u);
}

} // namespace
} // namespace pb::primerl
