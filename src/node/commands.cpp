// SPDX-License-Identifier: MIT
// `primebeaker node rl|sft|single`: the in-container replica runtime.
#include "runtime.hpp"
#include "single.hpp"

#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/process.hpp>

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

  auto &program = tree.make_options<std::string>();
  auto &single = tree.command({"node", "single"},
                              "In-container: run a single-node Prime-RL job from the spec's env "
                              "(setup command, caches, checks, then exec sft/rl)");
  single.add_option("PROGRAM", program, "sft or rl").required();
  single.callback([&program] {
    proc::SystemRunner runner;
    const int code = run_single_node(plan_single_node(program, pb::env::snapshot()), runner);
    if (code != 0) {
      throw Error(code, "");
    }
  });
}

} // namespace pb::node
