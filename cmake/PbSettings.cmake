# SPDX-License-Identifier: MIT
# pb_settings: language level and sanitizers for every target; pb_warnings: our warning set.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

find_program(PB_CCACHE ccache)
if(PB_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${PB_CCACHE}")
endif()

# Release-style builds link primebeaker for start-up cost (cmake/PbLean.cmake, PbStaticDeps.cmake);
# sanitizer builds keep the default link (their runtimes want it).
# Debug builds keep it too: at -O0 rounding is not inlined, and the lean link has no libm.
if(PB_SANITIZE OR CMAKE_BUILD_TYPE STREQUAL "Debug")
  set(pb_lean_default OFF)
else()
  set(pb_lean_default ON)
endif()
option(PB_LEAN_LINK
       "Link primebeaker for start-up cost (static archives and C++ runtime, packed relocations)"
       ${pb_lean_default})
if(PB_LEAN_LINK)
  # One section per function, so that the link can put the functions start-up runs side by side
  # (cmake/PbLean.cmake). In CMAKE_CXX_FLAGS rather than on a target: the static archives
  # PbStaticDeps.cmake compiles from Debian's headers need it too.
  string(APPEND CMAKE_CXX_FLAGS " -ffunction-sections")
endif()

add_library(pb_settings INTERFACE)
target_compile_features(pb_settings INTERFACE cxx_std_20)
# Rounding (std::floor, std::round, std::llround, ...) compiled inline rather than called in
# libm: the binary does not link libm at all (its two users load it, core/libm.hpp). Nothing here
# reads errno after a math function or the floating-point exception flags.
target_compile_options(pb_settings INTERFACE -fno-math-errno -fno-trapping-math)
set(CMAKE_CXX_EXTENSIONS OFF)
target_compile_definitions(pb_settings INTERFACE $<$<CONFIG:Debug>:_GLIBCXX_ASSERTIONS>
                                                 PB_VERSION="${PROJECT_VERSION}")
if(PB_SANITIZE)
  target_compile_options(pb_settings INTERFACE -fsanitize=address,undefined
                                               -fno-sanitize-recover=undefined
                                               -fno-omit-frame-pointer)
  target_link_options(pb_settings INTERFACE -fsanitize=address,undefined)
endif()

add_library(pb_warnings INTERFACE)
target_compile_options(pb_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                             -Wnon-virtual-dtor -Woverloaded-virtual)
# GCC 12 at -O2 reports false -Wrestrict positives inside libstdc++'s std::string operator+
# (GCC bug 105329); they would fail every release build under -Werror.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(pb_warnings INTERFACE -Wno-restrict)
endif()
# Warnings fail the developers' and CI's Debug builds. Not Release: GCC's flow-based warnings
# (-Wmaybe-uninitialized) change with -O3 inlining and report false positives there, and a user's
# first `cmake --build` (README's Quick start) must not fail on one.
if(EXISTS "${PROJECT_SOURCE_DIR}/.git" OR DEFINED ENV{CI})
  target_compile_options(pb_warnings INTERFACE $<$<NOT:$<CONFIG:Release,RelWithDebInfo,MinSizeRel>>:-Werror>)
endif()
