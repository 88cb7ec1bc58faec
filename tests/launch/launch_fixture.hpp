// SPDX-License-Identifier: MIT
// A temp "Weka mount" holding a copy of examples/ and tests/launch/data/, a fake beaker on
// PATH, and helpers to run `primebeaker` inside it with the mount flags.
#pragma once

#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <string>
#include <vector>

namespace pb::test {

class LaunchFixture : public ::testing::Test {
protected:
  LaunchFixture();

  // The mount root (cwd of every run), and a path inside it.
  std::filesystem::path mount() const { return m_tmp.path() / "weka"; }
  std::string at(const std::string &relative) const { return (mount() / relative).string(); }

  // --mount-path/--working-dir/--scratch-dir/--home-dir pointing at the mount.
  std::vector<std::string> mount_flags() const;

  // Runs primebeaker with `args` + mount_flags() (when `with_mount`), cwd = mount, fake beaker
  // first on PATH, PRIMEBEAKER_LAUNCH_ID pinned, PRIMEBEAKER_IMAGE_CATALOG = runtime_catalog()
  // (unless `env` overrides it; an empty value means the built-in catalog).
  RunResult run(std::vector<std::string> args,
                bool with_mount = true,
                std::map<std::string, std::string> env = {});

  // Where this build's stage is named under the mount (`primebeaker stage --dry-run`): the first
  // word of every container command a launch renders.
  std::string staged_program();

  // The one line a submit prints on stderr by default when it stages this build under the
  // mount: "primebeaker: staged primebeaker <version> at <dir> (reused)" or "(copied N MB in
  // X.X s)". `how` is a regex for what is in parentheses.
  std::regex staged_line(const std::string &how = "reused|copied [0-9]+ MB in [0-9]+\\.[0-9] s");

  // `text` with the temp dir replaced by <TMP>.
  std::string normalized(const std::string &text) const;

  // Compares `actual` with tests/launch/golden/<name>; PB_UPDATE_GOLDEN=1 rewrites it.
  void expect_golden(const std::string &name, const std::string &actual) const;

  void write(const std::string &relative, const std::string &content) const;
  std::string read(const std::string &relative) const;

  // Makes the fake beaker answer `experiment create` with k_created_stdout. Without rules it
  // answers nothing: any call exits 97 (and is recorded), so previews can prove they made none.
  void beaker_creates();

  TempDir m_tmp;
  FakeBin m_fakes;
  FakeBeaker m_beaker;
};

// What `beaker experiment create --format json` prints: an array with the created experiment.
inline const std::string k_created_stdout = R"([
  {
    "id": "01FAKEEXPERIMENT0000000000",
    "name": "fake-experiment",
    "fullName": "jdoe/fake-experiment",
    "workspaceRef": {"id": "01HWS0000000000000000000AB", "name": "oe-agents", "fullName": "ai2/oe-agents"},
    "jobs": []
  }
]
)";

// The text answer of older `beaker` CLIs (and of create without --format json): still read.
inline const std::string k_created_text_stdout =
    "Experiment 01FAKEEXPERIMENT0000000000 submitted. See progress at "
    "https://beaker.org/ex/01FAKEEXPERIMENT0000000000\n";

// A test image catalog with primebeaker-runtime images for ai2/oe-agents
// (beaker://01TESTRUNTIMEOEAGENTS00000) and ai2/oe-agents-holmes.
std::filesystem::path runtime_catalog();

// The lines of `text` (each ended by '\n'; a last unterminated piece is dropped).
std::vector<std::string> lines_of(const std::string &text);

// The bundled example or test-data TOML text, for tests that edit one key.
std::string example_text(const std::string &relative);

// `text` with `old_text` (must occur once) replaced by `new_text`.
std::string
replace_once(const std::string &text, const std::string &old_text, const std::string &new_text);

// `text` with the line starting with `prefix` replaced by `replacement` (must exist once).
std::string
replace_line(const std::string &text, const std::string &prefix, const std::string &replacement);

} // namespace pb::test
