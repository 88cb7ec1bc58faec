#!/usr/bin/env python3
"""A sweep submitted against a slow `beaker` (issue: 24 variants in at most 6 s, 100 in at most
15 s, where one call at a time takes 50 s or more for 100).

In a temporary mount (a copy of examples/rl), with a fake `beaker` on PATH that answers every call
after `--delay` seconds (0.5 by default), it times, in the same run:
  - `rl sweep --set max_steps=1,...,N --yes --parallel 1` (the anchor: one call at a time, what
    every sweep did before), and
  - the same with the default --parallel (8 calls at a time), for N = 24 and N = 100,
  - and `status` of the 100-variant sweep's receipt,
and prints the wall times and the ratios shipped / anchor.

Usage: bench/sweep/run.py [path/to/primebeaker] [--delay S] [--sizes 24,100]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FAKE_BEAKER = r'''#!/bin/sh
# A Beaker that takes DELAY seconds per call: creates answer an id, group adds nothing, reads
# answer a finished experiment.
sleep "$FAKE_BEAKER_DELAY"
case "$1 $2" in
  "group create") echo '[{"id": "01BENCHGROUP00000000000000"}]' ;;
  "experiment create")
    n=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    printf '[{"id": "01BENCH%019d", "name": "x"}]\n' "$n" ;;
  "group add") ;;
  "experiment get")
    echo "[{\"id\": \"$3\", \"name\": \"x\", \"jobs\": [{\"id\": \"J$3\", \"status\": {\"created\": \"2026-12-06T00:00:00Z\", \"started\": \"2026-12-06T00:00:01Z\", \"exited\": \"2026-12-06T00:00:02Z\", \"finalized\": \"2026-12-06T00:00:03Z\", \"exitCode\": 0}, \"execution\": {\"replicaRank\": 0, \"spec\": {\"name\": \"t\"}}}]}]" ;;
  *) ;;
esac
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default="build/release/primebeaker")
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--sizes", default="24,100")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="pb-sweep-bench-")
    rows = []
    try:
        mount = os.path.join(root, "mount")
        os.makedirs(os.path.join(root, "bin"))
        shutil.copytree(os.path.join(ROOT, "examples", "rl"), os.path.join(mount, "rl"))
        beaker = os.path.join(root, "bin", "beaker")
        with open(beaker, "w") as f:
            f.write(FAKE_BEAKER)
        os.chmod(beaker, 0o755)
        env = {"PATH": os.path.join(root, "bin") + ":/usr/bin:/bin", "HOME": root,
               "XDG_CACHE_HOME": os.path.join(root, "cache"),
               "XDG_CONFIG_HOME": os.path.join(root, "config"), "USER": "bench",
               "LANG": "C.UTF-8", "FAKE_BEAKER_DELAY": str(args.delay)}
        paths = [a for d in ("mount-path", "working-dir", "scratch-dir", "home-dir")
                 for a in ("--" + d, mount)]
        # The stage first, so that both legs reuse it (its creation is not what is measured).
        subprocess.run([binary, "stage", "--scratch-dir", mount], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        receipt = None
        for size in [int(s) for s in args.sizes.split(",")]:
            for parallel in (1, 8):
                values = ",".join(str(i) for i in range(1, size + 1))
                # Each leg its own output dirs: a second leg into the first's is refused.
                toml = os.path.join(mount, "rl", f"rl-{size}-{parallel}.toml")
                with open(os.path.join(mount, "rl", "rl.toml")) as f:
                    text = f.read()
                with open(toml, "w") as f:
                    f.write(text.replace('output_dir = "outputs/tiny-rl"',
                                         f'output_dir = "outputs/{size}-{parallel}"'))
                argv = [binary, "rl", "sweep", "--toml", toml, "--set",
                        f"max_steps={values}", "--yes", "--parallel", str(parallel),
                        "--group", f"bench-{size}-{parallel}"] + paths
                run_env = dict(env, PRIMEBEAKER_LAUNCH_ID=f"bench{size}p{parallel}")
                start = time.perf_counter()
                done = subprocess.run(argv, env=run_env, cwd=mount, capture_output=True,
                                      text=True)
                seconds = time.perf_counter() - start
                if done.returncode != 0:
                    print(done.stderr, file=sys.stderr)
                    return 1
                out = json.loads(done.stdout)
                assert len(out["variants"]) == size, out
                rows.append((size, parallel, seconds))
                if size == max(int(s) for s in args.sizes.split(",")) and parallel == 8:
                    receipt = out["receipt_path"]
        start = time.perf_counter()
        status = subprocess.run([binary, "status", receipt, "--json"], env=env, cwd=mount,
                                capture_output=True, text=True)
        status_seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(root)
    print(f"fake beaker: {args.delay} s per call ({binary})")
    for size in sorted({r[0] for r in rows}):
        one = next(s for n, p, s in rows if n == size and p == 1)
        eight = next(s for n, p, s in rows if n == size and p == 8)
        print(f"{size:4d} variants: --parallel 1 (anchor) {one:6.1f} s, --parallel 8 {eight:6.1f} s,"
              f" ratio {eight / one:.3f}")
    print(f"status of the {max(r[0] for r in rows)}-variant sweep: {status_seconds:.1f} s"
          f" (exit {status.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
