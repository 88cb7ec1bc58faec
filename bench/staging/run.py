#!/usr/bin/env python3
"""A submit's staging on a stage that is already there: `primebeaker stage` reused.

Stages once into a temporary scratch directory, then times, interleaved in the same run:
  - `stage --dry-run` (start-up and naming only: nothing read, nothing hashed),
  - `stage` on the existing stage with PRIMEBEAKER_SHA2=builtin (the anchor: our own SHA-256,
    what every submit paid before libcrypto), and
  - `stage` on the existing stage as shipped (SHA-256 through libcrypto.so.3),
and prints the medians, the hashing rate of each (bytes verified over the time beyond the dry
run) and the ratio shipped / anchor.

Usage: bench/staging/run.py [path/to/primebeaker] [--runs N]   (default build/release/primebeaker)
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv, env, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default="build/release/primebeaker")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    scratch = tempfile.mkdtemp(prefix="pb-stage-bench-")
    try:
        base = dict(os.environ)
        base.pop("PRIMEBEAKER_SHA2", None)
        out = subprocess.run([binary, "stage", "--scratch-dir", scratch], env=base, check=True,
                             capture_output=True, text=True).stdout
        directory = out.split('"directory": "')[1].split('"')[0]
        # What a reuse reads and hashes: every file of the manifest, and this binary once more.
        verified = os.path.getsize(binary)
        for line in open(os.path.join(directory, "SHA256SUMS")):
            verified += os.path.getsize(os.path.join(directory, line[66:].rstrip("\n")))
        stage = [binary, "stage", "--scratch-dir", scratch]
        builtin = dict(base, PRIMEBEAKER_SHA2="builtin")
        runs = {"dry-run": [], "builtin": [], "libcrypto": []}
        for _ in range(args.runs):  # interleaved, so that a load change hits all three alike
            runs["dry-run"] += timed(stage + ["--dry-run"], base, 1)
            runs["builtin"] += timed(stage, builtin, 1)
            runs["libcrypto"] += timed(stage, base, 1)
    finally:
        shutil.rmtree(scratch)
    median = {name: statistics.median(times) for name, times in runs.items()}
    mb = verified / 1e6
    print(f"stage verified on reuse: {mb:.1f} MB ({binary})")
    print(f"stage --dry-run:                  median {median['dry-run'] * 1000:8.1f} ms")
    for name, label in (("builtin", "anchor, PRIMEBEAKER_SHA2=builtin"),
                        ("libcrypto", "shipped, libcrypto.so.3")):
        hashing = median[name] - median["dry-run"]
        print(f"stage reused ({label + '):':34} median {median[name] * 1000:8.1f} ms"
              f"  ({mb / hashing:7.0f} MB/s beyond the dry run)")
    ratio = median["libcrypto"] / median["builtin"]
    print(f"ratio shipped / anchor: {ratio:.3f}  ({1 / ratio:.1f}x faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
