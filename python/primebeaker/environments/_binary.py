# SPDX-License-Identifier: MIT
"""Finding the primebeaker binary and asking it one-shot questions (no event loop needed)."""

import json
import os
import shutil
import subprocess


class BinaryError(RuntimeError):
    """The binary is missing, or it failed for a reason other than bad input."""


def binary_path():
    """$PRIMEBEAKER_BIN, else `primebeaker` on PATH."""
    configured = os.environ.get("PRIMEBEAKER_BIN")
    if configured:
        return configured
    found = shutil.which("primebeaker")
    if not found:
        raise BinaryError(
            "primebeaker binary not found: put it on PATH or set PRIMEBEAKER_BIN "
            "(the runtime image installs it as /usr/local/bin/primebeaker)")
    return found


def run_json(args, input_text=None):
    """Runs `primebeaker ARGS...` and parses its stdout as JSON.

    Exit 2 or 3 (bad usage or input) becomes ValueError with the binary's own message, so a
    wrong environment argument reads the same in Python as on the command line."""
    try:
        done = subprocess.run([binary_path(), *args], input=input_text, capture_output=True,
                              text=True, check=False)
    except OSError as error:
        raise BinaryError(f"cannot run {binary_path()}: {error}") from None
    if done.returncode in (2, 3):
        raise ValueError(_message(done.stderr))
    if done.returncode != 0:
        raise BinaryError(f"primebeaker {' '.join(args[:2])} failed "
                          f"(exit {done.returncode}): {_message(done.stderr)}")
    return json.loads(done.stdout)


def run_text(args):
    done = subprocess.run([binary_path(), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ValueError(_message(done.stderr))
    return done.stdout


def describe(name, args):
    """The environment's shape for Verifiers (docs/environments-runtime.md, `describe`)."""
    return run_json(["environments", "describe", name, "--args", json.dumps(args)])


def _message(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not lines:
        return "no message"
    first = lines[0]
    prefix = "primebeaker: error: "
    return first[len(prefix):] if first.startswith(prefix) else first
