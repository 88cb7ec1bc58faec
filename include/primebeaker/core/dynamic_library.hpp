// SPDX-License-Identifier: MIT
// Libraries a command needs rarely are dlopen()ed on first use instead of linked, so that every
// start does not map and relocate them (bench/startup/README.md): libcurl, SQLite, glibc's libm.
#pragma once

#include <string>

namespace pb::dl {

// dlopen(soname, RTLD_NOW | RTLD_LOCAL). Throws pb::Error (exit 1) `missing + dlerror()`.
void *open(const char *soname, const std::string &missing);

// The address of `name` in `handle`. Throws pb::Error (exit 1) `lacking + name`.
void *symbol(void *handle, const char *name, const std::string &lacking);

// symbol(), as the function pointer type of `target`.
template <typename F>
void bind(void *handle, F &target, const char *name, const std::string &lacking) {
  target = reinterpret_cast<F>(symbol(handle, name, lacking));
}

} // namespace pb::dl
