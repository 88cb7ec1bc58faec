# SPDX-License-Identifier: MIT
"""`label` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-label`, with the `null`
harness (single turn). The logic runs in the primebeaker binary (docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcLabelTaskset(_v1.PrimebeakerTaskset):
    ENV = "label"


__all__ = ["JtcLabelTaskset"]
