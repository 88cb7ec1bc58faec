// SPDX-License-Identifier: MIT
// The generated tables behind lazy registration (docs/ARCHITECTURE.md, "The root command").
#pragma once

#include <cstdint>
#include <span>

namespace pb::cli {

class CommandTree;

// A module that declares COMMANDS: its name and its register_commands().
struct CommandModule {
  const char *name;
  void (*register_commands)(CommandTree &tree);
};

// Every command module, in build order (src/cli/CMakeLists.txt, generated at configure time).
std::span<const CommandModule> command_modules();

// A top-level command and the modules that add to it (bit i = command_modules()[i]). Learnt at
// build time by registering each module alone (src/cli/command_map_main.cpp).
struct TopLevelCommand {
  const char *name;
  const char *description;
  std::uint64_t modules;
};

// Every top-level command of the whole tree, sorted by name (generated at build time).
std::span<const TopLevelCommand> top_level_commands();

} // namespace pb::cli
