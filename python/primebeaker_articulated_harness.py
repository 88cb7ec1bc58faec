# SPDX-License-Identifier: MIT
"""`articulated-harness` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-articulated-harness`, for the taskset and
the harness (tool calls). The logic runs in the primebeaker binary
(docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class ArticulatedHarnessTaskset(_v1.PrimebeakerTaskset):
    ENV = "articulated-harness"


class ArticulatedHarnessHarness(_v1.PrimebeakerHarness):
    pass


__all__ = ["ArticulatedHarnessTaskset", "ArticulatedHarnessHarness"]
