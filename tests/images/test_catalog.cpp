// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/images/catalog.hpp>

#include <gtest/gtest.h>

namespace pb::images {
namespace {

TEST(Catalog, BuiltInIsTheRepositoryFile) {
  EXPECT_EQ(builtin_catalog_text(), test::read_file(test::source_dir() / "images/catalog.json"));
  const auto &catalog = Catalog::builtin();
  EXPECT_EQ(catalog.default_base_role, "prime_rl_training_base");
  EXPECT_EQ(catalog.role("legacy_sft_root").locations.size(), 1u);
}

// The compiled-in Catalog is generated from images/catalog.json by CMake; it must be exactly
// what parse() reads from the same file.
TEST(Catalog, CompiledInIsWhatParseReads) {
  const auto parsed = Catalog::parse(builtin_catalog_text(), "images/catalog.json");
  EXPECT_EQ(Catalog::builtin(), parsed);
  EXPECT_EQ(builtin_catalog(), parsed);
  ASSERT_EQ(parsed.roles.size(), 6u);
  EXPECT_EQ(parsed.roles[1].name, "prime_rl_training_base");
  EXPECT_EQ(parsed.roles[1].locations.size(), 3u);
  EXPECT_EQ(parsed.roles[1].locations[2].size_bytes, 21654822124);
  EXPECT_EQ(parsed.roles[1].prime_rl, "v0.7.1.dev83");
  EXPECT_EQ(parsed.roles[3].name, "prime_rl_v0_8_1_dev67");
  EXPECT_EQ(parsed.roles[3].locations[0].reference(),
            "ghcr.io/primeintellect-ai/prime-rl:v0.8.1.dev67");
  EXPECT_TRUE(parsed.roles[4].locations.empty());
  EXPECT_EQ(parsed.launch_roles,
            (std::vector<std::string>{
                "prime_rl_training_base", "prime_rl_v0_8_0", "prime_rl_v0_8_1_dev67"}));
}

TEST(Catalog, RolesAreByNameWhateverTheFileOrder) {
  const auto catalog = Catalog::parse(R"({"schema_version": 1, "default_base_role": "b",
    "roles": {"c": {"locations": []}, "a": {"locations": []}, "b": {"locations": []}}})",
                                      "test");
  ASSERT_EQ(catalog.roles.size(), 3u);
  EXPECT_EQ(catalog.roles[0].name, "a");
  EXPECT_EQ(catalog.roles[1].name, "b");
  EXPECT_EQ(catalog.roles[2].name, "c");
}

TEST(Catalog, DefaultImagePerWorkspace) {
  const auto &catalog = Catalog::builtin();
  EXPECT_EQ(catalog.default_location("ai2/oe-agents").immutable_uri,
            "beaker://01KZVDND2PYP538F5JSGJ469EC");
  EXPECT_EQ(catalog.default_location("ai2/oe-agents-holmes").immutable_uri,
            "beaker://01M0E15WYCV7T0J1CMCFPBQ21P");
  EXPECT_EQ(catalog.default_location("").immutable_uri, "beaker://01KZVDND2PYP538F5JSGJ469EC");
  try {
    catalog.default_location("ai2/other");
    FAIL();
  } catch (const Error &error) {
    EXPECT_EQ(error.code(), 2);
    EXPECT_NE(
        std::string(error.what()).find("no cataloged Prime-RL image for workspace 'ai2/other'"),
        std::string::npos);
  }
  EXPECT_THROW(catalog.role("nope"), Error);
}

TEST(Catalog, SchemaIsChecked) {
  EXPECT_THROW(Catalog::parse(R"({"schema_version": 2, "roles": {}})", "x.json"), Error);
  EXPECT_THROW(Catalog::parse("not json", "x.json"), Error);
  EXPECT_THROW(
      Catalog::parse(R"({"schema_version": 1, "default_base_role": "a", "roles": {}})", "x.json"),
      Error);
}

TEST(Catalog, Commands) {
  const auto list = test::run_primebeaker({"images", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const auto rows = nlohmann::ordered_json::parse(list.out);
  // The launch roles first, each location with the Prime-RL it holds, then the others.
  ASSERT_EQ(rows.size(), 7u);
  std::vector<std::string> keys;
  for (const auto &[key, value] : rows[0].items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys,
            (std::vector<std::string>{"role",
                                      "prime_rl",
                                      "immutable_uri",
                                      "name",
                                      "workspace",
                                      "size_bytes",
                                      "created",
                                      "committed"}));
  EXPECT_EQ(rows[1]["workspace"], "ai2/oe-agents-holmes");
  EXPECT_EQ(rows[0]["size_bytes"], 21654822124);
  EXPECT_EQ(rows[0]["prime_rl"], "v0.7.1.dev83");
  EXPECT_EQ(rows[3]["prime_rl"], "v0.8.0");
  EXPECT_EQ(rows[3]["docker"], "ghcr.io/primeintellect-ai/prime-rl:v0.8.0");
  EXPECT_EQ(rows[4]["prime_rl"], "v0.8.1.dev67");
  EXPECT_EQ(rows[5]["role"], "legacy_sft_root");
  // The recovery controller's small image holds no Prime-RL (docs/recovery.md).
  EXPECT_EQ(rows[6]["role"], "recovery_controller");
  EXPECT_EQ(rows[6]["docker"], "alpine:3.20");
  EXPECT_EQ(rows[6]["prime_rl"], "");

  const auto holmes =
      test::run_primebeaker({"images", "default", "--workspace", "ai2/oe-agents-holmes"});
  EXPECT_EQ(holmes.exit_code, 0);
  EXPECT_EQ(holmes.out, "beaker://01M0E15WYCV7T0J1CMCFPBQ21P\n");
  EXPECT_EQ(test::run_primebeaker({"images", "default"}).out,
            "beaker://01KZVDND2PYP538F5JSGJ469EC\n");
  const auto legacy = test::run_primebeaker({"images", "default", "--role", "legacy_sft_root"});
  EXPECT_EQ(legacy.out, "beaker://01KZ7H6KTYJ76ATBM91449SEKM\n");
  const auto missing = test::run_primebeaker({"images", "default", "--workspace", "ai2/x"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.out, "");
}

} // namespace
} // namespace pb::images
