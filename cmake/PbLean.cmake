# SPDX-License-Identifier: MIT
# pb_lean_link: how the primebeaker binary is linked for start-up cost (docs/cli.md,
# "Start-up"; figures and the measurement of each step in bench/startup/README.md).
# The option PB_LEAN_LINK is defined in PbSettings.cmake (PbDependencies.cmake reads it).
add_library(pb_lean_link INTERFACE)
if(NOT PB_LEAN_LINK)
  return()
endif()

# C libraries Debian 12 ships as static archives (libsqlite3-dev, libhiredis-dev): linked in,
# the loader no longer maps them or resolves their symbols. The C++ ones are compiled or taken
# statically by cmake/PbStaticDeps.cmake (included from PbDependencies.cmake in this mode).
find_library(PB_SQLITE3_STATIC NAMES libsqlite3.a)
find_library(PB_HIREDIS_STATIC NAMES libhiredis.a)
if(PB_SQLITE3_STATIC AND TARGET SQLite::SQLite3)
  set_target_properties(SQLite::SQLite3 PROPERTIES IMPORTED_LOCATION "${PB_SQLITE3_STATIC}"
                        INTERFACE_LINK_LIBRARIES "m;${CMAKE_DL_LIBS};Threads::Threads")
endif()
if(PB_HIREDIS_STATIC AND TARGET PkgConfig::hiredis)
  set_target_properties(PkgConfig::hiredis PROPERTIES INTERFACE_LINK_LIBRARIES
                                                      "${PB_HIREDIS_STATIC}")
endif()

include(CheckLinkerFlag)
# DT_RELR (glibc >= 2.36, binutils >= 2.38): the PIE's thousands of relative relocations
# (vtables, typeinfo, string tables) packed into a bitmap the loader applies in a few passes.
check_linker_flag(CXX "LINKER:-z,pack-relative-relocs" PB_HAVE_PACK_RELATIVE_RELOCS)
if(PB_HAVE_PACK_RELATIVE_RELOCS)
  target_link_options(pb_lean_link INTERFACE "LINKER:-z,pack-relative-relocs")
endif()
# No DT_NEEDED for a library nothing references (the loader would still map it).
target_link_options(pb_lean_link INTERFACE "LINKER:--as-needed" "LINKER:-O1")
# With every C++ library static (PbStaticDeps.cmake), the C++ runtime too: a shared libstdc++
# costs the loader ~1,700 relocations and ~60 page faults per start. cpp-httplib, the one C++
# library still shared, is loaded by `watcher serve` only, inside a plugin that exchanges only C
# with the binary (src/watcher/http_plugin.h).
target_link_options(pb_lean_link INTERFACE -static-libstdc++ -static-libgcc)
