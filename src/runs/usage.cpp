// SPDX-License-Identifier: MIT
// GPU-hours, queue time, preemption's loss and cost of a chain (docs/runs.md "GPU-hours and
// cost"). Pure: the callers fetch the experiments, read the ledger and the prices.
#include "status.hpp"

#include <primebeaker/core/text.hpp>
#include <primebeaker/runs/usage.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace pb::runs {

namespace {

double hours_between(TimePoint from, TimePoint to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count() / 3600.0);
}

// To 1/per: dividing by an exact power of ten gives the double nearest the decimal (20.8).
OrderedJson rounded(std::optional<double> value, double per) {
  if (!value) {
    return nullptr;
  }
  return std::round(*value * per) / per;
}

int gpus_of(const RunView &run) {
  int gpus = 0;
  for (const auto &replica : run.replicas) {
    gpus += replica.gpus;
  }
  return gpus;
}

// The cluster an experiment ran on: its first job that names one.
std::string cluster_of(const RunView &run) {
  for (const auto &replica : run.replicas) {
    for (const auto &job : replica.jobs) {
      if (!job.cluster.empty()) {
        return job.cluster;
      }
    }
  }
  return {};
}

} // namespace

ExperimentUsage experiment_usage(const RunView &run, TimePoint now) {
  ExperimentUsage usage;
  usage.experiment_id = run.id;
  usage.gpus = gpus_of(run);
  std::size_t waves = 0;
  for (const auto &replica : run.replicas) {
    waves = std::max(waves, replica.jobs.size());
    for (const auto &job : replica.jobs) {
      if (job.started) {
        usage.open = usage.open || !job.ended;
        const double hours = replica.gpus * hours_between(*job.started, job.ended.value_or(now));
        usage.gpu_hours += hours;
        usage.gpu_hours_by_cluster[job.cluster] += hours;
      } else if (!job.terminal) {
        usage.open = true; // still waiting for its GPUs
      }
    }
  }
  // The k-th job of every replica is one wave (a multi-node run starts when its last replica
  // does): its wait is the longest of theirs, so replicas do not multiply the queue time.
  for (std::size_t k = 0; k < waves; ++k) {
    double longest = 0;
    for (const auto &replica : run.replicas) {
      if (k >= replica.jobs.size() || !replica.jobs[k].created) {
        continue;
      }
      const auto &job = replica.jobs[k];
      std::optional<TimePoint> until = job.started;
      if (!until) {
        until = job.terminal ? job.ended : std::optional<TimePoint>(now);
      }
      if (until) {
        longest = std::max(longest, hours_between(*job.created, *until));
      }
    }
    usage.queue_hours += longest;
  }
  return usage;
}

std::optional<Price>
price_for(const Prices &prices, std::string_view cluster, std::string_view gpu_type) {
  for (const auto name : {gpu_type, cluster}) {
    if (name.empty()) {
      continue;
    }
    if (const auto it = prices.find(name); it != prices.end()) {
      return Price{it->second, "price." + it->first};
    }
  }
  return std::nullopt;
}

ChainUsage chain_usage(const std::vector<const RunView *> &chain,
                       const recovery::ledger::Ledger *ledger,
                       const Prices &prices,
                       const std::map<std::string, std::string> &gpu_types,
                       TimePoint now) {
  ChainUsage out;
  out.priced = !prices.empty();
  std::optional<double> cost = out.priced ? std::optional<double>(0.0) : std::nullopt;
  const auto price_of = [&](const std::string &cluster) -> std::optional<Price> {
    const auto type = gpu_types.find(cluster);
    auto price = price_for(prices, cluster, type == gpu_types.end() ? "" : type->second);
    if (price && std::find(out.prices_used.begin(), out.prices_used.end(), price->key) ==
                     out.prices_used.end()) {
      out.prices_used.push_back(price->key);
    }
    return price;
  };
  for (const RunView *run : chain) {
    auto usage = experiment_usage(*run, now);
    out.gpu_hours += usage.gpu_hours;
    out.queue_hours += usage.queue_hours;
    out.open = out.open || usage.open;
    for (const auto &[cluster, hours] : usage.gpu_hours_by_cluster) {
      if (hours <= 0 || !cost) {
        continue;
      }
      if (const auto price = price_of(cluster)) {
        *cost += hours * price->usd_per_gpu_hour;
      } else {
        out.unpriced = cluster.empty() ? "a job that names no cluster" : cluster;
        cost.reset();
      }
    }
    out.experiments.push_back(std::move(usage));
  }
  out.cost_usd = cost;
  if (ledger != nullptr) {
    // The runtime measures each preempted attempt's loss when the next one starts: from the
    // step it resumes from (that checkpoint's time) to the attempt's end (docs/recovery.md
    // "Work lost"). Priced with the GPUs and cluster of the experiment that lost it.
    double lost = 0;
    std::optional<double> lost_cost = out.priced ? std::optional<double>(0.0) : std::nullopt;
    const auto &attempts = ledger->attempts;
    for (std::size_t i = 1; i < attempts.size(); ++i) {
      const auto &start = attempts[i].start;
      if (!start.refused.empty() || start.cause != recovery::ledger::k_preemption ||
          start.time_lost_seconds <= 0) {
        continue;
      }
      const std::string &where = attempts[i - 1].start.experiment_id;
      const RunView *run = chain.empty() ? nullptr : chain.back();
      for (const RunView *candidate : chain) {
        if (candidate->id == where) {
          run = candidate;
        }
      }
      if (run == nullptr) {
        continue;
      }
      const double hours = gpus_of(*run) * start.time_lost_seconds / 3600.0;
      lost += hours;
      ++out.preemptions_counted;
      if (lost_cost) {
        if (const auto price = price_of(cluster_of(*run))) {
          *lost_cost += hours * price->usd_per_gpu_hour;
        } else {
          lost_cost.reset();
        }
      }
    }
    out.lost_gpu_hours = lost;
    out.lost_cost_usd = lost_cost;
  }
  return out;
}

void add_usage_json(OrderedJson &row, const ChainUsage &usage) {
  row["gpu_hours"] = rounded(usage.gpu_hours, 1e4);
  row["lost_gpu_hours"] = rounded(usage.lost_gpu_hours, 1e4);
  row["queue_hours"] = rounded(usage.queue_hours, 1e4);
  row["cost_usd"] = rounded(usage.cost_usd, 100);
}

OrderedJson usage_details_json(const ChainUsage &usage) {
  OrderedJson out = OrderedJson::object();
  OrderedJson experiments = OrderedJson::array();
  for (const auto &one : usage.experiments) {
    experiments.push_back({{"experiment_id", one.experiment_id},
                           {"gpus", one.gpus},
                           {"gpu_hours", rounded(one.gpu_hours, 1e4)},
                           {"queue_hours", rounded(one.queue_hours, 1e4)}});
  }
  out["experiments"] = std::move(experiments);
  out["preemptions_counted"] = usage.preemptions_counted;
  out["lost_cost_usd"] = rounded(usage.lost_cost_usd, 100);
  out["prices"] = usage.prices_used;
  out["unpriced"] = usage.unpriced.empty() ? OrderedJson(nullptr) : OrderedJson(usage.unpriced);
  out["still_running"] = usage.open;
  return out;
}

std::string usage_line(const ChainUsage &usage) {
  std::string line = fmt::format("{:.2f} GPU-hours", usage.gpu_hours);
  if (usage.lost_gpu_hours && *usage.lost_gpu_hours > 0) {
    line += fmt::format(" ({:.2f} lost to preemption)", *usage.lost_gpu_hours);
  }
  line += fmt::format(", queued {}", duration_text(usage.queue_hours * 3600));
  if (usage.cost_usd) {
    line += fmt::format(", ${:.2f}", *usage.cost_usd);
    if (!usage.prices_used.empty()) {
      line += " (" + text::join(usage.prices_used, ", ") + ")";
    }
  } else if (usage.priced) {
    line += fmt::format(", cost unknown: no price for {}", usage.unpriced);
  }
  return line;
}

std::string usage_cell(const ChainUsage &usage) {
  std::string cell = fmt::format("{:.1f}", usage.gpu_hours);
  if (usage.cost_usd) {
    cell += fmt::format(" ${:.0f}", *usage.cost_usd);
  }
  return cell;
}

} // namespace pb::runs
