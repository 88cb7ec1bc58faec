// SPDX-License-Identifier: MIT
// How many trainer checkpoint shards a training TOML implies, and where its checkpoints are.
#pragma once

#include <primebeaker/checkpoints/scan.hpp>
#include <primebeaker/primerl/config.hpp>
#include <primebeaker/toml/value.hpp>

#include <filesystem>

namespace pb::checkpoints {

// The trainer rank count (= DCP shards per step) of a Prime-RL RL TOML. v0.8.0, from primerl's
// GPU accounting: multi_node -> trainer.model.cp x trainer.model.dp_replicate (the
// heterogeneous Beaker layout), single_node -> deployment.num_train_gpus; the TOML must be
// launchable (primerl's validation). v0.9, by Prime-RL's rules (primerl::v0_9_trainer_ranks):
// multi_node num_train_nodes x gpus_per_node, single_node num_train_gpus. Otherwise pb::Error
// (exit 3) naming FILE:LINE:COL. No I/O.
int expected_trainer_ranks(const toml::Document &document,
                           primerl::Generation recorded = primerl::Generation::undetermined);

// The run layout of a TOML: `output_dir` as a launch reads it (v0.8.0: primerl's reader,
// required; v0.9: default "outputs"), a relative one resolved against `working_dir`, the
// directory the run's container worked in (--working-dir of the launch, WORKING_DIR in its
// spec), as Prime-RL there and previews here resolve it; `ckpt.output_dir` /
// `trainer.ckpt.output_dir` for the trainer root when set. v0.9: the run directory is
// run.dir, else run.name, else `run_name` (the launch's experiment name); none of them is
// pb::Error exit 3. No I/O.
primerl::RunLayout
layout_from_toml(const toml::Document &document,
                 const std::filesystem::path &working_dir,
                 const std::string &run_name = "",
                 primerl::Generation recorded = primerl::Generation::undetermined);

// The output_dir of a TOML as layout_from_toml() resolves it (no run directory needed).
std::filesystem::path
output_dir_from_toml(const toml::Document &document,
                     const std::filesystem::path &working_dir,
                     primerl::Generation recorded = primerl::Generation::undetermined);

// The checkpoint source of layout_from_toml() with expected_trainer_ranks(). No I/O.
CheckpointSource source_from_toml(const toml::Document &document,
                                  const std::filesystem::path &working_dir,
                                  const std::string &run_name = "");

// True when the launch recorded v0.9 (`recorded`, PRIME_RL_GENERATION: the image's Prime-RL
// decided it), or primerl detects v0.9 from the keys (docs/checkpoints.md, "Layouts"). A TOML
// whose keys show no generation is read as its launch read it: the functions above take the
// recorded generation for that. No I/O.
bool is_v0_9(const toml::Document &document,
             primerl::Generation recorded = primerl::Generation::undetermined);

} // namespace pb::checkpoints
