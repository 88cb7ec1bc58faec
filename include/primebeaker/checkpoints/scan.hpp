// SPDX-License-Identifier: MIT
// Whole-topology checkpoint discovery (docs/checkpoints.md: the rule, the layouts, the cost).
// Two halves: list_steps() is the only I/O (directory listings and stat calls, never file
// contents); evaluate_step() and select_step() are pure functions over what it listed.
#pragma once

#include <primebeaker/primerl/layout.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::checkpoints {

// Where a Prime-RL generation keeps checkpoints (primerl/layout.hpp):
//   v0_8_0: <out>/checkpoints/step_N/trainer/ and
//   <out>/run_default/checkpoints/step_N/orchestrator/ v0_9:
//   <out>/<run.dir>/checkpoints/step_N/{trainer,orchestrator}/ (one root for both)
enum class Layout : std::uint8_t { v0_8_0, v0_9 };

// "v0.8.0" / "v0.9", as printed in listings.
std::string_view layout_name(Layout layout);

// Where one run's checkpoints live and how many trainer ranks wrote each step.
struct CheckpointSource {
  Layout layout = Layout::v0_8_0;
  // What paths in messages are relative to: the run's output_dir (a TOML-driven v0.9 source
  // keeps the TOML's output_dir, above the run directory, where the ledger and set-aside live).
  std::filesystem::path output_dir;
  std::filesystem::path trainer_root;      // holds step_N/trainer/
  std::filesystem::path orchestrator_root; // holds step_N/orchestrator/progress.pt
  int expected_ranks = 0;                  // trainer shards per step (>= 1)
};

// Locates the checkpoint roots under `output_dir` from what is on disk, and says which layout
// it is: run_default/checkpoints beside checkpoints/ is v0.8.0; step_N/orchestrator/ inside
// checkpoints/ (here or one run directory down) is v0.9; nothing of either (a run before its
// first checkpoint) is v0.8.0, which lists no steps. Reads directories only.
// Throws pb::Error (exit 1) when `output_dir` holds several v0.9 run directories.
CheckpointSource detect_source(const std::filesystem::path &output_dir, int expected_ranks);

// The checkpoint source of a run layout, with `expected_ranks` trainer shards per step. Pure.
CheckpointSource source_from_layout(const primerl::RunLayout &layout, int expected_ranks);

// The v0.9 run directories of `output_dir`: subdirectories holding checkpoints/, configs/ or
// logs/ (Prime-RL's artifacts), not primebeaker's own primebeaker_* directories. Sorted names.
std::vector<std::string> find_run_dirs(const std::filesystem::path &output_dir);

// What one directory entry turned out to be. `size` is meaningful for `regular` only.
enum class EntryKind : std::uint8_t { missing, regular, directory, other, dangling_symlink };
struct FileState {
  EntryKind kind = EntryKind::missing;
  std::uint64_t size = 0;
  bool operator==(const FileState &) const = default;
};

// The raw facts about one step name, as listed. Only the files completeness depends on are
// stat'ed: .metadata, the expected __<rank>_0.distcp shards and progress.pt.
struct StepListing {
  std::string name;                      // directory name as found ("step_20", "step_007")
  std::int64_t step = 0;                 // its number (step_007 -> 7)
  bool in_trainer_root = false;          // <trainer_root>/<name> is a directory
  bool in_orchestrator_root = false;     // <orchestrator_root>/<name> is a directory
  bool via_symlink = false;              // a step directory is a symlink (followed)
  FileState trainer_dir;                 // <name>/trainer
  FileState metadata;                    // <name>/trainer/.metadata
  std::vector<FileState> rank_shards;    // index r: <name>/trainer/__r_0.distcp
  std::vector<std::string> extra_shards; // other *.distcp names in <name>/trainer, sorted
  FileState progress;                    // <name>/orchestrator/progress.pt
};

// Work done by a listing: the figures the benchmark reports.
struct ScanStats {
  std::uint64_t stat_calls = 0;       // fstatat() calls
  std::uint64_t directories_read = 0; // directories opened and listed
};

struct TreeListing {
  CheckpointSource source;
  bool trainer_root_exists = false; // false: no checkpoint written yet (no trainer steps)
  bool orchestrator_root_exists = false;
  std::vector<StepListing> steps;   // ascending by step, then name
  std::vector<std::string> ignored; // entries of the roots that are not step_<N> directories
  ScanStats stats;
};

// Lists the checkpoint tree of `source` (only step `only_name` when given). Symlinks are
// followed; a dangling one counts as missing. A trainer root that does not exist lists no
// trainer steps (trainer_root_exists false); one that cannot be read (not a directory, no
// permission) throws pb::Error (exit 1). Never opens a file for reading. Large trees are listed by
// up to 4 worker threads (PB_SCAN_WORKERS overrides, for benchmarks).
TreeListing list_steps(const CheckpointSource &source,
                       const std::optional<std::string> &only_name = std::nullopt);

// Lists only what choosing the resume step needs: the two root directories, then step
// directories newest first, stopping at the first complete one. The result holds the steps it
// looked into (ascending, like list_steps): the step a resume picks and any newer incomplete
// ones. With `requested`, only that step is listed when it is complete. When nothing qualifies
// (no complete step, or `requested` is not complete) it is the full listing, so that
// require_step() can name every available step. Same errors as list_steps().
TreeListing list_latest(const CheckpointSource &source,
                        std::optional<std::int64_t> requested = std::nullopt);

// One shard of a complete step, for the checkpoint record.
struct ShardRecord {
  std::filesystem::path path;
  std::uint64_t size = 0;
  bool operator==(const ShardRecord &) const = default;
};

// Everything a resume depends on for one complete step, with byte sizes: re-listing the step
// must give an equal record, or the checkpoint changed under us.
struct CheckpointRecord {
  std::int64_t step = 0;
  std::filesystem::path trainer_dir;
  std::filesystem::path trainer_metadata;
  std::uint64_t trainer_metadata_size = 0;
  std::vector<ShardRecord> trainer_shards; // in rank order
  std::filesystem::path orchestrator_progress;
  std::uint64_t orchestrator_progress_size = 0;
  bool operator==(const CheckpointRecord &) const = default;
};

// The verdict on one step: complete, or exactly what is missing or wrong (one line per file,
// paths relative to the output directory).
struct StepStatus {
  std::int64_t step = 0;
  std::string name;
  bool complete = false;
  std::vector<std::string> missing;
  std::uint64_t shards_found = 0; // *.distcp entries in the trainer directory
  bool metadata_ok = false;
  bool progress_ok = false;
};

// Pure. A step is complete iff its name is canonical (step_<N>, as Prime-RL looks it up),
// .metadata is a non-empty regular file, each of the expected ranks has exactly one non-empty
// __<r>_0.distcp shard, there is no other *.distcp file, and progress.pt is non-empty.
StepStatus evaluate_step(const StepListing &listing, const CheckpointSource &source);

// Pure. evaluate_step() for every listed step, ascending.
std::vector<StepStatus> evaluate(const TreeListing &listing);

// Pure. The record of a step that evaluate_step() found complete (absolute paths, sizes).
CheckpointRecord make_record(const StepListing &listing, const CheckpointSource &source);

// Pure. The newest complete step; nullopt when none is complete.
std::optional<std::int64_t> newest_complete(const std::vector<StepStatus> &steps);

// Pure. The step a resume uses: `requested` if it is complete, else the newest complete one.
// Throws pb::Error (exit 1): "no complete common checkpoint ..." or "step S is not a complete
// common checkpoint; available: a, b" (with what S lacks as context lines).
const StepStatus &require_step(const std::vector<StepStatus> &steps,
                               std::optional<std::int64_t> requested);

// The step number of a step directory name ("step_20" -> 20, "step_007" -> 7); nullopt for
// anything else ("step_", "step_x", "step_1a", numbers that do not fit in 63 bits).
std::optional<std::int64_t> parse_step_name(std::string_view name);

} // namespace pb::checkpoints
