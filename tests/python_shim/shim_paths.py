# SPDX-License-Identifier: MIT
"""Puts the repository's python/ first on sys.path, and the stand-ins for Verifiers and datasets
after it when the real packages are missing. Test modules import this before the package."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
try:
    import verifiers as vf  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "stand_in"))
    import verifiers as vf
try:
    import datasets  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "stand_in"))
# The v1 API (Prime-RL v0.9's tasksets) is a subpackage; the stand-in has one too.
try:
    import verifiers.v1 as vf_v1  # noqa: F401
except ImportError:
    vf_v1 = None
