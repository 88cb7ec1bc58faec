#!/usr/bin/env bash
# The link steps of bench/startup/README.md, each measured: relinks the objects of a lean
# Release build (default build/release) into variants that differ only in how they are linked,
# then runs run.sh's measurements on each, beside /bin/true, in this one run.
#   httplib-plugin    Debian's shared fmt, spdlog, toml++, yaml-cpp and libstdc++ (the objects
#                     already call cpp-httplib through the embedded plugin)
#   static-cxx-libs   + our static fmt, spdlog, toml++ and Debian's libyaml-cpp.a
#   static-libstdc++  + -static-libstdc++ -static-libgcc
#   startup-order     + the functions start-up runs first in .text (cmake/startup-order.txt)
#   gc-sections       + --gc-sections (the lean build as it is)
#   z-now             + -z now (bind every symbol at start instead of lazily)
#   no-pie            + -no-pie (no relative relocations at all, but no ASLR for the binary)
# Usage: bench/startup/steps.sh [build-dir] [before-binary]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
before=${2:-}
runs=${RUNS:-200}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

link=$(ninja -C "$build" -t commands primebeaker | tail -1)
link=${link#: && }
link=${link% && :}
[[ $link == *-static-libstdc++* ]] || { echo "$build is not a lean build (no -static-libstdc++)" >&2; exit 1; }

relink() { # name, sed expression on the link command
  local cmd
  cmd=$(sed -e "$2" -e "s| -o primebeaker | -o $out/$1 |" <<<"$link")
  (cd "$build" && eval "$cmd")
}
shared_cxx='s| libpb_static_spdlog.a | -lspdlog |; s| libpb_static_fmt.a | -lfmt |;
  s| libpb_static_tomlplusplus.a | -ltomlplusplus |; s|/usr/lib/x86_64-linux-gnu/libyaml-cpp.a|-lyaml-cpp|'
unordered='s| -Wl,-T,[^ ]*startup-order.ld||; s| -Wl,--gc-sections||'
relink httplib-plugin "$shared_cxx; $unordered; s| -static-libstdc++ -static-libgcc | |"
relink static-cxx-libs "$unordered; s| -static-libstdc++ -static-libgcc | |"
relink static-libstdc++ "$unordered"
relink startup-order 's| -Wl,--gc-sections||'
relink gc-sections 's|^|:|; s|^:||'
relink z-now 's|-Wl,-O1|-Wl,-O1 -Wl,-z,now|'
relink no-pie 's|-Wl,-O1|-Wl,-O1 -no-pie|'

variants=(${before:+"before:$before"} "httplib-plugin:$out/httplib-plugin"
  "static-cxx-libs:$out/static-cxx-libs" "static-libstdc++:$out/static-libstdc++"
  "startup-order:$out/startup-order" "gc-sections:$out/gc-sections" "z-now:$out/z-now"
  "no-pie:$out/no-pie")
RUNS=$runs bench/startup/run.sh --variants "${variants[@]}"
