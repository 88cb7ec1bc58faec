#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Evaluation preview figures (bench/evaluation/README.md).

1. Every corpus YAML previewed by one `primebeaker evaluation preview A.yaml B.yaml ...`
   against the anchor: one `primebeaker evaluation preview X.yaml` process per YAML.
2. The embedded Python helper's share of one preview command: the helper's own wall time (a
   timing wrapper given as --python) against the whole command's wall time, same runs.

The tests' fake LiteRegistry packages go on PYTHONPATH and every template the corpus
names gets a stand-in file under a --template-dir, as in the tests. Nothing is submitted.
Usage: bench/evaluation/run.py [path/to/primebeaker] [--corpus DIR] [--runs N]
"""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The fake LiteRegistry packages the tests use (tests/services/fake_literegistry.hpp).
FAKE_LITEREGISTRY = ROOT / "tests/support/fake_literegistry"
WRAPPER = '''#!/bin/bash
start=$(date +%s%N)
"{python}" "$@"
status=$?
echo $(( $(date +%s%N) - start )) >> "{log}"
exit $status
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default=str(ROOT / "build/release/primebeaker"))
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared/corpus/primebeaker-eval-configs"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    yamls = sorted(str(p) for p in pathlib.Path(args.corpus).glob("*.yaml"))
    with tempfile.TemporaryDirectory(prefix="pb-eval-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        shutil.copytree(FAKE_LITEREGISTRY, tmp / "py", ignore=shutil.ignore_patterns("__pycache__"))
        templates = tmp / "templates-root"
        for path in yamls:
            for name in re.findall(r"template_path:\s*(\S+)", pathlib.Path(path).read_text()):
                target = templates / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text('{"stand_in": true}')
        log = tmp / "helper-ns.log"
        wrapper = tmp / "timed-python"
        wrapper.write_text(WRAPPER.format(python=sys.executable, log=log))
        wrapper.chmod(0o755)
        env = dict(os.environ, PYTHONPATH=str(tmp / "py"), NO_COLOR="1")
        base = [binary, "evaluation", "preview", "--image", "beaker://01BENCH",
                "--template-dir", str(templates)]

        def run(argv):
            start = time.perf_counter()
            subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
            return time.perf_counter() - start

        run(base + yamls)  # warm-up, and fail early
        one_process = [run(base + yamls) for _ in range(args.runs)]
        per_yaml = [sum(run(base + [path]) for path in yamls) for _ in range(args.runs)]

        single = yamls[0]
        log.write_text("")
        whole = [run(base + ["--python", str(wrapper), single]) for _ in range(args.runs * 4)]
        helper = [int(line) / 1e9 for line in log.read_text().split()]
        bare = [run([sys.executable, "-c", "pass"]) for _ in range(args.runs * 4)]

    load = os.getloadavg()[0]
    one, many = statistics.median(one_process), statistics.median(per_yaml)
    print(f"machine load average (1 min): {load:.1f}; binary: {binary}")
    print(f"{len(yamls)} corpus YAMLs, one process:         median {one * 1000:8.1f} ms "
          f"({one / len(yamls) * 1000:.1f} ms per YAML)")
    print(f"{len(yamls)} corpus YAMLs, one process per YAML: median {many * 1000:8.1f} ms "
          f"({many / len(yamls) * 1000:.1f} ms per YAML)")
    print(f"ratio one process / per-YAML processes: {one / many:.3f}  ({many / one:.1f}x faster)")
    command, python = statistics.median(whole), statistics.median(helper)
    print(f"preview of one YAML, whole command:     median {command * 1000:8.1f} ms")
    print(f"  of which the Python helper process:   median {python * 1000:8.1f} ms "
          f"({python / command * 100:.0f}% of the command)")
    print(f"  bare `python3 -c pass` (floor):       median {statistics.median(bare) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
