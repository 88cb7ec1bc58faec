# SPDX-License-Identifier: MIT
"""`multiple-choice-accuracy` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-multiple-choice-accuracy`, with the `null`
harness (single turn). The logic runs in the primebeaker binary (docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcMultipleChoiceAccuracyTaskset(_v1.PrimebeakerTaskset):
    ENV = "multiple-choice-accuracy"


__all__ = ["JtcMultipleChoiceAccuracyTaskset"]
