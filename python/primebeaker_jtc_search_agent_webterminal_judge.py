# SPDX-License-Identifier: MIT
"""`search-agent-webterminal-judge` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-search-agent-webterminal-judge`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcSearchAgentWebterminalJudgeTaskset(_v1.PrimebeakerTaskset):
    ENV = "search-agent-webterminal-judge"


class JtcSearchAgentWebterminalJudgeHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["JtcSearchAgentWebterminalJudgeTaskset", "JtcSearchAgentWebterminalJudgeHarness"]
