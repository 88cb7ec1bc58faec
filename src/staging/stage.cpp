// SPDX-License-Identifier: MIT
// Naming a stage (pure, and free at preview) and gathering what goes into one.
#include "copy.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/self.hpp>
#include <primebeaker/core/sha2.hpp>
#include <primebeaker/staging/stage.hpp>

#include <fmt/format.h>

#include <dlfcn.h>

#include <algorithm>
#include <set>

namespace pb::staging {

const Identity &current() {
  static const Identity identity = [] {
    Identity id{PB_VERSION, self::build_id()};
    if (id.build_id.empty()) {
      // A link without --build-id: name the stage by content instead (slower, still correct).
      id.build_id = detail::hash_file(self::executable()).hex;
    }
    return id;
  }();
  return identity;
}

std::string directory_name(const Identity &identity) {
  return fmt::format("{}-{}", identity.version, identity.build_id.substr(0, 16));
}

std::filesystem::path stage_directory(std::string_view scratch_dir, const Identity &identity) {
  return std::filesystem::path(scratch_dir) / "primebeaker" / "bin" / directory_name(identity);
}

std::filesystem::path staged_program(std::string_view scratch_dir, const Identity &identity) {
  return stage_directory(scratch_dir, identity) / k_wrapper;
}

const std::vector<std::string> &on_demand_libraries() {
  // registry/http.cpp, registry/sqlite.cpp, core/libm.cpp, core/sha2.cpp (libcrypto, also one
  // of libcurl's own dependencies); cpp-httplib behind the watcher's plugin
  // (src/watcher/server.cpp); libgcc_s, which glibc loads to unwind a cancelled thread.
  static const std::vector<std::string> names = {"libcurl.so.4",
                                                 "libsqlite3.so.0",
                                                 "libm.so.6",
                                                 "libcrypto.so.3",
                                                 "libcpp-httplib.so.0.11",
                                                 "libgcc_s.so.1"};
  return names;
}

std::string wrapper_text(const Identity &identity, std::string_view loader_name) {
  return fmt::format(
      "#!/bin/sh\n"
      "# primebeaker {} (build {}), staged with its own loader and libraries so that it runs on\n"
      "# any x86-64 Linux image (docs/staging.md in the primebeaker repository). Do not edit.\n"
      "case $0 in */*) here=${{0%/*}} ;; *) here=. ;; esac\n"
      ": \"${{PRIMEBEAKER_BIN:=$0}}\"\n"
      "PYTHONPATH=\"$here/{}${{PYTHONPATH:+:$PYTHONPATH}}\"\n"
      "export PRIMEBEAKER_BIN PYTHONPATH\n"
      "exec \"$here/{}/{}\" --library-path \"$here/{}\" --argv0 \"$0\" \"$here/{}\" \"$@\"\n",
      identity.version,
      identity.build_id,
      k_python_dir,
      k_library_dir,
      loader_name,
      k_library_dir,
      k_program);
}

Contents gather_contents() {
  for (const auto &soname : on_demand_libraries()) {
    // Kept loaded: unloading libraries with thread-local destructors is not worth the risk, and
    // a submit ends soon after. One missing here is simply not staged (the feature that needs
    // it then reports its absence in the container as it would here).
    ::dlopen(soname.c_str(), RTLD_LAZY | RTLD_LOCAL);
  }
  Contents contents;
  contents.program = self::executable();
  std::set<std::string> names;
  for (const auto &object : self::loaded_objects()) {
    const std::string name = object.filename().string();
    if (!names.insert(name).second) {
      continue; // the same soname reached by two paths (/lib and /usr/lib)
    }
    if (name.rfind("ld-linux", 0) == 0) {
      contents.loader = object;
    } else {
      contents.libraries.push_back(object);
    }
  }
  if (contents.loader.empty()) {
    throw failure("cannot stage primebeaker: no dynamic loader is mapped into this process (a "
                  "static build needs no stage: pass --no-stage and an image that contains it)");
  }
  contents.wrapper_text = wrapper_text(current(), contents.loader.filename().string());
  return contents;
}

} // namespace pb::staging
