// SPDX-License-Identifier: MIT
#include "launch_fixture.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/primerl/rewrite_envs.hpp>
#include <primebeaker/toml/value.hpp>

namespace pb::test {
namespace {

const char *const k_source = R"(# header comment
[orchestrator]   # trailing comment
batch_size = 4

[[orchestrator.train.source]]
name = 'a'
legacy = { id = 'old.pkg.jtc_label_env', args = { dataset = "x" } }

[[orchestrator.train.source]]
name = "b"
[orchestrator.train.source.legacy]
id = "unknown.module_env"      # not bundled: unchanged

[[orchestrator.eval.env]]
legacy.id = "podman_terminal_env"

[[orchestrator.eval.source]]
legacy.id = "primebeaker.environments.jtc_tool_label_env"
)";

TEST(RewriteEnvs, RewritesOnlyBundledIdsAndKeepsEveryOtherByte) {
  const auto document = toml::Document::parse(k_source, "src.toml");
  const auto rewrites = primerl::plan_environment_rewrites(document);
  ASSERT_EQ(rewrites.size(), 2u);
  EXPECT_EQ(rewrites[0].from, "old.pkg.jtc_label_env");
  EXPECT_EQ(rewrites[0].to, "primebeaker.environments.jtc_label_env");
  EXPECT_EQ(rewrites[1].to, "primebeaker.environments.podman_terminal_env");
  const std::string result = primerl::rewrite_environment_ids(document);
  std::string expected = k_source;
  expected.replace(
      expected.find("'old.pkg.jtc_label_env'"), 23, "\"primebeaker.environments.jtc_label_env\"");
  expected.replace(expected.find("\"podman_terminal_env\""),
                   21,
                   "\"primebeaker.environments.podman_terminal_env\"");
  EXPECT_EQ(result, expected);
}

TEST(RewriteEnvs, NeedsAnOrchestratorTable) {
  const auto document = toml::Document::parse("[trainer]\nx = 1\n", "no-orch.toml");
  try {
    primerl::rewrite_environment_ids(document);
    FAIL() << "expected an error";
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 3);
    EXPECT_STREQ(error.what(), "no-orch.toml: RL TOML needs an [orchestrator] table");
  }
}

TEST(RewriteEnvs, CommandWritesDestinationAndLeavesSource) {
  TempDir tmp;
  write_file(tmp / "src.toml", k_source);
  const auto result = run_primebeaker(
      {"toml", "rewrite-envs", (tmp / "src.toml").string(), (tmp / "dst.toml").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(read_file(tmp / "src.toml"), k_source);
  const std::string written = read_file(tmp / "dst.toml");
  EXPECT_NE(written.find("id = \"primebeaker.environments.jtc_label_env\""), std::string::npos);
  EXPECT_NE(written.find("# trailing comment"), std::string::npos);
  EXPECT_EQ(written, primerl::rewrite_environment_ids(toml::Document::parse(k_source, "x")));

  const auto bad = run_primebeaker(
      {"toml", "rewrite-envs", (tmp / "none.toml").string(), (tmp / "out.toml").string()});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_FALSE(std::filesystem::exists(tmp / "out.toml"));
}

TEST(RewriteEnvs, CorpusFilesRewriteToValidTomlWithSameKeys) {
  for (const auto &entry :
       std::filesystem::directory_iterator(shared_dir() / "corpus" / "primebeaker-examples")) {
    if (entry.path().extension() != ".toml" ||
        read_file(entry.path()).find("[orchestrator]") == std::string::npos) {
      continue;
    }
    const auto document = toml::Document::load(entry.path());
    const std::string text = primerl::rewrite_environment_ids(document);
    // Already-namespaced ids need no change: the file comes back byte for byte.
    EXPECT_EQ(text, document.text()) << entry.path();
  }
}

} // namespace
} // namespace pb::test
