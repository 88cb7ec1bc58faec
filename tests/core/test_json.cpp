// SPDX-License-Identifier: MIT
// core/json's truthy against Python's bool() of the same values (json.loads of the literal).
#include <primebeaker/core/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace pb {
namespace {

template <class Json> void expect_python_truthiness() {
  // Falsy: None, False, 0, 0.0, -0.0, "", [], {}.
  EXPECT_FALSE(truthy(Json()));
  EXPECT_FALSE(truthy(Json(nullptr)));
  EXPECT_FALSE(truthy(Json(false)));
  EXPECT_FALSE(truthy(Json(0)));
  EXPECT_FALSE(truthy(Json(0u)));
  EXPECT_FALSE(truthy(Json(0.0)));
  EXPECT_FALSE(truthy(Json(-0.0)));
  EXPECT_FALSE(truthy(Json("")));
  EXPECT_FALSE(truthy(Json::array()));
  EXPECT_FALSE(truthy(Json::object()));
  EXPECT_FALSE(truthy(Json::parse(R"(["", 0, null])")[0]));
  EXPECT_FALSE(truthy(Json::parse("-0.0")));

  // Truthy: True, any other number (NaN and infinities too), any non-empty string or container,
  // even one that holds only falsy values.
  EXPECT_TRUE(truthy(Json(true)));
  EXPECT_TRUE(truthy(Json(1)));
  EXPECT_TRUE(truthy(Json(-1)));
  EXPECT_TRUE(truthy(Json(std::numeric_limits<std::uint64_t>::max())));
  EXPECT_TRUE(truthy(Json(std::numeric_limits<std::int64_t>::min())));
  EXPECT_TRUE(truthy(Json(0.5)));
  EXPECT_TRUE(truthy(Json(-1e-300)));
  EXPECT_TRUE(truthy(Json(std::nan(""))));
  EXPECT_TRUE(truthy(Json(std::numeric_limits<double>::infinity())));
  EXPECT_TRUE(truthy(Json(" ")));
  EXPECT_TRUE(truthy(Json("0")));
  EXPECT_TRUE(truthy(Json("false")));
  EXPECT_TRUE(truthy(Json::array({nullptr})));
  EXPECT_TRUE(truthy(Json::array({""})));
  EXPECT_TRUE(truthy(Json::object({{"", nullptr}})));
}

TEST(JsonTruthy, FollowsPythonForJson) {
  expect_python_truthiness<nlohmann::json>();
}

TEST(JsonTruthy, FollowsPythonForOrderedJson) {
  expect_python_truthiness<OrderedJson>();
}

} // namespace
} // namespace pb
