// SPDX-License-Identifier: MIT
// How many trainer checkpoint shards a training TOML implies, and where its checkpoints are.
#pragma once

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/toml/value.hpp>

#include <filesystem>

namespace pb::checkpoints {

// The trainer rank count (= DCP shards per step) of a Prime-RL RL TOML, read with the typed API:
// multi_node: trainer.model.cp x trainer.model.dp_replicate (the reference's heterogeneous
// layout, resume-run-services.md §1.4); single_node (or no [deployment]):
// deployment.num_train_gpus (default 1). Each factor must be a positive integer; otherwise
// pb::Error (exit 3) naming FILE:LINE:COL. No I/O.
int expected_trainer_ranks(const toml::Document &document);

// The checkpoint source of a TOML: `output_dir` (relative to `cwd`, as Prime-RL resolves it;
// default "outputs"), `ckpt.output_dir` for the trainer root when set, the post-v0.8.0 run
// directory (`output_dir/<run.name>`) when the TOML is of that generation. No I/O.
// Throws pb::Error (exit 3) for a bad TOML value.
CheckpointSource source_from_toml(const toml::Document &document, const std::filesystem::path &cwd);

// True when the TOML is of the post-v0.8.0 generation (prime-rl-beaker.md §1.10: a [resume],
// [monitors] or [run] table, or top-level `clean` next to [deployment]). No I/O.
bool is_post_v0_8_0(const toml::Document &document);

} // namespace pb::checkpoints
