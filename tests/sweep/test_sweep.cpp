// SPDX-License-Identifier: MIT
// Sweeps (docs/sweep.md): the variants (product, --zip, --grid), their names, and `rl sweep`
// end to end against a fake beaker: one group, distinct output dirs, all-or-nothing checks, a
// half-submitted sweep that says so, and status/stop of the receipt.
#include "launch_fixture.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/sweep/sweep.hpp>

#include <algorithm>
#include <set>
#include <sstream>

using nlohmann::json;

namespace pb::test {
namespace {

using pb::sweep::combine;
using pb::sweep::Overrides;
using pb::sweep::parse_grid;
using pb::sweep::variant_name;

TEST(SweepVariants, ProductZipAndValuesWithCommasInside) {
  const auto product = combine({"a.lr=1,2", "b=[1, 2],\"x,y\""}, false);
  ASSERT_EQ(product.size(), 4u);
  EXPECT_EQ(product[0], (Overrides{{"a.lr", "1"}, {"b", "[1, 2]"}}));
  EXPECT_EQ(product[1], (Overrides{{"a.lr", "1"}, {"b", "\"x,y\""}}));
  EXPECT_EQ(product[3], (Overrides{{"a.lr", "2"}, {"b", "\"x,y\""}}));
  const auto zipped = combine({"a=1,2,3", "b=4,5,6"}, true);
  ASSERT_EQ(zipped.size(), 3u);
  EXPECT_EQ(zipped[2], (Overrides{{"a", "3"}, {"b", "6"}}));
  EXPECT_THROW(combine({"a=1,2", "b=1"}, true), pb::Error);
  EXPECT_THROW(combine({"a=1", "a=2"}, false), pb::Error);
  EXPECT_THROW(combine({"a=1,,2"}, false), pb::Error);
}

TEST(SweepVariants, GridFilesInYamlAndToml) {
  const auto yaml = parse_grid("- trainer.optim.lr: 1.0e-5\n  wandb.tags: [a, b]\n"
                               "- trainer.optim.lr: 3.0e-6\n  name: run\n",
                               "grid.yaml");
  ASSERT_EQ(yaml.size(), 2u);
  EXPECT_EQ(yaml[0], (Overrides{{"trainer.optim.lr", "1.0e-5"}, {"wandb.tags", "[\"a\", \"b\"]"}}));
  EXPECT_EQ(yaml[1][1], (std::pair<std::string, std::string>{"name", "\"run\""}));
  const auto toml = parse_grid("[[variant]]\ntrainer.optim.lr = 1e-5\n\n[[variant]]\n"
                               "trainer.optim.lr = 2e-5\nseed = 7\n",
                               "grid.toml");
  ASSERT_EQ(toml.size(), 2u);
  EXPECT_EQ(toml[1], (Overrides{{"trainer.optim.lr", "2e-5"}, {"seed", "7"}}));
  try {
    parse_grid("a: 1\n", "grid.yaml");
    FAIL() << "a mapping is not a list of variants";
  } catch (const pb::Error &error) {
    EXPECT_EQ(error.code(), 3);
    EXPECT_NE(std::string(error.what()).find("grid.yaml:1:1"), std::string::npos) << error.what();
  }
}

TEST(SweepVariants, NamesAreShortStableUniqueAndAtMost128) {
  const Overrides a = {{"trainer.optim.lr", "1e-5"}, {"wandb.tags", "[\"x\", \"y\"]"}};
  EXPECT_EQ(variant_name("base", a), "base-lr-1e-5_tags-x-y");
  EXPECT_EQ(variant_name("base", a), variant_name("base", a));
  std::set<std::string> names;
  for (const auto &variant :
       combine({"k=" + std::string(60, 'a') + "1," + std::string(60, 'a') + "2",
                "j=" + std::string(70, 'b') + "1," + std::string(70, 'b') + "2"},
               false)) {
    const auto name = variant_name(std::string(40, 'n'), variant);
    EXPECT_LE(name.size(), 128u) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 4u); // truncated names stay apart by their hash
}

class Sweep : public LaunchFixture {
protected:
  std::vector<std::string> sweep(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"rl", "sweep", "--toml", "examples/rl/rl.toml"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static std::string env_value(const json &spec, const std::string &name) {
    for (const auto &var : spec["tasks"][0]["envVars"]) {
      if (var["name"] == name) {
        return var.value("value", std::string());
      }
    }
    return {};
  }
};

TEST_F(Sweep, DryRunPlansEveryVariantWithItsOwnNameOutputDirAndRun) {
  const std::string before = read("examples/rl/rl.toml");
  const auto result = run(sweep({"--set",
                                 "trainer.optim.lr=1e-5,3e-6",
                                 "--set",
                                 "orchestrator.train.sampling.temperature=0.7,1.0",
                                 "--dry-run"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto plan = json::parse(result.out);
  EXPECT_EQ(plan["sweep"], "primebeaker-example-rl-sweep");
  ASSERT_EQ(plan["variants"].size(), 4u);
  std::set<std::string> names, outputs, runs, configs;
  for (const auto &variant : plan["variants"]) {
    names.insert(variant["experiment_name"]);
    outputs.insert(env_value(variant["spec"], "OUTPUT_DIR"));
    runs.insert(env_value(variant["spec"], "WANDB_RUN_ID"));
    configs.insert(env_value(variant["spec"], "CONFIG_PATH"));
    EXPECT_EQ(variant["wandb_run"]["name"], variant["experiment_name"]);
  }
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(outputs.size(), 4u); // two variants never share an output dir
  EXPECT_EQ(runs.size(), 4u);
  EXPECT_EQ(configs.size(), 4u);
  EXPECT_TRUE(names.count("primebeaker-example-rl-lr-3e-6_temperature-0.7"));
  EXPECT_TRUE(outputs.count("outputs/tiny-rl/lr-3e-6_temperature-0.7"));
  EXPECT_EQ(read("examples/rl/rl.toml"), before);
  EXPECT_TRUE(m_beaker.calls().empty());
  // The same command again: the same names.
  const auto again = run(sweep({"--set",
                                "trainer.optim.lr=1e-5,3e-6",
                                "--set",
                                "orchestrator.train.sampling.temperature=0.7,1.0",
                                "--dry-run"}));
  std::set<std::string> names_again;
  const auto plan_again = json::parse(again.out);
  for (const auto &variant : plan_again["variants"]) {
    names_again.insert(variant["experiment_name"]);
  }
  EXPECT_EQ(names_again, names);
}

TEST_F(Sweep, OneInvalidVariantRefusesTheWholeSweepBeforeAnyBeakerCall) {
  beaker_creates();
  const auto result = run(
      sweep({"--set", "trainer.optim.lr=1e-5,\"fast\",3e-6", "--set", "max_steps=10,20", "--yes"}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("cannot launch (6 variants; nothing was submitted)"), std::string::npos)
      << result.err;
  // Both variants with the bad value are named, each at its --set argument.
  EXPECT_NE(result.err.find("variant primebeaker-example-rl-lr-fast_max_steps-10: --set "
                            "trainer.optim.lr=\"fast\": trainer.optim.lr must be a number"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("variant primebeaker-example-rl-lr-fast_max_steps-20"),
            std::string::npos);
  EXPECT_EQ(result.err.find("lr-1e-5_max_steps-10:"), std::string::npos) << result.err;
  EXPECT_TRUE(m_beaker.calls().empty());
}

// The message of a refused launch without its "primebeaker: error: " and with this launch's
// run id made neutral (a sweep's variants each have their own).
std::string refusal_of(const std::string &err) {
  const std::string prefix = "primebeaker: error: ";
  std::string line = err.substr(0, err.find('\n'));
  if (line.rfind(prefix, 0) == 0) {
    line = line.substr(prefix.size());
  }
  if (const auto end = line.find(" must not resume"); end != std::string::npos) {
    const auto start = line.rfind("run ", end);
    line.replace(start, end - start, "run THIS");
  }
  return line;
}

// Every variant is checked as `rl preview` checks a launch, at --dry-run already: one into an
// output dir another run owns, and one whose dataset file is missing, each refused in rl
// preview's own words, all in one message, with nothing submitted.
TEST_F(Sweep, EveryVariantIsCheckedAsRlPreviewChecksALaunch) {
  beaker_creates();
  const std::vector<std::string> taken = {"--set", "output_dir=\"outputs/taken\""};
  auto first_args = std::vector<std::string>{"rl", "submit", "--toml", "examples/rl/rl.toml"};
  first_args.insert(first_args.end(), taken.begin(), taken.end());
  const auto first = run(first_args, true, {{"PRIMEBEAKER_LAUNCH_ID", "first"}});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string first_run = json::parse(first.out)["wandb_run"]["run_id"];

  auto preview_args = std::vector<std::string>{"rl", "preview", "--toml", "examples/rl/rl.toml"};
  preview_args.insert(preview_args.end(), taken.begin(), taken.end());
  const auto preview = run(preview_args, true, {{"PRIMEBEAKER_LAUNCH_ID", "second"}});
  ASSERT_EQ(preview.exit_code, 3) << preview.err;
  const std::string owned = refusal_of(preview.err);
  ASSERT_NE(owned.find("belongs to run " + first_run), std::string::npos) << owned;

  const auto calls_before = m_beaker.calls().size();
  const auto swept =
      run(sweep({"--set", "output_dir=\"outputs/taken\",\"outputs/free\"", "--dry-run"}),
          true,
          {{"PRIMEBEAKER_LAUNCH_ID", "sweep"}});
  EXPECT_EQ(swept.exit_code, 3) << swept.err;
  EXPECT_EQ(swept.out, "");
  const std::string refused_variant = "variant primebeaker-example-rl-output_dir-outputs-taken: ";
  const auto at = swept.err.find(refused_variant);
  ASSERT_NE(at, std::string::npos) << swept.err;
  EXPECT_EQ(refusal_of(swept.err.substr(at + refused_variant.size())), owned);
  EXPECT_EQ(swept.err.find("outputs-free:"), std::string::npos) << swept.err; // that one is fine

  // A dataset file that is not there: every variant refused, at the TOML's line as rl preview.
  write("case.toml",
        replace_once(example_text("examples/rl/rl.toml"),
                     "\"examples/rl/data/train.jsonl\"",
                     "\"examples/rl/data/trian.jsonl\""));
  const auto missing = run({"rl", "preview", "--toml", "case.toml"});
  ASSERT_EQ(missing.exit_code, 3) << missing.err;
  const std::string no_file = refusal_of(missing.err);
  ASSERT_NE(no_file.find("case.toml:42:11: orchestrator.train.source[0].legacy.args.dataset: no "
                         "such file"),
            std::string::npos)
      << no_file;
  const auto swept_missing =
      run({"rl", "sweep", "--toml", "case.toml", "--set", "max_steps=10,20", "--dry-run"});
  EXPECT_EQ(swept_missing.exit_code, 3) << swept_missing.err;
  for (const char *steps : {"10", "20"}) {
    EXPECT_NE(swept_missing.err.find(std::string("-max_steps-") + steps + ": " + no_file),
              std::string::npos)
        << swept_missing.err;
  }
  EXPECT_EQ(m_beaker.calls().size(), calls_before);
}

// Two variants that would write one checkpoint directory are refused together.
TEST_F(Sweep, TwoVariantsIntoOneOutputDirAreRefused) {
  write("grid.yaml",
        "- output_dir: outputs/same\n  max_steps: 10\n"
        "- output_dir: outputs/same\n  max_steps: 20\n");
  const auto result = run(sweep({"--grid", "grid.yaml", "--dry-run"}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("would share the output dir "), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("/outputs/same\n"), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST_F(Sweep, SubmitsOneGroupAndAHalfSubmittedSweepSaysWhichVariantsRun) {
  m_beaker.on({"group", "create"}, R"([{"id": "01GROUP000000000000000000A", "name": "s"}])");
  m_beaker.on({"group", "add"}, "");
  FakeAnswer created{k_created_stdout};
  FakeAnswer refused{"", 1, "Error: quota exceeded\n"};
  m_beaker.on_sequence({"experiment", "create"}, {created, created, refused});
  // One at a time, so that the third create is the third variant's.
  const auto result =
      run(sweep({"--set", "trainer.optim.lr=1e-5,2e-5,3e-5,4e-5", "--yes", "--parallel", "1"}));
  EXPECT_EQ(result.exit_code, 4) << result.err;
  EXPECT_NE(result.err.find("variant primebeaker-example-rl-lr-3e-5 of the sweep "
                            "primebeaker-example-rl-sweep was not submitted"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("2 of 4 variants were submitted"), std::string::npos) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_EQ(receipt["complete"], false);
  EXPECT_EQ(receipt["group"]["id"], "01GROUP000000000000000000A");
  ASSERT_EQ(receipt["variants"].size(), 2u);
  EXPECT_EQ(receipt["variants"][0]["experiment_name"], "primebeaker-example-rl-lr-1e-5");
  EXPECT_EQ(receipt["variants"][0]["variant"]["trainer.optim.lr"], "1e-5");
  EXPECT_EQ(receipt["not_submitted"],
            json::parse(R"(["primebeaker-example-rl-lr-3e-5", "primebeaker-example-rl-lr-4e-5"])"));
  // Every submitted experiment was added to the group, and the receipt is on disk.
  EXPECT_EQ(m_beaker.calls_matching({"group", "add"}).size(), 2u);
  EXPECT_EQ(m_beaker.calls_matching({"group", "create"}).front().argv.back(),
            "primebeaker-example-rl-sweep");
  EXPECT_TRUE(std::filesystem::exists(receipt["receipt_path"].get<std::string>()));
}

// Variants are submitted --parallel at a time: against a `beaker` whose creates take 0.4 s, the
// creates of a 6-variant sweep overlap, never more than 3 at once, and the receipt (on disk as in
// the output) names every one.
TEST_F(Sweep, VariantsAreSubmittedConcurrentlyAtMostParallelAtATime) {
  const auto log = m_tmp.path() / "creates.log";
  const auto slow = m_tmp.path() / "slow-beaker";
  pb::test::write_file(
      slow,
      "#!/bin/bash\n"
      "case \"$1 $2\" in\n"
      "  'group create') echo '[{\"id\": \"01GROUP000000000000000000B\"}]' ;;\n"
      "  'experiment create')\n"
      "    echo \"start $(date +%s%N)\" >> " +
          log.string() +
          "\n"
          "    sleep 0.4\n"
          "    echo \"end $(date +%s%N)\" >> " +
          log.string() +
          "\n"
          "    echo \"[{\\\"id\\\": \\\"01X$4\\\", \\\"name\\\": \\\"$4\\\"}]\" ;;\n"
          "  *) ;;\n"
          "esac\n");
  std::filesystem::permissions(slow, std::filesystem::perms::owner_all);
  const auto result = run(sweep({"--set", "max_steps=1,2,3,4,5,6", "--yes", "--parallel", "3"}),
                          true,
                          {{"PRIMEBEAKER_BEAKER", slow.string()}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto receipt = json::parse(result.out);
  EXPECT_EQ(receipt["complete"], true);
  ASSERT_EQ(receipt["variants"].size(), 6u);
  EXPECT_EQ(json::parse(pb::test::read_file(receipt["receipt_path"].get<std::string>())), receipt);
  // The most creates running at once, from their start and end times.
  std::vector<std::pair<long long, int>> events;
  std::istringstream lines(pb::test::read_file(log));
  for (std::string word, time; lines >> word >> time;) {
    events.emplace_back(std::stoll(time), word == "start" ? 1 : -1);
  }
  ASSERT_EQ(events.size(), 12u);
  std::sort(events.begin(), events.end());
  int running = 0, most = 0;
  for (const auto &[time, step] : events) {
    running += step;
    most = std::max(most, running);
  }
  EXPECT_GE(most, 2) << "no two creates overlapped";
  EXPECT_LE(most, 3);
  // The stage was checked once, and said once.
  EXPECT_LE(std::count(result.err.begin(), result.err.end(), '\n'), 2) << result.err;
  const auto said = result.err.find("primebeaker: staged primebeaker");
  ASSERT_NE(said, std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("primebeaker: staged primebeaker", said + 1), std::string::npos);
  // --parallel takes 1 to 64.
  const auto refused = run(sweep({"--set", "max_steps=1,2", "--yes", "--parallel", "0"}));
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
}

TEST_F(Sweep, StopAndStatusOfASweepReceiptCoverEveryVariant) {
  const std::string receipt = at("sweep.json");
  write("sweep.json", R"({"sweep": "s", "variants": [
      {"experiment_id": "01AAAAAAAAAAAAAAAAAAAAAAAA", "experiment_name": "s-a"},
      {"experiment_id": "01BBBBBBBBBBBBBBBBBBBBBBBB", "experiment_name": "s-b"}]})");
  for (const char *id : {"01AAAAAAAAAAAAAAAAAAAAAAAA", "01BBBBBBBBBBBBBBBBBBBBBBBB"}) {
    const json running = json::array({{{"id", id},
                                       {"name", std::string("s-") + id[2]},
                                       {"author", {{"name", "jdoe"}}},
                                       {"jobs", json::array()}}});
    m_beaker.on({"experiment", "get", id}, running.dump());
  }
  m_beaker.on({"experiment", "stop"}, "");
  const auto status = run({"status", receipt}, false);
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("sweep s: 2 variants:"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("01BBBBBBBBBBBBBBBBBBBBBBBB"), std::string::npos);
  const auto stop = run({"stop", receipt, "--yes"}, false);
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  const auto stops = m_beaker.calls_matching({"experiment", "stop"});
  std::set<std::string> stopped;
  for (const auto &call : stops) {
    stopped.insert(call.argv.back());
  }
  EXPECT_EQ(stopped,
            (std::set<std::string>{"01AAAAAAAAAAAAAAAAAAAAAAAA", "01BBBBBBBBBBBBBBBBBBBBBBBB"}));
  EXPECT_EQ(json::parse(stop.out)["variants"].size(), 2u);

  // The group names the same experiments; list --sweep shows only them.
  m_beaker.on({"group", "experiments", "s"},
              R"([{"id": "01AAAAAAAAAAAAAAAAAAAAAAAA"}, {"id": "01BBBBBBBBBBBBBBBBBBBBBBBB"}])");
  const auto by_group = run({"status", "group:s", "--json"}, false);
  ASSERT_EQ(by_group.exit_code, 0) << by_group.err;
  EXPECT_EQ(json::parse(by_group.out)["variants"].size(), 2u);
  const auto listed = run({"list", "--sweep", receipt, "--json"}, false);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(json::parse(listed.out).size(), 2u);
  EXPECT_TRUE(m_beaker.calls_matching({"workspace", "experiments"}).empty());
}

TEST_F(Sweep, AMistakeInAGridFileIsReportedAtTheGridsLineAndColumn) {
  write("grid.yaml", "- trainer.optim.lr: 1.0e-5\n- trainer.optim.lrr: 2.0e-5\n");
  const auto yaml = run(sweep({"--grid", "grid.yaml", "--dry-run"}));
  EXPECT_EQ(yaml.exit_code, 3) << yaml.err;
  EXPECT_NE(yaml.err.find(": grid.yaml:2:3: unknown key trainer.optim.lrr"), std::string::npos)
      << yaml.err;
  EXPECT_EQ(yaml.err.find("--set trainer.optim.lrr"), std::string::npos) << yaml.err;

  write("grid.toml",
        "[[variant]]\ntrainer.optim.lr = 1e-5\n\n[[variant]]\nmax_steps = 3\n"
        "trainer.optim.lr = \"fast\"\n");
  const auto toml = run(sweep({"--grid", "grid.toml", "--dry-run"}));
  EXPECT_EQ(toml.exit_code, 3) << toml.err;
  EXPECT_NE(toml.err.find(": grid.toml:6:1: trainer.optim.lr must be a number"), std::string::npos)
      << toml.err;
  EXPECT_EQ(toml.err.find("--set "), std::string::npos) << toml.err;
  EXPECT_TRUE(m_beaker.calls().empty());
}

TEST_F(Sweep, OneWandbRunIdForEveryVariantIsRefused) {
  beaker_creates();
  const auto result =
      run(sweep({"--set", "trainer.optim.lr=1e-5,2e-5", "--wandb-run-id", "shared", "--yes"}));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--wandb-run-id"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("each variant gets its own W&B run id"), std::string::npos)
      << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_TRUE(m_beaker.calls().empty());
}

TEST_F(Sweep, AGroupCreateWithoutAnIdSubmitsNothing) {
  for (const std::string answer : {"", "[]", "{\"name\": \"s\"}", "Error: no quota\n"}) {
    m_beaker.clear();
    m_beaker.on({"group", "create"}, answer);
    m_beaker.on({"group", "add"}, "");
    beaker_creates();
    const auto result = run(sweep({"--set", "trainer.optim.lr=1e-5,2e-5", "--yes"}));
    EXPECT_EQ(result.exit_code, 4) << answer << ": " << result.err;
    EXPECT_NE(result.err.find("answered no group id"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("no variant was submitted"), std::string::npos) << result.err;
    // The stage line (the stage is checked before anything is created), then the one error.
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 2) << result.err;
    EXPECT_EQ(result.err.rfind("primebeaker: staged primebeaker", 0), 0u) << result.err;
    EXPECT_TRUE(m_beaker.calls_matching({"experiment", "create"}).empty()) << answer;
    EXPECT_TRUE(m_beaker.calls_matching({"group", "add"}).empty()) << answer;
    EXPECT_EQ(result.out, "") << answer; // no receipt printed
    EXPECT_FALSE(std::filesystem::exists(mount() / "primebeaker" / "sweeps")) << answer;
  }
}

} // namespace
} // namespace pb::test
