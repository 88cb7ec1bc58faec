# SPDX-License-Identifier: MIT
"""`multiple-choice-accuracy`: the Verifiers entry point; the logic runs in the primebeaker binary."""

from ._shim import make_loader

load_environment = make_loader("multiple-choice-accuracy")
