// SPDX-License-Identifier: MIT
#include "test_support.hpp"

#include <gtest/gtest.h>
namespace {
TEST(NodeRl, MissingEnvironmentExits2) {
  const auto r = pb::test::run_primebeaker({"node", "rl"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}
} // namespace
