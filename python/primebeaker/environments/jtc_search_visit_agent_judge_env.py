# SPDX-License-Identifier: MIT
"""`search-visit-agent-judge`: the Verifiers entry point; the logic runs in the primebeaker binary."""

from ._shim import make_loader

load_environment = make_loader("search-visit-agent-judge")
