// SPDX-License-Identifier: MIT
// `primebeaker clusters [--gpus N] [--json]`: room and queue of the configured clusters now
// (docs/clusters.md).
#include <primebeaker/beaker/client.hpp>
#include <primebeaker/clusters/clusters.hpp>
#include <primebeaker/config/config.hpp>
#include <primebeaker/core/command_tree.hpp>
#include <primebeaker/core/env.hpp>
#include <primebeaker/core/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace pb::clusters {
namespace {

struct Options {
  int gpus = 0; // 0: whole nodes
  bool json = false;
};

std::string render(const std::vector<std::vector<std::string>> &rows) {
  std::vector<std::size_t> widths;
  for (const auto &row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto &row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += i + 1 == row.size() ? row[i] : fmt::format("{:<{}}  ", row[i], widths[i]);
    }
    out += line + '\n';
  }
  return out;
}

void run(const Options &options) {
  const auto settings = config::Settings::load();
  const config::Setting *setting = settings.get("clusters");
  const auto patterns = patterns_of(setting != nullptr && setting->level != config::Level::built_in
                                        ? setting->values
                                        : std::vector<std::string>{});
  proc::SystemRunner runner;
  beaker::Client beaker(runner,
                        beaker::program_from_environment(env::snapshot()),
                        {},
                        beaker::RetryPolicy::for_reads());
  const Snapshot snapshot = take_snapshot(beaker, patterns, "clusters");
  if (options.json) {
    OrderedJson rows = OrderedJson::array();
    for (const auto &cluster : snapshot.clusters) {
      rows.push_back(row_json(cluster, options.gpus));
    }
    print_json(std::cout, rows);
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"CLUSTER",
       "GPU TYPE",
       "FREE GPUS",
       "TOTAL",
       "CORDONED",
       options.gpus > 0 ? fmt::format("NODES WITH {} FREE", options.gpus) : "FREE NODES",
       "QUEUED"}};
  for (const auto &cluster : snapshot.clusters) {
    if (!cluster.error.empty()) {
      rows.push_back({cluster.name, "-", "-", "-", "-", "-", cluster.error});
      continue;
    }
    const bool known = cluster.has_occupancy;
    rows.push_back(
        {cluster.name,
         cluster.gpu_type.empty() ? "-" : cluster.gpu_type,
         known ? std::to_string(cluster.free_gpus()) : "?",
         known ? std::to_string(cluster.slots.total) : "?",
         known ? std::to_string(cluster.slots.cordoned) : "?",
         known ? fmt::format("{} of {}", cluster.free_nodes(options.gpus), cluster.node_count)
               : "?",
         std::to_string(cluster.queued_jobs)});
  }
  std::cout << render(rows);
}

} // namespace

std::vector<std::string> patterns_of(const std::vector<std::string> &configured) {
  std::vector<std::string> patterns;
  std::copy_if(configured.begin(),
               configured.end(),
               std::back_inserter(patterns),
               [](const std::string &item) { return item != k_auto; });
  if (patterns.empty()) {
    patterns.emplace_back(k_default_pattern);
  }
  return patterns;
}

void register_commands(cli::CommandTree &tree) {
  tree.leaf({"clusters"},
            "Free, total and cordoned GPUs, free nodes and queued jobs of the configured "
            "clusters, now (docs/clusters.md)",
            [&tree](cli::Command &app) {
              auto &options = tree.make_options<Options>();
              app.add_option(cli::flag("gpus"),
                             options.gpus,
                             "Count the nodes with at least N GPUs free (default: whole nodes)")
                  .in_range(1, 1024)
                  .type_name("N");
              app.add_flag(
                  cli::flag("json"), options.json, "Print a JSON array, one row per cluster");
              app.callback([&options] { run(options); });
            });
}

} // namespace pb::clusters
