// SPDX-License-Identifier: MIT
// `--set KEY=VALUE` (docs/launch.md "Overrides"): applied by the lossless engine to a copy of the
// TOML that the spec names as CONFIG_PATH; the user's file is never touched; a problem of an
// override is reported at its --set argument; the card and the receipt list the overrides.
#include "launch_fixture.hpp"

#include <primebeaker/toml/value.hpp>

#include <regex>

using nlohmann::json;

namespace pb::test {
namespace {

class Overrides : public LaunchFixture {};

std::string env_value(const json &spec, const std::string &name) {
  for (const auto &var : spec["tasks"][0]["envVars"]) {
    if (var["name"] == name) {
      return var.value("value", std::string());
    }
  }
  return {};
}

TEST_F(Overrides, NestedKeysArraysAndInlineTablesGoIntoACopyAndTheUserFileStaysByteIdentical) {
  const std::string before = read("examples/rl/rl.toml");
  beaker_creates();
  const auto result = run({"rl",
                           "submit",
                           "--toml",
                           "examples/rl/rl.toml",
                           "--set",
                           "trainer.optim.lr=1e-5",
                           "--set",
                           "wandb.name=\"lr-1e-5\"",
                           "--set",
                           "orchestrator.train.sampling.temperature=0.7",
                           "--set",
                           "trainer.optim.warp_speed=9"});
  // warp_speed is not a key of Prime-RL's schema: refused at its argument, nothing submitted.
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("--set trainer.optim.warp_speed=9:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("warp_speed"), std::string::npos) << result.err;
  EXPECT_TRUE(m_beaker.calls().empty());

  const auto ok = run({"rl",
                       "submit",
                       "--toml",
                       "examples/rl/rl.toml",
                       "--set",
                       "trainer.optim.lr=1e-5",
                       "--set",
                       "wandb.name=\"lr-1e-5\"",
                       "--set",
                       "orchestrator.train.sampling.temperature=0.7"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(read("examples/rl/rl.toml"), before);
  const auto receipt = json::parse(ok.out);
  EXPECT_EQ(receipt["experiment_name"], "lr-1e-5");
  EXPECT_EQ(receipt["overrides"]["set"]["trainer.optim.lr"], "1e-5");
  EXPECT_EQ(receipt["overrides"]["set"]["wandb.name"], "\"lr-1e-5\"");
  const std::string copy_path = receipt["overrides"]["config_path"];
  const auto spec = json::parse(read_file(receipt["spec_path"].get<std::string>()));
  EXPECT_EQ(env_value(spec, "CONFIG_PATH"), copy_path);
  // Beside the spec, in a folder of the launch and the copy's content, under the TOML's own
  // folder and file name (docs/launch.md "Overrides").
  const std::filesystem::path copy_file(copy_path);
  EXPECT_EQ(copy_file.parent_path().parent_path().parent_path(),
            std::filesystem::path(receipt["spec_path"].get<std::string>()).parent_path());
  EXPECT_TRUE(std::regex_match(copy_file.parent_path().parent_path().filename().string(),
                               std::regex("0123456789abcdef0123456789abcdef-[0-9a-f]{8}")))
      << copy_path;
  EXPECT_EQ(copy_file.parent_path().filename(), "rl");
  EXPECT_EQ(copy_file.filename(), "rl.toml");
  const auto copy = toml::Document::load(copy_path);
  EXPECT_EQ(copy.root().find_path({"trainer", "optim", "lr"})->floating(), 1e-5);
  EXPECT_EQ(*copy.root().find_path({"wandb", "name"})->string(), "lr-1e-5");
  EXPECT_EQ(copy.root().find_path({"orchestrator", "train", "sampling", "temperature"})->floating(),
            0.7);
  // Every other byte is the user's: the copy differs from the file only on the edited lines.
  const auto a = lines_of(before);
  const auto b = lines_of(read_file(copy_path));
  size_t same = 0;
  for (const auto &line : b) {
    same += std::find(a.begin(), a.end(), line) != a.end();
  }
  EXPECT_GE(same + 3, b.size()); // at most the three set lines
}

TEST_F(Overrides, ArraysAndInlineTablesAreTypedAsTomlSetTypesThem) {
  const auto result = run({"rl",
                           "preview",
                           "--toml",
                           "examples/rl/rl.toml",
                           "--set",
                           "wandb.tags=[\"sweep\", \"lr\"]",
                           "--set",
                           "trainer.model={ impl = \"hf\" }"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto preview = json::parse(result.out);
  EXPECT_EQ(preview["overrides"]["set"]["wandb.tags"], "[\"sweep\", \"lr\"]");
  EXPECT_EQ(preview["overrides"]["set"]["trainer.model"], "{ impl = \"hf\" }");
  // An inline table's keys are checked like any: Prime-RL's schema refuses this one at its flag.
  const auto refused = run({"rl",
                            "preview",
                            "--toml",
                            "examples/rl/rl.toml",
                            "--set",
                            "trainer.model={ impl = \"liger_kernel\" }"});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find("--set trainer.model={ impl = \"liger_kernel\" }: trainer.model.impl"),
            std::string::npos)
      << refused.err;
  // Preview writes nothing, not even the copy.
  EXPECT_FALSE(std::filesystem::exists(preview["overrides"]["config_path"].get<std::string>()));
}

TEST_F(Overrides, BadArgumentsAreRefusedAtTheirFlag) {
  const auto bare =
      run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--set", "wandb.name=x"});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_EQ(bare.err,
            "primebeaker: error: --set wandb.name=x: 'x' is not a TOML value (for the string, "
            "write --set 'wandb.name=\"x\"')\n");
  const auto no_value = run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--set", "wandb"});
  EXPECT_EQ(no_value.exit_code, 2);
  EXPECT_NE(no_value.err.find("--set wandb: expected KEY=VALUE"), std::string::npos);
  const auto twice = run({"rl",
                          "preview",
                          "--toml",
                          "examples/rl/rl.toml",
                          "--set",
                          "trainer.optim.lr=1e-5",
                          "--set",
                          "trainer.optim.lr=2e-5"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("trainer.optim.lr is already set by --set trainer.optim.lr=1e-5"),
            std::string::npos)
      << twice.err;
  const auto wrong_type =
      run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--set", "trainer.optim.lr=\"fast\""});
  EXPECT_EQ(wrong_type.exit_code, 3);
  EXPECT_NE(wrong_type.err.find("--set trainer.optim.lr=\"fast\":"), std::string::npos)
      << wrong_type.err;
  EXPECT_TRUE(m_beaker.calls().empty());
}

TEST_F(Overrides, AKeyAtTheWrongTableSuggestsItsFullPathElsewhere) {
  // RLConfig has no `seed`; the schema has it under [inference] (and perhaps elsewhere).
  const auto result = run({"rl", "preview", "--toml", "examples/rl/rl.toml", "--set", "seed=1"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("--set seed=1: unknown key seed (RLConfig has no such key); did you "
                            "mean "),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("'inference.seed'"), std::string::npos) << result.err;
  EXPECT_TRUE(m_beaker.calls().empty());
}

} // namespace
} // namespace pb::test
