#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checkpoint scan benchmark (issues 5 and 18).

Generates a v0.8.0 Prime-RL checkpoint tree of STEPS x RANKS trainer shards (plus .metadata and
orchestrator progress.pt per step), then times, interleaved in the same run on the same tree:

  scan:   primebeaker checkpoints list --output-dir OUT --ranks RANKS --json
  anchor: find OUT -name '*.distcp' | wc -l

and prints the median wall times, their ratio (target <= 1.5), and the stat calls per step
(reported by the scanner itself, cross-checked with strace when it is installed). Then, on the
same tree and interleaved with the same anchor, picking the resume step:

  latest: primebeaker checkpoints list --output-dir OUT --ranks RANKS --json --latest

(newest first, stopping at the first complete step; target <= 0.1x the anchor).
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def generate(out, steps, ranks):
    for step in range(1, steps + 1):
        trainer = os.path.join(out, "checkpoints", f"step_{step}", "trainer")
        os.makedirs(trainer)
        for rank in range(ranks):
            with open(os.path.join(trainer, f"__{rank}_0.distcp"), "wb") as f:
                f.write(b"s")
        with open(os.path.join(trainer, ".metadata"), "wb") as f:
            f.write(b"m")
        orchestrator = os.path.join(out, "run_default", "checkpoints", f"step_{step}", "orchestrator")
        os.makedirs(orchestrator)
        with open(os.path.join(orchestrator, "progress.pt"), "wb") as f:
            f.write(b"p")


def timed(argv, shell=False):
    """Wall time, CPU time (user + system of every child, e.g. find and wc) and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(argv, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def strace_stat_calls(argv):
    if shutil.which("strace") is None:
        return None
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        traced = subprocess.run(["strace", "-f", "-c", "-o", log.name] + argv,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if traced.returncode != 0:
            return None  # e.g. a sanitizer build, which cannot run under ptrace
        total = 0
        for line in log.read().splitlines():
            fields = line.split()
            if fields and fields[-1] in ("newfstatat", "fstatat64", "statx", "stat", "lstat", "fstat"):
                total += int(fields[3]) if len(fields) >= 6 else int(fields[3 if len(fields) == 5 else 2])
        return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", help="the primebeaker binary (a Release build)")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--dir", help="reuse/keep the tree here instead of a temporary directory")
    args = parser.parse_args()

    base = args.dir or tempfile.mkdtemp(prefix="pb-ckpt-bench-")
    out = os.path.join(base, "out")
    if not os.path.isdir(out):
        started = time.perf_counter()
        generate(out, args.steps, args.ranks)
        print(f"generated {out} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    scan_argv = [args.binary, "checkpoints", "list", "--output-dir", out, "--ranks", str(args.ranks), "--json"]
    find_cmd = f"find '{out}' -name '*.distcp' | wc -l"

    # Warm the dentry/inode caches for both, then interleave so drift hits both equally.
    _, _, listing = timed(scan_argv)
    _, _, count = timed(find_cmd, shell=True)
    report = json.loads(listing)
    files = sum(len(files) for _, _, files in os.walk(out))
    scan_runs, find_runs = [], []
    for _ in range(args.runs):
        scan_runs.append(timed(scan_argv)[:2])
        find_runs.append(timed(find_cmd, shell=True)[:2])
    scan_ms = statistics.median(r[0] for r in scan_runs) * 1000
    find_ms = statistics.median(r[0] for r in find_runs) * 1000
    scan_cpu = statistics.median(r[1] for r in scan_runs) * 1000
    find_cpu = statistics.median(r[1] for r in find_runs) * 1000
    steps = len(report["steps"])
    complete = sum(1 for s in report["steps"] if s["complete"])
    stat_calls = report["scan"]["stat_calls"]
    traced = strace_stat_calls(scan_argv)

    print(f"tree: {steps} steps x {args.ranks} ranks, {files} files ({int(count)} *.distcp), "
          f"{complete} complete, selected step {report['selected_step']}")
    print(f"load average before timing: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
          f"scan workers: {os.environ.get('PB_SCAN_WORKERS', 'default (4)')}")
    print(f"scan   (primebeaker checkpoints list --json): median wall {scan_ms:.1f} ms, "
          f"cpu {scan_cpu:.1f} ms over {args.runs} runs")
    print(f"anchor (find -name '*.distcp' | wc -l):      median wall {find_ms:.1f} ms, "
          f"cpu {find_cpu:.1f} ms over {args.runs} runs")
    print(f"ratio scan/find: wall {scan_ms / find_ms:.2f}x, cpu {scan_cpu / find_cpu:.2f}x (target <= 1.50x)")
    print(f"stat calls: {stat_calls} total, {stat_calls / steps:.1f} per step "
          f"(= ranks + 2: one per shard, .metadata, progress.pt); directories read: "
          f"{report['scan']['directories_read']}")
    if traced is not None:
        print(f"strace cross-check: {traced} stat-family syscalls in the whole process "
              f"({traced / steps:.2f} per step, including process start-up)")

    # Picking the resume step: newest first, stop at the first complete step (what rl resume
    # does). Interleaved with the same anchor.
    latest_argv = scan_argv + ["--latest"]
    _, _, picked = timed(latest_argv)
    picked = json.loads(picked)
    assert picked["selected_step"] == report["selected_step"], "--latest picked another step"
    latest_runs, anchor_runs = [], []
    for _ in range(args.runs):
        latest_runs.append(timed(latest_argv)[:2])
        anchor_runs.append(timed(find_cmd, shell=True)[:2])
    latest_ms = statistics.median(r[0] for r in latest_runs) * 1000
    anchor_ms = statistics.median(r[0] for r in anchor_runs) * 1000
    latest_cpu = statistics.median(r[1] for r in latest_runs) * 1000
    anchor_cpu = statistics.median(r[1] for r in anchor_runs) * 1000
    print(f"latest (checkpoints list --latest --json): median wall {latest_ms:.1f} ms, "
          f"cpu {latest_cpu:.1f} ms over {args.runs} runs; selected step {picked['selected_step']}, "
          f"{len(picked['steps'])} step(s) read, {picked['scan']['stat_calls']} stat calls, "
          f"{picked['scan']['directories_read']} directories read")
    print(f"anchor (find -name '*.distcp' | wc -l):   median wall {anchor_ms:.1f} ms, "
          f"cpu {anchor_cpu:.1f} ms over {args.runs} runs")
    print(f"ratio latest/find: wall {latest_ms / anchor_ms:.3f}x, cpu {latest_cpu / anchor_cpu:.3f}x "
          f"(target <= 0.1x); full listing/find in this run: wall {scan_ms / find_ms:.2f}x")
    if not args.dir:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
