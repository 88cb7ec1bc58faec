# SPDX-License-Identifier: MIT
# Every third-party dependency, from Debian 12 packages only.
find_package(CLI11 REQUIRED CONFIG)
if(PB_LEAN_LINK)
  # fmt, spdlog, toml++ and yaml-cpp as static libraries (cmake/PbStaticDeps.cmake).
  include(PbStaticDeps)
else()
  find_package(fmt REQUIRED CONFIG)
  find_package(spdlog REQUIRED CONFIG)
  find_package(tomlplusplus REQUIRED CONFIG)
  find_package(yaml-cpp REQUIRED CONFIG)
endif()
find_package(nlohmann_json 3.11 REQUIRED CONFIG)
find_package(SQLite3 REQUIRED) # headers: the library is dlopen()ed (src/registry/sqlite.cpp)
find_package(CURL REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(hiredis REQUIRED IMPORTED_TARGET hiredis)
# cpp-httplib through pkg-config: its Cflags carry the feature macros Debian built the library with
# (CPPHTTPLIB_OPENSSL/ZLIB/BROTLI_SUPPORT). A translation unit compiled without them sees other
# class layouts than the library (httplib::Client is 8 bytes there, not the library's size): a
# double free in a plain build. Every user links PkgConfig::cpp-httplib, never the bare library.
pkg_check_modules(cpp-httplib REQUIRED IMPORTED_TARGET cpp-httplib)
if(PB_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
