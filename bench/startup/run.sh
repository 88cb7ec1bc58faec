#!/usr/bin/env bash
# Start-up cost of whole processes: `primebeaker --version`, `--help` and `rl preview` of the
# multi-node example against /bin/true, all measured in this run. For each: task-clock and page
# faults (perf stat, mean of N runs; /usr/bin/time when perf cannot count here), wall time
# (hyperfine median, when installed) and relocations the dynamic loader processed
# (LD_DEBUG=statistics); then size and shared libraries of the binary. Given a second binary
# (the "before"), it is measured the same way in the same run, and ratios are printed for both.
# Usage: bench/startup/run.sh [primebeaker] [baseline-primebeaker]
#        bench/startup/run.sh --variants LABEL:BINARY...   (any number, as steps.sh does)
#        (default: build/release/primebeaker; figures in bench/startup/README.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
variants=()
if [[ ${1:-} == --variants ]]; then
  shift
  variants=("$@")
else
  variants=("after:${1:-build/release/primebeaker}")
  [[ -n ${2:-} ]] && variants+=("before:$2")
fi
runs=${RUNS:-200}
root=$PWD
for pair in "${variants[@]}"; do
  [[ -x ${pair#*:} ]] || { echo "no binary at ${pair#*:} (cmake --build build/release)" >&2; exit 1; }
done

perf_ok=0
if perf stat -x, -e task-clock,page-faults -- /bin/true >/dev/null 2>&1; then perf_ok=1; fi

# "task_clock_ms page_faults" for one command line (mean over $runs runs).
measure() {
  if ((perf_ok)); then
    perf stat -x, -r "$runs" -e task-clock,page-faults -- "$@" 2>&1 >/dev/null |
      awk -F, '$3 ~ /^task-clock/ {t=$1} $3 ~ /^page-faults/ {f=$1} END {printf "%.3f %.0f\n", t, f}'
  else
    local t=0 f=0 i line
    for ((i = 0; i < runs; i++)); do
      line=$(/usr/bin/time -f '%U %S %R' "$@" 2>&1 >/dev/null | tail -1)
      read -r u s r <<<"$line"
      t=$(awk -v t="$t" -v u="$u" -v s="$s" 'BEGIN {print t + (u + s) * 1000}')
      f=$((f + r))
    done
    awk -v t="$t" -v f="$f" -v n="$runs" 'BEGIN {printf "%.3f %.0f\n", t / n, f / n}'
  fi
}

relocations() {
  LD_DEBUG=statistics "$@" 2>&1 >/dev/null | awk '$2 == "number" && $4 == "relocations:" {n += $NF} END {print n + 0}'
}

wall_ms() {
  command -v hyperfine >/dev/null || { echo "-"; return; }
  local out
  out=$(mktemp)
  hyperfine -N --warmup 20 --runs "$runs" --export-json "$out" -- "$(printf '%q ' "$@")" >/dev/null 2>&1
  python3 -c 'import json, sys; print("%.3f" % (json.load(open(sys.argv[1]))["results"][0]["median"] * 1000))' "$out"
  rm -f "$out"
}

preview_args=(rl preview --toml examples/multinode-rl/rl.toml --registry redis://registry:6379
  --required-service search=1 --mount-path "$root" --working-dir "$root" --scratch-dir "$root"
  --home-dir "$root")

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); perf stat: $([[ $perf_ok == 1 ]] && echo yes || echo 'no (/usr/bin/time)'); $runs runs each"
read -r true_ms true_faults < <(measure /bin/true)
true_wall=$(wall_ms /bin/true)
printf '%-44s %9s %7s %9s %7s %9s %7s\n' command task-ms x-true faults x-true wall-ms relocs
printf '%-44s %9.3f %7s %9d %7s %9s %7s\n' /bin/true "$true_ms" 1.00 "$true_faults" 1.00 "$true_wall" \
  "$(relocations /bin/true)"

report() {
  local label=$1 bin=$2
  "$bin" "${preview_args[@]}" >/dev/null # fail early if the preview itself fails
  for name in --version --help "rl preview (multi-node)"; do
    local -a cmd
    case $name in
    --version | --help) cmd=("$bin" "$name") ;;
    *) cmd=("$bin" "${preview_args[@]}") ;;
    esac
    read -r ms faults < <(measure "${cmd[@]}")
    printf '%-44s %9.3f %7.2f %9d %7.2f %9s %7s\n' "$label $name" "$ms" \
      "$(awk -v a="$ms" -v b="$true_ms" 'BEGIN {print a / b}')" "$faults" \
      "$(awk -v a="$faults" -v b="$true_faults" 'BEGIN {print a / b}')" "$(wall_ms "${cmd[@]}")" \
      "$(relocations "${cmd[@]}")"
  done
}

for pair in "${variants[@]}"; do
  report "${pair%%:*}" "${pair#*:}"
done

echo
for pair in "${variants[@]}"; do
  label=${pair%%:*} bin=${pair#*:}
  libs=$(ldd "$bin" | awk '$1 !~ /^linux-vdso/ {sub(/\.so.*/, "", $1); sub(/.*\//, "", $1); print $1}' | sort | paste -sd' ')
  stripped=$(mktemp)
  strip -o "$stripped" "$bin"
  printf '%-17s size %s bytes (%s stripped); %d shared libraries: %s\n' "$label" "$(stat -c %s "$bin")" \
    "$(stat -c %s "$stripped")" "$(wc -w <<<"$libs")" "$libs"
  rm -f "$stripped"
done
