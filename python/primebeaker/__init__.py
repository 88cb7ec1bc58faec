# SPDX-License-Identifier: MIT
"""The Python side of primebeaker: entry points that Prime-RL and Verifiers import by module
path. The work is done by the `primebeaker` binary (docs/environments-runtime.md)."""
