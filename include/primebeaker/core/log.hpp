// SPDX-License-Identifier: MIT
#pragma once

namespace pb::log {

// Sets up the stderr logger: warnings only by default, -v info, -vv debug. Colour only on a
// terminal and never with NO_COLOR. Use spdlog's free functions (spdlog::info, ...) after this.
void init(int verbosity);

// True when stderr is a terminal (for progress lines).
bool stderr_is_terminal();

} // namespace pb::log
