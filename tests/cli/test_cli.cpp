// SPDX-License-Identifier: MIT
// The root command, end to end through the real binary.
#include "test_support.hpp"

#include <gtest/gtest.h>

namespace {

using pb::test::run_primebeaker;

TEST(Cli, VersionPrintsNameAndVersion) {
  const auto r = run_primebeaker({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("primebeaker ") + PB_VERSION + "\n");
}

TEST(Cli, HelpExitsZeroAndListsModules) {
  const auto r = run_primebeaker({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("primebeaker"), std::string::npos);
}

TEST(Cli, UnknownCommandIsUsageError) {
  const auto r = run_primebeaker({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("primebeaker: error: ", 0), 0U) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, NoCommandIsUsageError) {
  const auto r = run_primebeaker({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("primebeaker: error: ", 0), 0U) << r.err;
}

} // namespace
