#!/usr/bin/env python3
"""What a submit costs beyond its preview when the stage is already there (issue: submit on a
reused stage at most 3x preview, not counting `beaker`).

In a temporary mount (a copy of examples/rl), with a fake `beaker` (a /bin/sh script printing a
created experiment) first on PATH and one pinned launch id (so every submit is the same run's
rerun, which its own directory claim lets through), it submits once (creating the stage), waits
out the hash cache's racy second, then times, interleaved in the same run:
  - `rl preview` (the unit),
  - the fake `beaker` alone (what "not counting beaker" takes away),
  - `rl submit --yes --verify-stage` (the anchor: every file of the stage hashed, what every
    submit paid before the hash cache), and
  - `rl submit --yes` as shipped (only files changed since this machine verified them hashed),
and prints the medians and the ratios submit / preview (beaker taken out) and shipped / anchor.

Usage: bench/staging/submit.py [path/to/primebeaker] [--runs N]   (default build/release/primebeaker)
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def timed(argv, env, cwd):
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default="build/release/primebeaker")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="pb-submit-bench-")
    try:
        mount = os.path.join(root, "mount")
        os.makedirs(os.path.join(root, "bin"))
        shutil.copytree(os.path.join(ROOT, "examples", "rl"), os.path.join(mount, "rl"))
        beaker = os.path.join(root, "bin", "beaker")
        with open(beaker, "w") as f:
            f.write("#!/bin/sh\necho '[{\"id\": \"01BENCHEXPERIMENT000000000\", \"name\": \"x\"}]'\n")
        os.chmod(beaker, 0o755)
        env = {"PATH": os.path.join(root, "bin") + ":/usr/bin:/bin", "HOME": root,
               "XDG_CACHE_HOME": os.path.join(root, "cache"),
               "XDG_CONFIG_HOME": os.path.join(root, "config"),
               "PRIMEBEAKER_LAUNCH_ID": "bench", "USER": "bench", "LANG": "C.UTF-8"}
        common = ["--toml", "rl/rl.toml"] + [a for d in ("mount-path", "working-dir", "scratch-dir",
                                                         "home-dir") for a in ("--" + d, mount)]
        preview = [binary, "rl", "preview"] + common
        submit = [binary, "rl", "submit", "--yes"] + common
        subprocess.run(submit, env=env, cwd=mount, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        time.sleep(1.2)  # files changed in the second before they are hashed are not remembered
        timed(submit, env, mount)  # the first reuse verifies everything and remembers it
        runs = {"preview": [], "beaker": [], "anchor": [], "shipped": []}
        for _ in range(args.runs):  # interleaved, so that a load change hits all alike
            runs["preview"].append(timed(preview, env, mount))
            runs["beaker"].append(timed([beaker, "experiment", "create"], env, mount))
            runs["anchor"].append(timed(submit + ["--verify-stage"], env, mount))
            runs["shipped"].append(timed(submit, env, mount))
        stage = os.path.join(mount, "primebeaker", "bin")
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(stage) for f in fs)
    finally:
        shutil.rmtree(root)
    median = {name: statistics.median(times) * 1000 for name, times in runs.items()}
    print(f"reused stage: {size / 1e6:.1f} MB ({binary}), {args.runs} runs, medians")
    print(f"rl preview:                          {median['preview']:8.1f} ms")
    print(f"fake beaker alone:                   {median['beaker']:8.1f} ms")
    print(f"rl submit --verify-stage (anchor):   {median['anchor']:8.1f} ms")
    print(f"rl submit (shipped, hash cache):     {median['shipped']:8.1f} ms")
    anchor = (median["anchor"] - median["beaker"]) / median["preview"]
    shipped = (median["shipped"] - median["beaker"]) / median["preview"]
    print(f"ratio submit / preview, beaker taken out: anchor {anchor:.2f}x, shipped {shipped:.2f}x"
          f" (goal <= 3x)")
    print(f"ratio shipped / anchor: {median['shipped'] / median['anchor']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
