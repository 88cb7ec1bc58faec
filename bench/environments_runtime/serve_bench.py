#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""serve benchmark: `primebeaker environments serve --stdio` against a pure-Python stand-in
(py_serve.py) doing the same parse-and-score work behind the same protocol, in one run.

  python3 bench/environments_runtime/serve_bench.py --binary AFTER [--baseline BEFORE]

Three parts, every target started fresh and warmed up, each figure the best of --repeat runs:

1. Server capacity (the issue's figures). A lean driver writes pre-encoded request lines on the
   child's stdin and reads replies from its stdout, matching them by id with a byte slice, so
   the driver costs about a microsecond per message and the server is what is measured. N `score`
   requests for the single-turn `label` environment (~2 KiB each), W in flight (pipelined), then
   one at a time. Server CPU comes from /proc/<pid>/stat around the measured part.
2. The same workload through the shim's own child client (primebeaker.environments._child, the
   transport every shim hook uses): what a Verifiers worker sees. Its asyncio loop encodes and
   decodes every line, so it, not the server, bounds this figure.
3. Multi-turn (primebeaker targets only): one tool-label session whose assistant turns each ask
   for four `terminal` calls, against a loopback terminal service that answers after 1 s.
   Prints the wall time of each `respond`.

Both scoring targets must return the same values for every request (checked).
"""
import argparse
import asyncio
import http.server
import json
import os
import random
import subprocess
import sys
import threading
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


def encode(request_id, request):
    # What the shim's child client writes (ensure_ascii, no NaN).
    return (json.dumps({"id": request_id, "op": "score", **request}, ensure_ascii=True,
                       allow_nan=False) + "\n").encode("ascii")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def reply_id(line):
    # {"id":12,... (the binary) or {"id": 12, ... (Python's json.dumps)
    return int(line[6:line.index(b",", 6)])


# ---------------------------------------------------------------------------- 1. lean driver

def lean_run(target, lines, window):
    """Pipelined with `window` requests in flight; returns wall time, per-request latency,
    replies and CPU times."""
    process = subprocess.Popen([target, "environments", "serve", "--stdio"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    fd_in, fd_out = process.stdin.fileno(), process.stdout.fileno()
    count = len(lines)
    pending = b""

    def read_lines():
        nonlocal pending
        data = os.read(fd_out, 1 << 17)
        if not data:
            raise RuntimeError(f"{target} closed its output")
        pending += data
        complete = pending.split(b"\n")
        pending = complete.pop()
        return complete

    # hello and a warm-up (ids above the measured range)
    write_all(fd_in, b'{"id": %d, "op": "hello", "protocol": 1, "client": "bench"}\n' % count)
    warm = [line.replace(b'{"id": ', b'{"id": 1', 1) for line in lines[:min(200, count)]]
    write_all(fd_in, b"".join(warm))
    seen = 0
    while seen < len(warm) + 1:
        seen += len(read_lines())
    sent_at = [0.0] * count
    latencies = [0.0] * count
    replies = [None] * count
    cpu_before = cpu_seconds(process.pid)
    self_before = time.process_time()
    started = time.perf_counter()
    sent = min(window, count)
    now = time.perf_counter()
    for i in range(sent):
        sent_at[i] = now
    write_all(fd_in, b"".join(lines[:sent]))
    done = 0
    while done < count:
        complete = read_lines()
        now = time.perf_counter()
        for line in complete:
            index = reply_id(line)
            latencies[index] = now - sent_at[index]
            replies[index] = line
        done += len(complete)
        more = min(len(complete), count - sent)
        if more:
            for i in range(sent, sent + more):
                sent_at[i] = now
            write_all(fd_in, b"".join(lines[sent:sent + more]))
            sent += more
    wall = time.perf_counter() - started
    server_cpu = cpu_seconds(process.pid) - cpu_before
    client_cpu = time.process_time() - self_before
    process.stdin.close()
    process.wait(timeout=30)
    values = []
    for line in replies:
        reply = json.loads(line)
        values.append(reply.get("values") if reply.get("ok") else reply.get("error"))
    return {"wall": wall, "latencies": sorted(latencies), "values": values,
            "server_cpu": server_cpu, "client_cpu": client_cpu}


# ----------------------------------------------------------------- 2. the shim's child client

async def shim_run(target, requests, window):
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
    server_cpu = cpu_seconds(child.pid) - cpu_before
    client_cpu = time.process_time() - self_before
    child.stop()
    return {"wall": wall, "latencies": sorted(latencies), "values": values,
            "server_cpu": server_cpu, "client_cpu": client_cpu}


# ----------------------------------------------------------------------------- 3. multi-turn

class SlowTerminal(http.server.BaseHTTPRequestHandler):
    delay = 1.0

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.delay)
        reply = json.dumps({"stdout": f"ran {body.get('command')}\n", "stderr": "",
                            "success": True, "exit_code": 0, "execution_time": self.delay,
                            "truncated": False, "truncated_characters": 0}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):  # quiet
        pass


def tool_turn(turn, calls):
    return {"role": "assistant", "content": "",
            "tool_calls": [{"id": f"call_{turn}_{k}", "type": "function",
                            "function": {"name": "terminal",
                                         "arguments": json.dumps({"command": f"echo {turn}-{k}"})}}
                           for k in range(calls)]}


def multi_turn(target, port, turns=3, calls=4):
    """One tool-label session: `turns` turns of `calls` terminal calls; seconds per respond."""
    process = subprocess.Popen([target, "environments", "serve", "--stdio"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    reader = process.stdout

    def ask(request):
        write_all(process.stdin.fileno(), (json.dumps(request) + "\n").encode())
        reply = json.loads(reader.readline())
        if not reply.get("ok"):
            raise RuntimeError(f"{request['op']}: {reply.get('error')}")
        return reply

    args = {"dataset": "rows.jsonl", "max_tool_calls": 64,
            "terminal_server_url": f"http://127.0.0.1:{port}/terminal"}
    row = {"prompt": [{"role": "user", "content": "Judge <output>hello</output>"}],
           "answer": "correct"}
    ask({"id": 0, "op": "hello", "protocol": 1, "client": "bench"})
    seconds = []
    for turn in range(1, turns + 1):
        observed = ask({"id": 2 * turn, "op": "observe", "session": "multi", "env": "tool-label",
                        "args": args, "row": row, "turn": turn,
                        "message": tool_turn(turn, calls)})
        if observed["stop"]:
            raise RuntimeError(f"turn {turn} stopped: {observed}")
        started = time.perf_counter()
        responded = ask({"id": 2 * turn + 1, "op": "respond", "session": "multi", "turn": turn,
                         "trajectory_len": turn, "max_turns": 65, "completion_tokens": None,
                         "max_total_completion_tokens": None})
        seconds.append(time.perf_counter() - started)
        if len(responded["messages"]) != calls:
            raise RuntimeError(f"turn {turn}: {len(responded['messages'])} tool messages")
    ask({"id": 100, "op": "release", "session": "multi"})
    process.stdin.close()
    process.wait(timeout=30)
    return seconds


# -------------------------------------------------------------------------------- reporting

def percentile(ordered, fraction):
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def report(name, result, count):
    lat = result["latencies"]
    return (f"  {name:<20} {count / result['wall']:9.0f} msg/s  p50 "
            f"{percentile(lat, 0.5) * 1e3:7.3f} ms  p99 {percentile(lat, 0.99) * 1e3:7.3f} ms  "
            f"server CPU {result['server_cpu'] / count * 1e6:6.1f} us/req  "
            f"(client CPU {result['client_cpu']:.2f} s)")


def ratios(name, ours, theirs):
    return (f"  {name:<20} msg/s {theirs['wall'] / ours['wall']:5.2f}x, p99 "
            f"{percentile(theirs['latencies'], 0.99) / percentile(ours['latencies'], 0.99):5.2f}x"
            f" lower, server CPU {theirs['server_cpu'] / max(ours['server_cpu'], 1e-9):5.2f}x "
            f"less; value mismatches: "
            f"{sum(a != b for a, b in zip(ours['values'], theirs['values']))}")


def best_of(repeat, run):
    best = None
    for _ in range(repeat):
        result = run()
        if best is None or result["wall"] < best["wall"]:
            best = result
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="primebeaker (Release), or the driver")
    parser.add_argument("--baseline", help="an earlier build to measure in the same run")
    parser.add_argument("--requests", type=int, default=50000)
    parser.add_argument("--window", type=int, default=64, help="requests in flight")
    parser.add_argument("--repeat", type=int, default=3, help="best of (by wall time)")
    parser.add_argument("--shim-requests", type=int, default=20000,
                        help="requests through the shim's client (0: skip part 2)")
    parser.add_argument("--turns", type=int, default=3, help="multi-turn turns (0: skip part 3)")
    options = parser.parse_args()
    targets = {"primebeaker": os.path.abspath(options.binary)}
    if options.baseline:
        targets["primebeaker before"] = os.path.abspath(options.baseline)
    targets["Python stand-in"] = os.path.join(HERE, "py_serve.py")
    requests = make_requests(options.requests)
    lines = [encode(i, request) for i, request in enumerate(requests)]
    size = sum(len(line) for line in lines) / len(lines)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs; "
          f"label score requests of {size / 1024:.1f} KiB, best of {options.repeat}")

    print("1. server capacity (lean driver)")
    for window in (options.window, 1):
        count = options.requests if window > 1 else min(options.requests, 5000)
        print(f" window {window} ({count} requests):")
        results = {}
        for name, target in targets.items():
            results[name] = best_of(options.repeat, lambda: lean_run(target, lines[:count], window))
            print(report(name, results[name], count))
        python = results["Python stand-in"]
        for name in targets:
            if name != "Python stand-in":
                print(ratios(f"{name} / Python", results[name], python))

    if options.shim_requests:
        count = min(options.requests, options.shim_requests)
        print(f"2. through the shim's child client, window {options.window} ({count} requests):")
        results = {}
        for name, target in targets.items():
            results[name] = best_of(
                options.repeat,
                lambda: asyncio.run(shim_run(target, requests[:count], options.window)))
            print(report(name, results[name], count))
        for name in targets:
            if name != "Python stand-in":
                print(ratios(f"{name} / Python", results[name], results["Python stand-in"]))

    if options.turns:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowTerminal)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(f"3. multi-turn tool-label session, 4 terminal calls of 1 s per turn:")
        for name, target in targets.items():
            if name == "Python stand-in":
                continue
            seconds = multi_turn(target, server.server_address[1], options.turns)
            print(f"  {name:<20} respond " + ", ".join(f"{s:.2f} s" for s in seconds))
        server.shutdown()
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
