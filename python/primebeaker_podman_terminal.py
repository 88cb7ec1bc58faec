# SPDX-License-Identifier: MIT
"""`podman-terminal` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-podman-terminal`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class PodmanTerminalTaskset(_v1.PrimebeakerTaskset):
    ENV = "podman-terminal"


class PodmanTerminalHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["PodmanTerminalTaskset", "PodmanTerminalHarness"]
