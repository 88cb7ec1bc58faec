// SPDX-License-Identifier: MIT
#include <primebeaker/core/dynamic_library.hpp>
#include <primebeaker/core/error.hpp>

#include <dlfcn.h>

namespace pb::dl {

void *open(const char *soname, const std::string &missing) {
  void *handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw failure(missing + ::dlerror());
  }
  return handle;
}

void *symbol(void *handle, const char *name, const std::string &lacking) {
  void *address = ::dlsym(handle, name);
  if (address == nullptr) {
    throw failure(lacking + name);
  }
  return address;
}

} // namespace pb::dl
