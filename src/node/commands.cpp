// SPDX-License-Identifier: MIT
// `primebeaker node rl|sft|single`: the in-container replica runtime.
#include "runtime.hpp"

#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>

#include <fmt/format.h>

namespace pb::node {

void register_commands(pb::cli::CommandTree &tree) {
  tree.command(
      {"node"},
      "In-container runtime: what each replica of a rendered spec runs (reads its settings "
      "from the environment the rendered spec sets)");
  auto &rl = tree.command({"node", "rl"},
                          "Run one replica of a multi-node RL job: trainer, orchestrator, vLLM "
                          "router and tool gateway on replica 0, inference servers everywhere");
  struct DryRun {
    bool dry_run = false;
    bool json = false;
  };
  auto &rl_options = tree.make_options<DryRun>();
  rl.add_flag("--dry-run",
              rl_options.dry_run,
              "Print this replica's plan (docs/node.md) and exit, with no side effects");
  rl.add_flag("--json", rl_options.json, "With --dry-run: the plan as one JSON object");
  rl.callback([&rl_options] {
    if (rl_options.dry_run) {
      const auto plan = plan_rl_here(pb::env::snapshot());
      fmt::print("{}", rl_options.json ? plan_json(plan) : plan_text(plan));
      return;
    }
    run_rl(pb::env::snapshot());
  });
  auto &sft =
      tree.command({"node", "sft"}, "Run one replica of a multi-node SFT job (torchrun node)");
  auto &sft_options = tree.make_options<DryRun>();
  sft.add_flag("--dry-run",
               sft_options.dry_run,
               "Print this replica's plan (docs/node.md) and exit, with no side effects");
  sft.add_flag("--json", sft_options.json, "With --dry-run: the plan as one JSON object");
  sft.callback([&sft_options] {
    if (sft_options.dry_run) {
      const auto plan = plan_sft_here(pb::env::snapshot());
      fmt::print("{}", sft_options.json ? plan_json(plan) : plan_text(plan));
      return;
    }
    run_sft(pb::env::snapshot());
  });

  auto &program = tree.make_options<std::string>();
  auto &single_options = tree.make_options<DryRun>();
  auto &single = tree.command({"node", "single"},
                              "In-container: run a single-node Prime-RL job from the spec's env "
                              "(setup command, caches, checks, then exec sft/rl)");
  single.add_option("PROGRAM", program, "sft or rl").required();
  single.add_flag("--dry-run",
                  single_options.dry_run,
                  "Print what this container would do (docs/node.md) and exit, with no side "
                  "effects");
  single.add_flag("--json", single_options.json, "With --dry-run: one JSON object");
  single.callback([&program, &single_options] {
    if (single_options.dry_run) {
      const auto plan = plan_single_here(program, pb::env::snapshot());
      fmt::print("{}", single_options.json ? plan_json(plan) : plan_text(plan));
      return;
    }
    run_single(program, pb::env::snapshot());
  });
}

} // namespace pb::node
