// SPDX-License-Identifier: MIT
// Where a queued run stands (docs/runs.md "Queue position"): the cluster's unscheduled jobs from
// `beaker job list --cluster C --format json`, parsed here and only here, and the run's place
// among those at its priority. Pure but for current_queue().
#pragma once

#include <primebeaker/beaker/client.hpp>
#include <primebeaker/core/json.hpp>
#include <primebeaker/runs/runs.hpp>

#include <optional>
#include <string>
#include <vector>

namespace pb::runs {

// One job of a cluster's listing.
struct ClusterJob {
  std::string id;
  std::string experiment_id; // execution.experiment ("" for a session)
  std::string priority;      // execution.spec.context.priority ("" when not given)
  std::string message;       // status.message: Beaker's word on why it waits
  std::optional<TimePoint> created;
  bool unscheduled = false; // not scheduled, started or ended yet
};

// The jobs of `beaker job list --cluster C --format json` (an array; {"data": [...]} or
// {"jobs": [...]} too). Entries that are no objects are skipped. Pure.
std::vector<ClusterJob> parse_cluster_jobs(const OrderedJson &listing);

// True while the run waits to be scheduled: some replica's newest job is pending.
bool is_queued(const RunView &run);

// The clusters the run asked for: its spec's constraints.cluster, else its jobs' cluster.
std::vector<std::string> requested_clusters(const RunView &run);

struct QueuePosition {
  std::string cluster;
  std::string priority;      // the run's ("" when unknown: then every priority counts)
  std::size_t position = 0;  // 1 = next; each experiment's waiting jobs count once
  std::size_t of = 0;        // waiting experiments (and sessions) at that priority, the run too
  double waited_seconds = 0; // since its waiting jobs were created
  std::string message;       // Beaker's scheduling message, "" when none
};
// The run's place on `cluster`; nullopt when it is not queued.
std::optional<QueuePosition> queue_position(const RunView &run,
                                            const std::string &cluster,
                                            const std::vector<ClusterJob> &jobs,
                                            TimePoint now);

// The one effect: asks `beaker job list --cluster C` for each cluster the run asked for until one
// answers; nullopt when the run is not queued or no listing could be read (logged, never fatal:
// `status` and `follow` go on without it).
std::optional<QueuePosition>
current_queue(const RunView &run, beaker::Client &beaker, TimePoint now);

// {cluster, priority, position, of, waited_seconds, message}.
OrderedJson queue_json(const QueuePosition &queue);
// "waiting 12m04s: 3rd of 7 at priority high on ai2/jupiter; beaker: <message>".
std::string queue_line(const QueuePosition &queue);

} // namespace pb::runs
