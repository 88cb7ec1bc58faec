# SPDX-License-Identifier: MIT
"""The built-in harnesses' namespace (the stand-in ships only `null`)."""
