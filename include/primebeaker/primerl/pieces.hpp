// SPDX-License-Identifier: MIT
// What an image must hold for a TOML's deployment shape (docs/launch.md "What the image holds"):
// the programs and libraries beyond Prime-RL itself that a shape's processes use. Images name
// what they hold in the catalog (`holds`), an uncataloged --image with --image-holds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pb::toml {
class Document;
}

namespace pb::primerl {

// The pieces primebeaker knows, as catalogs and --image-holds spell them.
inline constexpr std::string_view k_piece_vllm_router = "vllm-router";
inline constexpr std::string_view k_piece_deepep = "deepep";
inline constexpr std::string_view k_piece_nixl = "nixl";
// NIXL built against UCX 1.19 (Prime-RL's INCLUDE_NIXL_FROM_SOURCE=1), which Prime-RL requires
// for prefill->decode KV transfer; its published images hold the pip wheel only.
inline constexpr std::string_view k_piece_nixl_ucx = "nixl-ucx-1.19";
inline constexpr std::string_view k_piece_llm_d = "llm-d";
inline constexpr std::string_view k_piece_mooncake = "mooncake";

struct NeededPiece {
  std::string piece; // "nixl"
  std::string why;   // "disaggregated prefill/decode (inference.deployment.type)"
};

// The pieces the TOML's shape needs, at either generation's keys: vllm-router for multi-node RL
// inference, DeepEP for expert parallelism across engines and for disaggregated inference, NIXL
// for disaggregated KV transfer, llm-d for its router, Mooncake for its KV offload.
std::vector<NeededPiece> pieces_needed(const toml::Document &document);

// Whether the shape runs DeepEP across nodes, which needs host settings a container cannot make
// (the IBGDA driver options of NVSHMEM): the card asks for clusters that provide them.
bool needs_deepep_across_nodes(const toml::Document &document);

// What Prime-RL's published images hold (its Dockerfile.cuda): vllm-router, DeepEP, NIXL. An
// uncataloged --image without --image-holds is taken to hold these.
const std::vector<std::string> &published_image_pieces();

// Every piece primebeaker knows, for --image-holds's check.
const std::vector<std::string> &known_pieces();

// How Prime-RL puts `piece` into an image, for a refusal's hint.
std::string how_to_get(std::string_view piece);

} // namespace pb::primerl
