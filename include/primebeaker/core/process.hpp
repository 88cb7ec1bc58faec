// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pb::proc {

using Argv = std::vector<std::string>;
using EnvMap = std::map<std::string, std::string>;

// One program run, as a value. There is no way to pass a command line as one string:
// argv[0] is the program (looked up on PATH unless it contains '/'), the rest are its arguments.
struct Command {
  Argv argv;
  EnvMap env_set;                     // set or override in the child's environment
  std::vector<std::string> env_unset; // removed from the child's environment
  bool clear_env = false;             // start from an empty environment instead of ours
  std::optional<std::filesystem::path> cwd;
  std::optional<std::string> stdin_data; // nullopt: the child reads /dev/null
  std::chrono::milliseconds timeout{0};  // 0: no limit; on expiry the child is killed
  bool capture_stdout = true;            // false: the child writes to our stdout
  bool capture_stderr = true;            // false: the child writes to our stderr
};

struct Result {
  int exit_code = -1; // -1 when killed by a signal
  int signal = 0;     // the terminating signal, 0 if it exited
  bool timed_out = false;
  std::string out;
  std::string err;

  bool ok() const { return exit_code == 0 && signal == 0 && !timed_out; }
  // "exit code 3", "killed by signal 9", "timed out after 5s" -- for messages.
  std::string status() const;
};

// Runs commands. Commands take a Runner& so that tests can substitute a recording fake.
class Runner {
public:
  virtual ~Runner() = default;
  // Runs to completion. A program that cannot be found or started throws pb::Error (exit 4)
  // naming it; any exit status of a started program is returned, never thrown.
  virtual Result run(const Command &command) = 0;
};

// posix_spawn, pipes read with poll, close-on-exec everywhere.
class SystemRunner final : public Runner {
public:
  Result run(const Command &command) override;
};

// The environment a child would get: ours (unless clear_env) with the command's changes.
EnvMap child_environment(const Command &command);

// Looks `program` up in a colon-separated PATH list (empty entries mean "."); a name with a
// '/' is returned as is when executable. No I/O besides access(2).
std::optional<std::filesystem::path> find_executable(std::string_view program,
                                                     std::string_view path_list);

// argv as a JSON array, for debug logs: unambiguous and pasteable.
std::string argv_to_json(const Argv &argv);

} // namespace pb::proc
