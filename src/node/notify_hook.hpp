// SPDX-License-Identifier: MIT
// Private to node: what `node single` posts about its own run (docs/notify.md "Who posts"):
// Beaker restarts a single-node run in the same experiment, so only its runtime sees a restart.
#pragma once

#include "recovery.hpp"

namespace pb::node {

// After the start is recorded: a restart after a preemption or a failure, or a refused start
// (the budget spent, or another refusal: failed). No-op for other replicas. Never throws.
void notify_start(const RecoveryOutcome &outcome);
// At the end: succeeded (0) or failed (any code but a signal's 130/143, which the next start
// tells apart). Waits a few seconds at most for the post. No-op for other replicas.
void notify_end(const RecoveryOutcome &outcome, int code);

} // namespace pb::node
