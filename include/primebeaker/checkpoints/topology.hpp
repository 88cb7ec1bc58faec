// SPDX-License-Identifier: MIT
// How many trainer checkpoint shards a training TOML implies, and where its checkpoints are.
#pragma once

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/toml/value.hpp>

#include <filesystem>

namespace pb::checkpoints {

// The trainer rank count (= DCP shards per step) of a Prime-RL RL TOML, from primerl's GPU
// accounting: multi_node -> trainer.model.cp x trainer.model.dp_replicate (the heterogeneous
// Beaker layout), single_node -> deployment.num_train_gpus. The TOML must be launchable
// (primerl's validation); otherwise pb::Error (exit 3) naming FILE:LINE:COL. No I/O.
int expected_trainer_ranks(const toml::Document &document);

// The checkpoint source of a TOML: `output_dir` as a launch reads it (primerl; required), a
// relative one resolved against `working_dir`, the directory the run's container worked in
// (--working-dir of the launch, WORKING_DIR in its spec), as Prime-RL there and previews here
// resolve it; `ckpt.output_dir` / `trainer.ckpt.output_dir` for the trainer root when set. A
// post-v0.8.0 config is refused (exit 3) with the directory layout to pass to --output-dir
// instead. No I/O.
CheckpointSource source_from_toml(const toml::Document &document,
                                  const std::filesystem::path &working_dir);

// True when primerl detects the post-v0.8.0 generation from its keys (docs/checkpoints.md,
// "Layouts"). No I/O.
bool is_post_v0_8_0(const toml::Document &document);

} // namespace pb::checkpoints
