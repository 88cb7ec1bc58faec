#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two figures of `primebeaker evaluation worker` (docs/evaluation-worker.md).

1. Late endpoint publication -> child start. Redis is published and healthy; the worker waits
   for `gateway` (the script reads its stderr until it says so). After a random 0-1 s the
   script publishes the gateway record the way LiteRegistry's coop.endpoints does (value file +
   TTL sidecar, atomic rename) and measures (a) until the worker's first GET /health of the
   gateway (it noticed the record) and (b) until the fake evaluation module records its start
   (time.time() at import, so the interpreter's start-up is included in both rows).
   Anchor, same run: the worker with --poll-interval 1, the reference's 1 s endpoint poll.
2. SIGTERM -> every child process gone: the module starts a grandchild `sleep` in its group and
   sleeps; the script sends SIGTERM to the worker and times until both processes are gone
   (or zombies), and until the worker has exited (after `beaker experiment stop`, a fake here).

Prints medians over --trials runs; ratio = anchor median / our median.
"""
import argparse
import hashlib
import http.server
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

MODULE = r'''
import json, os, subprocess, sys, time
record = {"started": time.time(), "pid": os.getpid()}
if "--grandchild" in sys.argv:
    record["grandchild"] = subprocess.Popen(["sleep", "300"]).pid
path = os.environ["BENCH_RECORD"]
with open(path + ".tmp", "w") as out:
    json.dump(record, out)
os.replace(path + ".tmp", path)
if "--sleep" in sys.argv:
    time.sleep(300)
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def publish(root, name, uri):
    """One endpoint record in LiteRegistry's file KV layout (30 s TTL)."""
    publisher = "bench-" + name
    now = time.time()
    key = "endpoint_%s_%s" % (name, hashlib.sha256(publisher.encode()).hexdigest())
    value = json.dumps({"metadata": {}, "name": name, "published_at": now,
                        "publisher_id": publisher, "schema_version": 1, "uri": uri},
                       sort_keys=True, separators=(",", ":"))
    ttl_dir = os.path.join(root, ".literegistry_ttl")
    os.makedirs(ttl_dir, exist_ok=True)
    for path, text in ((os.path.join(ttl_dir, hashlib.sha256(key.encode()).hexdigest()),
                        repr(now + 30.0)), (os.path.join(root, key), value)):
        with open(path + ".tmp", "w") as out:
            out.write(text)
        os.replace(path + ".tmp", path)
    return now


class Health(http.server.BaseHTTPRequestHandler):
    first_probe = None

    def do_GET(self):
        if Health.first_probe is None:
            Health.first_probe = time.time()
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


def gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] == "Z"


class Bench:
    def __init__(self, binary):
        self.binary = os.path.abspath(binary)
        self.dir = tempfile.mkdtemp(prefix="pb-eval-worker-bench-")
        self.redis_port = free_port()
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.gateway = "http://127.0.0.1:%d" % self.http.server_address[1]
        os.makedirs(os.path.join(self.dir, "py", "benchmod"))
        open(os.path.join(self.dir, "py", "benchmod", "__init__.py"), "w").close()
        with open(os.path.join(self.dir, "py", "benchmod", "__main__.py"), "w") as f:
            f.write(MODULE)
        os.makedirs(os.path.join(self.dir, "bin"))
        beaker = os.path.join(self.dir, "bin", "beaker")
        with open(beaker, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(beaker, 0o755)
        for _ in range(200):
            if subprocess.run(["redis-cli", "-p", str(self.redis_port), "ping"],
                              capture_output=True, text=True).stdout.strip() == "PONG":
                break
            time.sleep(0.02)
        self.trial = 0

    def close(self):
        self.redis.terminate()
        self.redis.wait()
        self.http.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, args, flags):
        self.trial += 1
        root = os.path.join(self.dir, "coop%d" % self.trial)
        os.makedirs(root)
        record = os.path.join(self.dir, "record%d.json" % self.trial)
        env = dict(os.environ,
                   PATH=os.path.join(self.dir, "bin") + ":" + os.environ["PATH"],
                   PYTHONPATH=os.path.join(self.dir, "py"),
                   BENCH_RECORD=record,
                   PRIMEBEAKER_EVALUATION_MODULE="benchmod",
                   PRIMEBEAKER_EVALUATION_ARGUMENTS_JSON=json.dumps(args),
                   PRIMEBEAKER_COORDINATION_ROOT=root,
                   PRIMEBEAKER_MANAGED_SERVICE_EXPERIMENT_ID="01BENCH",
                   PRIMEBEAKER_READINESS_TIMEOUT_SECONDS="30")
        publish(root, "redis", "redis://127.0.0.1:%d" % self.redis_port)
        worker = subprocess.Popen([self.binary, "evaluation", "worker"] + flags, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return worker, root, record

    def wait_record(self, record):
        while not os.path.exists(record):
            time.sleep(0.001)
        with open(record) as f:
            return json.load(f)

    def late_gateway(self, flags):
        worker, root, record = self.start([], flags)
        while "waiting for endpoint 'gateway'" not in worker.stderr.readline():
            pass
        time.sleep(random.uniform(0.0, 1.0))
        Health.first_probe = None
        published = publish(root, "gateway", self.gateway)
        started = self.wait_record(record)["started"]
        worker.communicate()
        return Health.first_probe - published, started - published

    def sigterm(self):
        worker, root, record = self.start(["--grandchild", "--sleep"], [])
        publish(root, "gateway", self.gateway)
        threading.Thread(target=worker.communicate, daemon=True).start()
        seen = self.wait_record(record)
        time.sleep(0.05)
        t0 = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        pids = [seen["pid"], seen["grandchild"]]
        while not all(gone(p) for p in pids):
            time.sleep(0.0005)
        t_children = time.monotonic() - t0
        while worker.poll() is None:
            time.sleep(0.0005)
        code = worker.returncode
        t_exit = time.monotonic() - t0
        assert code == 143, code
        return t_children, t_exit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="build/ci/primebeaker")
    parser.add_argument("--trials", type=int, default=15)
    options = parser.parse_args()
    bench = Bench(options.binary)
    try:
        ours, ref = [], []
        for _ in range(options.trials):  # interleaved, so load changes hit both rows alike
            ours.append(bench.late_gateway([]))
            ref.append(bench.late_gateway(["--poll-interval", "1"]))
        term = [bench.sigterm() for _ in range(options.trials)]
    finally:
        bench.close()
    load = os.getloadavg()
    print("load average: %.2f %.2f %.2f" % load)
    print("late gateway publication (worker already waiting), %d trials, seconds" % options.trials)
    rows = (("ours (0.2 s poll)", ours), ("ref-1s (--poll-interval 1)", ref))
    for label, index in (("-> worker probes it", 0), ("-> child started", 1)):
        print("  " + label)
        for name, samples in rows:
            values = sorted(t[index] for t in samples)
            print("    %-28s median %.3f  p90 %.3f" % (name, statistics.median(values),
                                                     values[int(0.9 * (len(values) - 1))]))
        print("    ratio ref-1s / ours: %.1fx" % (statistics.median(t[index] for t in ref) /
                                                  statistics.median(t[index] for t in ours)))
    children = [t[0] for t in term]
    exits = [t[1] for t in term]
    print("SIGTERM -> child and grandchild gone (s): median %.4f  max %.4f" %
          (statistics.median(children), max(children)))
    print("SIGTERM -> worker exited 143 after `beaker experiment stop` (s): median %.4f" %
          statistics.median(exits))
    print("  anchor: the 20 s grace a child that ignores SIGTERM gets before SIGKILL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
