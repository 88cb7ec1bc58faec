#!/usr/bin/env bash
# Median wall time of `primebeaker rl preview` on the multi-node example against the Python
# import floor of the reference (`python3 -c 'import pydantic, fire, tomlkit, yaml'`), both
# measured here in the same hyperfine run. Prints both medians and their ratio.
# Usage: bench/launch/run.sh [path/to/primebeaker]   (default: build/release/primebeaker)
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=${1:-build/release/primebeaker}
if [[ ! -x $binary ]]; then
  cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DPB_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release >/dev/null
fi
# Debian's interpreter and packages, not whatever python3 a version manager puts first.
python=/usr/bin/python3
$python -c 'import pydantic, fire, tomlkit, yaml' || {
  echo "the anchor needs Debian's python3-pydantic python3-fire python3-tomlkit python3-yaml" >&2
  exit 1
}
root=$PWD
preview="$binary rl preview --toml examples/multinode-rl/rl.toml --registry redis://registry:6379 \
--mount-path $root --working-dir $root --scratch-dir $root --home-dir $root"
$preview >/dev/null   # fail early if the preview itself fails
out=$(mktemp)
trap 'rm -f "$out"' EXIT
hyperfine --shell=none --warmup 5 --min-runs 50 --style basic --export-json "$out" \
  -n "primebeaker rl preview" "$preview" \
  -n "python3 import floor" "$python -c 'import pydantic, fire, tomlkit, yaml'" >&2
$python - "$out" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ours = results["primebeaker rl preview"]["median"]
anchor = results["python3 import floor"]["median"]
print(f"rl preview (multi-node example): median {ours * 1000:.2f} ms")
print(f"python3 import floor:            median {anchor * 1000:.2f} ms")
print(f"ratio preview / import floor:    {ours / anchor:.3f}  ({anchor / ours:.1f}x faster)")
PY
