// SPDX-License-Identifier: MIT
// What the running program knows about itself without reading a file: its ELF build id, the
// file it was loaded from, how to start it again, and the shared objects mapped into it. Staging
// (docs/staging.md) names and copies the program from these; the node runtime re-runs itself.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace pb::self {

// The GNU build id the linker recorded (lowercase hex), read from the program's own mapped
// notes: no file is opened, so naming a stage costs nothing at preview. Empty when the link
// recorded none.
std::string build_id();

// True when a dynamic loader was run as the program (`ld-linux-x86-64.so.2 ... PROGRAM`), as a
// staged wrapper does: /proc/self/exe is then the loader, not primebeaker.
bool started_by_loader();

// The ELF file of primebeaker itself: PROGRAM when started_by_loader(), else /proc/self/exe.
std::filesystem::path executable();

// What to exec to run primebeaker again (argv[0] of the children that run our subcommands):
// the staged wrapper (argv[0], which the wrapper sets with the loader's --argv0) when
// started_by_loader(), else executable().
std::filesystem::path command();

// Every shared object mapped into the process now, by absolute path, loader included, in load
// order and without duplicates; not the program itself, nor the vDSO.
std::vector<std::filesystem::path> loaded_objects();

} // namespace pb::self
