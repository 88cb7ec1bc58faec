// SPDX-License-Identifier: MIT
// Signals, the attempt-keyed rendezvous directory, child supervision, host facts and the text
// formats a replica writes (support.hpp).
#include "support.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/core/fs.hpp>
#include <primebeaker/core/random.hpp>
#include <primebeaker/core/self.hpp>
#include <primebeaker/core/signals.hpp>
#include <primebeaker/core/text.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

namespace pb::node {
namespace {

std::chrono::steady_clock::time_point deadline_after(int seconds) {
  return std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
}

} // namespace

void Signals::install() {
  // Held for the rest of the process: the node runtime never hands its signals back.
  static const signals::Scope scope(
      signals::ScopeOptions{.hangup = true, .child_exit_wakes = true});
}

int Signals::pending() {
  return signals::Scope::pending();
}

void Signals::check() {
  const int sig = pending();
  if (sig == SIGINT) {
    throw Error(ExitCode::interrupted, "interrupted (SIGINT)");
  }
  if (sig != 0) {
    throw Error(ExitCode::terminated,
                fmt::format("terminated ({})", sig == SIGTERM ? "SIGTERM" : "SIGHUP"));
  }
}

void Signals::sleep(double seconds, const std::vector<int> &extra_fds) {
  signals::Scope::sleep(std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0)),
                        extra_fds);
}

// ---------------------------------------------------------------------------------------------

Rendezvous::Rendezvous(
    std::filesystem::path root, int rank, int total, double poll_seconds, int timeout_seconds)
    : m_root(std::move(root)), m_rank(rank), m_total(total), m_poll(poll_seconds),
      m_timeout(timeout_seconds) {}

namespace {

std::optional<std::string> read_nonempty(const std::filesystem::path &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return std::nullopt;
  }
  try {
    std::string content = fs::read_file(path);
    if (text::trim(content).empty()) {
      return std::nullopt;
    }
    return content;
  } catch (const Error &) {
    return std::nullopt;
  }
}

} // namespace

void Rendezvous::join() {
  std::error_code ec;
  std::filesystem::create_directories(m_root, ec);
  if (ec) {
    throw failure(fmt::format(
        "cannot create the rendezvous directory {}: {}", m_root.string(), ec.message()));
  }
  const auto deadline = deadline_after(m_timeout);
  if (m_rank == 0) {
    const std::string attempt = random::hex_id(16);
    const auto dir = m_root / ("attempt-" + attempt);
    std::filesystem::create_directories(dir / "runtime");
    fs::write_file_atomic(m_root / "attempt", attempt + "\n");
    std::map<int, std::string> nonces;
    while (static_cast<int>(nonces.size()) < m_total - 1) {
      for (int r = 1; r < m_total; ++r) {
        if (nonces.count(r) != 0) {
          continue;
        }
        const auto content = read_nonempty(m_root / fmt::format("join.{}", r));
        if (!content) {
          continue;
        }
        const auto parts = text::split(text::trim(*content), ' ');
        if (parts.size() == 2 && parts[0] == attempt) {
          nonces[r] = parts[1];
        }
      }
      if (static_cast<int>(nonces.size()) == m_total - 1) {
        break;
      }
      Signals::check();
      if (std::chrono::steady_clock::now() >= deadline) {
        std::vector<std::string> missing;
        for (int r = 1; r < m_total; ++r) {
          if (nonces.count(r) == 0) {
            missing.push_back(std::to_string(r));
          }
        }
        throw failure(fmt::format("timed out after {} s waiting for replicas {} to join attempt {}",
                                  m_timeout,
                                  text::join(missing, ", "),
                                  attempt));
      }
      Signals::sleep(m_poll);
    }
    std::string roster;
    for (const auto &[r, nonce] : nonces) {
      roster += fmt::format("{} {}\n", r, nonce);
    }
    fs::write_file_atomic(dir / "roster", roster.empty() ? "0\n" : roster);
    m_attempt = attempt;
    m_dir = dir;
    return;
  }

  const std::string nonce = random::hex_id(16);
  const std::string expected = fmt::format("{} {}", m_rank, nonce);
  std::string announced;
  for (;;) {
    if (const auto attempt_text = read_nonempty(m_root / "attempt")) {
      const std::string attempt(text::trim(*attempt_text));
      if (attempt != announced) {
        fs::write_file_atomic(m_root / fmt::format("join.{}", m_rank),
                              attempt + " " + nonce + "\n");
        announced = attempt;
      }
      if (const auto roster = read_nonempty(m_root / ("attempt-" + attempt) / "roster")) {
        for (const auto &line : text::split(*roster, '\n')) {
          if (text::trim(line) == expected) {
            m_attempt = attempt;
            m_dir = m_root / ("attempt-" + attempt);
            return;
          }
        }
      }
    }
    Signals::check();
    if (std::chrono::steady_clock::now() >= deadline) {
      throw failure(
          fmt::format("timed out after {} s waiting for replica 0 to start an attempt in {}",
                      m_timeout,
                      m_root.string()));
    }
    Signals::sleep(m_poll);
  }
}

void Rendezvous::publish(const std::string &name, const std::string &content) {
  fs::write_file_atomic(file(name), content);
}

std::optional<std::string> Rendezvous::read(const std::string &name) const {
  return read_nonempty(file(name));
}

std::string Rendezvous::wait_for(const std::string &name, const std::string &what) {
  const auto deadline = deadline_after(m_timeout);
  for (;;) {
    if (auto content = read(name)) {
      return *content;
    }
    if (const auto reason = read("shutdown.requested")) {
      throw Error(ExitCode::peer_shutdown,
                  fmt::format("shutdown requested while waiting for {}: {}",
                              what,
                              std::string(text::trim(*reason))));
    }
    Signals::check();
    if (std::chrono::steady_clock::now() >= deadline) {
      throw failure(fmt::format(
          "timed out after {} s waiting for {} ({})", m_timeout, what, file(name).string()));
    }
    Signals::sleep(m_poll);
  }
}

Observation Rendezvous::observe() const {
  Observation seen;
  seen.complete = read("complete").has_value();
  seen.shutdown_requested = read("shutdown.requested").has_value();
  for (int r = 0; r < m_total; ++r) {
    if (r == m_rank) {
      continue;
    }
    if (const auto content = read(fmt::format("status.{}", r))) {
      if (const auto status = parse_status(*content)) {
        seen.statuses[r] = *status;
      }
    }
  }
  return seen;
}

// ---------------------------------------------------------------------------------------------

void Supervisor::start(const std::string &name, proc::SpawnSpec spec, const ChildOptions &options) {
  auto m = std::make_unique<Managed>();
  m->name = name;
  m->strip = options.strip_rank_prefix;
  if (options.tee) {
    m->tee = std::make_unique<std::ofstream>(*options.tee, std::ios::app | std::ios::binary);
    if (!*m->tee) {
      throw failure(fmt::format("cannot open the log file {}", options.tee->string()));
    }
    spec.out = proc::Output::pipe();
    spec.err = proc::Output::pipe();
  } else {
    spec.out = options.out;
    spec.err = options.err.value_or(options.out);
  }
  spdlog::info("starting {}: {}", name, proc::argv_to_json(spec.argv));
  m->child = proc::Child::spawn(spec);
  m_children.push_back(std::move(m));
}

void Supervisor::pump(Managed &m, bool final) {
  if (m.child.pipe_fd() < 0) {
    return;
  }
  m.partial += m.child.read_available();
  size_t start = 0;
  for (;;) {
    const auto nl = m.partial.find('\n', start);
    if (nl == std::string::npos) {
      break;
    }
    std::string line = m.partial.substr(start, nl - start);
    if (m.strip) {
      line = strip_rank_prefix(line);
    }
    *m.tee << line << '\n';
    std::cout << line << '\n';
    start = nl + 1;
  }
  m.partial.erase(0, start);
  if (final && !m.partial.empty()) {
    const std::string line = m.strip ? strip_rank_prefix(m.partial) : m.partial;
    *m.tee << line << '\n';
    std::cout << line << '\n';
    m.partial.clear();
  }
  m.tee->flush();
  std::cout.flush();
}

std::optional<std::pair<std::string, proc::ExitStatus>> Supervisor::wait_event(double seconds) {
  auto collect = [this]() -> std::optional<std::pair<std::string, proc::ExitStatus>> {
    for (auto &m : m_children) {
      pump(*m, false);
      if (m->reported) {
        continue;
      }
      if (const auto status = m->child.poll()) {
        pump(*m, true);
        m->reported = true;
        return std::make_pair(m->name, *status);
      }
    }
    return std::nullopt;
  };
  if (auto event = collect()) {
    return event;
  }
  std::vector<int> fds;
  for (auto &m : m_children) {
    if (m->child.pipe_fd() >= 0) {
      fds.push_back(m->child.pipe_fd());
    }
  }
  Signals::sleep(seconds, fds);
  // Orphans we inherited as a subreaper (or as PID 1 in a container) are reaped now and then.
  const auto now = std::chrono::steady_clock::now();
  if (now - m_last_reap > std::chrono::seconds(5)) {
    m_last_reap = now;
    std::vector<pid_t> tracked;
    for (auto &m : m_children) {
      if (!m->child.poll()) {
        tracked.push_back(m->child.pid());
      }
    }
    proc::reap_untracked_zombies(tracked);
  }
  return collect();
}

bool Supervisor::running(const std::string &name) {
  for (auto &m : m_children) {
    if (m->name == name) {
      return !m->child.poll().has_value();
    }
  }
  return false;
}

void Supervisor::stop_all(double grace_seconds) {
  for (auto &m : m_children) {
    m->child.signal_group(SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(grace_seconds * 1000));
  for (;;) {
    bool all_done = true;
    for (auto &m : m_children) {
      pump(*m, false);
      if (!m->child.poll()) {
        all_done = false;
      }
    }
    if (all_done || std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto &m : m_children) {
    m->child.signal_group(SIGKILL);
    m->child.wait();
    pump(*m, true);
  }
  proc::kill_remaining_children();
}

// ---------------------------------------------------------------------------------------------

std::string self_executable() {
  return self::command().string(); // the staged wrapper when run from a stage (docs/staging.md)
}

std::string local_address(const Tuning &tuning) {
  if (tuning.host) {
    return *tuning.host;
  }
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs *it = list; it != nullptr; it = it->ifa_next) {
      if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET ||
          (it->ifa_flags & IFF_LOOPBACK) != 0 || (it->ifa_flags & IFF_UP) == 0) {
        continue;
      }
      char buffer[INET_ADDRSTRLEN] = {};
      const auto *in = reinterpret_cast<const sockaddr_in *>(it->ifa_addr);
      if (::inet_ntop(AF_INET, &in->sin_addr, buffer, sizeof buffer) != nullptr) {
        ::freeifaddrs(list);
        return buffer;
      }
    }
    ::freeifaddrs(list);
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

bool accepts_connections(const std::string &host, int port, double timeout_seconds) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return false;
  }
  bool accepted = false;
  for (addrinfo *it = found; it != nullptr && !accepted; it = it->ai_next) {
    const int fd = ::socket(it->ai_family, it->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      continue;
    }
    if (::connect(fd, it->ai_addr, it->ai_addrlen) == 0) {
      accepted = true;
    } else if (errno == EINPROGRESS) {
      pollfd waiting{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof error;
      accepted = ::poll(&waiting, 1, static_cast<int>(timeout_seconds * 1000)) == 1 &&
                 ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return accepted;
}

std::optional<std::string> interface_of(const std::string &address) {
  ifaddrs *list = nullptr;
  if (::getifaddrs(&list) != 0) {
    return std::nullopt;
  }
  std::optional<std::string> found;
  for (ifaddrs *it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) {
      continue;
    }
    char buffer[INET_ADDRSTRLEN] = {};
    const auto *in = reinterpret_cast<const sockaddr_in *>(it->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, buffer, sizeof buffer) != nullptr &&
        address == buffer) {
      found = it->ifa_name;
      break;
    }
  }
  ::freeifaddrs(list);
  return found;
}

std::optional<std::string> infiniband_hcas() {
  const std::filesystem::path root = "/sys/class/infiniband";
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    return std::nullopt;
  }
  std::vector<std::string> hcas;
  for (const auto &hca : std::filesystem::directory_iterator(root, ec)) {
    std::error_code port_ec;
    for (const auto &port : std::filesystem::directory_iterator(hca.path() / "ports", port_ec)) {
      std::string layer;
      std::ifstream in(port.path() / "link_layer");
      std::getline(in, layer);
      if (text::trim(layer) == "InfiniBand") {
        hcas.push_back(hca.path().filename().string());
        break;
      }
    }
  }
  std::sort(hcas.begin(), hcas.end());
  if (hcas.empty()) {
    return std::nullopt;
  }
  return text::join(hcas, ",");
}

std::optional<std::string> rdma_ports() {
  const std::filesystem::path root = "/sys/class/infiniband";
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    return std::nullopt;
  }
  const auto first_line = [](const std::filesystem::path &path) {
    std::string line;
    std::ifstream in(path);
    std::getline(in, line);
    return std::string(text::trim(line));
  };
  // InfiniBand ports first, RoCE (Ethernet link layer) when there are none, as Prime-RL's
  // template enumerates them for UCX; "all" would also pick devices UCX cannot open.
  for (const char *layer : {"InfiniBand", "Ethernet"}) {
    std::vector<std::string> ports;
    for (const auto &hca : std::filesystem::directory_iterator(root, ec)) {
      std::error_code port_ec;
      for (const auto &port : std::filesystem::directory_iterator(hca.path() / "ports", port_ec)) {
        if (first_line(port.path() / "link_layer") == layer &&
            first_line(port.path() / "state").find("ACTIVE") != std::string::npos) {
          ports.push_back(hca.path().filename().string() + ":" + port.path().filename().string());
        }
      }
    }
    if (!ports.empty()) {
      std::sort(ports.begin(), ports.end());
      return text::join(ports, ",");
    }
  }
  return std::nullopt;
}

std::string strip_rank_prefix(const std::string &line) {
  // "[default0]:text" -> "text"
  if (line.empty() || line[0] != '[') {
    return line;
  }
  size_t i = 1;
  while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i]))) {
    ++i;
  }
  const size_t letters_end = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) {
    ++i;
  }
  if (letters_end == 1 || i == letters_end || i + 1 >= line.size() + 1 ||
      line.compare(i, 2, "]:") != 0) {
    return line;
  }
  return line.substr(i + 2);
}

std::string env_file_text(const EnvMap &values, const std::string &file_name) {
  std::string out;
  for (const auto &[name, value] : values) {
    const bool valid = !name.empty() &&
                       (std::isupper(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isupper(static_cast<unsigned char>(c)) ||
                                std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!valid) {
      throw input_error(
          fmt::format("unsafe environment variable name in {}: '{}'", file_name, name));
    }
    out += "export " + name + "=" + text::shell_quote(value) + "\n";
  }
  return out;
}

} // namespace pb::node
