// SPDX-License-Identifier: MIT
// Builds Prime-RL checkpoint trees on disk for the checkpoint and resume tests.
#pragma once

#include <filesystem>
#include <string>

namespace pb::test {

// A v0.8.0 output directory: <out>/checkpoints/step_N/trainer/ and
// <out>/run_default/checkpoints/step_N/orchestrator/progress.pt. Every file is non-empty unless
// a test empties it.
class CheckpointTree {
public:
  explicit CheckpointTree(std::filesystem::path output_dir) : m_out(std::move(output_dir)) {}
  // A Prime-RL v0.9 run: <out>/<run_dir>/checkpoints/step_N/{trainer,orchestrator}/.
  CheckpointTree(std::filesystem::path output_dir, std::string run_dir)
      : m_out(std::move(output_dir)), m_run(std::move(run_dir)) {}
  const std::filesystem::path &output_dir() const { return m_out; }
  // <out> (v0.8.0) or <out>/<run_dir> (v0.9).
  std::filesystem::path run_dir() const { return m_run.empty() ? m_out : m_out / m_run; }

  std::filesystem::path trainer_dir(const std::string &name) const;
  std::filesystem::path shard(const std::string &name, int rank) const;
  std::filesystem::path metadata(const std::string &name) const;
  std::filesystem::path progress(const std::string &name) const;

  // Everything for step `name` with `ranks` shards, .metadata and progress.pt.
  void complete_step(const std::string &name, int ranks);
  // The pieces, for half-written steps.
  void write_shard(const std::string &name, int rank, const std::string &bytes = "shard");
  void write_metadata(const std::string &name, const std::string &bytes = "meta");
  void write_progress(const std::string &name, const std::string &bytes = "progress");
  // Both roots, empty.
  void make_roots();

private:
  std::filesystem::path orchestrator_root() const;

  std::filesystem::path m_out;
  std::string m_run; // "" for v0.8.0
};

} // namespace pb::test
