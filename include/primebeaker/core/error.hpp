// SPDX-License-Identifier: MIT
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace pb {

// Process exit codes (docs/cli.md, "Exit status"). The node runtime adds 90-92 on top.
enum class ExitCode : int {
  ok = 0,
  failure = 1,      // run-time failure, `toml get` of a missing key, failed edit verification
  usage = 2,        // bad flag, bad key path, bad value literal, missing in-container env var
  bad_input = 3,    // invalid configuration or input file
  tool_failed = 4,  // an external tool (beaker, python3, docker) failed or is missing
  retry_later = 75, // a refusal that may pass later (sysexits' EX_TEMPFAIL): `rl resume` while
                    // Beaker has not finalized the source's jobs
  peer_failed = 90, // node runtime: another replica failed
  unexpected_exit = 91,
  peer_shutdown = 92,
  interrupted = 130,
  terminated = 143,
};

// The one error type. Thrown anywhere, caught once by pb::cli::run, which prints
// "primebeaker: error: <message>" plus each context line indented, and exits with code().
// An empty message prints nothing (for commands that already reported, like `toml check`).
class Error : public std::runtime_error {
public:
  Error(ExitCode code, const std::string &message, std::vector<std::string> context = {});
  Error(int exit_code, const std::string &message, std::vector<std::string> context = {});

  int code() const noexcept { return m_code; }
  const std::vector<std::string> &context() const noexcept { return m_context; }
  // Adds an indented line shown under the message (where the error happened, a hint).
  Error &add_context(std::string line);

private:
  int m_code;
  std::vector<std::string> m_context;
};

Error failure(const std::string &message);     // exit 1
Error usage_error(const std::string &message); // exit 2
Error input_error(const std::string &message); // exit 3
Error tool_error(const std::string &message);  // exit 4

} // namespace pb
