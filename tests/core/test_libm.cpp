// SPDX-License-Identifier: MIT
// pb::libm loads glibc's libm on first use; it must give std::log's and std::pow's results bit
// for bit. Rounding is compiled inline (-fno-math-errno -fno-trapping-math) and must keep the C
// library's results, halfway cases, signed zeros and NaN included.
#include <primebeaker/core/dynamic_library.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/libm.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

// Through a volatile, so the compiler cannot fold std::log of a constant at build time.
double opaque(double x) {
  volatile double v = x;
  return v;
}

std::uint64_t bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

TEST(Libm, LogAndPowAreGlibcsBitForBit) {
  const std::vector<double> values = {1e-7,
                                      1 - 1e-7,
                                      0.1,
                                      0.5,
                                      0.9999999,
                                      1.0,
                                      2.0,
                                      3.0,
                                      4.0,
                                      15.0,
                                      16.0,
                                      18.0,
                                      3e9,
                                      1e300,
                                      5e-324,
                                      0.0,
                                      -1.0,
                                      std::numeric_limits<double>::infinity()};
  for (const double v : values) {
    const double x = opaque(v);
    EXPECT_EQ(bits(pb::libm::log(x)), bits(std::log(x))) << v;
    for (const double y : {0.5, 2.0, 3.0, 7.5, -1.0}) {
      EXPECT_EQ(bits(pb::libm::pow(x, opaque(y))), bits(std::pow(x, opaque(y)))) << v << "^" << y;
    }
  }
}

TEST(Libm, InlineRoundingKeepsTheCLibrarysResults) {
  EXPECT_EQ(std::round(opaque(0.49999999999999994)), 0.0);
  EXPECT_EQ(std::round(opaque(2.5)), 3.0);
  EXPECT_EQ(std::round(opaque(-2.5)), -3.0);
  EXPECT_EQ(std::llround(opaque(2.5)), 3);
  EXPECT_EQ(std::llround(opaque(-2.5)), -3);
  EXPECT_EQ(std::llround(opaque(4503599627370497.0)), 4503599627370497LL);
  EXPECT_EQ(std::floor(opaque(-0.5)), -1.0);
  EXPECT_EQ(std::floor(opaque(1e300)), 1e300);
  EXPECT_EQ(std::ceil(opaque(2.000001)), 3.0);
  EXPECT_TRUE(std::signbit(std::ceil(opaque(-0.5)))) << "ceil(-0.5) is -0.0";
  EXPECT_TRUE(std::signbit(std::round(opaque(-0.25)))) << "round(-0.25) is -0.0";
  EXPECT_TRUE(std::isnan(std::floor(opaque(std::nan("")))));
  EXPECT_EQ(std::trunc(opaque(-7.9)), -7.0);
}

TEST(DynamicLibrary, MissingLibraryOrSymbolIsOneErrorWithTheCallersWords) {
  try {
    pb::dl::open("libprimebeaker-no-such-library.so.0", "this needs the no-such library: ");
    FAIL() << "opened a library that does not exist";
  } catch (const pb::Error &error) {
    EXPECT_EQ(error.code(), 1);
    EXPECT_EQ(std::string(error.what()).rfind("this needs the no-such library: ", 0), 0u)
        << error.what();
  }
  void *handle = pb::dl::open("libm.so.6", "libm: ");
  try {
    pb::dl::symbol(handle, "pb_no_such_function", "libm.so.6 lacks ");
    FAIL() << "found a symbol that does not exist";
  } catch (const pb::Error &error) {
    EXPECT_EQ(error.code(), 1);
    EXPECT_STREQ(error.what(), "libm.so.6 lacks pb_no_such_function");
  }
  double (*square_root)(double) = nullptr;
  pb::dl::bind(handle, square_root, "sqrt", "libm.so.6 lacks ");
  EXPECT_EQ(square_root(opaque(16.0)), 4.0); // IEEE: correctly rounded
}

} // namespace
