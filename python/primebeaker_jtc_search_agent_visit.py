# SPDX-License-Identifier: MIT
"""`search-agent-visit` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-search-agent-visit`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcSearchAgentVisitTaskset(_v1.PrimebeakerTaskset):
    ENV = "search-agent-visit"


class JtcSearchAgentVisitHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcSearchAgentVisitTaskset", "JtcSearchAgentVisitHarness"]
