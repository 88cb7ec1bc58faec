// SPDX-License-Identifier: MIT
#pragma once

#include <primebeaker/core/process.hpp>

namespace pb::proc {

// Replaces the current process with `command` (in-container commands hand over to Prime-RL
// this way, so signals reach it directly). argv[0] is looked up on the PATH of the command's
// environment; env_set/env_unset/clear_env and cwd apply; stdout and stderr are flushed first.
// Returns only by throwing pb::Error exit 4 (not found, or execve failed).
[[noreturn]] void exec_replace(const Command &command);

} // namespace pb::proc
