#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The walk of the replica runtime from one entry point (docs/node.md "Where things live").

Compiles every src/node/*.cpp once more with GCC's -fcallgraph-info (flags from the build's
compile_commands.json), joins the per-file call graphs, and walks the calls from the entry
(default pb::node::run_rl) depth first in source order, each function of src/node once. The walk
is printed as the files it passes through: a *stay* is each time it enters a file, a *return*
each time it enters a file it was in before. A re-cut that keeps the planner pure enters
replica_plan.cpp once and leaves it once.

  python3 tools/node_walk.py build/dev [--entry run_rl] [--verbose]
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

NODE = re.compile(r'node: \{ title: "([^"]+)" label: "((?:[^"\\]|\\.)*)"')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)" label: "([^"]*)"')


def graphs(build, root):
    commands = json.load(open(os.path.join(build, "compile_commands.json")))
    out = tempfile.mkdtemp(prefix="pb-walk-")
    for entry in commands:
        source = entry["file"]
        if not re.search(r"/src/node/[^/]+\.cpp$", source) or "/build" in source:
            continue
        argv = shlex.split(entry["command"])
        i = argv.index("-o")
        argv[i + 1] = os.path.join(out, os.path.basename(source) + ".o")
        argv += ["-fcallgraph-info", "-dumpdir", out + "/"]
        subprocess.run(argv, cwd=entry["directory"], check=True)
    return [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".ci")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--entry", default="run_rl")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    where = {}  # mangled name -> (file, line, readable name) for functions defined in src/node
    calls = {}  # mangled name -> [(line, callee)]
    for ci in graphs(args.build, root):
        text = open(ci).read()
        for title, label in NODE.findall(text):
            # Functions of internal linkage are titled "<file>:<name>", the others "<name>".
            name = title.split(":", 1)[1] if title.startswith("/") else title
            readable, _, location = label.replace("\\n", "\n").partition("\n")
            # Defined in a .cpp of src/node; inline members of headers are walked through.
            m = re.match(r"(.*/src/node/[^/:]+\.(?:cpp|hpp)):(\d+)", location)
            if m:
                kind = "cpp" if m.group(1).endswith(".cpp") else "hpp"
                # A declaration in a header is what a caller's file sees; the definition wins.
                if kind == "cpp" or name not in where:
                    where[name] = (os.path.basename(m.group(1)), int(m.group(2)), readable, kind)
        for source, target, label in EDGE.findall(text):
            s = source.split(":", 1)[1] if source.startswith("/") else source
            t = target.split(":", 1)[1] if target.startswith("/") else target
            parts = label.rsplit(":", 2)
            at = (int(parts[1]), int(parts[2])) if len(parts) == 3 else (0, 0)
            calls.setdefault(s, []).append((at, t))
    # A lambda is called through std::function or std::visit's table of function pointers,
    # which a static call graph does not see: it counts as a callee of the function defining it.
    by_signature = {}
    for name, (_f, _l, readable, _k) in where.items():
        by_signature.setdefault(readable.split(" ", 1)[-1], []).append(name)
        by_signature.setdefault(readable, []).append(name)
    for name, (_f, line, readable, _k) in where.items():
        if "::<lambda" in readable:
            parent = readable[:readable.index("::<lambda")]
            for owner in by_signature.get(parent, []):
                calls.setdefault(owner, []).append(((line, 0), name))
    entries = [n for n, (f, _, r, _k) in where.items()
               if re.search(rf"\bpb::node::{args.entry}\(", r)]
    if not entries:
        sys.exit(f"no pb::node::{args.entry} in src/node")
    seen = set()
    files = []

    def walk(name, caller_file):
        # Library code (std::visit, lambdas' invokers) is walked through as part of its caller.
        seen.add(name)
        file, kind = caller_file, "lib"
        if name in where:
            file, _, readable, kind = where[name]
            if kind == "hpp":
                file = caller_file  # an inline member: part of its caller's file
            if args.verbose:
                print(f"  {file}: {readable}")
        files.append(file)
        for _, callee in sorted(calls.get(name, [])):
            if callee in calls or callee in where:
                if callee not in seen:
                    walk(callee, file)
                    files.append(file)  # back in the caller

    walk(entries[0], where[entries[0]][0])
    stays = [f for k, f in enumerate(files) if k == 0 or files[k - 1] != f]
    returns = sum(1 for k, f in enumerate(stays) if f in stays[:k])
    visits = {f: stays.count(f) for f in sorted(set(stays))}
    print(" -> ".join(stays))
    print(json.dumps({"entry": args.entry, "stays": len(stays), "returns": returns,
                      "visits": visits}, indent=2))


if __name__ == "__main__":
    main()
