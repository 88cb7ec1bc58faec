// SPDX-License-Identifier: MIT
// Beaker's clusters, read in one place (docs/clusters.md): what `beaker cluster get NAME
// --format json` says of a cluster, the snapshot `primebeaker clusters` and `--cluster auto`
// take, and the pure ranking that places a run.
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pb::beaker {
class Client;
}

namespace pb::clusters {

// Beaker's slot counts; on a GPU cluster a slot is a GPU (docs/clusters.md).
struct SlotCounts {
  std::int64_t total = 0;
  std::int64_t available = 0; // free now; cordoned slots are not among them
  std::int64_t occupied = 0;
  std::int64_t assigned = 0;
  std::int64_t cordoned = 0;
};

struct NodeOccupancy {
  std::string node_id;
  std::int64_t running_jobs = 0;
  SlotCounts slots;
};

struct Cluster {
  std::string name; // ACCOUNT/NAME
  std::int64_t node_count = 0;
  std::int64_t queued_jobs = 0; // clusterJobQueueSize
  std::int64_t node_gpus = 0;   // nodeShape.gpuCount: GPUs of each node
  std::string gpu_type;         // nodeShape.gpuType as Beaker names it
  bool has_occupancy = false;   // clusterOccupancy was in the answer
  std::int64_t running_jobs = 0;
  SlotCounts slots;
  std::vector<NodeOccupancy> nodes;
  // Set when `beaker cluster get` failed for it: shown and ruled out, never chosen.
  std::string error;

  std::int64_t free_gpus() const { return has_occupancy ? slots.available : 0; }
  // Nodes with at least `gpus` free GPUs; `gpus` <= 0 means whole nodes (node_gpus).
  std::int64_t free_nodes(std::int64_t gpus = 0) const;
};

// One cluster from Beaker's JSON (an object, or an array whose first element is one), with
// `requested` as its name unless the answer names it. Protobuf JSON leaves out zero values and
// may write 64-bit integers as strings; both are read. A wrong shape throws pb::Error exit 4
// naming the field.
Cluster parse_cluster(const OrderedJson &answer, const std::string &requested);
// The ACCOUNT/NAME of every cluster in a `beaker cluster list ACCOUNT` answer.
std::vector<std::string> parse_cluster_names(const OrderedJson &answer, const std::string &account);

bool is_glob(std::string_view pattern);
// The clusters `patterns` name: each name as written, each glob (fnmatch) matched against
// `known`; sorted, no duplicates. Pure.
std::vector<std::string> expand_patterns(const std::vector<std::string> &patterns,
                                         const std::vector<std::string> &known);

// What a command learned from Beaker at one moment.
struct Snapshot {
  std::vector<std::string> patterns; // what was asked for (names and globs)
  std::vector<Cluster> clusters;     // sorted by name
  std::string taken_at;              // RFC 3339, UTC
  std::vector<std::string> calls;    // the beaker calls made, as typed ("beaker cluster get X")
};

// `beaker cluster list ACCOUNT` once per account a glob names, then `beaker cluster get` once
// per cluster, at most `workers` at a time. A glob without ACCOUNT/ or matching nothing, or no
// cluster at all, throws pb::Error exit 2 naming `flag`.
Snapshot take_snapshot(beaker::Client &beaker,
                       const std::vector<std::string> &patterns,
                       std::string_view flag,
                       std::size_t workers = 8);

// The clusters asked for when none are configured (docs/clusters.md).
inline constexpr std::string_view k_default_pattern = "ai2/*";
// The word that asks a launch to choose its cluster (`--cluster auto`, `clusters = "auto"`).
inline constexpr std::string_view k_auto = "auto";
// What `configured` (the `clusters` setting, or --cluster's values) asks to look at: its items
// but "auto", else k_default_pattern.
std::vector<std::string> patterns_of(const std::vector<std::string> &configured);

// A `clusters --json` row: cluster, free_gpus, total_gpus, cordoned_gpus, free_nodes (nodes
// with `gpus` free, whole nodes when 0), gpus_per_node, queued_jobs, gpu_type (and error).
OrderedJson row_json(const Cluster &cluster, std::int64_t gpus);

// ---- placing a run (`--cluster auto`) ----

struct Need {
  std::int64_t nodes = 1;         // replicas of a multi-node run, 1 otherwise
  std::int64_t gpus_per_node = 0; // GPUs each node must have free
};

struct Candidate {
  std::string cluster;
  bool can_host = false; // its nodes have gpus_per_node GPUs and it has `nodes` of them
  bool fits_now = false; // `nodes` nodes with gpus_per_node GPUs free right now
  std::int64_t free_nodes = 0;
  std::int64_t free_gpus = 0;
  std::int64_t queued_jobs = 0;
  std::string why; // "4 of 6 free nodes needed, 2 jobs queued"
};

struct Placement {
  Need need;
  std::vector<Candidate> ranking; // best first; those that cannot host last
  std::string chosen;             // "" when no cluster can host the run
  bool fits_now = false;          // the chosen cluster fits it now
  std::string reason;             // one line: why `chosen`
  Snapshot snapshot;
};

// Rules out clusters where the run does not fit on whole nodes now, then prefers the fewest
// queued jobs, then the most free GPUs (then the name). When nothing fits now, ranks the
// clusters that can host it at all by queue, then free GPUs, and says so. Pure.
Placement rank(const Snapshot &snapshot, const Need &need);

// The placement as the receipt records it: need, chosen, fits_now, reason, ranking, snapshot.
OrderedJson to_json(const Placement &placement);

} // namespace pb::clusters
