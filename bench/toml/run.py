#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""TOML engine benchmark (issues 2 and 18). Prints, measured in this one run:

0. footprint, whole processes: peak resident memory and minor page faults per input byte of
   our parse, parse + print, `primebeaker toml check` and `primebeaker toml set` of a deep key,
   on a 200 KB and a 2 MB file, against a native toml++ parse of the same file (goal: parse and
   print at or below toml++'s memory);
1. in-process, on the same bytes: lossless parse + print (our CST) vs toml++ parse, on a
   generated ~2 MB TOML and on a file of 500 sibling tables (target: ratio <= 1);
2. whole processes: `primebeaker toml set` of a deep key in the 2 MB file (read, parse, splice,
   verify with toml++, atomic write) vs a native toml++ program that only parses the same file
   (target: <= 2.5x), and vs Python tomlkit doing the same set (target: >= 50x faster).
Print alone is timed in-process against toml++'s parse (goal: <= 0.5x).

Usage: python3 bench/toml/run.py BUILD_DIR [--runs N] [--tomlkit-runs N] [--no-tomlkit]
                                          [--footprint-runs N]
BUILD_DIR is the `cmake -S bench/toml` build (see README.md).
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

TOMLKIT_SET = r"""
import sys, tomlkit
path, out = sys.argv[1], sys.argv[2]
with open(path) as f:
    doc = tomlkit.parse(f.read())
doc["service2900"]["build"]["flags"]["opt"] = "-O3"
with open(out, "w") as f:
    f.write(tomlkit.dumps(doc))
"""


def timed(argv, **kwargs):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kwargs)
    return time.perf_counter() - start


GNU_TIME = "/usr/bin/time"


def footprint(argv, runs):
    """Median peak RSS (bytes), minor faults and wall time of a whole process.

    Through GNU time when it is installed: a child forked from this Python process counts
    Python's resident pages in its peak (ru_maxrss keeps the image it had before exec), a floor
    of 10-17 MB that hides the start-up of small programs; GNU time's own image is small.
    """
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        if os.path.exists(GNU_TIME):
            result = subprocess.run([GNU_TIME, "-f", "%M %R"] + argv, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            wall = time.perf_counter() - start
            if result.returncode != 0:
                raise SystemExit(f"failed: {' '.join(argv)}: {result.stderr}")
            kb, faults = result.stderr.strip().splitlines()[-1].split()
            samples.append((int(kb) * 1024, int(faults), wall))
            continue
        pid = os.spawnv(os.P_NOWAIT, argv[0], argv)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"failed: {' '.join(argv)}")
        samples.append((usage.ru_maxrss * 1024, usage.ru_minflt, wall))
    return tuple(statistics.median(s[k] for s in samples) for k in range(3))


def footprint_table(build, primebeaker, work, inputs, runs):
    """Section 0: whole-process peak RSS and page faults against toml++ on the same file."""
    footprint_bin = os.path.join(build, "toml_footprint")
    tomlpp = os.path.join(build, "tomlpp_parse")
    tiny = os.path.join(work, "tiny.toml")
    with open(tiny, "w") as f:
        f.write("a = 1\n")
    how = "GNU time" if os.path.exists(GNU_TIME) else "wait4 (floored by this Python's image)"
    print(f"   load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; median of {runs} runs"
          f" measured by {how}; 'marginal' (bytes per input byte) subtracts the same program on a"
          " 1-line file (its start-up); 'vs toml++' compares peaks, 'marg. vs' marginals")
    print(f"   {'file':<12} {'program':<36} {'peak RSS':>9} {'B/input B':>9} {'marginal':>9}"
          f" {'faults':>7} {'faults/KB':>9} {'vs toml++':>9} {'marg. vs':>8}")
    for name, key in inputs:
        path = os.path.join(work, name)
        size = os.path.getsize(path)
        target = os.path.join(work, "footprint-edit.toml")
        shutil.copyfile(path, target)
        # A real file: the set streams into a temporary sibling and renames it (a device such as
        # /dev/null is written in place, through the in-memory path, which is not what is measured).
        out = os.path.join(work, "footprint-out.toml")
        programs = [
            ("toml++ parse (anchor)", [tomlpp], [path]),
            ("lossless parse", [footprint_bin, "parse"], [path]),
            ("lossless parse + print", [footprint_bin, "print"], [path]),
            ("primebeaker toml check", [primebeaker, "toml", "check"], [path]),
            ("primebeaker toml set (verified)", [primebeaker, "toml", "set", "-o", out],
             [target, key, '"-O3"']),
        ]
        anchor = None
        for label, prefix, args in programs:
            rss, faults, _ = footprint(prefix + args, runs)
            base_args = [tiny, "a", "2"] if "set" in prefix else [tiny]
            base_rss, _, _ = footprint(prefix + base_args, max(1, runs // 2))
            marginal = max(rss - base_rss, 1)
            if anchor is None:
                anchor = (rss, marginal)
            print(f"   {name:<12} {label:<36} {rss / 2**20:7.1f}MB {rss / size:9.1f}"
                  f" {marginal / size:9.1f} {faults:7.0f} {faults / (size / 1024):9.2f}"
                  f" {rss / anchor[0]:8.2f}x {marginal / anchor[1]:7.2f}x")


def python_with_tomlkit():
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and subprocess.run([exe, "-c", "import tomlkit"], capture_output=True).returncode == 0:
            return exe
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--tomlkit-runs", type=int, default=1)
    parser.add_argument("--no-tomlkit", action="store_true")
    parser.add_argument("--footprint-runs", type=int, default=5)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    primebeaker = os.path.join(build, "primebeaker", "primebeaker")
    tomlpp = os.path.join(build, "tomlpp_parse")
    work = tempfile.mkdtemp(prefix="pb-toml-bench.")
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), work], check=True,
                       stdout=subprocess.DEVNULL)
        big = os.path.join(work, "big.toml")
        siblings = os.path.join(work, "siblings.toml")
        medium = os.path.join(work, "medium.toml")
        print(f"inputs: big.toml {os.path.getsize(big)} bytes, medium.toml "
              f"{os.path.getsize(medium)} bytes, siblings.toml {os.path.getsize(siblings)} bytes "
              f"(500 sibling tables)")

        print("\n0. footprint, whole processes (peak resident memory, minor page faults):")
        footprint_table(build, primebeaker, work,
                        [("medium.toml", "service290.build.flags.opt"),
                         ("big.toml", "service2900.build.flags.opt")], args.footprint_runs)

        print("\n1. in-process, same bytes (median):")
        subprocess.run([os.path.join(build, "toml_bench"), medium, big, siblings], check=True)

        print(f"\n2. whole processes on big.toml (median of {args.runs}, interleaved):")
        target = os.path.join(work, "edit.toml")
        key = "service2900.build.flags.opt"
        ours, anchor = [], []
        for _ in range(args.runs):
            shutil.copyfile(big, target)
            ours.append(timed([primebeaker, "toml", "set", target, key, '"-O3"']))
            anchor.append(timed([tomlpp, big]))
        # The edit did what it should, and only that.
        with open(big) as f:
            original = f.read()
        with open(target) as f:
            edited = f.read()
        marker = '[service2900.build.flags]\nopt = "-O2"'
        assert edited == original.replace(marker, marker.replace("-O2", "-O3")), "wrong edit"
        o, a = statistics.median(ours), statistics.median(anchor)
        print(f"   primebeaker toml set {key} (verified, written): {o * 1e3:8.1f} ms")
        print(f"   toml++ parse-only process (anchor):              {a * 1e3:8.1f} ms")
        print(f"   ratio set / toml++ parse: {o / a:.2f}x   (target <= 2.5x)")

        exe = None if args.no_tomlkit else python_with_tomlkit()
        if exe is None:
            print("   tomlkit: not measured (python3-tomlkit not installed or --no-tomlkit)")
        else:
            kit = []
            for _ in range(args.tomlkit_runs):
                kit.append(timed([exe, "-c", TOMLKIT_SET, big, os.path.join(work, "kit.toml")]))
            k = statistics.median(kit)
            version = subprocess.run([exe, "-c", "import tomlkit; print(tomlkit.__version__)"],
                                     capture_output=True, text=True).stdout.strip()
            print(f"   Python tomlkit {version} same set (median of {len(kit)}):   {k * 1e3:8.1f} ms")
            print(f"   ratio tomlkit / primebeaker: {k / o:.1f}x faster   (target >= 50x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
