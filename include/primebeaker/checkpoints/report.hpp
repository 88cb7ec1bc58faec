// SPDX-License-Identifier: MIT
// Renderings of a checkpoint listing: the `checkpoints list` JSON and table, and the
// checkpoint record that resume previews and manifests carry.
#pragma once

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/core/json.hpp>

#include <string>

namespace pb::checkpoints {

// Pure. {selected_step, expected_ranks, layout, output_dir, trainer_root, orchestrator_root,
// steps: [{step, name, complete, missing, trainer_shards, trainer_metadata,
// orchestrator_progress}] ascending, ignored, scan: {stat_calls, directories_read}}.
OrderedJson listing_json(const TreeListing &listing, const std::vector<StepStatus> &statuses);

// Pure. The human table: one row per step with what it has, what is missing, then the step a
// resume would pick (or that none would).
std::string listing_table(const TreeListing &listing, const std::vector<StepStatus> &statuses);

// Pure. {step, trainer_dir, trainer_metadata, trainer_metadata_size, trainer_shards: [{path,
// size}], orchestrator_progress, orchestrator_progress_size} (docs/checkpoints.md, "The checkpoint
// record").
OrderedJson record_json(const CheckpointRecord &record);

} // namespace pb::checkpoints
