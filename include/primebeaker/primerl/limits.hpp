// SPDX-License-Identifier: MIT
// The GPU and node limits every launch and every replica check (docs/contract.md, "Limits"):
// bounding each TOML count first keeps all GPU arithmetic far from std::int64_t overflow.
#pragma once

#include <cstdint>

namespace pb::primerl {

// GPUs on one node (GPUS_PER_NODE, trainer and inference GPU counts, tensor parallelism).
inline constexpr std::int64_t k_max_gpus_per_node = 1024;
// Beaker replicas of one multi-node task (TOTAL_NODES).
inline constexpr std::int64_t k_max_nodes = 100'000;
// Inference ranks (vLLM engines) of one multi-node RL job (TOTAL_INFER_RANKS).
inline constexpr std::int64_t k_max_infer_ranks = 1'000'000;

} // namespace pb::primerl
