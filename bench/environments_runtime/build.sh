#!/bin/sh
# Links bench/environments_runtime/serve_driver.cpp (-O2) against the module libraries of a
# configured Release build directory, building only those libraries:
#   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DPB_BUILD_TESTS=OFF
#   bench/environments_runtime/build.sh build-release /tmp/pb_serve_driver
set -eu
build=$1
out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake --build "$build" --target pb_environments_runtime
exec g++ -std=c++20 -O2 -DNDEBUG -I "$root/include" -o "$out" \
  "$root/bench/environments_runtime/serve_driver.cpp" \
  "$build/src/environments_runtime/libpb_environments_runtime.a" \
  "$build/src/tool_services/libpb_tool_services.a" "$build/src/registry/libpb_registry.a" \
  "$build/src/environments/libpb_environments.a" \
  "$build/src/primerl/libpb_primerl.a" "$build/src/toml/libpb_toml.a" \
  "$build/src/core/libpb_core.a" -lfmt -lspdlog -lpthread -ldl
