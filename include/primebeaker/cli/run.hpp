// SPDX-License-Identifier: MIT
#pragma once

namespace pb::cli {

// Runs the whole program: parse, dispatch, report errors once as "primebeaker: error: ...".
// Returns the process exit code (docs/ARCHITECTURE.md, "The root command").
int run(int argc, char **argv);

} // namespace pb::cli
