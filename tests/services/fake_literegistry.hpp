// SPDX-License-Identifier: MIT
// A fake LiteRegistry for end-to-end tests: the two launcher packages with the field sets of
// LiteRegistry's launchers (docs/services.md), recording every config they are given (field ->
// type and value) to $FAKE_LITEREGISTRY_RECORD and answering like the real launchers (submit and
// stop run the `beaker` found on PATH). The packages are real Python files in
// tests/support/fake_literegistry/ (bench/evaluation uses them too); this header puts them on a
// test's PYTHONPATH. Shared by the services, evaluation and run tests.
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pb::test {

// Copies the fake packages (tests/support/fake_literegistry/, shared with bench/evaluation) under
// `root` (put `root` on PYTHONPATH), with dist-info metadata so importlib.metadata reports
// `base_version` / `podman_version`.
inline void write_fake_literegistry(const std::filesystem::path &root,
                                    const std::string &base_version = "0.1.2",
                                    const std::string &podman_version = "0.2.13") {
  const auto packages = source_dir() / "tests" / "support" / "fake_literegistry";
  for (const char *file : {"literegistry_fake_common.py",
                           "literegistry_base_deployment/__init__.py",
                           "literegistry_podman_beaker/__init__.py"}) {
    write_file(root / file, read_file(packages / file));
  }
  write_file(root / ("literegistry_base_deployment-" + base_version + ".dist-info") / "METADATA",
             "Metadata-Version: 2.1\nName: literegistry-base-deployment\nVersion: " + base_version +
                 "\n");
  write_file(root / ("literegistry_podman_beaker-" + podman_version + ".dist-info") / "METADATA",
             "Metadata-Version: 2.1\nName: literegistry-podman-beaker\nVersion: " + podman_version +
                 "\n");
}

// The records the fake launchers wrote, one JSON object per call.
inline std::vector<nlohmann::json> fake_literegistry_records(const std::filesystem::path &file) {
  std::vector<nlohmann::json> records;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) {
      records.push_back(nlohmann::json::parse(line));
    }
  }
  return records;
}

} // namespace pb::test
