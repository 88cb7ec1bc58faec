# SPDX-License-Identifier: MIT
"""`rubrichub-judge`: the Verifiers entry point; the logic runs in the primebeaker binary."""

from ._shim import make_loader

load_environment = make_loader("rubrichub-judge")
