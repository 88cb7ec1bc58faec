// SPDX-License-Identifier: MIT
#include <primebeaker/core/dynamic_library.hpp>
#include <primebeaker/core/libm.hpp>

namespace pb::libm {
namespace {

struct Functions {
  double (*log)(double) = nullptr;
  double (*pow)(double, double) = nullptr;
};

const Functions &functions() {
  static const Functions loaded = [] {
    void *handle = dl::open("libm.so.6", "cannot load glibc's libm: ");
    Functions f;
    dl::bind(handle, f.log, "log", "libm.so.6 lacks ");
    dl::bind(handle, f.pow, "pow", "libm.so.6 lacks ");
    return f;
  }();
  return loaded;
}

} // namespace

double log(double x) {
  return functions().log(x);
}

double pow(double x, double y) {
  return functions().pow(x, y);
}

} // namespace pb::libm
