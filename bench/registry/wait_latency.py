#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time from the Nth endpoint registration to `primebeaker registry wait-services` returning.

For each backend (directory, SQLite, Redis) and each trial: write N-1 server records in
LiteRegistry's format, start `wait-services --require bench=N`, let it poll for a random
fraction of a second, write the Nth record the way a LiteRegistry worker does (atomic rename /
SQLite upsert / Redis MULTI SET+ZADD EXEC), and measure until the process exits.

Anchors measured in the same run:
  * reference cadence: the same wait with `--poll-interval 2`, the 2 s polling of the
    reference's `python3 -m primebeaker.coordination wait-services`;
  * floor: one `primebeaker registry list` call (process start plus one read).
Prints one table; ratios are against the reference-cadence anchor.
"""
import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

INDEX = "literegistry:server_heartbeats:v1"


def record(server_id, now):
    return json.dumps({"server_id": server_id, "host": "bench", "port": 9000,
                       "last_heartbeat": now, "metadata": {"model_path": "bench"},
                       "status": "active", "uri": "http://bench:9000"})


class FileBackend:
    name = "file"

    def __init__(self, root):
        self.root = os.path.join(root, "reg")
        os.makedirs(self.root)
        self.uri = "file://" + self.root

    def put(self, server_id):
        key = "server_" + server_id
        tmp = os.path.join(self.root, "." + key + ".tmp")
        with open(tmp, "w") as f:
            f.write(record(server_id, time.time()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(self.root, key))


class SqliteBackend:
    name = "sqlite"

    def __init__(self, root):
        self.path = os.path.join(root, "reg.sqlite3")
        self.uri = "sqlite://" + self.path
        with sqlite3.connect(self.path) as db:
            db.execute("PRAGMA journal_mode = DELETE")
            db.execute("CREATE TABLE IF NOT EXISTS literegistry_kv (key TEXT PRIMARY KEY, "
                       "value BLOB NOT NULL, expires_at REAL) WITHOUT ROWID")

    def put(self, server_id):
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("INSERT INTO literegistry_kv(key, value, expires_at) VALUES (?, ?, NULL) "
                   "ON CONFLICT(key) DO UPDATE SET value=excluded.value, expires_at=NULL",
                   ("server_" + server_id, record(server_id, time.time()).encode()))
        db.commit()
        db.close()


class RedisBackend:
    name = "redis"

    def __init__(self, root, port):
        self.port = port
        self.uri = "redis://127.0.0.1:%d" % port
        self.sock = socket.create_connection(("127.0.0.1", port))

    def command(self, *parts):
        out = b"*%d\r\n" % len(parts)
        for part in parts:
            data = part.encode() if isinstance(part, str) else part
            out += b"$%d\r\n%s\r\n" % (len(data), data)
        return out

    def put(self, server_id):
        key = "server_" + server_id
        now = time.time()
        batch = (self.command("MULTI") + self.command("SET", key, record(server_id, now)) +
                 self.command("ZADD", INDEX, "%.6f" % now, key) + self.command("EXEC"))
        self.sock.sendall(batch)
        # +OK, +QUEUED, +QUEUED, *2 :..: -> read until the EXEC array's two integer lines
        buffer = b""
        while buffer.count(b"\r\n") < 6:
            buffer += self.sock.recv(4096)


def start_redis(tmp):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
                             "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return proc, port
        except OSError:
            time.sleep(0.02)
    raise SystemExit("redis-server did not start")


def trial(binary, make_backend, n, poll_interval):
    tmp = tempfile.mkdtemp(prefix="pb-bench-")
    try:
        backend = make_backend(tmp)
        for i in range(n - 1):
            backend.put("bench-%d-%s" % (i, uuid.uuid4().hex))
        args = [binary, "registry", "wait-services", "--registry", backend.uri, "--require",
                "bench=%d" % n, "--timeout", "60"]
        if poll_interval is not None:
            args += ["--poll-interval", str(poll_interval)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # Let it start and poll for a while; a random phase so the poll cadence is sampled fairly.
        time.sleep(0.3 + random.uniform(0, poll_interval or 0.25))
        if proc.poll() is not None:
            raise SystemExit("wait-services ended early: " + proc.stderr.read().decode())
        backend.put("bench-last-" + uuid.uuid4().hex)
        registered = time.perf_counter()
        out, err = proc.communicate()
        returned = time.perf_counter()
        if proc.returncode != 0 or json.loads(out).get("bench") != n:
            raise SystemExit("wait-services failed: %s %s" % (out, err))
        return (returned - registered) * 1000.0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def list_floor(binary, trials):
    tmp = tempfile.mkdtemp(prefix="pb-bench-")
    try:
        backend = FileBackend(tmp)
        backend.put("x-" + uuid.uuid4().hex)
        samples = []
        for _ in range(trials):
            start = time.perf_counter()
            subprocess.run([binary, "registry", "list", "--registry", backend.uri, "--json"],
                           check=True, stdout=subprocess.DEVNULL)
            samples.append((time.perf_counter() - start) * 1000.0)
        return samples
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="build-release/primebeaker")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n", type=int, default=4, help="endpoints required (the Nth is timed)")
    parser.add_argument("--reference-trials", type=int, default=4)
    options = parser.parse_args()
    binary = os.path.abspath(options.binary)

    redis_tmp = tempfile.mkdtemp(prefix="pb-bench-redis-")
    redis_proc, port = start_redis(redis_tmp)
    counter = [0]

    def make_redis(_tmp):
        # A fresh database number per trial keeps the trials independent on one server.
        counter[0] += 1
        backend = RedisBackend(_tmp, port)
        db = counter[0] % 16
        backend.sock.sendall(backend.command("SELECT", str(db)) + backend.command("FLUSHDB"))
        buffer = b""
        while buffer.count(b"\r\n") < 2:
            buffer += backend.sock.recv(4096)
        backend.uri = "redis://127.0.0.1:%d/%d" % (port, db)
        return backend

    backends = [("file", FileBackend), ("sqlite", SqliteBackend), ("redis", make_redis)]
    try:
        floor = statistics.median(list_floor(binary, 10))
        print("N = %d endpoints; %d trials (reference cadence: %d); binary %s" %
              (options.n, options.trials, options.reference_trials, binary))
        print("anchor floor: one `registry list` call = %.1f ms (median)" % floor)
        print("%-7s %10s %10s %14s %8s %10s" %
              ("backend", "median ms", "max ms", "ref-2s med ms", "ratio", "x floor"))
        for name, make in backends:
            ours = [trial(binary, make, options.n, None) for _ in range(options.trials)]
            ref = [trial(binary, make, options.n, 2) for _ in range(options.reference_trials)]
            median = statistics.median(ours)
            ref_median = statistics.median(ref)
            print("%-7s %10.1f %10.1f %14.1f %8.3f %10.2f" %
                  (name, median, max(ours), ref_median, median / ref_median, median / floor))
    finally:
        redis_proc.terminate()
        redis_proc.wait()
        shutil.rmtree(redis_tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
