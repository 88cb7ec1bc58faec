// SPDX-License-Identifier: MIT
// The attempt directory's shared formats and the peer watcher's rule (peers.hpp).
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/text.hpp>
#include <primebeaker/node/peers.hpp>

#include <fmt/format.h>

namespace pb::node {

std::string gpu_range(const Slice &slice) {
  if (slice.count == 0) {
    return "none";
  }
  if (slice.count == 1) {
    return std::to_string(slice.start);
  }
  return fmt::format("{}-{}", slice.start, slice.start + slice.count - 1);
}

std::string layout_text(const Slice &slice) {
  return fmt::format("{} {}", slice.start, slice.count);
}

std::optional<Slice> parse_layout(const std::string &text) {
  const auto parts = text::split(text::trim(text), ' ');
  if (parts.size() != 2) {
    return std::nullopt;
  }
  const auto start = text::parse_integer(parts[0]);
  const auto count = text::parse_integer(parts[1]);
  if (!start || !count || *start < 0 || *count < 0) {
    return std::nullopt;
  }
  return Slice{static_cast<int>(*start), static_cast<int>(*count)};
}

std::vector<std::string> tp_blocks(const Slice &slice, int tp) {
  std::vector<std::string> blocks;
  for (int k = 0; k + tp <= slice.count; k += tp) {
    std::vector<std::string> ids;
    for (int g = 0; g < tp; ++g) {
      ids.push_back(std::to_string(slice.start + k + g));
    }
    blocks.push_back(text::join(ids, ","));
  }
  return blocks;
}

std::vector<Worker>
global_workers(const std::vector<NodeSlot> &nodes, int backend_port, int tp, int expected_ranks) {
  std::vector<Worker> workers;
  for (size_t rank = 0; rank < nodes.size(); ++rank) {
    const auto &node = nodes[rank];
    if (tp <= 0 || node.inference.count % tp != 0) {
      throw usage_error(fmt::format("inference slice not divisible by TP: node {} has {} "
                                    "inference GPUs, INFERENCE_TP={}",
                                    rank,
                                    node.inference.count,
                                    tp));
    }
    for (int k = 0; k < node.inference.count / tp; ++k) {
      Worker w;
      w.url = fmt::format("http://{}:{}", node.host, backend_port + k);
      w.admin_url = w.url + "/v1";
      workers.push_back(std::move(w));
    }
  }
  if (static_cast<int>(workers.size()) != expected_ranks) {
    throw usage_error(fmt::format("inference rank count mismatch: the nodes provide {} "
                                  "inference ranks, TOTAL_INFER_RANKS={}",
                                  workers.size(),
                                  expected_ranks));
  }
  return workers;
}

std::optional<int> watcher_verdict(const Observation &seen, bool sft) {
  if (seen.complete && !sft) {
    return 0;
  }
  if (seen.shutdown_requested) {
    return static_cast<int>(ExitCode::peer_shutdown);
  }
  for (const auto &[rank, status] : seen.statuses) {
    if (status.code != 0) {
      return static_cast<int>(ExitCode::peer_failed);
    }
  }
  if (sft) {
    return std::nullopt;
  }
  for (const auto &[rank, status] : seen.statuses) {
    // Only a trainer-bearing replica's success ends the job: inference replicas (dense, or a
    // disaggregated deployment's prefill and decode ones) serve until then.
    if (status.role != "inference" && status.role != "prefill" && status.role != "decode") {
      return 0;
    }
  }
  if (!seen.statuses.empty()) {
    return static_cast<int>(ExitCode::unexpected_exit);
  }
  return std::nullopt;
}

std::string status_text(int code, const std::string &role) {
  return fmt::format("{} {}\n", code, role);
}

std::optional<PeerStatus> parse_status(const std::string &text) {
  const auto parts = text::split(text::trim(text), ' ');
  if (parts.size() != 2) {
    return std::nullopt;
  }
  const auto code = text::parse_integer(parts[0]);
  if (!code) {
    return std::nullopt;
  }
  return PeerStatus{static_cast<int>(*code), parts[1]};
}

} // namespace pb::node
