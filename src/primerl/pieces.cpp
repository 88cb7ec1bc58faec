// SPDX-License-Identifier: MIT
#include <primebeaker/core/text.hpp>
#include <primebeaker/primerl/limits.hpp>
#include <primebeaker/primerl/pieces.hpp>
#include <primebeaker/toml/value.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace pb::primerl {

namespace {

// The TOML's keys, peeked at either generation's spelling; problems are the readers' to report.
struct Shape {
  const toml::Document &document;

  const toml::Value *find(std::string_view key) const {
    return document.root().find_path(text::split(key, '.'));
  }
  std::optional<std::string> text(std::string_view key) const {
    const toml::Value *value = find(key);
    return value != nullptr && value->string() ? std::optional(*value->string()) : std::nullopt;
  }
  // Out of range reads as `fallback` (the readers report it), so products cannot overflow.
  std::int64_t integer(std::string_view key, std::int64_t fallback, std::int64_t max) const {
    const toml::Value *value = find(key);
    const auto number = value != nullptr ? value->integer() : std::nullopt;
    return number && *number >= 1 && *number <= max ? *number : fallback;
  }
  bool flag(std::string_view key) const {
    const toml::Value *value = find(key);
    return value != nullptr && value->boolean().value_or(false);
  }

  bool multi_node() const { return text("deployment.type").value_or("") == "multi_node"; }
  bool disaggregated() const {
    return multi_node() && text("inference.deployment.type").value_or("") == "disaggregated";
  }
  bool expert_parallel() const {
    return flag("inference.enable_expert_parallel") ||
           flag("inference.vllm.enable_expert_parallel");
  }
  std::int64_t tensor_parallel() const {
    return std::max(integer("inference.parallel.tp", 1, k_max_gpus_per_node),
                    integer("inference.vllm.tensor_parallel_size", 1, k_max_gpus_per_node));
  }
  std::int64_t gpus_per_node() const {
    return integer("deployment.gpus_per_node", 8, k_max_gpus_per_node);
  }
  std::int64_t nodes_per_replica() const {
    return integer("deployment.num_infer_nodes",
                   integer("inference.deployment.num_nodes", 1, k_max_nodes),
                   k_max_nodes);
  }
  // Engines of one DP group: the replica's (dense multi-node EP) or one instance's
  // (disaggregated, the larger of prefill and decode).
  std::int64_t group_dp() const {
    const std::int64_t engines = gpus_per_node() / tensor_parallel();
    if (disaggregated()) {
      return engines *
             std::max(integer("inference.deployment.prefill_nodes_per_replica", 1, k_max_nodes),
                      integer("inference.deployment.decode_nodes_per_replica", 1, k_max_nodes));
    }
    return engines * nodes_per_replica();
  }
  bool deepep_across_nodes() const {
    if (!multi_node() || !expert_parallel()) {
      return false;
    }
    const std::int64_t engines = gpus_per_node() / tensor_parallel();
    return group_dp() > engines;
  }
};

} // namespace

std::vector<NeededPiece> pieces_needed(const toml::Document &document) {
  const Shape shape{document};
  std::vector<NeededPiece> needed;
  if (!shape.multi_node() || shape.find("inference") == nullptr) {
    return needed; // single node: Prime-RL's own `rl` starts what it needs
  }
  // llm-d's router replaces vllm-router (docs/node.md "llm-d and Mooncake").
  const bool llm_d = shape.text("inference.router.type").value_or("") == "llm-d";
  if (!llm_d) {
    needed.push_back({std::string(k_piece_vllm_router), "multi-node RL's router"});
  }
  if (shape.disaggregated()) {
    needed.push_back({std::string(k_piece_nixl),
                      "disaggregated prefill/decode's KV transfer (inference.deployment.type)"});
    needed.push_back({std::string(k_piece_deepep),
                      "disaggregated prefill/decode's all2all (inference.deployment.type)"});
  } else if (shape.expert_parallel() && shape.group_dp() > 1) {
    needed.push_back({std::string(k_piece_deepep),
                      "expert parallelism across engines (enable_expert_parallel)"});
  }
  if (llm_d) {
    needed.push_back({std::string(k_piece_llm_d), "the llm-d router (inference.router.type)"});
  }
  if (shape.text("inference.kv_cache_offload.type").value_or("") == "mooncake") {
    needed.push_back(
        {std::string(k_piece_mooncake), "Mooncake KV offload (inference.kv_cache_offload.type)"});
  }
  return needed;
}

bool needs_deepep_across_nodes(const toml::Document &document) {
  return Shape{document}.deepep_across_nodes();
}

const std::vector<std::string> &published_image_pieces() {
  static const std::vector<std::string> pieces = {
      std::string(k_piece_vllm_router), std::string(k_piece_deepep), std::string(k_piece_nixl)};
  return pieces;
}

const std::vector<std::string> &known_pieces() {
  static const std::vector<std::string> pieces = {std::string(k_piece_vllm_router),
                                                  std::string(k_piece_deepep),
                                                  std::string(k_piece_nixl),
                                                  std::string(k_piece_nixl_ucx),
                                                  std::string(k_piece_llm_d),
                                                  std::string(k_piece_mooncake)};
  return pieces;
}

std::string how_to_get(std::string_view piece) {
  if (piece == k_piece_llm_d || piece == k_piece_mooncake) {
    return "Prime-RL's scripts/install_llmd.sh builds llm-d's epp, envoy and pd-sidecar and "
           "Mooncake's RDMA set-up into an image; its published images do not hold them";
  }
  if (piece == k_piece_nixl) {
    return "Prime-RL's published images hold NIXL (for prefill->decode KV transfer Prime-RL "
           "advises building it with INCLUDE_NIXL_FROM_SOURCE=1)";
  }
  return "Prime-RL's published images hold vllm-router, DeepEP and NIXL";
}

} // namespace pb::primerl
