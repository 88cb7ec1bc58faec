// SPDX-License-Identifier: MIT
// Private to the node module: what the executor (runtime.cpp) runs on (support.cpp): signals, the
// attempt-keyed rendezvous directory, child supervision, this host's facts, and the text formats
// a replica writes (env files, torchrun's log lines).
#pragma once

#include <primebeaker/core/subprocess.hpp>
#include <primebeaker/node/env.hpp>
#include <primebeaker/node/peers.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pb::node {

// SIGINT/SIGTERM/SIGHUP become a pending signal; SIGCHLD and those wake sleep() early.
class Signals {
public:
  static void install();
  static int pending(); // 0 or the first signal received
  // Sleeps up to `seconds`, returning early on a signal or a child exit. `extra_fds` are polled
  // for input too (child output pipes).
  static void sleep(double seconds, const std::vector<int> &extra_fds = {});
  // Throws pb::Error 130/143 when a terminating signal is pending.
  static void check();
};

// The shared rendezvous directory of one launch, keyed by attempt (docs/node.md): rank 0
// starts a fresh attempt directory and every other rank joins it with a handshake that proves
// the attempt is newer than itself, so files of an earlier attempt are never read.
class Rendezvous {
public:
  Rendezvous(
      std::filesystem::path root, int rank, int total, double poll_seconds, int timeout_seconds);

  // The handshake: rank 0 writes `attempt` (a fresh id) and waits for every `join.<r>` naming
  // it; the others write `join.<r>` = "<attempt> <nonce>" and wait for the attempt's `roster`
  // to list their nonce. Afterwards dir() is <root>/attempt-<id>.
  void join();
  bool joined() const { return !m_attempt.empty(); }
  const std::string &attempt() const { return m_attempt; }
  const std::filesystem::path &dir() const { return m_dir; }
  std::filesystem::path file(const std::string &name) const { return m_dir / name; }

  void publish(const std::string &name, const std::string &content); // atomic
  std::optional<std::string> read(const std::string &name) const;    // non-empty content
  // Polls until `name` exists and is non-empty. Throws 92 on a requested shutdown, 1 on timeout,
  // 130/143 on a signal.
  std::string wait_for(const std::string &name, const std::string &what);
  // The peer watcher's view (other ranks' status files, complete, shutdown.requested).
  Observation observe() const;

private:
  std::filesystem::path m_root;
  std::filesystem::path m_dir;
  int m_rank;
  int m_total;
  double m_poll;
  int m_timeout;
  std::string m_attempt;
};

// One supervised child and where its output goes.
struct ChildOptions {
  proc::Output out;                         // used unless tee is set
  std::optional<std::filesystem::path> tee; // append each line here and echo it to stdout
  bool strip_rank_prefix = false;
  std::optional<proc::Output> err; // stderr (default: like stdout), unless tee is set
};

class Supervisor {
public:
  // Starts a named child (its own process group). Throws exit 4 when the program is missing.
  void start(const std::string &name, proc::SpawnSpec spec, const ChildOptions &options);
  // Waits up to `seconds` for something to happen, pumping output; returns the first child that
  // exited since the last call (name and status), if any.
  std::optional<std::pair<std::string, proc::ExitStatus>> wait_event(double seconds);
  bool running(const std::string &name);
  // Stops every child: SIGTERM to each group, `grace` for all, then SIGKILL; then orphans.
  void stop_all(double grace_seconds);

private:
  struct Managed {
    std::string name;
    proc::Child child;
    std::unique_ptr<std::ofstream> tee;
    bool strip = false;
    std::string partial;
    bool reported = false;
  };
  void pump(Managed &m, bool final);
  std::vector<std::unique_ptr<Managed>> m_children;
  std::chrono::steady_clock::time_point m_last_reap{};
};

// The path of this binary, for running our own `registry ...` subcommands.
std::string self_executable();

// The address this node publishes: the tuning override, else the first non-loopback IPv4
// address, else the host name.
std::string local_address(const Tuning &tuning);
// Whether host:port (an IPv4 address or a name) accepts a TCP connection within
// `timeout_seconds`.
bool accepts_connections(const std::string &host, int port, double timeout_seconds);
// The interface carrying `address` (for GLOO_SOCKET_IFNAME), if any.
std::optional<std::string> interface_of(const std::string &address);
// Comma list of InfiniBand HCAs from /sys/class/infiniband (for NCCL_IB_HCA), if any.
std::optional<std::string> infiniband_hcas();
// The active RDMA ports for UCX (NIXL's KV transfer): "mlx5_0:1,mlx5_1:1", InfiniBand ones, else
// RoCE ones; nullopt without any (then UCX's "all").
std::optional<std::string> rdma_ports();

// Strips a leading "[<letters><digits>]:" (torchrun's rank prefix) from a log line.
std::string strip_rank_prefix(const std::string &line);

// Shell "export NAME=<quoted>" lines of an env file; exit 3 on a name outside [A-Z_][A-Z0-9_]*.
std::string env_file_text(const EnvMap &values, const std::string &file_name);

} // namespace pb::node
