#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""serve benchmark: round-trip latency (p50/p99) and messages/s of `primebeaker environments
serve --stdio`, driven from Python through the shim's child client
(primebeaker.environments._child, the transport every shim hook uses), against a pure-Python
stand-in (py_serve.py) doing the same parse-and-score work behind the same protocol, in one run.

  python3 bench/environments_runtime/serve_bench.py --binary build-release/primebeaker

Workload: N `score` requests for the single-turn `label` environment (feedback + label XML,
valid, invalid and mislabelled completions), each with a long-ish completion, sent pipelined
with W requests in flight (and once more with W=1 for the unpipelined latency). Each target is
started fresh; a warm-up precedes the measurement. The script checks that both targets return
the same values for every request.
"""
import argparse
import asyncio
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

from primebeaker.environments import _child  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def make_requests(count, seed=7):
    rng = random.Random(seed)
    labels = ["Correct", "incorrect", "partially  correct"]
    requests = []
    for i in range(count):
        gold = rng.choice(labels)
        said = gold if i % 3 else rng.choice(labels)
        evidence = " ".join(f"row {i}-{k} matches the cited source." for k in range(12))
        kind = i % 4
        if kind == 0:
            content = f"<feedback>{evidence}</feedback>\n<label> {said.upper()} </label>"
        elif kind == 1:
            content = f"<think>{evidence}</think>\n<FEEDBACK>ok</FEEDBACK><Label>{said}</Label>"
        elif kind == 2:
            content = f"<feedback>{evidence}</feedback><label></label>"
        else:
            content = f"{evidence} I think it is {said}."
        prompt = [{"role": "system", "content": "You judge outputs."},
                  {"role": "user", "content": f"Judge output {i}: <output>{evidence}</output>"}]
        requests.append({
            "session": f"rollout-{i}", "env": "label", "args": {"dataset": "rows.jsonl"},
            "row": {"prompt": prompt, "answer": gold, "example_id": i},
            "prompt": prompt, "completion": [{"role": "assistant", "content": content}],
            "answer": gold, "info": {}, "is_truncated": False, "stop_condition": None,
            "error": None, "trajectory_id": f"rollout-{i}", "example_id": i, "cache_salt": None,
        })
    return requests


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


async def run(target, requests, window):
    os.environ["PRIMEBEAKER_BIN"] = target
    child = _child.Child()
    for request in requests[:200]:  # start the child, warm up
        await child.request("score", **request)
    latencies = [0.0] * len(requests)
    values = [None] * len(requests)
    gate = asyncio.Semaphore(window)

    async def one(index):
        async with gate:
            started = time.perf_counter()
            reply = await child.request("score", **requests[index])
            latencies[index] = time.perf_counter() - started
            values[index] = reply["values"]

    cpu_before = cpu_seconds(child.pid)
    self_before = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(len(requests))))
    wall = time.perf_counter() - started
    child_cpu = cpu_seconds(child.pid) - cpu_before
    client_cpu = time.process_time() - self_before
    child.stop()
    return {"wall": wall, "latencies": sorted(latencies), "values": values,
            "child_cpu": child_cpu, "client_cpu": client_cpu}


def percentile(ordered, fraction):
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def report(name, result, count):
    lat = result["latencies"]
    return (f"  {name:<13} p50 {percentile(lat, 0.5) * 1e3:8.3f} ms  p99 {percentile(lat, 0.99) * 1e3:8.3f} ms"
            f"  {count / result['wall']:9.0f} msg/s  (server CPU {result['child_cpu']:.2f} s,"
            f" client CPU {result['client_cpu']:.2f} s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="a Release build of primebeaker")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--window", type=int, default=64, help="requests in flight")
    parser.add_argument("--repeat", type=int, default=3, help="best of (by wall time)")
    options = parser.parse_args()
    targets = {"primebeaker": os.path.abspath(options.binary),
               "Python": os.path.join(HERE, "py_serve.py")}
    requests = make_requests(options.requests)
    sizes = sum(len(str(r)) for r in requests) / len(requests)
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
          f"{os.getloadavg()[2]:.1f} on {os.cpu_count()} CPUs; {options.requests} label score "
          f"requests of ~{sizes / 1024:.1f} KiB, best of {options.repeat}")
    results = {}
    for window in (options.window, 1):
        count = options.requests if window > 1 else min(options.requests, 2000)
        subset = requests[:count]
        print(f"window {window} ({count} requests):")
        for name, target in targets.items():
            best = None
            for _ in range(options.repeat):
                result = asyncio.run(run(target, subset, window))
                if best is None or result["wall"] < best["wall"]:
                    best = result
            results[(name, window)] = best
            print(report(name, best, count))
        ours, theirs = results[("primebeaker", window)], results[("Python", window)]
        mismatches = sum(a != b for a, b in zip(ours["values"], theirs["values"]))
        print(f"  ratio         msg/s {theirs['wall'] / ours['wall']:.2f}x, p50 latency "
              f"{percentile(theirs['latencies'], 0.5) / percentile(ours['latencies'], 0.5):.2f}x, "
              f"server CPU {theirs['child_cpu'] / max(ours['child_cpu'], 1e-9):.2f}x; "
              f"value mismatches: {mismatches}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
