// SPDX-License-Identifier: MIT
// `--cluster auto`: the plan's side (docs/clusters.md "In a launch"). Pure.
#include "placement.hpp"

#include <primebeaker/clusters/clusters.hpp>
#include <primebeaker/core/error.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pb::launch::detail {

bool asks_auto(const LaunchOptions &options) {
  return std::find(options.clusters.begin(), options.clusters.end(), clusters::k_auto) !=
         options.clusters.end();
}

std::shared_ptr<const clusters::Placement> place_run(const LaunchOptions &options,
                                                     const LaunchInputs &inputs,
                                                     std::int64_t replicas,
                                                     std::int64_t gpus,
                                                     std::vector<std::string> &chosen) {
  if (!asks_auto(options)) {
    if (options.require_free) {
      throw usage_error("--require-free applies to --cluster auto only");
    }
    for (const auto &cluster : options.clusters) {
      if (clusters::is_glob(cluster)) {
        throw usage_error(fmt::format(
            "--cluster {}: Beaker takes no globs; pass --cluster auto to choose among the "
            "clusters it matches, or name them",
            cluster));
      }
    }
    return nullptr;
  }
  if (inputs.clusters == nullptr) {
    throw usage_error("--cluster auto: this command cannot look at the clusters; name one");
  }
  const clusters::Need need{std::max<std::int64_t>(replicas, 1), gpus};
  auto placement =
      std::make_shared<const clusters::Placement>(clusters::rank(*inputs.clusters, need));
  if (placement->chosen.empty()) {
    throw usage_error(
        fmt::format("--cluster auto: {} (`primebeaker clusters` shows them)", placement->reason));
  }
  if (!placement->fits_now && options.require_free) {
    throw usage_error(fmt::format(
        "--cluster auto --require-free: {} x {} GPUs fits on no cluster now (the shortest "
        "queue is {}'s)",
        need.nodes,
        need.gpus_per_node,
        placement->chosen));
  }
  chosen = {placement->chosen};
  return placement;
}

} // namespace pb::launch::detail
