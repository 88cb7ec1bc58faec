# SPDX-License-Identifier: MIT
"""`rubrichub-judge` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-rubrichub-judge`, with the `null`
harness (single turn). The logic runs in the primebeaker binary (docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcRubrichubJudgeTaskset(_v1.PrimebeakerTaskset):
    ENV = "rubrichub-judge"


__all__ = ["JtcRubrichubJudgeTaskset"]
