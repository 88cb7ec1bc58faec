#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Watcher figures (bench/watcher/README.md).

1. `primebeaker watcher update` on a generated tree of RUNS x STEPS checkpoints: wall time and
   peak RSS, against the anchor `find TREE -type f | wc -l` (walking the same tree) in the same run.
2. `primebeaker watcher serve` under wrk on loopback: requests/s and p99 latency of /api/models
   and /api/models/{id} at 1, 16 and 64 connections, against the anchor /health (no database
   work) measured in the same run, and the server's RSS.
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def generate(root, runs, steps):
    """RUNS RL outputs with STEPS checkpoints each, their TOMLs, launch specs, W&B run dirs,
    one SFT predecessor, a manifest per run and an evaluation with results per checkpoint."""
    write(f"{root}/train/sft.toml", 'output_dir = "outputs/sft"\n[data]\ntype = "sft"\nname = "data/sft_train.jsonl"\n[wandb]\nproject = "sft"\nentity = "team"\n')
    os.makedirs(f"{root}/outputs/sft/weights/step_100", exist_ok=True)
    for run in range(runs):
        uid = f"{run:016x}"
        name = f"rl_{run:04d}"
        write(f"{root}/train/{name}.toml", f'''output_dir = "outputs/{name}"
max_steps = {steps * 10}
[trainer.model]
name = "outputs/sft/weights/step_100"
[trainer.optim]
lr = 1e-6
[orchestrator]
batch_size = 128
[orchestrator.model]
name = "outputs/sft/weights/step_100"
[[orchestrator.train.env]]
dataset = "data/mix_{uid}/train.parquet"
[wandb]
project = "rl"
entity = "team"
''')
        write(f"{root}/data/mix_{uid}/manifest.json", json.dumps({
            "name": f"mix-{run}", "config_uid": uid, "train_path": f"data/mix_{uid}/train.parquet",
            "sources": [{"name": f"s{i}", "parquet": f"data/src/s{i}.parquet", "weight": 0.25, "train_quota": 100} for i in range(4)]}))
        write(f"{root}/specs/{name}.json", json.dumps({"tasks": [{"envVars": [
            {"name": "OUTPUT_DIR", "value": f"outputs/{name}"}, {"name": "WANDB_SHARED_RUN_ID", "value": f"run{run}"}]}]}))
        os.makedirs(f"{root}/outputs/{name}/wandb/run-20260101_000000-run{run}", exist_ok=True)
        for step in range(1, steps + 1):
            checkpoint = f"outputs/{name}/weights/step_{step * 10}"
            os.makedirs(f"{root}/{checkpoint}", exist_ok=True)
            write(f"{root}/evals/{name}_{step}.yaml", f"evaluation:\n  model: {checkpoint}\n  run_dir: runs/{name}_{step}\n")
            write(f"{root}/runs/{name}_{step}/averages.jsonl", "".join(
                json.dumps({"dataset": d, "runs": 3, "mean_accuracy": 0.5, "stdev_accuracy": 0.1, "min_accuracy": 0.4, "max_accuracy": 0.6}) + "\n"
                for d in ("gsm8k", "math")))


def timed(argv, **kwargs):
    """(wall seconds, peak RSS MiB, stdout) of one child."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
    out, err = process.communicate()
    wall = time.perf_counter() - start
    if process.returncode != 0:
        sys.exit(f"{argv[0]} failed: {err.decode()}")
    # ru_maxrss of the children reaped so far: the latest child dominates when it is the largest.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, peak, out


def wrk(url, connections, seconds):
    out = subprocess.run(["wrk", "-t", str(min(connections, 2)), "-c", str(connections), "-d", f"{seconds}s",
                          "--latency", url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        sys.exit(f"wrk saw {errors.group(1)} error responses from {url}")
    return rps, float(p99.group(1)) * scale


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--runs", type=int, default=250)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    root = tempfile.mkdtemp(prefix="pb-watcher-bench-")
    try:
        generate(root, args.runs, args.steps)
        checkpoints = args.runs * args.steps
        print(f"tree: {args.runs} RL runs x {args.steps} checkpoints = {checkpoints} checkpoints "
              f"(+1 SFT), {checkpoints} evaluations; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        database = f"{root}/watcher.sqlite3"
        common = ["--repo-root", root, "--database", database, "--train-config-roots", f"{root}/train",
                  "--eval-config-roots", f"{root}/evals", "--launch-spec-roots", f"{root}/specs",
                  "--manifest-roots", f"{root}/data"]
        anchor_wall, _, _ = timed(["sh", "-c", f"find {root} -type f | wc -l"])
        wall, peak, out = timed([binary, "watcher", "update", *common])
        summary = json.loads(out)
        assert summary["indexed_checkpoints"] == checkpoints, summary
        print(f"update: {wall:.2f} s wall, peak RSS {peak:.1f} MiB, {summary['indexed_checkpoints']} RL + "
              f"{summary['indexed_sft_checkpoints']} SFT indexed ({wall / checkpoints * 1000:.2f} ms/checkpoint)")
        print(f"anchor find -type f | wc -l: {anchor_wall:.3f} s; ratio update/find {wall / anchor_wall:.0f}x")
        again, _, _ = timed([binary, "watcher", "update", *common])
        print(f"second update (everything skipped): {again:.2f} s")

        server = subprocess.Popen([binary, "watcher", "serve", "--database", database, "--port", "0"],
                                  stderr=subprocess.PIPE, text=True)
        line = server.stderr.readline()
        port = int(re.search(r":(\d+)/", line).group(1))
        base = f"http://127.0.0.1:{port}"
        models = json.loads(subprocess.run(["curl", "-s", "--noproxy", "*", f"{base}/api/models"],
                                           capture_output=True, text=True, check=True).stdout)
        model_id = models["models"][0]["id"]
        print(f"serve: {models['count']} runs listed from {checkpoints + 1} models; detail of model {model_id}")
        print(f"{'route':<22}{'conns':>6}{'req/s':>10}{'p99 ms':>9}{'vs /health':>12}")
        for connections in (1, 16, 64):
            health, health_p99 = wrk(f"{base}/health", connections, args.seconds)
            print(f"{'/health (anchor)':<22}{connections:>6}{health:>10.0f}{health_p99:>9.2f}{'1.00x':>12}")
            for route in ("/api/models", f"/api/models/{model_id}"):
                rps, p99 = wrk(base + route, connections, args.seconds)
                print(f"{route:<22}{connections:>6}{rps:>10.0f}{p99:>9.2f}{rps / health:>11.3f}x")
        with open(f"/proc/{server.pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        print(f"server RSS: {int(fields['VmRSS'].split()[0]) / 1024:.1f} MiB now, "
              f"peak {int(fields['VmHWM'].split()[0]) / 1024:.1f} MiB")
        server.terminate()
        server.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
