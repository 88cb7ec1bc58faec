#!/bin/sh
# Builds bench/environments/driver (-O2) from the environments module's sources plus the few
# core files they use. Needs the generated templates_data.cpp of a configured build directory.
# usage: bench/environments/build.sh BUILD_DIR OUT
set -eu
build=$1
out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
src="$root/src/environments"
exec g++ -std=c++20 -O2 -DNDEBUG -I "$root/include" -o "$out" \
  "$root/bench/environments/driver.cpp" \
  "$src/catalog.cpp" "$src/python.cpp" "$src/random.cpp" "$src/parsing.cpp" "$src/render.cpp" \
  "$src/templates.cpp" "$src/scoring.cpp" "$src/stream.cpp" \
  "$build/src/environments/templates_data.cpp" \
  "$root/src/core/error.cpp" "$root/src/core/text.cpp" "$root/src/core/json.cpp" -lfmt
