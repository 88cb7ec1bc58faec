// SPDX-License-Identifier: MIT
// One run per checkpoint directory, checked before any `beaker` call (docs/recovery.md "One run
// per output dir"): who already claims a launch's directory, and the claim a submit makes.
#pragma once

#include <primebeaker/core/fs.hpp>
#include <primebeaker/launch/launch.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace pb::launch {

// <scratch>/primebeaker/launch_index/<first 16 hex of SHA-256(checkpoint dir)>.json: this
// user's launches by the directory they write, so that a second launch into one is refused
// before the first has started, and where the mount itself is not readable from here.
std::filesystem::path launch_index_path(const std::filesystem::path &scratch_dir,
                                        const std::filesystem::path &checkpoint_dir);

// Refuses (pb::Error exit 3, one line naming the run and a fix for its generation) a launch
// whose checkpoint directory another run claims: its owner file, a v0.8.0 ledger of another run
// in the same output dir, or this user's launch index. The run's own restarts, resumes and
// recoveries (the same W&B run id) pass. Reads only.
void refuse_claimed_directory(const LaunchPlan &plan, fs::FileSystem &files);
// The same refusal as one problem line, for planning to collect; nullopt when the directory is
// free or this run's own.
std::optional<std::string> claimed_directory_problem(const LaunchPlan &plan,
                                                     fs::FileSystem &files);

// What a submit claimed, so that a create Beaker refuses can give it back.
struct DirectoryClaim {
  std::filesystem::path owner; // created by this submit (empty: it existed, or not writable here)
  std::filesystem::path index; // created by this submit
};
// Claims plan.ownership's directory for the run, before `beaker experiment create`: the owner
// file (exclusively, where the mount is here) and the index entry, all through `files`.
// Refuses as refuse_claimed_directory does when another run won the race.
DirectoryClaim claim_directory(const LaunchPlan &plan, fs::FileSystem &files);
// Gives back what `claim` created (the run was never created).
void release_directory(const DirectoryClaim &claim, fs::FileSystem &files);
// The index entry completed with the experiment's id once Beaker created it.
void record_created(const LaunchPlan &plan,
                    const std::string &experiment_id,
                    fs::FileSystem &files);

} // namespace pb::launch
