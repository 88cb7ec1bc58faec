// SPDX-License-Identifier: MIT
// `toml set|unset` of a Prime-RL config checks the edited file against the schema of the release
// it reads as (docs/toml.md "Edits of Prime-RL configs"), through the real binary: a key the edit
// introduces that Prime-RL would refuse is refused at FILE:LINE:COL with the file byte for byte
// as it was; --no-check writes it; problems the file already had do not stop other edits; other
// TOML files are edited as before.
#include "test_support.hpp"

#include <gtest/gtest.h>

namespace {

using pb::test::read_file;
using pb::test::run_primebeaker;
using pb::test::TempDir;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The 1-based line of `text` that is exactly `line`, or 0.
int line_of(const std::string &text, const std::string &line) {
  int number = 1;
  for (std::size_t begin = 0; begin < text.size(); ++number) {
    const auto end = text.find('\n', begin);
    if (text.substr(begin, end - begin) == line) {
      return number;
    }
    if (end == std::string::npos) {
      break;
    }
    begin = end + 1;
  }
  return 0;
}

class TomlEditCheck : public ::testing::Test {
protected:
  TempDir dir;
  std::string rl = (dir / "rl.toml").string();
  std::string original = read_file(pb::test::source_dir() / "examples" / "rl" / "rl.toml");
  void SetUp() override { pb::test::write_file(rl, original); }
};

TEST_F(TomlEditCheck, ATypoInAPrimeRlConfigIsRefusedAtItsPlaceAndNothingIsWritten) {
  const auto refused = run_primebeaker({"toml", "set", rl, "trainer.optim.lrr", "1e-5"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_EQ(read_file(rl), original); // byte for byte
  // Where the key would have gone: the line after `lr = 3.0e-6`, column 1.
  const int line = line_of(original, "lr = 3.0e-6") + 1;
  ASSERT_GT(line, 1);
  const std::string first = refused.err.substr(0, refused.err.find('\n'));
  EXPECT_TRUE(contains(first,
                       "primebeaker: error: " + rl + ":" + std::to_string(line) +
                           ":1: unknown key trainer.optim.lrr ("))
      << refused.err;
  EXPECT_TRUE(contains(first, "has no such key); did you mean 'lr'?")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "set trainer.optim.lrr: nothing written")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "--no-check")) << refused.err;

  // --dry-run and -o are checked the same way.
  EXPECT_EQ(
      run_primebeaker({"toml", "set", rl, "trainer.optim.lrr", "1e-5", "--dry-run"}).exit_code, 3);
  const std::string other = (dir / "other.toml").string();
  EXPECT_EQ(
      run_primebeaker({"toml", "set", rl, "trainer.optim.lrr", "1e-5", "-o", other}).exit_code, 3);
  EXPECT_FALSE(std::filesystem::exists(other));

  // A wrong type is refused too; so is an unset that removes a required key.
  EXPECT_EQ(run_primebeaker({"toml", "set", rl, "trainer.optim.lr", "-s", "fast"}).exit_code, 3);
  const auto unset = run_primebeaker({"toml", "unset", rl, "orchestrator", "--dry-run"});
  EXPECT_EQ(unset.exit_code, 3) << unset.err;
  EXPECT_TRUE(contains(unset.err, "orchestrator is required")) << unset.err;
  EXPECT_EQ(read_file(rl), original);
}

TEST_F(TomlEditCheck, NoCheckWritesAndAValidEditIsWritten) {
  const auto forced =
      run_primebeaker({"toml", "set", rl, "trainer.optim.lrr", "1e-5", "--no-check"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(run_primebeaker({"toml", "get", rl, "trainer.optim.lrr"}).out, "1e-5\n");

  pb::test::write_file(rl, original);
  const auto valid = run_primebeaker({"toml", "set", rl, "trainer.optim.lr", "1e-5"});
  ASSERT_EQ(valid.exit_code, 0) << valid.err;
  EXPECT_EQ(run_primebeaker({"toml", "get", rl, "trainer.optim.lr"}).out, "1e-5\n");
  const auto removed = run_primebeaker({"toml", "unset", rl, "ckpt.keep_last"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_FALSE(contains(read_file(rl), "keep_last"));
}

TEST_F(TomlEditCheck, OnlyProblemsTheEditIntroducesRefuseIt) {
  // A file that already has a problem Prime-RL would refuse stays editable...
  const std::string with_typo = original + "\n[trainer.model]\nimpl_typo = \"hf\"\n";
  pb::test::write_file(rl, with_typo);
  const auto valid = run_primebeaker({"toml", "set", rl, "trainer.optim.lr", "1e-5"});
  ASSERT_EQ(valid.exit_code, 0) << valid.err;
  EXPECT_EQ(run_primebeaker({"toml", "get", rl, "trainer.optim.lr"}).out, "1e-5\n");
  // ...and a new problem is refused, naming only itself.
  const std::string before = read_file(rl);
  const auto refused = run_primebeaker({"toml", "set", rl, "orchestrator.batch_szie", "8"});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_TRUE(contains(refused.err, "unknown key orchestrator.batch_szie")) << refused.err;
  EXPECT_TRUE(contains(refused.err, "did you mean 'batch_size'?")) << refused.err;
  EXPECT_FALSE(contains(refused.err, "impl_typo")) << refused.err;
  EXPECT_EQ(read_file(rl), before);
}

TEST_F(TomlEditCheck, PrimeRlVersionChoosesTheRelease) {
  // v0.9 moved [wandb] to [monitors.wandb]: as v0.9's config, a new [wandb] key is refused with
  // where it went; the keys the file already had are not this edit's problems.
  const auto as_v0_9 =
      run_primebeaker({"toml", "set", rl, "wandb.entity", "-s", "team", "--prime-rl", "v0.9"});
  EXPECT_EQ(as_v0_9.exit_code, 0) << as_v0_9.err; // wandb was refused before the edit too
  pb::test::write_file(rl, original);
  const auto moved = run_primebeaker({"toml", "set", rl, "clean", "true", "--prime-rl", "v0.8.0"});
  EXPECT_EQ(moved.exit_code, 3) << moved.err; // v0.8.0 has no `clean`
  EXPECT_TRUE(contains(moved.err, "unknown key clean")) << moved.err;
  EXPECT_EQ(read_file(rl), original);
  const auto unknown = run_primebeaker({"toml", "set", rl, "max_steps", "3", "--prime-rl", "v7"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_TRUE(contains(unknown.err, "--prime-rl")) << unknown.err;
  EXPECT_EQ(
      run_primebeaker({"toml", "set", rl, "max_steps", "3", "--prime-rl", "v0.8.0", "--no-check"})
          .exit_code,
      2);
  EXPECT_EQ(read_file(rl), original);
}

TEST_F(TomlEditCheck, OtherTomlFilesAreEditedAsBefore) {
  const std::string file = (dir / "pyproject.toml").string();
  pb::test::write_file(
      file,
      "[project]\nname = \"demo\"\nversion = \"1.0\"\n\n[tool.ruff]\nline-length = "
      "100\n");
  const auto set = run_primebeaker({"toml", "set", file, "trainer.optim.lrr", "1e-5"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(run_primebeaker({"toml", "get", file, "trainer.optim.lrr"}).out, "1e-5\n");
  const auto unset = run_primebeaker({"toml", "unset", file, "project.version"});
  ASSERT_EQ(unset.exit_code, 0) << unset.err;
  // One Prime-RL table among unrelated ones is not a Prime-RL config either.
  const std::string mixed = (dir / "mixed.toml").string();
  pb::test::write_file(mixed, "[trainer.optim]\nlr = 1.0\n\n[misc]\na = 1\n\n[other]\nb = 2\n");
  EXPECT_EQ(run_primebeaker({"toml", "set", mixed, "trainer.optim.lrr", "2"}).exit_code, 0);
}

} // namespace
