# SPDX-License-Identifier: MIT
# The evaluation module the worker tests run as `python3 -m fakeeval ARGS...` (copied into a temp
# PYTHONPATH as fakeeval/__main__.py). It records what it was started with into
# $FAKE_EVAL_RECORD (atomically, as JSON), then behaves as its arguments say:
#   --exit N         exit with status N (default 0)
#   --sleep S        sleep S seconds first
#   --grandchild     start `sleep 300` in the same process group and record its pid
#   --ignore-signals ignore SIGINT, SIGTERM and SIGHUP (the worker must escalate to SIGKILL)
#   --kill-self SIG  send itself signal SIG
import json
import os
import signal
import subprocess
import sys
import time


def option(args, name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


def main():
    started = time.time()
    args = sys.argv[1:]
    record = {
        "argv": sys.argv,
        "args": args,
        "env": dict(os.environ),
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "started": started,
    }
    if "--ignore-signals" in args:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
    if "--grandchild" in args:
        record["grandchild"] = subprocess.Popen(["sleep", "300"]).pid
    path = os.environ["FAKE_EVAL_RECORD"]
    with open(path + ".tmp", "w") as out:
        json.dump(record, out)
    os.replace(path + ".tmp", path)
    if option(args, "--kill-self"):
        os.kill(os.getpid(), int(option(args, "--kill-self")))
        time.sleep(30)
    if option(args, "--sleep"):
        time.sleep(float(option(args, "--sleep")))
    sys.exit(int(option(args, "--exit", "0")))


main()
