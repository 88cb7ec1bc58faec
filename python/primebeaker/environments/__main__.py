# SPDX-License-Identifier: MIT
"""`python -m primebeaker.environments [NAME]`: the binary's `environments list` / `resolve`."""

import os
import sys

from . import _binary

if __name__ == "__main__":
    args = sys.argv[1:]
    command = ["environments", "resolve", *args] if args else ["environments", "list", "--keys"]
    binary = _binary.binary_path()
    os.execv(binary, [binary, *command])
