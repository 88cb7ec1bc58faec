// SPDX-License-Identifier: MIT
// Real time for the follow loop: Ctrl-C and SIGTERM are noted (core's signal scope), so the loop
// can say how to re-attach and exit 130/143. Nothing is stopped (docs/runs.md "follow").
#pragma once

#include <primebeaker/runs/runs.hpp>

namespace pb::runs {

// The system clock and a sleep that ends early, returning false, once a signal is noted.
Timing interruptible_timing();

} // namespace pb::runs
