// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/libm.hpp>

#include <dlfcn.h>

#include <string>

namespace pb::libm {
namespace {

struct Functions {
  double (*log)(double) = nullptr;
  double (*pow)(double, double) = nullptr;
};

template <typename F> void bind(void *handle, F &target, const char *name) {
  target = reinterpret_cast<F>(::dlsym(handle, name));
  if (target == nullptr) {
    throw failure(std::string("libm.so.6 lacks ") + name);
  }
}

const Functions &functions() {
  static const Functions loaded = [] {
    void *handle = ::dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      throw failure(std::string("cannot load glibc's libm: ") + ::dlerror());
    }
    Functions f;
    bind(handle, f.log, "log");
    bind(handle, f.pow, "pow");
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
