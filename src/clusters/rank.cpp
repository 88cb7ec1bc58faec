// SPDX-License-Identifier: MIT
// Where a run goes with `--cluster auto` (docs/clusters.md "Ranking"). Pure.
#include <primebeaker/clusters/clusters.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::clusters {
namespace {

std::string plural(std::int64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

Candidate assess(const Cluster &cluster, const Need &need) {
  Candidate c;
  c.cluster = cluster.name;
  c.free_gpus = cluster.free_gpus();
  c.queued_jobs = cluster.queued_jobs;
  c.free_nodes = cluster.free_nodes(need.gpus_per_node);
  const std::string queue = plural(cluster.queued_jobs, "job queued", "jobs queued");
  if (!cluster.error.empty()) {
    c.why = "beaker could not describe it: " + cluster.error;
    return c;
  }
  if (cluster.node_gpus < need.gpus_per_node) {
    c.why = fmt::format(
        "its nodes have {} GPUs, the run needs {} on each", cluster.node_gpus, need.gpus_per_node);
    return c;
  }
  if (cluster.node_count > 0 && cluster.node_count < need.nodes) {
    c.why = fmt::format(
        "it has {}, the run needs {}", plural(cluster.node_count, "node", "nodes"), need.nodes);
    return c;
  }
  if (!cluster.has_occupancy) {
    c.why = "beaker gave no occupancy for it"; // nothing to rank it by: never chosen
    return c;
  }
  c.can_host = true;
  c.fits_now = c.free_nodes >= need.nodes;
  c.why = fmt::format("{} {} with {} GPUs free, {} needed; {}",
                      c.fits_now ? "fits now:" : "does not fit now:",
                      plural(c.free_nodes, "node", "nodes"),
                      need.gpus_per_node,
                      need.nodes,
                      queue);
  return c;
}

} // namespace

Placement rank(const Snapshot &snapshot, const Need &need) {
  Placement placement;
  placement.need = need;
  placement.snapshot = snapshot;
  for (const auto &cluster : snapshot.clusters) {
    placement.ranking.push_back(assess(cluster, need));
  }
  // Fits now, then can host at all; within each: fewest queued, most free GPUs, name.
  std::stable_sort(placement.ranking.begin(),
                   placement.ranking.end(),
                   [](const Candidate &a, const Candidate &b) {
                     if (a.fits_now != b.fits_now) {
                       return a.fits_now;
                     }
                     if (a.can_host != b.can_host) {
                       return a.can_host;
                     }
                     if (a.queued_jobs != b.queued_jobs) {
                       return a.queued_jobs < b.queued_jobs;
                     }
                     if (a.free_gpus != b.free_gpus) {
                       return a.free_gpus > b.free_gpus;
                     }
                     return a.cluster < b.cluster;
                   });
  const std::string run =
      fmt::format("{} x {} GPUs", plural(need.nodes, "node", "nodes"), need.gpus_per_node);
  if (placement.ranking.empty() || !placement.ranking.front().can_host) {
    placement.reason = fmt::format("no cluster looked at can host {}", run);
    if (!placement.ranking.empty()) {
      placement.reason += fmt::format(
          " ({}: {})", placement.ranking.front().cluster, placement.ranking.front().why);
    }
    return placement;
  }
  const Candidate &best = placement.ranking.front();
  placement.chosen = best.cluster;
  placement.fits_now = best.fits_now;
  placement.reason =
      best.fits_now
          ? fmt::format("{}: {} fits now, and it has the fewest queued jobs ({}) of those where "
                        "it fits, then the most free GPUs ({})",
                        best.cluster,
                        run,
                        best.queued_jobs,
                        best.free_gpus)
          : fmt::format("{} fits on no cluster now; {} has the shortest queue ({}) of those "
                        "whose nodes can host it, so it waits there",
                        run,
                        best.cluster,
                        plural(best.queued_jobs, "job", "jobs"));
  return placement;
}

OrderedJson to_json(const Placement &placement) {
  OrderedJson out = OrderedJson::object();
  out["need"] = {{"nodes", placement.need.nodes}, {"gpus_per_node", placement.need.gpus_per_node}};
  out["chosen"] = placement.chosen;
  out["fits_now"] = placement.fits_now;
  out["reason"] = placement.reason;
  OrderedJson ranking = OrderedJson::array();
  for (const auto &c : placement.ranking) {
    ranking.push_back({{"cluster", c.cluster},
                       {"fits_now", c.fits_now},
                       {"can_host", c.can_host},
                       {"free_nodes", c.free_nodes},
                       {"free_gpus", c.free_gpus},
                       {"queued_jobs", c.queued_jobs},
                       {"why", c.why}});
  }
  out["ranking"] = std::move(ranking);
  OrderedJson snapshot = OrderedJson::object();
  snapshot["taken_at"] = placement.snapshot.taken_at;
  snapshot["patterns"] = placement.snapshot.patterns;
  snapshot["calls"] = placement.snapshot.calls;
  OrderedJson rows = OrderedJson::array();
  for (const auto &cluster : placement.snapshot.clusters) {
    rows.push_back(row_json(cluster, placement.need.gpus_per_node));
  }
  snapshot["clusters"] = std::move(rows);
  out["snapshot"] = std::move(snapshot);
  return out;
}

} // namespace pb::clusters
