// SPDX-License-Identifier: MIT
// What a run used and cost over its whole chain (docs/runs.md "GPU-hours and cost"): GPU-hours
// from each job's start to its end (or now), the time queued, the GPU-hours preemption threw
// away (from the attempt ledger), and dollars where the config prices a GPU type or a cluster
// (`price.<name>`, docs/config.md "Prices"). Everything here is pure.
#pragma once

#include <primebeaker/core/json.hpp>
#include <primebeaker/recovery/ledger.hpp>
#include <primebeaker/runs/runs.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::runs {

// One experiment of a chain.
struct ExperimentUsage {
  std::string experiment_id;
  int gpus = 0;           // over all replicas (each replica's gpuCount)
  double gpu_hours = 0;   // sum over every job: its GPUs x (end or now - started)
  double queue_hours = 0; // created -> started, per wave of jobs (docs/runs.md)
  std::map<std::string, double> gpu_hours_by_cluster; // "" when a job names no cluster
  bool open = false; // a job still holds (or waits for) GPUs: the figures grow with `now`
};
ExperimentUsage experiment_usage(const RunView &run, TimePoint now);

// $ per GPU-hour by GPU type ("H100") or cluster ("ai2/jupiter"): the config's price.<name>.
using Prices = std::map<std::string, double, std::less<>>;

// The price of a GPU-hour on `cluster`: price.<gpu type> when the type is known and priced,
// else price.<cluster>; nullopt when neither is (never a guess).
struct Price {
  double usd_per_gpu_hour = 0;
  std::string key; // "price.H100"
};
std::optional<Price>
price_for(const Prices &prices, std::string_view cluster, std::string_view gpu_type);

// A whole chain: its experiments (oldest first), the ledger when it could be read, the prices,
// the GPU type of each cluster where known.
struct ChainUsage {
  std::vector<ExperimentUsage> experiments;
  double gpu_hours = 0;
  double queue_hours = 0;
  std::optional<double> lost_gpu_hours; // nullopt: no ledger readable here
  std::int64_t preemptions_counted = 0; // ledger starts whose lost time is in lost_gpu_hours
  std::optional<double> cost_usd;       // nullopt: some GPU-hours have no price
  std::optional<double> lost_cost_usd;
  std::vector<std::string> prices_used; // the keys that priced it
  std::string unpriced;                 // a cluster whose GPU-hours no price covers
  bool priced = false;                  // the config has any price at all
  bool open = false;
};
ChainUsage chain_usage(const std::vector<const RunView *> &chain,
                       const recovery::ledger::Ledger *ledger,
                       const Prices &prices,
                       const std::map<std::string, std::string> &gpu_types,
                       TimePoint now);

// {gpu_hours, lost_gpu_hours, queue_hours, cost_usd} (hours to 4 decimals, dollars to cents;
// null where unknown), the keys `status --json` and `list --json` rows carry.
void add_usage_json(OrderedJson &row, const ChainUsage &usage);
// {experiments: [{experiment_id, gpus, gpu_hours, queue_hours}], lost_cost_usd, prices,
// unpriced, preemptions_counted}: the details under `usage`.
OrderedJson usage_details_json(const ChainUsage &usage);

// "12.50 GPU-h (1.25 lost to preemption), queued 0h12m, $31.25 (price.H100)". Pure.
std::string usage_line(const ChainUsage &usage);
// "12.5" or "12.5 $31" for a table cell.
std::string usage_cell(const ChainUsage &usage);

} // namespace pb::runs
