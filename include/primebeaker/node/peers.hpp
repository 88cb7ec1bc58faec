// SPDX-License-Identifier: MIT
// What replicas of one job tell each other through the attempt directory (docs/node.md): the GPU
// layout each publishes, the inference worker list built from them, each replica's exit status,
// and the peer watcher's rule. Pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::node {

// A contiguous GPU range on one node.
struct Slice {
  int start = 0;
  int count = 0;
};

// "0-3", "4", or "none": a slice as people read it.
std::string gpu_range(const Slice &slice);

// "start count" as published in layout.<rank>, and back (nullopt when malformed).
std::string layout_text(const Slice &slice);
std::optional<Slice> parse_layout(const std::string &text);

// The CUDA_VISIBLE_DEVICES value of each TP block of a slice ("4,5", "6,7").
std::vector<std::string> tp_blocks(const Slice &slice, int tp);

struct Worker {
  std::string url;       // http://<host>:<port>
  std::string admin_url; // <url>/v1
};
struct NodeSlot {
  std::string host;
  Slice inference;
};
// Every inference rank of the job in rank order (docs/node.md). Exit 2 when a slice is
// not divisible by tp or the total differs from `expected_ranks`.
std::vector<Worker>
global_workers(const std::vector<NodeSlot> &nodes, int backend_port, int tp, int expected_ranks);

// What the peer watcher saw in the rendezvous directory (docs/node.md).
struct PeerStatus {
  int code = 0;
  std::string role; // "trainer", "mixed", "inference", "sft"
};
struct Observation {
  bool complete = false;
  bool shutdown_requested = false;
  std::map<int, PeerStatus> statuses; // other ranks only
};
// The exit code the watcher asks for, or nullopt to keep running: 0 when `complete`, 92 when a
// shutdown was requested, 90 for a failed peer, 0 for a finished non-inference peer, 91 for an
// inference peer that exited cleanly. With `sft`, peers that exited 0 are not a verdict.
std::optional<int> watcher_verdict(const Observation &seen, bool sft = false);
// "<code> <role>" of status.<rank>, and back.
std::string status_text(int code, const std::string &role);
std::optional<PeerStatus> parse_status(const std::string &text);

} // namespace pb::node
