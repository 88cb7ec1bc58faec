# SPDX-License-Identifier: MIT
"""`tool-label` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-tool-label`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcToolLabelTaskset(_v1.PrimebeakerTaskset):
    ENV = "tool-label"


class JtcToolLabelHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcToolLabelTaskset", "JtcToolLabelHarness"]
