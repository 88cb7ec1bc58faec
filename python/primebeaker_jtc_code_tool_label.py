# SPDX-License-Identifier: MIT
"""`code-tool-label` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-code-tool-label`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcCodeToolLabelTaskset(_v1.PrimebeakerTaskset):
    ENV = "code-tool-label"


class JtcCodeToolLabelHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcCodeToolLabelTaskset", "JtcCodeToolLabelHarness"]
