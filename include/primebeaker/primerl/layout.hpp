// SPDX-License-Identifier: MIT
// Where one run of a Prime-RL generation keeps what a launcher reads (docs/checkpoints.md
// "Layouts"): checkpoints, rollouts and broadcasts, W&B directories, resolved configs, and the
// TOML keys that say where to resume. One value every module consumes instead of spelling the
// paths itself. Pure: no I/O.
#pragma once

#include <primebeaker/primerl/config.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pb::toml {
class Document;
}

namespace pb::primerl {

// v0.8.0: everything under output_dir (the orchestrator's side under run_default/).
// v0.9:   everything under output_dir / run.dir (one checkpoint root for both owners).
struct RunLayout {
  Generation generation = Generation::v0_8;       // v0_8 or v0_9
  std::filesystem::path output_dir;               // as resolved by the caller
  std::filesystem::path run_dir;                  // v0.8.0: output_dir; v0.9: output_dir / dir
  std::filesystem::path trainer_checkpoints;      // holds step_N/trainer
  std::filesystem::path orchestrator_checkpoints; // holds step_N/orchestrator/progress.pt
  std::vector<std::filesystem::path> step_dirs;   // rollouts/broadcasts holding step_N
  std::filesystem::path broadcasts;               // weight broadcasts (one of step_dirs)
  std::vector<std::filesystem::path> wandb_dirs;  // where wandb.init(dir=...) writes run-*/
  std::filesystem::path config_dir;               // v0.9: run_dir/configs (JSON); v0.8.0: ""

  bool is_v0_9() const { return generation == Generation::v0_9; }
};

// The run directory name of a v0.9 TOML: run.dir, else run.name, else `fallback` (the launch's
// experiment name, which the launch passes as run.name). "" when all three are empty. A
// non-string run.dir / run.name is pb::Error exit 3 naming FILE:LINE:COL.
std::string run_dir_name(const toml::Document &document, const std::string &fallback);

// Whether the TOML names its run itself (run.dir or run.name): otherwise the launch must.
bool names_its_run(const toml::Document &document);

// The layout of one run. Generations other than v0_9 read as v0.8.0 (the launcher's primary
// target). `run_dir_name` is ignored for v0.8.0 and required (non-empty, one path component)
// for v0.9: pb::Error exit 3 otherwise. `ckpt_output_dir` (ckpt.output_dir or
// trainer.ckpt.output_dir, resolved) moves the trainer's root to `<it>/checkpoints`.
RunLayout run_layout(Generation generation,
                     const std::filesystem::path &output_dir,
                     const std::string &run_dir_name,
                     const std::optional<std::filesystem::path> &ckpt_output_dir);

// ckpt.output_dir, else trainer.ckpt.output_dir, as written (a relative one is relative to the
// run's working directory); nullopt when neither is set. Non-string: pb::Error exit 3.
std::optional<std::string> ckpt_output_dir(const toml::Document &document);

// The same, resolved against `working_dir` and normalised.
std::optional<std::filesystem::path> ckpt_output_dir(const toml::Document &document,
                                                     const std::filesystem::path &working_dir);

// The TOML keys that hold where a run resumes, per generation, so one function writes either.
struct ResumeKeys {
  std::string step;                     // shared step key: ckpt.resume_step / resume.step
  std::vector<std::string> copies;      // sub-config copies kept in step when present
  std::vector<std::string> exclusive;   // removed when a step is written (v0.9: resume.dir ...)
  std::vector<std::string> tables;      // v0.9: resume, trainer.resume, orchestrator.resume
  std::string clean;                    // clean_output_dir / clean
  std::optional<std::string> fork_from; // v0.9: resume.dir (another run's step directory)
};
const ResumeKeys &resume_keys(Generation generation);

// The trainer ranks (= DCP shards per step) of a v0.9 RL TOML, by Prime-RL's own defaults
// (rl.py auto_setup_deployment, multi_node_rl.sbatch.j2: one torchrun rank per GPU of every
// trainer node): single_node deployment.num_train_gpus (default 1); multi_node
// deployment.num_train_nodes (required) x deployment.gpus_per_node (default 8). Bad values:
// pb::Error exit 3 naming FILE:LINE:COL.
std::int64_t v0_9_trainer_ranks(const toml::Document &document);

} // namespace pb::primerl
