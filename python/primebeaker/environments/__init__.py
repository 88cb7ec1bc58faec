# SPDX-License-Identifier: MIT
"""The 16 primebeaker environments as Verifiers entry points.

Prime-RL names them by module path (`primebeaker.environments.jtc_tool_label_env`); each module
builds a Verifiers v0 environment whose logic runs in the primebeaker binary. The catalog (names,
aliases, arguments) lives in the binary: `primebeaker environments list|show|resolve`."""

import importlib

from . import _binary


def resolve(name):
    """'tool-label', 'jtc_tool_label' or 'tool_label.py' -> 'primebeaker.environments.<module>'."""
    target = _binary.run_text(["environments", "resolve", name]).strip()
    return target.split(":", 1)[0]


def load_environment_module(name):
    return importlib.import_module(resolve(name))


def load_environment(name, **kwargs):
    return load_environment_module(name).load_environment(**kwargs)
