# SPDX-License-Identifier: MIT
"""`search-visit-agent-judge` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-search-visit-agent-judge`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcSearchVisitAgentJudgeTaskset(_v1.PrimebeakerTaskset):
    ENV = "search-visit-agent-judge"


class JtcSearchVisitAgentJudgeHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcSearchVisitAgentJudgeTaskset", "JtcSearchVisitAgentJudgeHarness"]
