// SPDX-License-Identifier: MIT
#include <primebeaker/registry/location.hpp>
#include <gtest/gtest.h>
TEST(Location, Placeholder) { EXPECT_EQ(pb::registry::parse_location("/x").path, "/x"); }
