// SPDX-License-Identifier: MIT
// Helpers every test binary shares: temp dirs, running the real binary, fake programs on PATH.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::test {

std::filesystem::path source_dir();  // the repository
std::filesystem::path shared_dir();  // ../shared (spec and corpus), read in place
std::filesystem::path binary_path(); // the primebeaker binary under test

// A fresh directory, removed with everything in it when the object dies.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::filesystem::path &path() const { return m_path; }
  std::filesystem::path operator/(const std::string &name) const { return m_path / name; }

private:
  std::filesystem::path m_path;
};

std::string read_file(const std::filesystem::path &path);
void write_file(const std::filesystem::path &path,
                const std::string &content,
                unsigned mode = 0644); // creates parent directories

// A digest of every entry under `dir` (names, types, modes, sizes, contents): equal digests
// before and after a command prove it changed nothing on disk.
std::string tree_digest(const std::filesystem::path &dir);

struct RunOptions {
  std::map<std::string, std::string> env; // set on top of a minimal environment
  std::vector<std::string> unset_env;     // removed from it
  std::optional<std::string> stdin_data;
  std::optional<std::filesystem::path> cwd;
  std::vector<std::filesystem::path> path_prepend; // fake-bin directories, searched first
  int timeout_seconds = 60;
};

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the real primebeaker with `args`. The environment is minimal and fixed (PATH, HOME in a
// temp dir when not given, LANG=C.UTF-8, TZ=UTC, NO_COLOR=1) plus options.env.
RunResult run_primebeaker(const std::vector<std::string> &args, const RunOptions &options = {});

// One recorded run of a fake program.
struct FakeCall {
  std::vector<std::string> argv; // argv[0] is the program name as invoked
  std::map<std::string, std::string> env;
  std::string cwd;
};

// Fake programs for end-to-end tests: each records its argv, env and cwd, then runs a bash
// `behaviour` ("$@" holds its arguments). Put `bin()` first on PATH.
class FakeBin {
public:
  explicit FakeBin(const std::filesystem::path &root); // creates root/bin and root/calls
  void add(const std::string &name, const std::string &behaviour = "exit 0");
  std::vector<FakeCall> calls(const std::string &name) const; // in call order
  const std::filesystem::path &bin() const { return m_bin; }

private:
  std::filesystem::path m_bin;
  std::filesystem::path m_calls;
};

} // namespace pb::test
