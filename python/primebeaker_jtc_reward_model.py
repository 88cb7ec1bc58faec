# SPDX-License-Identifier: MIT
"""`reward-model` as a Verifiers v1 taskset: Prime-RL v0.9 names it `primebeaker-jtc-reward-model`, with the `null`
harness (single turn). The logic runs in the primebeaker binary (docs/environments-runtime.md)."""

from primebeaker.environments import _v1


class JtcRewardModelTaskset(_v1.PrimebeakerTaskset):
    ENV = "reward-model"


__all__ = ["JtcRewardModelTaskset"]
