#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time for a failure on one replica to stop all the others (`primebeaker node rl`).

Starts N real `primebeaker node rl` replicas on this machine sharing a temp rendezvous
directory, with fake torchrun/orchestrator/inference/vllm-router on PATH and fake Prime-RL and
LiteRegistry gateway packages on PYTHONPATH (as tests/node does). The fake trainer on rank 0
records the moment it fails (exit 7); the figure is the time from then until the last other
replica has exited (with code 92, all children stopped).

Anchor, measured in the same run: the reference's mechanism (multinode_rl_role.sh), N-1 bash
watcher loops polling the rendezvous directory every 3 s, stopped by the same
shutdown.requested file. Printed as ratio = ours / anchor (lower is better).

usage: python3 bench/node/failure_propagation.py [--binary build/primebeaker] [--replicas 4] [--runs 5]
"""
import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FAKE_RL = '''
from pathlib import Path
from types import SimpleNamespace as NS
class RLConfig:
    @staticmethod
    def model_validate(raw):
        inf = raw["inference"]
        return NS(output_dir=Path(raw["output_dir"]), env_vars={}, ckpt=None,
                  inference=NS(router=NS(policy="round_robin"), enable_expert_parallel=False,
                               parallel=NS(dp=inf["parallel"]["dp"], tp=1), server=NS(port=8000),
                               backend_port=8100, env_vars={}),
                  weight_broadcast=NS(type="filesystem"), rollout_transport=NS(type="filesystem"),
                  trainer=NS(env_vars={}, log=NS(ranks_filter=[0]), weight_broadcast=NS()),
                  orchestrator=NS(env_vars={}, weight_broadcast=NS()))
'''
FAKE_RL_ENTRY = '''
def write_subconfigs(config, config_dir):
    for name in ("trainer", "orchestrator", "inference"):
        (config_dir / f"{name}.toml").write_text("# fake\\n")
'''
FAKE_PROCESS = "DEFAULT_COMMON_ENV_VARS = {}\nDEFAULT_TRAINER_ENV_VARS = {}\nDEFAULT_INFERENCE_ENV_VARS = {}\n"
FAKE_GATEWAY = '''
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def ok(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    do_GET = do_OPTIONS = do_POST = ok
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def ours(binary, replicas, poll):
    with tempfile.TemporaryDirectory(prefix="pbbench.") as tmp:
        root = Path(tmp)
        for d in ("rdv", "out", "work", "scratch", "registry", "ctl", "local"):
            (root / d).mkdir()
        py = root / "pylib"
        for pkg in ("prime_rl", "prime_rl/configs", "prime_rl/entrypoints", "prime_rl/utils",
                    "literegistry", "literegistry/gateway"):
            write(py / pkg / "__init__.py", "")
        write(py / "prime_rl/configs/rl.py", FAKE_RL)
        write(py / "prime_rl/entrypoints/rl.py", FAKE_RL_ENTRY)
        write(py / "prime_rl/utils/process.py", FAKE_PROCESS)
        write(py / "literegistry/gateway/__main__.py", FAKE_GATEWAY)
        bin_dir = root / "bin"
        for name in ("inference", "vllm-router"):
            write(bin_dir / name, "#!/bin/bash\nexec sleep 1000\n", 0o755)
        write(bin_dir / "orchestrator", "#!/bin/bash\nexec sleep 1000\n", 0o755)
        write(bin_dir / "torchrun",
              f"#!/bin/bash\nsleep 1\ndate +%s.%N > {root}/ctl/failed\nexit 7\n", 0o755)
        write(root / "config.toml",
              f'output_dir = "{root}/out"\n[orchestrator]\n[inference.parallel]\ndp = {4 * replicas - 2}\n')
        env_common = {
            "PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(root / "work"), "LANG": "C.UTF-8",
            "PYTHONPATH": str(py), "PYTHONDONTWRITEBYTECODE": "1",
            "TOTAL_NODES": str(replicas), "TOTAL_INFER_RANKS": str(4 * replicas - 2),
            "GPUS_PER_NODE": "4", "TRAINER_GPU_COUNT": "2", "MIXED_INFER_GPU_COUNT": "2",
            "CONFIG_PATH": str(root / "config.toml"), "OUTPUT_DIR": str(root / "out"),
            "WORKING_DIR": str(root / "work"), "SCRATCH": str(root / "scratch"),
            "LAUNCH_ID": "bench", "RENDEZVOUS_DIR": str(root / "rdv"),
            "RENDEZVOUS_TIMEOUT_SECONDS": "60", "REGISTRY": f"file://{root}/registry",
            "GATEWAY_PORT": str(free_port()), "GATEWAY_WORKERS": "1",
            "REQUIRED_LITEREGISTRY_SERVICES": "{}", "LOCAL_SEARCH_MODEL_PATHS_JSON": "[]",
            "PRIMEBEAKER_NODE_GATEWAY_SETTLE_SECONDS": "0.2",
            "PRIMEBEAKER_NODE_GATEWAY_PROBE_INTERVAL_SECONDS": "0.2",
            "PRIMEBEAKER_NODE_HOST": "127.0.0.1", "PRIMEBEAKER_NODE_LOCAL_ROOT": str(root / "local"),
        }
        if poll is not None:
            env_common["PRIMEBEAKER_NODE_POLL_SECONDS"] = str(poll)
        procs = []
        for rank in range(replicas):
            env = dict(env_common, BEAKER_REPLICA_RANK=str(rank))
            log = open(root / f"replica.{rank}.log", "w")
            procs.append(subprocess.Popen([binary, "node", "rl"], env=env, cwd=root / "work",
                                          stdout=log, stderr=subprocess.STDOUT))
        exits = {}
        deadline = time.time() + 120
        while len(exits) < replicas and time.time() < deadline:
            for rank, p in enumerate(procs):
                if rank not in exits and p.poll() is not None:
                    exits[rank] = (time.time(), p.returncode)
            time.sleep(0.002)
        for p in procs:
            if p.poll() is None:
                p.kill()
        codes = [exits.get(r, (0, None))[1] for r in range(replicas)]
        if codes != [7] + [92] * (replicas - 1):
            log = (root / "replica.0.log").read_text()
            sys.exit(f"unexpected exit codes {codes}\n{log}")
        failed = float((root / "ctl" / "failed").read_text())
        return max(exits[r][0] for r in range(1, replicas)) - failed


def anchor(replicas):
    """The reference's peer watcher: bash loops checking the rendezvous dir every 3 s."""
    with tempfile.TemporaryDirectory(prefix="pbbench.") as tmp:
        stop = Path(tmp) / "shutdown.requested"
        loop = f'while :; do [ -s "{stop}" ] && exit 92; sleep 3; done'
        procs = [subprocess.Popen(["bash", "-c", loop]) for _ in range(replicas - 1)]
        time.sleep(1 + random.random() * 3)  # the failure lands at a random phase of the loop
        failed = time.time()
        stop.write_text("Prime-RL node 0 (mixed) exited with code 7\n")
        last = failed
        for p in procs:
            p.wait()
            last = max(last, time.time())
        return last - failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build/primebeaker")
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    binary = str(Path(args.binary).resolve())
    results = {"default poll (0.5 s)": [], "poll 0.1 s": [], "anchor: reference watcher (3 s bash loop)": []}
    for _ in range(args.runs):
        results["default poll (0.5 s)"].append(ours(binary, args.replicas, None))
        results["poll 0.1 s"].append(ours(binary, args.replicas, 0.1))
        for _ in range(3):  # the anchor is cheap and noisier (random phase): sample it more
            results["anchor: reference watcher (3 s bash loop)"].append(anchor(args.replicas))
    anchor_median = statistics.median(results["anchor: reference watcher (3 s bash loop)"])
    print(f"failure on replica 0 -> all {args.replicas - 1} other replicas stopped "
          f"({args.runs} runs, median / max seconds)")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:45s} {median:6.2f} / {max(values):6.2f}   ratio {median / anchor_median:5.2f}")
    print(json.dumps({k: [round(v, 3) for v in vs] for k, vs in results.items()}))


if __name__ == "__main__":
    main()
