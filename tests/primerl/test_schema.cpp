// SPDX-License-Identifier: MIT
// The Prime-RL schema (docs/primerl-schema.md): tools/extract_schema.py on a synthetic package, the
// checker's verdicts, no false alarm on any v0.8.0 TOML of the corpus, the repository's examples
// and fixtures, and every edited corpus copy's four planted mistakes found at their line:column.
#include "test_support.hpp"

#include <primebeaker/core/process.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/primerl/release.hpp>
#include <primebeaker/primerl/schema.hpp>
#include <primebeaker/toml/edit.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>

namespace pb::primerl {
namespace {

namespace fs = std::filesystem;
using Kind = SchemaProblem::Kind;
using Severity = SchemaProblem::Severity;

std::vector<SchemaProblem> check(const std::string &text,
                                 ConfigRoot root = ConfigRoot::rl,
                                 const SchemaCheckOptions &options = {}) {
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

// The smallest rl TOML Prime-RL v0.8.0 accepts the shape of.
const char *const k_minimal_rl = "[trainer]\n[orchestrator]\n";

// -- the extractor ---------------------------------------------------------------------------

struct Emitted {
  struct Row {
    std::string name, aliases, default_text;
    int type = 0, bounds = 0, default_model = 0;
    bool required = false;
  };
  struct TypeRow {
    std::string kind;
    int item = 0, first = 0, count = 0;
    std::string discriminator;
  };
  std::vector<std::string> classes;
  std::vector<Row> fields;
  std::vector<TypeRow> types;
  std::vector<int> alternatives;
  std::vector<std::string> literals;
  std::vector<std::string> bounds;
  std::string text;

  const Row &field(const std::string &name) const {
    for (const Row &row : fields) {
      if (row.name == name) {
        return row;
      }
    }
    ADD_FAILURE() << "no field " << name;
    return fields.front();
  }
  const TypeRow &type_of(const std::string &name) const { return types.at(field(name).type); }
  std::vector<std::string> alternative_kinds(const TypeRow &type) const {
    std::vector<std::string> out;
    for (int i = 0; i < type.count; ++i) {
      out.push_back(types.at(alternatives.at(type.first + i)).kind);
    }
    return out;
  }
  std::vector<std::string> literal_texts(const TypeRow &type) const {
    return {literals.begin() + type.first, literals.begin() + type.first + type.count};
  }
};

// Runs tools/extract_schema.py on tests/primerl/data/schema_fixture; parses the tables back.
Emitted run_extractor(const std::vector<std::string> &extra, proc::Result *raw = nullptr) {
  proc::SystemRunner runner;
  proc::Command command;
  command.argv = {"python3",
                  (test::source_dir() / "tools/extract_schema.py").string(),
                  "--source-dir",
                  (test::source_dir() / "tests/primerl/data/schema_fixture").string()};
  command.argv.insert(command.argv.end(), extra.begin(), extra.end());
  const proc::Result result = runner.run(command);
  if (raw != nullptr) {
    *raw = result;
  }
  Emitted out;
  out.text = result.out;
  // The string pool: one "...\0" literal per line, its offset in a comment.
  const std::regex pool_row(R"re(^    "((?:[^"\\]|\\.)*)\\0";? // (\d+)$)re");
  const std::regex class_row(R"re(^    \{(\d+), (\d+), (\d+), (\d+), Extra::(\w+)\}, // .*$)re");
  const std::regex field_row(
      R"re(^    \{(\d+), (\d+), (\d+), (\d+), (\d+), (true|false), (-?\d+)\}, // .*$)re");
  const std::regex type_row(R"re(^    \{Kind::(\w+), (\d+), (\d+), (\d+), (\d+)\}, // .*$)re");
  const std::regex literal_row(R"re(^    \{LiteralKind::(\w+), (\d+)\}, // .*$)re");
  const std::regex bounds_row(R"re(^    \{(\d+, [^}]*)\},$)re");
  std::map<int, std::string> pool;
  const auto str = [&](const std::string &offset) { return pool.at(std::stoi(offset)); };
  std::istringstream lines(result.out);
  std::string line;
  std::string section;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (line.rfind("const ", 0) == 0) {
      section = line;
      continue;
    }
    if (std::regex_match(line, m, pool_row)) {
      // The fixture's strings need no escapes but \" and \\ (a backslash and its character).
      std::string decoded;
      const std::string escaped = m[1];
      for (std::size_t i = 0; i < escaped.size(); ++i) {
        decoded += escaped[i] == '\\' ? escaped[++i] : escaped[i];
      }
      pool[std::stoi(m[2])] = decoded;
    } else if (std::regex_match(line, m, class_row)) {
      out.classes.push_back(str(m[1]) + "@" + str(m[2]) + ":" + m[5].str());
    } else if (std::regex_match(line, m, field_row)) {
      out.fields.push_back({str(m[1]),
                            str(m[2]),
                            str(m[3]),
                            std::stoi(m[4]),
                            std::stoi(m[5]),
                            std::stoi(m[7]),
                            m[6] == "true"});
    } else if (std::regex_match(line, m, type_row)) {
      out.types.push_back({m[1], std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4]), str(m[5])});
    } else if (std::regex_match(line, m, literal_row)) {
      out.literals.push_back(str(m[2]));
    } else if (section.find("k_bounds") != std::string::npos &&
               std::regex_match(line, m, bounds_row)) {
      out.bounds.push_back(m[1]);
    } else if (section.find("k_alternatives") != std::string::npos && line.rfind("    ", 0) == 0) {
      std::istringstream numbers(line);
      std::string item;
      while (numbers >> item) {
        out.alternatives.push_back(std::stoi(item));
      }
    }
  }
  return out;
}

TEST(SchemaExtractor, ReadsEveryKindOfField) {
  proc::Result raw;
  const Emitted e =
      run_extractor({"--root", "demo=demo.config:DemoConfig", "--symbol", "demo"}, &raw);
  ASSERT_TRUE(raw.ok()) << raw.err;
  EXPECT_NE(e.text.find("// Generated by tools/extract_schema.py -- do not edit"),
            std::string::npos);
  EXPECT_NE(e.text.find("const Schema &demo() {"), std::string::npos);
  // Classes reached from the root, base-class fields first, no ClassVar or _private fields.
  ASSERT_EQ(e.classes.size(), 4u) << e.text;
  EXPECT_EQ(e.classes[0], "DemoConfig@demo.config:forbid");
  EXPECT_EQ(e.classes[1], "Inner@demo.config:forbid");
  EXPECT_EQ(e.classes[2], "AlphaConfig@demo.shared:forbid");
  EXPECT_EQ(e.fields[0].name, "inherited");
  EXPECT_EQ(e.fields[1].name, "overridden"); // an override keeps its base's place...
  EXPECT_EQ(e.fields[1].default_text, "2");  // ...with the subclass's default
  for (const auto &row : e.fields) {
    EXPECT_NE(row.name, "kind_name");
    EXPECT_NE(row.name, "_private");
  }
  // Scalars, with defaults as written and Field bounds (flags ge=1 gt=2 le=4 lt=8 ...).
  EXPECT_EQ(e.type_of("flag").kind, "boolean");
  EXPECT_EQ(e.field("flag").default_text, "False");
  EXPECT_EQ(e.type_of("count").kind, "integer");
  EXPECT_EQ(e.bounds.at(e.field("count").bounds), "1, 0.0, 0.0, 0.0, 0.0, 0, 0");
  EXPECT_EQ(e.type_of("ratio").kind, "floating"); // Annotated[float, Field(gt=0, lt=1)]
  EXPECT_EQ(e.bounds.at(e.field("ratio").bounds), "10, 0.0, 0.0, 0.0, 1.0, 0, 0");
  EXPECT_EQ(e.type_of("name").kind, "string");
  EXPECT_EQ(e.field("name").default_text, "'demo'");
  EXPECT_EQ(e.type_of("out").kind, "path");
  EXPECT_EQ(e.field("out").default_text, "Path('out')");
  // Containers.
  EXPECT_EQ(e.type_of("tags").kind, "list");
  EXPECT_EQ(e.types.at(e.type_of("tags").item).kind, "string");
  EXPECT_EQ(e.type_of("table").kind, "dict");
  EXPECT_EQ(e.types.at(e.type_of("table").item).kind, "integer");
  EXPECT_EQ(e.types.at(e.type_of("free").item).kind, "any");
  EXPECT_EQ(e.field("free").default_text, "default_factory=dict");
  // Nested classes, Optional, int | Literal, a Literal alias from another module.
  EXPECT_EQ(e.type_of("inner").kind, "model");
  EXPECT_EQ(e.classes.at(e.type_of("inner").item), "Inner@demo.config:forbid");
  EXPECT_EQ(e.bounds.at(e.fields.at(e.type_of("inner").item == 1 ? 20 : 0).bounds),
            "5, 1.0, 0.0, 10.0, 0.0, 0, 0"); // Inner.depth: ge=1, le=10
  EXPECT_EQ(e.type_of("maybe").kind, "union_of");
  EXPECT_EQ(e.alternative_kinds(e.type_of("maybe")), (std::vector<std::string>{"model", "none"}));
  EXPECT_EQ(e.alternative_kinds(e.type_of("either")),
            (std::vector<std::string>{"integer", "literal"}));
  EXPECT_EQ(e.type_of("mode").kind, "literal");
  EXPECT_EQ(e.literal_texts(e.type_of("mode")), (std::vector<std::string>{"fast", "slow"}));
  // A discriminated union: its alternatives, and the class taken when `type` is omitted.
  const auto &choice = e.type_of("choice");
  EXPECT_EQ(choice.kind, "union_of");
  EXPECT_EQ(choice.discriminator, "type");
  EXPECT_EQ(e.alternative_kinds(choice), (std::vector<std::string>{"model", "model"}));
  EXPECT_EQ(e.classes.at(e.field("choice").default_model), "AlphaConfig@demo.shared:forbid");
  EXPECT_EQ(e.classes.at(e.field("factory_choice").default_model), "BetaConfig@demo.shared:forbid");
  EXPECT_EQ(e.field("picked").default_model, -1); // None: `type` is then required
  EXPECT_EQ(e.alternative_kinds(e.type_of("picked")),
            (std::vector<std::string>{"union_of", "none"}));
  EXPECT_EQ(e.field("alpha").bounds, 4); // gt=0 and allow_inf_nan=False
  EXPECT_EQ(e.bounds.at(4), "66, 0.0, 0.0, 0.0, 0.0, 0, 0");
  EXPECT_EQ(e.bounds.at(e.field("beta").bounds), "16, 0.0, 0.0, 0.0, 0.0, 1, 0"); // min_length
  // Aliases and required fields.
  EXPECT_EQ(e.field("renamed").aliases, "renamed|old_name");
  EXPECT_TRUE(e.field("required_thing").required);
  EXPECT_TRUE(e.field("also_required").required); // Field(...)
  EXPECT_FALSE(e.field("count").required);
}

TEST(SchemaExtractor, ListsModelValidatorsAndStopsAtAnUnknownBeforeValidator) {
  proc::Result raw;
  run_extractor({"--root", "demo=demo.config:DemoConfig", "--validators"}, &raw);
  ASSERT_TRUE(raw.ok()) << raw.err;
  EXPECT_EQ(raw.out, "- `config.DemoConfig.check_count` (model_validator, after; refuses)\n");
  run_extractor({"--root", "x=demo.before:RewritingConfig"}, &raw);
  EXPECT_EQ(raw.exit_code, 1);
  EXPECT_NE(raw.err.find("demo.before.RewritingConfig.rename is a mode=\"before\" model "
                         "validator this script does not know"),
            std::string::npos)
      << raw.err;
}

TEST(SchemaExtractor, ReadsTheLiteralCasesOfABeforeValidatorAndWarnsOnTheRest) {
  proc::Result raw;
  const Emitted e = run_extractor({"--root", "n=demo.normalised:NormalisedConfig"}, &raw);
  ASSERT_TRUE(raw.ok()) << raw.err;
  // `if v is True: return {}` / `elif v is False: return None` / `return v`, its function
  // imported from another module: true and false are exact literals beside the declared type.
  const auto &offload = e.type_of("offload");
  ASSERT_EQ(offload.kind, "union_of") << e.text;
  EXPECT_EQ(e.alternative_kinds(offload), (std::vector<std::string>{"literal", "model", "none"}));
  const auto &cases = e.types.at(e.alternatives.at(offload.first));
  EXPECT_EQ(e.literal_texts(cases), (std::vector<std::string>{"true", "false"}));
  EXPECT_EQ(e.classes.at(e.types.at(e.alternatives.at(offload.first + 1)).item),
            "OffloadConfig@demo.normalised:forbid");
  // The same cases written as a lambda give the same type.
  EXPECT_EQ(e.field("by_lambda").type, e.field("offload").type);
  // {} is refused where the class has a required field: only false is taken.
  const auto &needs = e.type_of("needs_path");
  ASSERT_EQ(e.alternative_kinds(needs), (std::vector<std::string>{"literal", "model", "none"}));
  EXPECT_EQ(e.literal_texts(e.types.at(e.alternatives.at(needs.first))),
            (std::vector<std::string>{"false"}));
  // A validator that refuses every other value leaves only its literal.
  EXPECT_EQ(e.type_of("only_true").kind, "literal");
  EXPECT_EQ(e.literal_texts(e.type_of("only_true")), (std::vector<std::string>{"true"}));
  // What it cannot read stays untyped, each with a warning naming the field: never a guess.
  EXPECT_EQ(e.type_of("guessed").kind, "any");
  EXPECT_EQ(e.type_of("wrapped").kind, "any");
  EXPECT_NE(raw.err.find("extract_schema.py: warning: NormalisedConfig.guessed: "
                         "BeforeValidator(_guess) is not understood: the test "
                         "`isinstance(value, bool)` is not `v is True` or `v is False`; accepted "
                         "untyped"),
            std::string::npos)
      << raw.err;
  EXPECT_NE(raw.err.find("warning: NormalisedConfig.wrapped: WrapValidator is not read"),
            std::string::npos)
      << raw.err;
  EXPECT_EQ(std::count(raw.err.begin(), raw.err.end(), '\n'), 2) << raw.err;
  // The header says what each normalisation maps, and lists the untyped ones as before.
  EXPECT_NE(e.text.find("//   NormalisedConfig.offload: true_is_table: true -> {}, false -> "
                        "None, the rest as declared\n"),
            std::string::npos)
      << e.text;
  EXPECT_NE(e.text.find("//   NormalisedConfig.needs_path: true_is_table: true -> {} (refused), "
                        "false -> None, the rest as declared\n"),
            std::string::npos);
  EXPECT_NE(e.text.find("//   NormalisedConfig.guessed: a before-validator rewrites it\n"),
            std::string::npos);
}

// -- the compiled-in v0.8.0 schema -------------------------------------------------------------

TEST(SchemaTables, HaveTheEntrypointsAndTheirClasses) {
  const auto &s = schema::prime_rl_v0_8_0();
  EXPECT_STREQ(s.label, "Prime-RL v0.8.0");
  for (const char *root : {"rl", "sft", "trainer", "orchestrator", "inference", "env_server"}) {
    EXPECT_NE(s.find_root(root), nullptr) << root;
  }
  EXPECT_STREQ(s.str(s.classes[s.find_root("rl")->model].name), "RLConfig");
  EXPECT_STREQ(s.str(s.classes[s.find_root("sft")->model].name), "SFTConfig");
  const schema::Field *deployment = s.find_field(s.find_root("rl")->model, "deployment");
  ASSERT_NE(deployment, nullptr);
  EXPECT_STREQ(s.str(s.classes[deployment->default_model].name), "SingleNodeDeploymentConfig");
  EXPECT_STREQ(s.str(s.types[deployment->type].discriminator), "type");
  for (const auto &cls : s.classes) {
    EXPECT_EQ(cls.extra, schema::Extra::forbid) << s.str(cls.name);
  }
}

// -- verdicts on small TOMLs -------------------------------------------------------------------

TEST(SchemaCheck, AcceptsWhatPydanticsLaxModeAccepts) {
  const auto problems = check(R"([trainer]
max_steps = "12"                 # numeric strings are numbers
dist_timeout_seconds = 3600.0    # an integral float is an integer
enable_token_export = "yes"      # pydantic's str -> bool
[trainer.optim]
lr = 1                           # an int where a float is wanted
[trainer.model]
ep = "auto"
ac_offloading = "None"           # null for an optional section
[trainer.model.lora]
[orchestrator]
[orchestrator.train.sampling.extra_body]
anything = { goes = [1, "x"] }   # dict[str, Any]: free-form
[[orchestrator.train.source]]
name = "x"
env.taskset.id = "anything-v1"   # env: narrowed by id at run time, accepted untyped
[orchestrator.train.source.legacy.args]
free = 1
[orchestrator.renderer]
name = "whatever"                # renderers' classes are not read: accepted
[inference.env_vars]
A = "1"
[deployment]                     # no type: the default single_node
num_train_gpus = 1
)");
  EXPECT_TRUE(problems.empty()) << dump(problems);
}

TEST(SchemaCheck, NamesUnknownKeysWithTheNearestKnownKeyAtTheKey) {
  const auto problems = check(R"([trainer]
[orchestrator]
batch_szie = 8
[trainer.modle]
name = "x"
[wandb]
projet = "p"
[orchestrator.train]
sampling.temprature = 1.0
)");
  ASSERT_EQ(problems.size(), 4u) << dump(problems);
  EXPECT_EQ(problems[0].kind, Kind::unknown_key);
  EXPECT_EQ(problems[0].key, "orchestrator.batch_szie");
  EXPECT_EQ(problems[0].location, "t.toml:3:1");
  EXPECT_EQ(problems[0].suggestion, "batch_size");
  EXPECT_EQ(problems[0].message,
            "t.toml:3:1: unknown key orchestrator.batch_szie (OrchestratorConfig has no such "
            "key); did you mean 'batch_size'?");
  EXPECT_EQ(problems[1].key, "trainer.modle");
  EXPECT_EQ(problems[1].location, "t.toml:4:10"); // the segment in [trainer.modle]
  EXPECT_EQ(problems[1].suggestion, "model");
  EXPECT_EQ(problems[2].key, "wandb.projet");
  EXPECT_EQ(problems[2].location, "t.toml:7:1");
  EXPECT_EQ(problems[3].key, "orchestrator.train.sampling.temprature");
  EXPECT_EQ(problems[3].location, "t.toml:9:10"); // the last segment of a dotted key
  EXPECT_EQ(problems[3].suggestion, "temperature");

  // Inside inline tables and arrays of them; after a BOM (not a column); quoted keys.
  const auto inline_keys = check("\xEF\xBB\xBFmax_stesp = 1\n"
                                 "[trainer.model]\n"
                                 "ac = { mode = \"full\", freqq = 1 }\n"
                                 "[orchestrator]\n"
                                 "pre_batch_filters = [{ type = \"gibberish\", enforc = true }]\n"
                                 "\"odd key\" = 1\n");
  ASSERT_EQ(inline_keys.size(), 4u) << dump(inline_keys);
  EXPECT_EQ(inline_keys[0].location, "t.toml:1:1");
  EXPECT_EQ(inline_keys[1].key, "trainer.model.ac.freqq");
  EXPECT_EQ(inline_keys[1].location, "t.toml:3:23");
  EXPECT_EQ(inline_keys[2].key, "orchestrator.pre_batch_filters[0].enforc");
  EXPECT_EQ(inline_keys[2].location, "t.toml:5:44");
  EXPECT_EQ(inline_keys[2].suggestion, "enforce");
  EXPECT_EQ(inline_keys[3].key, "orchestrator.\"odd key\"");
  EXPECT_EQ(inline_keys[3].location, "t.toml:6:1");
}

TEST(SchemaCheck, WrongTypesBoundsLiteralsAndDiscriminators) {
  const auto problems = check(R"([trainer]
[trainer.model]
impl = "fast"
seq_len = "long"
cp = 1.5
[trainer.loss]
kl_tau = -1
[trainer.optim]
type = "adam"
[orchestrator]
batch_size = 0
seq_len = [1]
temperature_typo_free = 1
[orchestrator.model.client]
base_url = "http://one"
[weight_broadcast]
port = 1
[output_dir]
)");
  std::map<std::string, std::pair<Kind, std::string>> got;
  for (const auto &p : problems) {
    got[p.key] = {p.kind, p.location};
  }
  const std::map<std::string, std::pair<Kind, std::string>> want = {
      {"trainer.model.impl", {Kind::not_allowed, "t.toml:3:8"}},
      {"trainer.model.seq_len", {Kind::wrong_type, "t.toml:4:11"}},
      {"trainer.model.cp", {Kind::wrong_type, "t.toml:5:6"}},
      {"trainer.loss.kl_tau", {Kind::out_of_bounds, "t.toml:7:10"}},
      {"trainer.optim.type", {Kind::not_allowed, "t.toml:9:8"}},
      {"orchestrator.batch_size", {Kind::out_of_bounds, "t.toml:11:14"}},
      {"orchestrator.seq_len", {Kind::wrong_type, "t.toml:12:11"}},
      {"orchestrator.temperature_typo_free", {Kind::unknown_key, "t.toml:13:1"}},
      {"orchestrator.model.client.base_url", {Kind::wrong_type, "t.toml:15:12"}},
      {"weight_broadcast.type", {Kind::missing_required, "t.toml:16:2"}},
      {"output_dir", {Kind::wrong_type, "t.toml:18:1"}},
  };
  EXPECT_EQ(got, want) << dump(problems);
  const auto message = [&](const std::string &key) {
    for (const auto &p : problems) {
      if (p.key == key) {
        return p.message;
      }
    }
    return std::string();
  };
  EXPECT_EQ(message("trainer.model.impl"),
            "t.toml:3:8: trainer.model.impl = \"fast\" is not allowed: it must be one of "
            "\"hf\", \"custom\", \"auto\"");
  EXPECT_EQ(message("trainer.model.seq_len"),
            "t.toml:4:11: trainer.model.seq_len must be an integer, not a string (\"long\")");
  EXPECT_EQ(message("trainer.loss.kl_tau"),
            "t.toml:7:10: trainer.loss.kl_tau = -1 is out of bounds: it must be >= 0");
  EXPECT_EQ(message("trainer.optim.type"),
            "t.toml:9:8: trainer.optim.type = \"adam\" is not allowed: it must be one of "
            "\"sgd\", \"adamw\", \"muon\", \"sign_sgd\"; did you mean \"adamw\"?");
  EXPECT_EQ(message("weight_broadcast.type"),
            "t.toml:16:2: weight_broadcast.type is required: [weight_broadcast] has no type to "
            "choose among \"filesystem\", \"nccl\", \"nixl\"");
}

TEST(SchemaCheck, UnionsNullAndRequiredKeys) {
  const auto problems = check(R"([trainer.model]
ep = "eight"
compile = "None"
seq_len = "None"
[deployment]
type = "multi_node"
[orchestrator]
inference_metrics_roles = ["prefill", "decoder"]
)");
  ASSERT_EQ(problems.size(), 4u) << dump(problems);
  EXPECT_EQ(problems[0].kind, Kind::not_allowed);
  EXPECT_EQ(problems[0].message,
            "t.toml:2:6: trainer.model.ep = \"eight\" is not allowed: it must be an integer or "
            "\"auto\"");
  EXPECT_EQ(problems[1].kind, Kind::wrong_type); // "None" is null; seq_len is not optional
  EXPECT_EQ(problems[1].key, "trainer.model.seq_len");
  EXPECT_EQ(problems[2].kind, Kind::missing_required);
  EXPECT_EQ(problems[2].key, "deployment.num_train_nodes");
  EXPECT_EQ(problems[2].location, "t.toml:5:2");
  EXPECT_EQ(problems[3].key, "orchestrator.inference_metrics_roles[1]");
  EXPECT_EQ(problems[3].kind, Kind::not_allowed);
  EXPECT_EQ(problems[3].suggestion, "decode");
  // [trainer] exists implicitly; [orchestrator] is required by RLConfig.
  const auto none = check("[trainer.model]\n");
  ASSERT_EQ(none.size(), 1u) << dump(none);
  EXPECT_EQ(none[0].message, "t.toml: orchestrator is required");
  SchemaCheckOptions options;
  options.missing_required = false;
  EXPECT_TRUE(
      check_schema(toml::Document::parse("[trainer.model]\n", "t.toml"), ConfigRoot::rl, options)
          .empty());
}

TEST(SchemaCheck, SftDropsNumGpusForMultiNodeAsPrimeRlDoes) {
  EXPECT_TRUE(
      check("[deployment]\ntype = \"multi_node\"\nnum_gpus = 8\n", ConfigRoot::sft).empty());
  const auto single = check("[deployment]\nnum_nodes = 2\n", ConfigRoot::sft);
  ASSERT_EQ(single.size(), 1u) << dump(single);
  EXPECT_EQ(single[0].key, "deployment.num_nodes"); // single_node has no num_nodes
  EXPECT_EQ(single[0].kind, Kind::unknown_key);
}

TEST(SchemaCheck, OtherRoots) {
  EXPECT_TRUE(check("max_steps = 3\n[model]\nname = \"m\"\n", ConfigRoot::trainer).empty());
  const auto orchestrator = check("batch_size = 4\nlr = 1\n", ConfigRoot::orchestrator);
  ASSERT_EQ(orchestrator.size(), 1u) << dump(orchestrator);
  EXPECT_EQ(orchestrator[0].key, "lr");
  const auto inference = check("[parallel]\ntp = 2\ndp = 0\n", ConfigRoot::inference);
  ASSERT_EQ(inference.size(), 1u) << dump(inference);
  EXPECT_EQ(inference[0].kind, Kind::out_of_bounds);
  EXPECT_EQ(parse_config_root("sft"), ConfigRoot::sft);
  EXPECT_EQ(parse_config_root("env_server"), ConfigRoot::env_server);
  EXPECT_EQ(parse_config_root("env-server"), std::nullopt);
  EXPECT_EQ(root_name(ConfigRoot::inference), "inference");
}

// v0.9's BeforeValidator field trainer.model.full_offload (test_schema_v0_9.cpp) is not a key of
// v0.8.0 or of the cataloged fork: any value of it, "perhaps" or true, is an unknown key there.
TEST(SchemaCheck, FullOffloadIsUnknownBeforeV09) {
  for (const SchemaRelease release : {SchemaRelease::v0_8_0, SchemaRelease::v0_7_1_dev83}) {
    SchemaCheckOptions options;
    options.release = release;
    for (const char *value : {"\"perhaps\"", "true", "false", "{ numa_bind = false }"}) {
      const auto problems = check(std::string("[trainer]\n[orchestrator]\n[trainer.model]\n"
                                              "full_offload = ") +
                                      value + "\n",
                                  ConfigRoot::rl,
                                  options);
      ASSERT_EQ(problems.size(), 1u) << release_name(release) << " " << value << dump(problems);
      EXPECT_EQ(problems[0].kind, Kind::unknown_key);
      EXPECT_EQ(problems[0].location, "t.toml:4:1");
      EXPECT_EQ(problems[0].message.rfind("t.toml:4:1: unknown key trainer.model.full_offload "
                                          "(ModelConfig has no such key)",
                                          0),
                0u)
          << problems[0].message;
    }
  }
}

// The cataloged image's fork and Prime-RL v0.8.0 are two schemas, each strict about the other's
// keys (docs/primerl-schema.md "The cataloged image (v0.7.1.dev83)").
TEST(SchemaCheck, TheForkAndV080EachReadOnlyTheirOwnKeys) {
  const std::string fork_only = R"([trainer.loss]
aggregation = "group_token_mean"
[trainer.optim]
eps = 1e-12
[orchestrator]
eval_max_inflight_episodes = 64
)";
  const std::string v0_8_0_only = R"([orchestrator]
env_server_base_port = 6000
[orchestrator.eval]
retrigger_on_resume = true
)";
  SchemaCheckOptions fork;
  fork.release = SchemaRelease::v0_7_1_dev83;
  fork.missing_required = false;
  SchemaCheckOptions v0_8_0;
  v0_8_0.missing_required = false;
  EXPECT_TRUE(check(fork_only, ConfigRoot::rl, fork).empty())
      << dump(check(fork_only, ConfigRoot::rl, fork));
  const auto refused_by_v0_8_0 = check(fork_only, ConfigRoot::rl, v0_8_0);
  ASSERT_EQ(refused_by_v0_8_0.size(), 3u) << dump(refused_by_v0_8_0);
  EXPECT_EQ(refused_by_v0_8_0[0].location, "t.toml:2:1");
  EXPECT_EQ(refused_by_v0_8_0[0].kind, Kind::unknown_key);
  EXPECT_TRUE(check(v0_8_0_only, ConfigRoot::rl, v0_8_0).empty());
  const auto refused_by_fork = check(v0_8_0_only, ConfigRoot::rl, fork);
  ASSERT_EQ(refused_by_fork.size(), 2u) << dump(refused_by_fork);
  EXPECT_EQ(refused_by_fork[0].key, "orchestrator.env_server_base_port");
  // Typed as the fork types them.
  const auto bad = check(
      "[trainer.loss]\naggregation = \"group\"\n[trainer.optim]\neps = 0\n", ConfigRoot::rl, fork);
  ASSERT_EQ(bad.size(), 2u) << dump(bad);
  EXPECT_EQ(bad[0].kind, Kind::not_allowed);
  EXPECT_EQ(bad[1].kind, Kind::out_of_bounds);
}

TEST(SchemaCheck, AddsErrorsToProblems) {
  const auto document = toml::Document::parse("[trainer]\nmax_step = 2\n", "t.toml");
  Problems problems(document);
  EXPECT_EQ(check_schema(document, ConfigRoot::rl, problems), 2u);
  ASSERT_EQ(problems.lines().size(), 2u);
  EXPECT_EQ(problems.lines()[0],
            "t.toml:2:1: unknown key trainer.max_step (TrainerConfig has no such key); did you "
            "mean 'max_steps'?");
  EXPECT_EQ(problems.lines()[1], "t.toml: orchestrator is required");
}

// -- real files
// ----------------------------------------------------------------------------------

struct Sample {
  fs::path path;
  ConfigRoot root;
};

// The v0.8.0-generation training TOMLs (v0.8.0's or the cataloged fork's keys, or keys both
// generations read): rl with [trainer] or [orchestrator]; sft with `data` or `model` at the top
// and neither.
std::optional<ConfigRoot> v0_8_root(const toml::Document &document) {
  const auto &root = document.root();
  const Generation generation = detect_generation(document).generation;
  if (generation != Generation::v0_8 && generation != Generation::undetermined) {
    return std::nullopt;
  }
  if (root.find("trainer") != nullptr || root.find("orchestrator") != nullptr) {
    return ConfigRoot::rl;
  }
  if (root.find("data") != nullptr || root.find("model") != nullptr) {
    return ConfigRoot::sft;
  }
  return std::nullopt;
}

std::vector<Sample> samples() {
  std::vector<Sample> out;
  auto add_dir = [&](const fs::path &dir, const std::string &prefix) {
    if (!fs::exists(dir)) {
      return;
    }
    std::vector<fs::path> files;
    for (const auto &entry : fs::recursive_directory_iterator(dir)) {
      const auto name = entry.path().filename().string();
      if (entry.is_regular_file() && entry.path().extension() == ".toml" &&
          name.rfind(prefix, 0) == 0 &&
          entry.path().string().find("/build/") == std::string::npos) {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const auto &file : files) {
      if (const auto root = v0_8_root(toml::Document::load(file))) {
        out.push_back({file, *root});
      }
    }
  };
  add_dir(test::shared_dir() / "corpus" / "prime-rl", "v0.8.0-");
  add_dir(test::shared_dir() / "corpus" / "primebeaker-examples", "");
  add_dir(test::source_dir() / "examples", "");
  add_dir(test::source_dir() / "tests", "");
  return out;
}

TEST(SchemaCorpus, NoFalseAlarmOnAnyV080Toml) {
  const auto files = samples();
  // 6 Prime-RL v0.8.0 files, 5 reference examples, the repository's examples and fixtures.
  ASSERT_GE(files.size(), 17u);
  std::map<std::string, int> by_release;
  for (const auto &[path, root] : files) {
    // Read by the release the launch would pick for it (the fork's, or v0.8.0's).
    const Reading reading = read_prime_rl_file(toml::Document::load(path), root, std::nullopt);
    EXPECT_EQ(reading.errors, 0u) << path << " as " << root_name(root) << ":\n"
                                  << dump(reading.problems);
    ++by_release[reading.prime_rl.version];
  }
  for (const auto &[release, count] : by_release) {
    std::cout << "[ schema ] read as Prime-RL " << release << ": " << count << " files\n";
  }
}

// One planted mistake and where the checker must put it.
struct Planted {
  std::string path;    // key path for toml::set
  std::string literal; // the value written
  Kind kind;
  std::string key;     // the problem's key
  bool at_key = false; // located at the key (unknown keys) rather than the value
};

std::vector<Planted> plants(ConfigRoot root) {
  if (root == ConfigRoot::sft) {
    return {{"max_stesp", "10", Kind::unknown_key, "max_stesp", true},
            {"data.batch_size", "\"lots\"", Kind::wrong_type, "data.batch_size"},
            {"data.micro_batch_size", "0", Kind::out_of_bounds, "data.micro_batch_size"},
            {"matmul_precision", "\"ultra\"", Kind::not_allowed, "matmul_precision"}};
  }
  return {{"max_stesp", "10", Kind::unknown_key, "max_stesp", true},
          {"orchestrator.batch_size", "\"lots\"", Kind::wrong_type, "orchestrator.batch_size"},
          {"orchestrator.group_size", "0", Kind::out_of_bounds, "orchestrator.group_size"},
          {"trainer.model.impl", "\"fast\"", Kind::not_allowed, "trainer.model.impl"}};
}

TEST(SchemaCorpus, EveryPlantedMistakeIsNamedAtItsPlaceInOneRun) {
  test::TempDir dir;
  std::size_t edited = 0;
  for (const auto &[path, root] : samples()) {
    std::string text = test::read_file(path);
    const auto planted = plants(root);
    {
      toml::Editor editor(toml::Document::parse(text, path.filename().string()));
      for (const auto &plant : planted) {
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
    for (const auto &plant : planted) {
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
    SchemaCheckOptions release;
    release.release =
        read_prime_rl_file(toml::Document::load(path), root, std::nullopt).prime_rl.schema;
    const auto problems = check_schema(document, root, release);
    for (const auto &p : errors_of(problems)) {
      got[p.key] = {p.kind, p.location};
    }
    EXPECT_EQ(got, want) << path << " as " << root_name(root) << ":\n" << dump(problems);
    ++edited;
  }
  EXPECT_GE(edited, 17u);
}

// The checker's cost on the largest corpus TOML, printed once (docs/primerl-schema.md).
TEST(SchemaCorpus, CostOnTheLargestCorpusToml) {
  fs::path largest;
  for (const auto &sample : samples()) {
    if (sample.path.string().find("/corpus/") != std::string::npos &&
        (largest.empty() || fs::file_size(sample.path) > fs::file_size(largest))) {
      largest = sample.path;
    }
  }
  ASSERT_FALSE(largest.empty());
  const auto document = toml::Document::load(largest);
  (void)document.root();
  constexpr int rounds = 200;
  const auto start = std::chrono::steady_clock::now();
  std::size_t found = 0;
  for (int i = 0; i < rounds; ++i) {
    found += check_schema(document, ConfigRoot::rl).size();
  }
  const auto clean = std::chrono::steady_clock::now() - start;
  // With errors, key positions need the syntax tree's tokens (recorded once per document).
  std::string text = test::read_file(largest) + "\n[orchestrator.model.client]\nbase_url = 1\n";
  const auto start_bad = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds / 10; ++i) {
    found += check_schema(toml::Document::parse(text, "t.toml"), ConfigRoot::rl).size();
  }
  const auto bad = std::chrono::steady_clock::now() - start_bad;
  const auto us = [](auto d, int n) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count() / 1000.0 / n;
  };
  std::cout << "[ schema ] " << largest.filename().string() << " (" << fs::file_size(largest)
            << " bytes): " << us(clean, rounds) << " us per check of the parsed document; "
            << us(bad, rounds / 10) << " us per parse + check with one error (" << found
            << " problems in all)\n";
}

} // namespace
} // namespace pb::primerl
