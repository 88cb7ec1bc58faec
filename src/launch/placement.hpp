// SPDX-License-Identifier: MIT
// `--cluster auto` in the launch pipeline (docs/clusters.md): gather takes the snapshot, the
// plan ranks it and puts the chosen cluster where --cluster would have gone.
#pragma once

#include <primebeaker/launch/launch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pb::launch::detail {

// Whether the launch asks to choose its cluster: "auto" among --cluster's values (or the
// `clusters` setting's).
bool asks_auto(const LaunchOptions &options);

// With auto: ranks inputs.clusters for `replicas` nodes (0: single-node) of `gpus` GPUs, sets
// `clusters` to the chosen one and returns the placement; throws pb::Error exit 2 when nothing
// can host the run, or with --require-free when nothing fits now. Without auto: refuses
// --require-free and cluster globs; returns nullptr. Pure.
std::shared_ptr<const clusters::Placement> place_run(const LaunchOptions &options,
                                                     const LaunchInputs &inputs,
                                                     std::int64_t replicas,
                                                     std::int64_t gpus,
                                                     std::vector<std::string> &clusters);

} // namespace pb::launch::detail
