// SPDX-License-Identifier: MIT
// `primebeaker node rl` and `primebeaker node sft`: the in-container replica runtime.
#include "runtime.hpp"

#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>

namespace pb::node {

void register_commands(pb::cli::CommandTree &tree) {
  tree.command(
      {"node"},
      "In-container runtime: what each replica of a rendered spec runs (reads its settings "
      "from the environment the rendered spec sets)");
  auto &rl = tree.command({"node", "rl"},
                          "Run one replica of a multi-node RL job: trainer, orchestrator, vLLM "
                          "router and tool gateway on replica 0, inference servers everywhere");
  rl.callback([] { run_rl(pb::env::snapshot()); });
  auto &sft =
      tree.command({"node", "sft"}, "Run one replica of a multi-node SFT job (torchrun node)");
  sft.callback([] { run_sft(pb::env::snapshot()); });
}

} // namespace pb::node
