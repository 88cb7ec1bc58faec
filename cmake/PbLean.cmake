# SPDX-License-Identifier: MIT
# pb_lean_link: how the primebeaker binary is linked for start-up cost (docs/cli.md,
# "Start-up"; figures and the measurement of each step in bench/startup/README.md).
# Only for builds without sanitizers (the sanitizer runtimes want the default link).
if(PB_SANITIZE)
  set(pb_lean_default OFF)
else()
  set(pb_lean_default ON)
endif()
option(PB_LEAN_LINK "Link primebeaker for start-up cost (static archives, packed relocations)"
       ${pb_lean_default})
add_library(pb_lean_link INTERFACE)
if(NOT PB_LEAN_LINK)
  return()
endif()

# C libraries Debian 12 ships as static archives (libsqlite3-dev, libhiredis-dev): linked in,
# the loader no longer maps them or resolves their symbols. (libfmt, libspdlog and toml++ ship
# no .a; libyaml-cpp.a would need a static libstdc++ to pay, see bench/startup/README.md.)
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
