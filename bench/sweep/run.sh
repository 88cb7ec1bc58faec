#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A sweep of 100 variants previewed in one process (`rl sweep --dry-run`): wall time and peak
# memory, against the anchor measured in the same run: the 100 `rl preview --set` processes a
# shell loop would run. Prints the figures and the ratio (ours / anchor, lower is better).
#   bench/sweep/run.sh [build/release/primebeaker]
set -euo pipefail
binary=$(realpath "${1:-build/release/primebeaker}")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/examples" "$work/examples"
cd "$work"
mount=(--mount-path "$work" --working-dir "$work" --scratch-dir "$work" --home-dir "$work")
values=$(python3 -c 'print(",".join(f"{k}e-6" for k in range(1, 101)))')

start=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$work/rss" "$binary" rl sweep --toml examples/rl/rl.toml \
  "${mount[@]}" --set "trainer.optim.lr=$values" --dry-run > "$work/plan.json"
end=$(date +%s.%N)
ours=$(python3 -c "print(round($end - $start, 3))")
rss=$(cat "$work/rss")
variants=$(python3 -c "import json; print(len(json.load(open('$work/plan.json'))['variants']))")

start=$(date +%s.%N)
for k in $(seq 1 100); do
  "$binary" rl preview --toml examples/rl/rl.toml "${mount[@]}" \
    --set "trainer.optim.lr=${k}e-6" --set "wandb.name=\"v$k\"" > /dev/null
done
end=$(date +%s.%N)
anchor=$(python3 -c "print(round($end - $start, 3))")

echo "variants: $variants"
echo "sweep --dry-run of 100 variants: ${ours} s, peak RSS ${rss} KiB"
echo "anchor (100 rl preview processes): ${anchor} s"
python3 -c "print(f'ratio (ours / anchor): {$ours / $anchor:.3f}')"
