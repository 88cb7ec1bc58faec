# SPDX-License-Identifier: MIT
"""`search-agent-visit-judge` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-search-agent-visit-judge`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcSearchAgentVisitJudgeTaskset(_v1.PrimebeakerTaskset):
    ENV = "search-agent-visit-judge"


class JtcSearchAgentVisitJudgeHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcSearchAgentVisitJudgeTaskset", "JtcSearchAgentVisitJudgeHarness"]
