// SPDX-License-Identifier: MIT
// core/python_json against outputs of CPython 3 (json.dumps, repr(float)), pasted as literals.
#include <primebeaker/core/python_json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace pb::python_json {
namespace {

OrderedJson sample() {
  const double inf = std::numeric_limits<double>::infinity();
  OrderedJson value = OrderedJson::object();
  value["b"] = OrderedJson::array(
      {1, 2.5, 1e16, 1e-05, 0.1, -0.0, std::nan(""), inf, -inf, 123456789.0, nullptr, true, false});
  value["a"] = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\x01\n\t\"\\/";
  return value;
}

TEST(PythonJson, DumpsWithPythonDefaults) {
  // json.dumps(v)
  EXPECT_EQ(dumps(sample()),
            R"({"b": [1, 2.5, 1e+16, 1e-05, 0.1, -0.0, NaN, Infinity, -Infinity, 123456789.0, )"
            R"(null, true, false], "a": "\u00e9\u20ac\ud83d\ude00\u007f\u0001\n\t\"\\/"})");
}

TEST(PythonJson, DumpsSortedUnescapedCompact) {
  // json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
  EXPECT_EQ(
      dumps(
          sample(),
          {.sort_keys = true, .ensure_ascii = false, .item_separator = ",", .key_separator = ":"}),
      "{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\\u0001\\n\\t\\\"\\\\/\","
      "\"b\":[1,2.5,1e+16,1e-05,0.1,-0.0,NaN,Infinity,-Infinity,123456789.0,null,true,"
      "false]}");
}

TEST(PythonJson, InvalidBytesAreSurrogateEscaped) {
  // json.dumps(b"\xff".decode("utf-8", "surrogateescape"))
  EXPECT_EQ(dumps(OrderedJson("\xff")), R"("\udcff")");
}

TEST(PythonJson, FloatRepr) {
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1e-05), "1e-05");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(float_repr(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(float_repr(std::ldexp(1.0, 70)), "1.1805916207174113e+21");
  EXPECT_EQ(float_repr(std::nan("")), "nan");
  EXPECT_EQ(float_repr(-std::numeric_limits<double>::infinity()), "-inf");
}

} // namespace
} // namespace pb::python_json
