// SPDX-License-Identifier: MIT
// A generated provenance tree (docs/watcher.md): SFT and RL outputs with weights/step_*,
// train TOMLs, launch specs, W&B run dirs, manifests, eval YAMLs and a legacy archive.
#pragma once

#include "test_support.hpp"

#include <string>
#include <vector>

namespace pb::test {

class ProvenanceTree {
public:
  ProvenanceTree();
  const std::filesystem::path &repo() const { return m_repo; }
  std::filesystem::path database() const { return m_dir.path() / "db" / "watcher.sqlite3"; }
  // --repo-root and every discovery root, for the CLI.
  std::vector<std::string> discovery_args() const;
  std::string path(const std::string &relative) const { return (m_repo / relative).string(); }
  void write(const std::string &relative, const std::string &content) const;
  void mkdir(const std::string &relative) const;

private:
  TempDir m_dir;
  std::filesystem::path m_repo;
};

} // namespace pb::test
