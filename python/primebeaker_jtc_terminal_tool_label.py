# SPDX-License-Identifier: MIT
"""`terminal-tool-label` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-terminal-tool-label`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcTerminalToolLabelTaskset(_v1.PrimebeakerTaskset):
    ENV = "terminal-tool-label"


class JtcTerminalToolLabelHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcTerminalToolLabelTaskset", "JtcTerminalToolLabelHarness"]
