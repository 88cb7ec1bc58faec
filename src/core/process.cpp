// SPDX-License-Identifier: MIT
#include "exec_vectors.hpp"

#include <primebeaker/core/env.hpp>
#include <primebeaker/core/error.hpp>
#include <primebeaker/core/process.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pb::proc {
namespace {

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw failure(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
    }
    read_end = fds[0];
    write_end = fds[1];
  }
  Pipe(const Pipe &) = delete;
  Pipe &operator=(const Pipe &) = delete;
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read_end >= 0) {
      ::close(read_end);
      read_end = -1;
    }
  }
  void close_write() {
    if (write_end >= 0) {
      ::close(write_end);
      write_end = -1;
    }
  }
};

Result finish(Result &result, int status) {
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return std::move(result);
}

// A child that exits without reading all its input closes the pipe: the write then fails with
// EPIPE, and the SIGPIPE it raises would end this process unless the process ignores it (the
// CLI does; a test binary or another host of the library may not). So SIGPIPE is blocked for
// this thread during the write, and one it raised is taken back before it is unblocked.
ssize_t write_ignoring_sigpipe(int fd, std::string_view data) {
  sigset_t pipe_signal;
  sigset_t before;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &before);
  const ssize_t written = ::write(fd, data.data(), data.size());
  const int saved = errno;
  if (written < 0 && saved == EPIPE) {
    const timespec now{};
    while (::sigtimedwait(&pipe_signal, nullptr, &now) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  errno = saved;
  return written;
}

} // namespace

std::string Result::status() const {
  if (timed_out) {
    return "timed out";
  }
  if (signal != 0) {
    return fmt::format("killed by signal {}", signal);
  }
  return fmt::format("exit code {}", exit_code);
}

EnvMap child_environment(const Command &command) {
  EnvMap env = command.clear_env ? EnvMap{} : env::snapshot();
  for (const auto &name : command.env_unset) {
    env.erase(name);
  }
  for (const auto &[name, value] : command.env_set) {
    env[name] = value;
  }
  return env;
}

std::optional<std::filesystem::path> find_executable(std::string_view program,
                                                     std::string_view path_list) {
  if (program.empty()) {
    return std::nullopt;
  }
  if (program.find('/') != std::string_view::npos) {
    std::string p(program);
    if (::access(p.c_str(), X_OK) == 0) {
      return std::filesystem::path(p);
    }
    return std::nullopt;
  }
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t end = path_list.find(':', start);
    if (end == std::string_view::npos) {
      end = path_list.size();
    }
    std::string dir(path_list.substr(start, end - start));
    if (dir.empty()) {
      dir = ".";
    }
    std::filesystem::path candidate = std::filesystem::path(dir) / std::string(program);
    std::error_code ec;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate, ec)) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string argv_to_json(const Argv &argv) {
  return nlohmann::json(argv).dump();
}

Result SystemRunner::run(const Command &command) {
  if (command.argv.empty()) {
    throw failure("internal error: empty command");
  }
  EnvMap env = child_environment(command);
  const auto path_it = env.find("PATH");
  const std::string path_list = path_it != env.end() ? path_it->second : "/usr/bin:/bin";
  const auto program = find_executable(command.argv[0], path_list);
  if (!program) {
    throw tool_error(fmt::format("cannot run {}: not found on PATH", command.argv[0]));
  }
  spdlog::debug("running {}", argv_to_json(command.argv));

  Pipe in;
  Pipe out;
  Pipe err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (command.stdin_data) {
    posix_spawn_file_actions_adddup2(&actions, in.read_end, STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  if (command.capture_stdout) {
    posix_spawn_file_actions_adddup2(&actions, out.write_end, STDOUT_FILENO);
  }
  if (command.capture_stderr) {
    posix_spawn_file_actions_adddup2(&actions, err.write_end, STDERR_FILENO);
  }
  if (command.cwd) {
    posix_spawn_file_actions_addchdir_np(&actions, command.cwd->c_str());
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default signal handling, whatever we ignore (SIGPIPE).
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t no_mask;
  sigemptyset(&no_mask);
  posix_spawnattr_setsigmask(&attr, &no_mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  const detail::ExecVectors vectors(command.argv, env);
  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, program->c_str(), &actions, &attr, vectors.argv(), vectors.envp());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw tool_error(fmt::format("cannot run {}: {}", command.argv[0], std::strerror(rc)));
  }
  in.close_read();
  out.close_write();
  err.close_write();

  Result result;
  std::string_view pending = command.stdin_data ? std::string_view(*command.stdin_data) : "";
  if (!command.stdin_data || pending.empty()) {
    in.close_write();
  } else {
    ::fcntl(in.write_end, F_SETFL, O_NONBLOCK);
  }
  if (!command.capture_stdout) {
    out.close_read();
  }
  if (!command.capture_stderr) {
    err.close_read();
  }

  const auto deadline = std::chrono::steady_clock::now() + command.timeout;
  char buffer[65536];
  while (in.write_end >= 0 || out.read_end >= 0 || err.read_end >= 0) {
    std::vector<pollfd> fds;
    if (in.write_end >= 0) {
      fds.push_back({in.write_end, POLLOUT, 0});
    }
    if (out.read_end >= 0) {
      fds.push_back({out.read_end, POLLIN, 0});
    }
    if (err.read_end >= 0) {
      fds.push_back({err.read_end, POLLIN, 0});
    }
    int wait_ms = -1;
    if (command.timeout.count() > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        result.timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>(left.count());
    }
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      break;
    }
    for (const auto &p : fds) {
      if (p.revents == 0) {
        continue;
      }
      if (p.fd == in.write_end) {
        const ssize_t w = write_ignoring_sigpipe(in.write_end, pending);
        if (w > 0) {
          pending.remove_prefix(static_cast<size_t>(w));
        }
        if (pending.empty() || (w < 0 && errno != EAGAIN && errno != EINTR)) {
          in.close_write();
        }
        continue;
      }
      Pipe &pipe = p.fd == out.read_end ? out : err;
      std::string &sink = p.fd == out.read_end ? result.out : result.err;
      const ssize_t r = ::read(p.fd, buffer, sizeof buffer);
      if (r > 0) {
        sink.append(buffer, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        pipe.close_read();
      }
    }
  }

  int status = 0;
  if (command.timeout.count() > 0 && !result.timed_out) {
    // Output may be inherited, so the deadline also bounds the wait itself.
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        result.timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      ::usleep(5000);
    }
    if (!result.timed_out) {
      return finish(result, status);
    }
  }
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return finish(result, status);
}

} // namespace pb::proc
