# SPDX-License-Identifier: MIT
"""`search-visit-agent-dataset` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-search-visit-agent`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcSearchVisitAgentTaskset(_v1.PrimebeakerTaskset):
    ENV = "search-visit-agent-dataset"


class JtcSearchVisitAgentHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcSearchVisitAgentTaskset", "JtcSearchVisitAgentHarness"]
