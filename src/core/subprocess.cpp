// SPDX-License-Identifier: MIT
#include "exec_vectors.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/subprocess.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

namespace pb::proc {
namespace {

ExitStatus from_wait_status(int status) {
  ExitStatus result;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

// Opens what an Output names, before fork (so errors are reported, not lost in the child).
int open_output(const Output &output, const std::string &program) {
  switch (output.kind) {
  case Output::Kind::null:
    return ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  case Output::Kind::append:
  case Output::Kind::truncate: {
    const int flags =
        O_WRONLY | O_CREAT | O_CLOEXEC | (output.kind == Output::Kind::append ? O_APPEND : O_TRUNC);
    const int fd = ::open(output.path.c_str(), flags, 0644);
    if (fd < 0) {
      throw failure(fmt::format("cannot open the log file {} for {}: {}",
                                output.path.string(),
                                program,
                                std::strerror(errno)));
    }
    return fd;
  }
  default:
    return -1;
  }
}

} // namespace

std::string ExitStatus::describe() const {
  if (signal != 0) {
    return fmt::format("killed by signal {}", signal);
  }
  return fmt::format("exit code {}", exit_code);
}

Child Child::spawn(const SpawnSpec &spec) {
  if (spec.argv.empty()) {
    throw failure("internal error: empty command");
  }
  const auto path_it = spec.env.find("PATH");
  const std::string path_list = path_it != spec.env.end() ? path_it->second : "/usr/bin:/bin";
  const auto program = find_executable(spec.argv[0], path_list);
  if (!program) {
    throw tool_error(fmt::format("cannot run {}: not found on PATH", spec.argv[0]));
  }
  spdlog::debug("starting {}", argv_to_json(spec.argv));

  // Everything the child needs is prepared here: after fork only async-signal-safe calls.
  const detail::ExecVectors vectors(spec.argv, spec.env);
  const std::string program_path = program->string();
  const std::string cwd = spec.cwd ? spec.cwd->string() : std::string();

  const bool use_pipe = spec.out.kind == Output::Kind::pipe || spec.err.kind == Output::Kind::pipe;
  int pipe_fds[2] = {-1, -1};
  if (use_pipe && ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw failure(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  int out_fd = -1;
  int err_fd = -1;
  try {
    out_fd = open_output(spec.out, spec.argv[0]);
    err_fd = open_output(spec.err, spec.argv[0]);
  } catch (...) {
    for (int fd : {pipe_fds[0], pipe_fds[1], out_fd}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    throw;
  }
  if (spec.out.kind == Output::Kind::pipe) {
    out_fd = pipe_fds[1];
  }
  if (spec.err.kind == Output::Kind::pipe) {
    err_fd = pipe_fds[1];
  }
  // Reports exec failure (errno) back through a close-on-exec pipe.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    throw failure(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  }
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {pipe_fds[0], pipe_fds[1], out_fd, err_fd, status_pipe[0], status_pipe[1]}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    throw tool_error(
        fmt::format("cannot run {}: fork failed: {}", spec.argv[0], std::strerror(err)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      ::_exit(127); // the parent already died
    }
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
      ::sigaction(sig, &dfl, nullptr);
    }
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    const int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) {
      ::dup2(null_in, STDIN_FILENO);
    }
    if (out_fd >= 0) {
      ::dup2(out_fd, STDOUT_FILENO);
    }
    if (err_fd >= 0) {
      ::dup2(err_fd, STDERR_FILENO);
    }
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      const int err = errno;
      (void)!::write(status_pipe[1], &err, sizeof err);
      ::_exit(127);
    }
    ::execve(program_path.c_str(), vectors.argv(), vectors.envp());
    const int err = errno;
    (void)!::write(status_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  // Also set the group from the parent, so signal_group works even before the child ran.
  ::setpgid(pid, pid);
  ::close(status_pipe[1]);
  for (int fd : {pipe_fds[1],
                 spec.out.kind == Output::Kind::pipe ? -1 : out_fd,
                 spec.err.kind == Output::Kind::pipe ? -1 : err_fd}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(status_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  Child child;
  child.m_pid = pid;
  if (n == sizeof child_errno) {
    child.wait();
    if (pipe_fds[0] >= 0) {
      ::close(pipe_fds[0]);
    }
    child.m_pid = -1;
    throw tool_error(fmt::format("cannot run {}: {}", spec.argv[0], std::strerror(child_errno)));
  }
  if (pipe_fds[0] >= 0) {
    ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
    child.m_pipe_fd = pipe_fds[0];
  }
  return child;
}

Child::Child(Child &&other) noexcept
    : m_pid(other.m_pid), m_pipe_fd(other.m_pipe_fd), m_status(other.m_status) {
  other.m_pid = -1;
  other.m_pipe_fd = -1;
}

Child &Child::operator=(Child &&other) noexcept {
  if (this != &other) {
    release();
    m_pid = other.m_pid;
    m_pipe_fd = other.m_pipe_fd;
    m_status = other.m_status;
    other.m_pid = -1;
    other.m_pipe_fd = -1;
  }
  return *this;
}

Child::~Child() {
  release();
}

void Child::release() {
  if (m_pid > 0) {
    if (!poll()) {
      signal_group(SIGKILL);
      wait();
    } else {
      signal_group(SIGKILL); // members the leader left behind
    }
  }
  if (m_pipe_fd >= 0) {
    ::close(m_pipe_fd);
    m_pipe_fd = -1;
  }
  m_pid = -1;
}

std::string Child::read_available() {
  std::string data;
  if (m_pipe_fd < 0) {
    return data;
  }
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(m_pipe_fd, buffer, sizeof buffer);
    if (n > 0) {
      data.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      ::close(m_pipe_fd);
      m_pipe_fd = -1;
    }
    break; // EAGAIN: nothing more for now
  }
  return data;
}

std::optional<ExitStatus> Child::poll() {
  if (m_status || m_pid <= 0) {
    return m_status;
  }
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(m_pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == m_pid) {
    m_status = from_wait_status(status);
  } else if (r < 0) {
    m_status = ExitStatus{-1, 0}; // reaped elsewhere; treat as gone
  }
  return m_status;
}

ExitStatus Child::wait() {
  if (m_status || m_pid <= 0) {
    return m_status.value_or(ExitStatus{});
  }
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(m_pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  m_status = r == m_pid ? from_wait_status(status) : ExitStatus{-1, 0};
  return *m_status;
}

void Child::signal_group(int signal) {
  if (m_pid > 0) {
    ::killpg(m_pid, signal);
  }
}

ExitStatus Child::stop(std::chrono::milliseconds grace) {
  if (m_pid <= 0) {
    return m_status.value_or(ExitStatus{});
  }
  if (!poll()) {
    signal_group(SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (!poll() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  signal_group(SIGKILL);
  return wait();
}

void become_subreaper() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

namespace {

std::vector<pid_t> direct_children(bool zombies_only = false) {
  std::vector<pid_t> result;
  const pid_t self = ::getpid();
  DIR *proc = ::opendir("/proc");
  if (proc == nullptr) {
    return result;
  }
  while (const dirent *entry = ::readdir(proc)) {
    const char *name = entry->d_name;
    if (name[0] < '0' || name[0] > '9') {
      continue;
    }
    std::ifstream stat(std::string("/proc/") + name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) {
      continue;
    }
    // "pid (comm) state ppid ...": comm may contain spaces and ')', so parse after the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 4 >= line.size()) {
      continue;
    }
    char state = 0;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == self &&
        (!zombies_only || state == 'Z')) {
      result.push_back(static_cast<pid_t>(std::atoi(name)));
    }
  }
  ::closedir(proc);
  return result;
}

} // namespace

void reap_untracked_zombies(const std::vector<pid_t> &keep) {
  for (const pid_t pid : direct_children(true)) {
    if (std::find(keep.begin(), keep.end(), pid) == keep.end()) {
      int status = 0;
      ::waitpid(pid, &status, WNOHANG);
    }
  }
}

void kill_remaining_children(const std::vector<pid_t> &keep) {
  // Killing a child can orphan its own children onto us; repeat until none are left.
  for (int round = 0; round < 50; ++round) {
    bool any = false;
    for (const pid_t pid : direct_children()) {
      if (std::find(keep.begin(), keep.end(), pid) != keep.end()) {
        continue;
      }
      any = true;
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
    if (!any) {
      return;
    }
  }
}

} // namespace pb::proc
