// SPDX-License-Identifier: MIT
// Helpers every test binary shares: temp dirs, running the real binary, fake programs on PATH.
#pragma once

#include <primebeaker/core/error.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
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
// temp dir when not given, LANG=C.UTF-8, TZ=UTC, NO_COLOR=1, USER=jdoe) plus options.env.
RunResult run_primebeaker(const std::vector<std::string> &args, const RunOptions &options = {});

// Makes `staged_program` (the path a preview rendered:
// <scratch>/primebeaker/bin/<name>/primebeaker) runnable, as a submit would have: this build is
// staged once per test process (a Debug stage is ~100 MB) and the preview's stage directory is
// linked to it. Nothing happens if it exists.
void provide_stage(const std::filesystem::path &staged_program);

// One recorded run of a fake program.
struct FakeCall {
  std::vector<std::string> argv; // argv[0] is the program name as invoked
  std::map<std::string, std::string> env;
  std::string cwd;
  long long time_ns = 0; // when it was made (`date +%s%N`), to order calls of several fakes
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

// A fake `beaker` on PATH that answers from a table instead of an inline script. Rules are
// tried in the order they were added; the first whose words prefix the call's arguments answers
// ("*" matches any one word). A rule with several answers plays them in order, the last one
// repeating, which scripts a lifecycle (pending, running, succeeded). An unmatched call prints
// "fake beaker: unexpected call: ..." and exits 97, so a test notices calls it did not expect.
struct FakeAnswer {
  std::string out = {};
  int exit_code = 0;
  std::string err = {};
  // The call's last argument names a file (the spec of `experiment create`, which the caller
  // deletes afterwards): keep a copy of it for kept_files().
  bool keep_last_argument = false;
  // Send this signal to the caller (the fake's parent) before answering: a Ctrl-C or SIGTERM
  // that arrives while beaker runs.
  int signal_caller = 0;
  // `out` names the call's words: "{1}" becomes its first argument, "{5}" its fifth (up to 9).
  bool expand_arguments = false;
};

class FakeBeaker {
public:
  explicit FakeBeaker(FakeBin &bin); // installs `beaker` into bin
  FakeBeaker &on(const std::vector<std::string> &prefix,
                 const std::string &out,
                 int exit_code = 0,
                 const std::string &err = {});
  FakeBeaker &on_sequence(const std::vector<std::string> &prefix,
                          const std::vector<FakeAnswer> &answers);
  std::vector<FakeCall> calls() const;
  // The calls whose arguments start with `prefix` (same matching as the rules).
  std::vector<FakeCall> calls_matching(const std::vector<std::string> &prefix) const;
  // The files kept by answers with keep_last_argument, in call order.
  std::vector<std::string> kept_files() const;
  // Forgets every rule (not the calls), so that a test can answer differently from now on.
  FakeBeaker &clear();

private:
  FakeBin &m_bin;
  std::filesystem::path m_rules;
  int m_next_rule = 0;
};

bool args_match(const std::vector<std::string> &args, const std::vector<std::string> &prefix);

// The pb::Error that `body` throws, for the checks EXPECT_PB_ERROR does not make (the exact
// message, the context lines). Records a test failure, and returns an Error with code -1, when
// `body` throws none.
pb::Error thrown_error(const std::function<void()> &body);

// The multi-node Prime-RL v0.8.0 RL TOML the resume and recovery tests launch and resume: 4
// trainer ranks (cp 2 x dp_replicate 2) on a mixed node, 1 trainer + 2 inference nodes,
// clean_output_dir = true, ckpt.resume_step = -1, wandb name "same-run", comments to keep.
std::string multi_node_rl_toml(const std::filesystem::path &output_dir);

// Its Prime-RL v0.9 counterpart (configs at 559b4477): 2 trainer nodes x 2 GPUs = 4 trainer
// ranks, 1 inference node, clean = true, an empty [resume], [monitors.wandb] project "proj";
// `run_block` (e.g. "[run]\nname = \"x\"\n") is inserted as written ("" = the launch names it).
std::string multi_node_rl_v0_9_toml(const std::filesystem::path &output_dir,
                                    const std::string &run_block);

} // namespace pb::test

// Expects `statement` to throw pb::Error with exit code `expected_code` and a message (or a
// context line) containing `substring`.
#define EXPECT_PB_ERROR(statement, expected_code, substring)                                       \
  do {                                                                                             \
    bool pb_thrown_ = false;                                                                       \
    try {                                                                                          \
      statement;                                                                                   \
    } catch (const ::pb::Error &pb_error_) {                                                       \
      pb_thrown_ = true;                                                                           \
      EXPECT_EQ(pb_error_.code(), static_cast<int>(expected_code)) << pb_error_.what();            \
      std::string pb_text_ = pb_error_.what();                                                     \
      for (const auto &pb_line_ : pb_error_.context()) {                                           \
        pb_text_ += "\n" + pb_line_;                                                               \
      }                                                                                            \
      EXPECT_NE(pb_text_.find(substring), std::string::npos) << pb_text_;                          \
    }                                                                                              \
    EXPECT_TRUE(pb_thrown_) << "expected pb::Error from " #statement;                              \
  } while (false)
