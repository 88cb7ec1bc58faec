#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the benchmark inputs: big.toml (~2 MB) and medium.toml (~200 KB), a realistic mix of
tables, sub-tables, arrays of tables, comments, dotted keys, inline tables, arrays and
multi-line strings, and siblings.toml (500 sibling [pkg.pN] tables of 8 commented keys, the shape tomlkit is quadratic
on). Deterministic: the same bytes every run."""
import os
import sys


def section(i):
    return f"""# Section {i}: generated for the benchmark
[service{i}]
name = "service-{i}"          # display name
enabled = {"true" if i % 3 else "false"}
replicas = {i % 17 + 1}
ratio = {i % 100 / 7:.4f}
tags = ["alpha", "beta-{i}", "gamma"]
limits = {{ cpu = "{i % 8 + 1}", memory = "{(i % 16 + 1) * 512}Mi" }}
started = 2024-01-{i % 28 + 1:02d}T08:{i % 60:02d}:00Z
owner.team = "team-{i % 40}"
owner.email = "team{i % 40}@example.org"

[service{i}.env]
LOG_LEVEL = "info"
WORKERS = {i % 9 + 2}
PATH_PREFIX = '/srv/app{i}'

[service{i}.build.flags]
opt = "-O2"
debug = false
defines = [
    "A={i}",
    "B={i * 3}",   # derived
]

[[service{i}.ports]]
port = {8000 + i % 1000}
protocol = "tcp"

[[service{i}.ports]]
port = {9000 + i % 1000}
protocol = "udp"
description = \"\"\"
Secondary port for service {i}.
Multi-line on purpose.\"\"\"

"""


def sibling(i):
    return f"""[pkg.p{i}]
# package {i}
name = "p{i}"  # its name
version = "1.{i}.0"
edition = "2021"
license = "MIT"
optional = {"true" if i % 2 else "false"}
downloads = {i * 1234}
authors = ["a{i}@example.org"]  # who
features = ["x", "y"]

"""


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for name, target in (("medium.toml", 200_000), ("big.toml", 2_000_000)):
        parts = []
        size = 0
        i = 0
        while size < target:
            text = section(i)
            parts.append(text)
            size += len(text)
            i += 1
        with open(os.path.join(out, name), "w", newline="\n") as f:
            f.write("title = \"benchmark\"\nversion = 1\n\n" + "".join(parts))
    with open(os.path.join(out, "siblings.toml"), "w", newline="\n") as f:
        f.write("".join(sibling(i) for i in range(500)))
    print(i)


if __name__ == "__main__":
    main()
