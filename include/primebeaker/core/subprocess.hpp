// SPDX-License-Identifier: MIT
// Long-running child processes: started asynchronously from argv, each in its own process group,
// so that stopping one stops everything it started. The synchronous pb::proc::Runner stays the
// way to run a command to completion; this is for supervisors (the node runtime).
#pragma once

#include <primebeaker/core/process.hpp>

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pb::proc {

// Where a child's stdout or stderr goes.
struct Output {
  enum class Kind { inherit, null, append, truncate, pipe };
  Kind kind = Kind::inherit;
  std::filesystem::path path; // for append / truncate (parent directories must exist)

  static Output inherit() { return {}; }
  static Output null() { return {Kind::null, {}}; }
  static Output append_to(std::filesystem::path p) { return {Kind::append, std::move(p)}; }
  static Output truncate_to(std::filesystem::path p) { return {Kind::truncate, std::move(p)}; }
  // Both stdout and stderr (when both say pipe) go to one pipe the parent reads (pipe_fd()).
  static Output pipe() { return {Kind::pipe, {}}; }
};

struct SpawnSpec {
  Argv argv;  // argv[0] looked up on PATH of `env` unless it contains '/'
  EnvMap env; // the child's complete environment
  std::optional<std::filesystem::path> cwd;
  Output out;
  Output err;
};

// How a child ended.
struct ExitStatus {
  int exit_code = 0; // valid when signal == 0
  int signal = 0;    // the terminating signal, 0 if it exited
  // The shell convention: the exit code, or 128 + signal.
  int code() const { return signal != 0 ? 128 + signal : exit_code; }
  std::string describe() const; // "exit code 3", "killed by signal 9"
};

// One child process leading its own process group. Not copyable; movable. The destructor kills
// the whole group (SIGKILL) and reaps the child if it is still running, so a child never
// outlives the object that owns it by accident.
class Child {
public:
  // Starts `spec`. The child gets default signal dispositions and an empty signal mask, its
  // own process group, and SIGKILL when this process dies (PR_SET_PDEATHSIG). A program that
  // cannot be found or started throws pb::Error (exit 4) naming it.
  static Child spawn(const SpawnSpec &spec);

  Child() = default;
  Child(Child &&other) noexcept;
  Child &operator=(Child &&other) noexcept;
  Child(const Child &) = delete;
  Child &operator=(const Child &) = delete;
  ~Child();

  pid_t pid() const { return m_pid; }
  bool valid() const { return m_pid > 0; }
  // The read end of the output pipe (Output::pipe), or -1. Owned by the Child.
  int pipe_fd() const { return m_pipe_fd; }
  // Reads what is available from the pipe without blocking; empty at end of output.
  std::string read_available();

  // Non-blocking: the status once the child has exited (cached afterwards), else nullopt.
  std::optional<ExitStatus> poll();
  // Blocks until the child exits.
  ExitStatus wait();
  // Sends `signal` to the child's whole process group (also after the leader exited, to reach
  // members it left behind). No effect once the group is gone.
  void signal_group(int signal);
  // SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group.
  // Returns the leader's status.
  ExitStatus stop(std::chrono::milliseconds grace);

private:
  pid_t m_pid = -1;
  int m_pipe_fd = -1;
  std::optional<ExitStatus> m_status;
  void release();
};

// Makes this process the reaper of every orphaned descendant (PR_SET_CHILD_SUBREAPER), so that
// processes a child leaves behind, even in another process group, stay findable.
void become_subreaper();

// SIGKILLs every remaining child of this process that is not in `keep` and reaps whatever has
// exited. With become_subreaper() this covers orphaned grandchildren too.
void kill_remaining_children(const std::vector<pid_t> &keep = {});

// Reaps exited children of this process that are not in `keep` (orphans a subreaper or PID 1
// inherited), so they do not pile up as zombies during a long run. Never blocks.
void reap_untracked_zombies(const std::vector<pid_t> &keep);

} // namespace pb::proc
