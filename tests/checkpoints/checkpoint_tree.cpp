// SPDX-License-Identifier: MIT
#include "checkpoint_tree.hpp"

#include "test_support.hpp"

namespace pb::test {

namespace fs = std::filesystem;

fs::path CheckpointTree::orchestrator_root() const {
  return m_run.empty() ? m_out / "run_default" / "checkpoints" : run_dir() / "checkpoints";
}
fs::path CheckpointTree::trainer_dir(const std::string &name) const {
  return run_dir() / "checkpoints" / name / "trainer";
}
fs::path CheckpointTree::shard(const std::string &name, int rank) const {
  return trainer_dir(name) / ("__" + std::to_string(rank) + "_0.distcp");
}
fs::path CheckpointTree::metadata(const std::string &name) const {
  return trainer_dir(name) / ".metadata";
}
fs::path CheckpointTree::progress(const std::string &name) const {
  return orchestrator_root() / name / "orchestrator" / "progress.pt";
}

void CheckpointTree::complete_step(const std::string &name, int ranks) {
  for (int rank = 0; rank < ranks; ++rank) {
    write_shard(name, rank, "shard-" + std::to_string(rank));
  }
  write_metadata(name);
  write_progress(name);
}
void CheckpointTree::write_shard(const std::string &name, int rank, const std::string &bytes) {
  write_file(shard(name, rank), bytes);
}
void CheckpointTree::write_metadata(const std::string &name, const std::string &bytes) {
  write_file(metadata(name), bytes);
}
void CheckpointTree::write_progress(const std::string &name, const std::string &bytes) {
  write_file(progress(name), bytes);
}
void CheckpointTree::make_roots() {
  fs::create_directories(run_dir() / "checkpoints");
  fs::create_directories(orchestrator_root());
}

} // namespace pb::test
