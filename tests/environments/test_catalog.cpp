// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/text.hpp>
#include <primebeaker/environments/catalog.hpp>
#include <primebeaker/environments/validate.hpp>
#include <primebeaker/primerl/environments.hpp>
#include <primebeaker/toml/value.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace pb::environments {
namespace {

TEST(Catalog, SixteenNamesFifteenAliasesThirteenBehaviours) {
  EXPECT_EQ(catalog().size(), 16u);
  size_t aliases = 0;
  std::set<Behaviour> behaviours;
  std::set<std::string> modules;
  for (const auto &e : catalog()) {
    aliases += e.aliases.size();
    behaviours.insert(e.behaviour);
    modules.insert(e.module);
  }
  EXPECT_EQ(aliases, 15u);
  EXPECT_EQ(behaviours.size(), 13u);
  EXPECT_EQ(modules.size(), 16u);
  // One list of module stems: the legacy id rewrite of primerl uses the same 16.
  const auto &bundled = primerl::bundled_environment_modules();
  EXPECT_EQ(std::vector<std::string>(modules.begin(), modules.end()), bundled);
}

TEST(Catalog, SortedByNameAndOneStorageForLookupsAndTheWhole) {
  // A lookup builds its environment alone; catalog() builds the rest into the same slots, so a
  // pointer from a lookup and the catalog's element are the same object, before and after.
  const Environment *label = find_environment("jtc_label_env");
  ASSERT_NE(label, nullptr);
  EXPECT_EQ(label->name, "label");
  EXPECT_EQ(label->aliases, std::vector<std::string>{"jtc-label"});
  EXPECT_FALSE(label->parameters.empty()); // filled, not only named
  const auto &all = catalog();
  EXPECT_TRUE(std::is_sorted(
      all.begin(), all.end(), [](const auto &a, const auto &b) { return a.name < b.name; }));
  const auto at =
      std::find_if(all.begin(), all.end(), [](const auto &e) { return e.name == "label"; });
  ASSERT_NE(at, all.end());
  EXPECT_EQ(&*at, label);
  EXPECT_EQ(environment_for_id("primebeaker.environments.jtc_label_env"), label);
  EXPECT_EQ(find_environment("jtc-search-agent-webterminal")->name, "search-agent-webterminal");
  EXPECT_EQ(find_environment("search-agent-webterminal")->summary,
            "re-export of search-agent-dataset");
  EXPECT_EQ(find_environment("search_agent_dataset")->module, "jtc_search_agent_env");
}

TEST(Catalog, KeysSortedByCodePointAndEveryKeyResolves) {
  const auto keys = registry_keys();
  ASSERT_EQ(keys.size(), 31u);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(keys.front(), "articulated-harness");
  EXPECT_EQ(keys.back(), "tool-label");
  std::set<std::string> modules;
  for (const auto &key : keys) {
    modules.insert(resolve(key).module);
  }
  EXPECT_EQ(modules.size(), 16u);
}

TEST(Catalog, ResolutionRules) {
  EXPECT_EQ(resolve("label").entry_point(),
            "primebeaker.environments.jtc_label_env:load_environment");
  EXPECT_EQ(resolve("jtc_label").module, "jtc_label_env");
  EXPECT_EQ(resolve("label.py").module, "jtc_label_env");
  EXPECT_EQ(resolve("jtc_label_env").module, "jtc_label_env"); // module-stem fallback
  EXPECT_EQ(resolve("podman-terminal-verifier").module, "podman_terminal_env");
  EXPECT_EQ(resolve("search-agent-webterminal").behaviour, Behaviour::search_agent);
  EXPECT_EQ(find_environment("jtc-label-env"), nullptr);
  EXPECT_PB_ERROR(resolve("nope"), 3, "unknown environment 'nope'");
  EXPECT_PB_ERROR(
      resolve("nope"), 3, "run 'primebeaker environments list' for the 16 environments");
  EXPECT_EQ(environment_for_id("primebeaker.environments.podman_terminal_env")->name,
            "podman-terminal");
  EXPECT_EQ(environment_for_id("primebeaker.environments.jtc_label_env:load_environment")->name,
            "label");
  EXPECT_EQ(environment_for_id("someone.else.env"), nullptr);
  EXPECT_EQ(environment_for_id("tool-label")->module, "jtc_tool_label_env");
}

// Verifiers v1 taskset ids (Prime-RL v0.9), resolved as Verifiers resolves them, name the
// bundled primebeaker_<name> modules and nothing else.
TEST(Catalog, TasksetIdsNameTheBundledV1Modules) {
  EXPECT_EQ(environment_for_taskset("primebeaker-jtc-tool-label")->module, "jtc_tool_label_env");
  EXPECT_EQ(environment_for_taskset("owner/primebeaker-jtc-label@0.2")->name, "label");
  EXPECT_EQ(environment_for_taskset("Primebeaker-Podman-Terminal")->name, "podman-terminal");
  EXPECT_EQ(environment_for_taskset("primebeaker_articulated_harness")->module,
            "articulated_harness_env");
  EXPECT_EQ(environment_for_taskset("reverse-text"), nullptr);
  EXPECT_EQ(environment_for_taskset("primebeaker-nope"), nullptr);
  EXPECT_EQ(environment_for_taskset("label"), nullptr); // a v0 name is not a taskset id
}

// What users type, from docs/environments.md and the ids of the examples' TOMLs.
TEST(Catalog, LookupAcceptsModuleIdsAndPaths) {
  const Environment *label = find_environment("label");
  ASSERT_NE(label, nullptr);
  for (const char *typed : {"label",
                            "jtc-label",
                            "jtc_label",
                            "label.py",
                            "jtc_label_env",
                            "jtc_label_env.py",
                            "primebeaker.environments.jtc_label_env",
                            "primebeaker.environments.jtc_label_env:load_environment",
                            "jtc.environments.jtc_label_env",
                            "python/primebeaker/environments/jtc_label_env.py",
                            "/opt/site-packages/primebeaker/environments/jtc_label_env.py",
                            "label:load_environment",
                            " primebeaker.environments.jtc_label_env "}) {
    EXPECT_EQ(lookup_environment(typed), label) << typed;
    EXPECT_EQ(&resolve(typed), label) << typed;
  }
  // Every module id the examples' TOMLs use.
  for (const auto &e : catalog()) {
    EXPECT_EQ(lookup_environment("primebeaker.environments." + e.module), &e) << e.module;
    EXPECT_EQ(lookup_environment(e.entry_point()), &e) << e.module;
  }
  for (const char *unknown : {"", "primebeaker.environments", "someone.else.env", "x.py", "/"}) {
    EXPECT_EQ(lookup_environment(unknown), nullptr) << unknown;
  }
}

TEST(Catalog, UnknownEnvironmentSuggestsTheClosestInTheFormTyped) {
  const auto suggestion = [](const std::string &typed) {
    const Error error = test::thrown_error([&] { resolve(typed); });
    EXPECT_EQ(error.code(), 3) << typed;
    EXPECT_EQ(std::string(error.what()), "unknown environment '" + typed + "'");
    return error.context().size() == 2 ? error.context().front() : std::string();
  };
  EXPECT_EQ(suggestion("lable"), "did you mean 'label'?");
  EXPECT_EQ(suggestion("tool_lable"), "did you mean 'tool-label'?");
  EXPECT_EQ(suggestion("podman-termnal"), "did you mean 'podman-terminal'?");
  EXPECT_EQ(suggestion("jtc_lable_env"), "did you mean 'jtc_label_env'?");
  EXPECT_EQ(suggestion("primebeaker.environments.jtc_lable_env"),
            "did you mean 'primebeaker.environments.jtc_label_env'?");
  EXPECT_EQ(suggestion("primebeaker.environments.jtc_label:load_environment"),
            "did you mean 'primebeaker.environments.jtc_label_env:load_environment'?");
  EXPECT_EQ(suggestion("primebeaker/environments/podman_terminl_env.py"),
            "did you mean 'primebeaker/environments/podman_terminal_env.py'?");
  EXPECT_EQ(suggestion("zzzzzzzz"), "");
}

std::vector<Problem> check(const std::string &name, const std::string &args_json) {
  return validate_args(resolve(name), OrderedJson::parse(args_json));
}

std::string messages(const std::vector<Problem> &problems) {
  std::string out;
  for (const auto &p : problems) {
    out += (p.error ? "E " : "W ") + p.key_path + ": " + p.message + "\n";
  }
  return out;
}

TEST(Catalog, WeightsAndTurnLimitsAreData) {
  const auto &podman = pb::environments::resolve("podman-terminal");
  EXPECT_EQ(podman.max_turns_text(), "max_tool_calls + 1 (65)");
  EXPECT_EQ(podman.turn_limit({{"max_tool_calls", 9}}), 10);
  EXPECT_EQ(podman.turn_limit({{"max_tool_calls", 9}, {"max_turns", 3}}), 3);
  EXPECT_EQ(podman.turn_limit(pb::OrderedJson::object()), 65);
  const auto &file = podman.rewards.front();
  EXPECT_EQ(file.weight_text(), "reward_file_weight (1.0)");
  EXPECT_EQ(file.weight_for(pb::OrderedJson::object()), 1.0);
  EXPECT_EQ(file.weight_for({{"reward_file_weight", 2.0}}), 2.0);
  EXPECT_EQ(file.weight_for({{"reward_file_weight", 1.0}, {"verifier_reward_weight", 3.0}}), 3.0);
  EXPECT_EQ(podman.rewards[1].weight_for(pb::OrderedJson::object()), 0.1);
  const auto &code = pb::environments::resolve("code-tool-label");
  EXPECT_EQ(code.max_turns_text(), "2");
  EXPECT_EQ(pb::environments::resolve("terminal-tool-label").max_turns_text(),
            "max_terminal_calls + 1 (5)");
  EXPECT_EQ(pb::environments::resolve("label").rewards[0].weight_text(), "1.0");
  // The folded search tables keep each family's rows.
  const auto &visit = pb::environments::resolve("search-agent-visit");
  EXPECT_NE(visit.parameter("visit_max_content_length"), nullptr);
  EXPECT_EQ(visit.parameter("terminal_server_url"), nullptr);
  EXPECT_EQ(visit.max_turns_text(), "max_tool_calls + 1 (151)");
  const auto &web = pb::environments::resolve("search-agent-dataset");
  EXPECT_NE(web.parameter("jina_reader_url"), nullptr);
  EXPECT_EQ(web.max_turns_text(), "max_tool_calls + 1 (21)");
}

TEST(Validate, RequiredTypesAndUnknownKeys) {
  EXPECT_EQ(messages(check("label", R"({"dataset": "d.jsonl"})")), "");
  EXPECT_EQ(messages(check("label", R"({})")), "E : label needs the argument 'dataset'\n");
  EXPECT_EQ(messages(check("label", R"({"dataset": "d", "splt": "x"})")),
            "E splt: label has no argument 'splt' (did you mean 'split'?)\n");
  EXPECT_EQ(messages(check("tool-label", R"({"dataset": "d", "max_tool_calls": "8"})")),
            "E max_tool_calls: must be integer, got a string\n");
  EXPECT_EQ(messages(check("podman-terminal", R"({"dataset": "d", "extra": 1})")),
            "W extra: not an argument of podman-terminal; forwarded to the Verifiers environment "
            "class\n");
  EXPECT_EQ(messages(check("search-visit-agent-dataset", R"({"dataset": "d", "foo": 1})")),
            "W foo: search-visit-agent-dataset ignores the argument 'foo'\n");
  EXPECT_EQ(messages(check("reward-model", R"({"dataset": "d"})")),
            "E : reward-model needs the argument 'reward_model_path'\n");
}

TEST(Validate, Constraints) {
  EXPECT_EQ(messages(check("tool-label", R"({"dataset": "d", "invalid_trace_penalty": 1.0})")),
            "E invalid_trace_penalty: must be <= 0 (a penalty), got 1.0\n");
  EXPECT_EQ(messages(check("tool-label", R"({"dataset": "d", "tools": ["terminal", "python"]})")),
            "E tools: tool 'python' has no execution client in tool-label (missing execution "
            "clients); use terminal and submit\n");
  EXPECT_EQ(messages(check("tool-label", R"({"dataset": "d", "tools": [], "max_tool_calls": 3})")),
            "E max_tool_calls: must be 0 when no tools are selected\n");
  EXPECT_EQ(messages(check("search-agent-dataset",
                           R"({"dataset": "d", "max_tool_calls": 10, "max_turns": 10})")),
            "E max_turns: must be at least max_tool_calls + 1 = 11, got 10\n");
  EXPECT_EQ(
      messages(check("reward-model",
                     R"({"dataset": "d", "reward_model_path": "m", "score_transform": "log"})")),
      "E score_transform: must be identity or logit, got 'log'\n");
  EXPECT_EQ(
      messages(check("code-tool-label", R"({"dataset": "d", "code_output_truncation": "None"})")),
      "");
  EXPECT_EQ(
      messages(check("code-tool-label", R"({"dataset": "d", "code_output_truncation": "none"})")),
      "E code_output_truncation: must be integer or \"None\", got a string\n");
  EXPECT_EQ(
      messages(check(
          "search-agent-webterminal-judge",
          R"({"dataset": "d", "judge_model_path": "j", "search_server_url": "http://x/find"})")),
      "E search_server_url: must end in /search when judge_server_url is not given (the "
      "judge URL is derived from it)\n");
  EXPECT_EQ(
      messages(check("podman-terminal", R"({"dataset": "d", "test_timeout": 0, "service": " "})")),
      "E test_timeout: must be > 0, got 0\nE service: must not be blank\n");
}

TEST(Validate, TomlEntriesWithLineAndColumn) {
  const std::string text = "[orchestrator]\n"
                           "[[orchestrator.train.source]]\n"
                           "[orchestrator.train.source.legacy]\n"
                           "id = \"primebeaker.environments.jtc_tool_label_env\"\n"
                           "[orchestrator.train.source.legacy.args]\n"
                           "dataset = \"d.jsonl\"\n"
                           "max_tool_calls = -1\n"
                           "[[orchestrator.env]]\n"
                           "id = \"label\"\n"
                           "[[orchestrator.env]]\n"
                           "id = \"third.party.env\"\n"
                           "args = { anything = 1 }\n";
  const auto doc = toml::Document::parse(text, "rl.toml");
  const auto problems = validate_toml(doc, "rl.toml");
  ASSERT_EQ(problems.size(), 2u) << messages(problems);
  EXPECT_EQ(format_problem(problems[0], "rl.toml"),
            "rl.toml:9:6: error: orchestrator.env[0].id: label needs the argument 'dataset'");
  EXPECT_EQ(format_problem(problems[1], "rl.toml"),
            "rl.toml:7:18: error: orchestrator.train.source[0].legacy.args.max_tool_calls: must "
            "be >= 0, got -1");
}

TEST(Validate, CorpusExamplesAreClean) {
  for (const char *name : {"examples-podman-terminal-rl.toml",
                           "examples-podman-terminal-multinode-rl.toml",
                           "examples-rl-config.toml",
                           "examples-search-agent-webterminal-multinode-rl.toml"}) {
    const auto path = test::shared_dir() / "corpus/primebeaker-examples" / name;
    const auto doc = toml::Document::load(path);
    const auto problems = validate_toml(doc, path.string());
    size_t errors = 0;
    for (const auto &p : problems) {
      errors += p.error ? 1 : 0;
    }
    EXPECT_EQ(errors, 0u) << name << "\n" << messages(problems);
  }
}

// The repository's own examples must launch: every environment entry in them validates.
TEST(Validate, BundledExamplesAreClean) {
  size_t checked = 0;
  for (const auto &entry :
       std::filesystem::recursive_directory_iterator(test::source_dir() / "examples")) {
    if (entry.path().extension() != ".toml") {
      continue;
    }
    const auto doc = toml::Document::load(entry.path());
    for (const auto &p : validate_toml(doc, entry.path().string())) {
      EXPECT_FALSE(p.error) << format_problem(p, entry.path().string());
    }
    ++checked;
  }
  EXPECT_GE(checked, 5u);
}

TEST(Cli, ListResolveShowValidate) {
  // One row per environment, aliases in their own column.
  auto list = test::run_primebeaker({"environments", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const auto rows = text::split(list.out, '\n');
  ASSERT_EQ(rows.size(), 18u) << list.out; // header, 16 rows, "" after the last newline
  EXPECT_EQ(rows[0].rfind("NAME ", 0), 0u) << rows[0];
  EXPECT_NE(rows[0].find(" ALIASES "), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find(" MODULE"), std::string::npos) << rows[0];
  for (std::size_t i = 0; i < catalog().size(); ++i) {
    const Environment &e = catalog()[i];
    const std::string &row = rows[i + 1];
    EXPECT_EQ(row.rfind(e.name + " ", 0), 0u) << row;
    EXPECT_EQ(row.substr(row.size() - e.module.size()), e.module) << row;
    EXPECT_NE(row.find(e.aliases.empty() ? std::string(" - ") : " " + e.aliases[0] + " "),
              std::string::npos)
        << row;
  }
  EXPECT_EQ(rows[1].find("articulated-harness"), 0u);
  EXPECT_NE(rows[1].find("  -  "), std::string::npos) << "no alias: " << rows[1];
  // --keys: the 31 names and aliases, as Python PrimeBeaker's module CLI printed them.
  auto keys = test::run_primebeaker({"environments", "list", "--keys"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  std::string expected;
  for (const auto &key : registry_keys()) {
    expected += key + "\n";
  }
  EXPECT_EQ(keys.out, expected);
  // --json: the catalog, 16 objects with what scripts need to map any spelling to a module.
  auto json = test::run_primebeaker({"environments", "list", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto all = OrderedJson::parse(json.out);
  ASSERT_EQ(all.size(), 16u);
  EXPECT_EQ(all[0]["name"], "articulated-harness");
  EXPECT_EQ(all[0]["entry_point"],
            "primebeaker.environments.articulated_harness_env:load_environment");
  EXPECT_TRUE(all[0]["aliases"].is_array());
  EXPECT_EQ(test::run_primebeaker({"environments", "list", "--json", "--keys"}).exit_code, 2);

  auto resolved = test::run_primebeaker({"environments", "resolve", "jtc_label"});
  EXPECT_EQ(resolved.out, "primebeaker.environments.jtc_label_env:load_environment\n");
  // The module id TOMLs contain, for resolve and show alike.
  for (const char *command : {"resolve", "show"}) {
    auto by_module =
        test::run_primebeaker({"environments", command, "primebeaker.environments.jtc_label_env"});
    EXPECT_EQ(by_module.exit_code, 0) << command << ": " << by_module.err;
    EXPECT_NE(by_module.out.find("primebeaker.environments.jtc_label_env:load_environment"),
              std::string::npos)
        << by_module.out;
  }
  auto unknown = test::run_primebeaker({"environments", "resolve", "nope"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("unknown environment 'nope'"), std::string::npos);
  auto typo =
      test::run_primebeaker({"environments", "show", "primebeaker.environments.jtc_lable_env"});
  EXPECT_EQ(typo.exit_code, 3);
  EXPECT_EQ(typo.err,
            "primebeaker: error: unknown environment 'primebeaker.environments.jtc_lable_env'\n"
            "  did you mean 'primebeaker.environments.jtc_label_env'?\n"
            "  run 'primebeaker environments list' for the 16 environments, their aliases and "
            "modules\n");
  auto show = test::run_primebeaker({"environments", "show", "podman-terminal", "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto described = OrderedJson::parse(show.out);
  EXPECT_EQ(described["module"], "podman_terminal_env");
  EXPECT_EQ(described["tools"], OrderedJson::array({"bash", "submit"}));

  test::TempDir dir;
  test::write_file(
      dir / "rl.toml",
      "[orchestrator]\n[[orchestrator.env]]\nid = \"reward-model\"\nargs = { dataset = "
      "\"d\", reward_model_path = \"m\", score_transform = \"exp\" }\n");
  auto bad =
      test::run_primebeaker({"environments", "validate", "--toml", (dir / "rl.toml").string()});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.err.find("rl.toml:4:68: error: orchestrator.env[0].args.score_transform: must be "
                         "identity or logit, got 'exp'"),
            std::string::npos)
      << bad.err;
}

// `environments validate` looks for the dataset files the arguments name: a missing one is an
// error at its line:column (relative paths from --working-dir, else the current directory);
// hub ids and files on filesystems this machine does not have are not refused.
TEST(EnvironmentsValidate, AMissingLocalDatasetFileIsAnError) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "data");
  test::write_file(dir / "data/train.jsonl", "{}\n");
  const auto toml = [](const std::string &dataset) {
    return "[orchestrator]\n[[orchestrator.env]]\nid = \"label\"\nargs = { dataset = \"" + dataset +
           "\" }\n";
  };
  test::RunOptions in_dir;
  in_dir.cwd = dir.path();
  test::write_file(dir / "rl.toml", toml("data/trian.jsonl"));
  const std::string before = test::tree_digest(dir.path());
  const auto missing =
      test::run_primebeaker({"environments", "validate", "--toml", "rl.toml"}, in_dir);
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(missing.err,
            "rl.toml:4:20: error: orchestrator.env[0].args.dataset: no such file: " +
                (dir / "data/trian.jsonl").string() + " (relative to " + dir.path().string() +
                ")\n"
                "primebeaker: error: rl.toml: 1 bad environment argument\n");
  EXPECT_EQ(test::tree_digest(dir.path()), before);
  // The same file from elsewhere, with --working-dir.
  const auto elsewhere = test::run_primebeaker({"environments",
                                                "validate",
                                                "--toml",
                                                (dir / "rl.toml").string(),
                                                "--working-dir",
                                                dir.path().string()});
  EXPECT_EQ(elsewhere.exit_code, 3);
  for (const std::string &fine : std::vector<std::string>{
           "data/train.jsonl", (dir / "data/train.jsonl").string(), "org/name"}) {
    test::write_file(dir / "rl.toml", toml(fine));
    const auto ok =
        test::run_primebeaker({"environments", "validate", "--toml", "rl.toml"}, in_dir);
    EXPECT_EQ(ok.exit_code, 0) << fine << ": " << ok.err;
    EXPECT_EQ(ok.err, "") << fine;
  }
  // Its directory is not on this machine: a warning, exit 0.
  test::write_file(dir / "rl.toml", toml("/no-such-mount/bucket/train.jsonl"));
  const auto unseen =
      test::run_primebeaker({"environments", "validate", "--toml", "rl.toml"}, in_dir);
  EXPECT_EQ(unseen.exit_code, 0) << unseen.err;
  EXPECT_EQ(unseen.err,
            "rl.toml:4:20: warning: orchestrator.env[0].args.dataset: "
            "/no-such-mount/bucket/train.jsonl is not visible from this machine (no "
            "/no-such-mount/bucket here): not checked\n");
}

} // namespace
} // namespace pb::environments
