# SPDX-License-Identifier: MIT
"""The built-in tasksets' namespace: id resolution tries `verifiers.v1.tasksets.<id>` first."""
