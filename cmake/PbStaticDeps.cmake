# SPDX-License-Identifier: MIT
# The C++ libraries Debian 12 ships only as shared objects (libfmt, libspdlog, libtomlplusplus)
# compiled from the headers Debian ships into static libraries of our own, and yaml-cpp from the
# archive Debian does ship (libyaml-cpp.a), under the target names their CMake packages define.
# With no C++ shared library left, primebeaker links libstdc++ and libgcc statically
# (cmake/PbLean.cmake); a shared libstdc++ alone costs about as much start-up as /bin/true
# (bench/startup/README.md).
#
# The compile definitions stay those of Debian's packages (FMT_SHARED, SPDLOG_SHARED_LIB,
# TOML_SHARED_LIB): on ELF they only mark the libraries' symbols visibility("default"), which an
# executable does not export, and every module compiles to the same objects as in a build against
# the shared libraries.
set(pb_static_deps "${PROJECT_SOURCE_DIR}/cmake/static_deps")

add_library(pb_static_fmt STATIC "${pb_static_deps}/fmt.cpp")
target_compile_features(pb_static_fmt PUBLIC cxx_std_20)
target_compile_definitions(pb_static_fmt PUBLIC FMT_SHARED)
add_library(fmt::fmt ALIAS pb_static_fmt)

find_package(Threads REQUIRED)
add_library(pb_static_spdlog STATIC "${pb_static_deps}/spdlog.cpp")
target_compile_definitions(pb_static_spdlog PUBLIC SPDLOG_SHARED_LIB SPDLOG_COMPILED_LIB
                                                   SPDLOG_FMT_EXTERNAL)
target_link_libraries(pb_static_spdlog PUBLIC Threads::Threads fmt::fmt)
add_library(spdlog::spdlog ALIAS pb_static_spdlog)

add_library(pb_static_tomlplusplus STATIC "${pb_static_deps}/tomlplusplus.cpp")
target_compile_features(pb_static_tomlplusplus PUBLIC cxx_std_17)
# As Debian's package target spells them (options, not definitions).
# No formatters: primebeaker only parses with toml++ (to verify edits), and the formatters were
# kept by the link and called libm's log10.
target_compile_options(pb_static_tomlplusplus PUBLIC -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1
                                                     -DTOML_ENABLE_FORMATTERS=0)
add_library(tomlplusplus::tomlplusplus ALIAS pb_static_tomlplusplus)

find_library(PB_YAML_CPP_STATIC NAMES libyaml-cpp.a REQUIRED)
add_library(yaml-cpp STATIC IMPORTED)
set_target_properties(yaml-cpp PROPERTIES IMPORTED_LOCATION "${PB_YAML_CPP_STATIC}")
