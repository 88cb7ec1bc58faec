// SPDX-License-Identifier: MIT
#include <primebeaker/tool_services/transport.hpp>

#include <gtest/gtest.h>

namespace pb::tool_services {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, StartsAtHalfASecondDoublesAndCapsAtEight) {
  const Endpoint endpoint;
  EXPECT_EQ(backoff_delay(endpoint, 1), milliseconds(500));
  EXPECT_EQ(backoff_delay(endpoint, 2), milliseconds(1000));
  EXPECT_EQ(backoff_delay(endpoint, 3), milliseconds(2000));
  EXPECT_EQ(backoff_delay(endpoint, 4), milliseconds(4000));
  EXPECT_EQ(backoff_delay(endpoint, 5), milliseconds(8000));
  EXPECT_EQ(backoff_delay(endpoint, 9), milliseconds(8000));
}

} // namespace
} // namespace pb::tool_services
