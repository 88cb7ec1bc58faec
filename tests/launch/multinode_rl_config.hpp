// SPDX-License-Identifier: MIT
// The smallest multi-node RL config the plan-level tests parse in memory: one trainer node and
// one inference node of 8 GPUs each, W&B set, every other key at its default.
#pragma once

namespace pb::test {

inline constexpr const char *k_multinode_rl = R"(output_dir = "/weka/runs/out"
[deployment]
type = "multi_node"
num_train_nodes = 1
num_infer_nodes = 1
[trainer.model]
dp_replicate = 8
[inference]
api_server_count = 8
[inference.parallel]
dp = 8
[wandb]
project = "p"
name = "source-run"
[orchestrator]
)";

} // namespace pb::test
