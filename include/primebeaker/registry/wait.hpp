// SPDX-License-Identifier: MIT
// The startup barriers of docs/registry.md: wait for Redis, wait for N live endpoints of
// each named service. Usable from C++ (the node runtime) and behind `registry wait-*`.
#pragma once

#include <primebeaker/core/clock.hpp>
#include <primebeaker/registry/registry.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pb::registry {

// `NAME=COUNT` strings or a JSON object {"name": count}: names non-empty, counts positive
// integers (booleans rejected). Throws pb::Error (exit 2) naming the bad entry. Pure.
using Requirements = std::map<std::string, int>;
Requirements parse_requirements(const std::vector<std::string> &name_equals_count);
Requirements parse_requirements_json(const std::string &json_object);

// How a wait runs. The clock and the sleep are injectable so tests control time: a fake
// sleep that advances a fake clock makes a 30-minute timeout take no real time.
struct WaitOptions {
  std::chrono::milliseconds timeout{1800 * 1000};
  std::chrono::milliseconds poll_interval{100};
  std::optional<std::filesystem::path> stop_file; // exists as a regular file -> stop
  double heartbeat_window = k_default_heartbeat_window;
  Clock *clock = nullptr;                               // nullptr: the system clock
  std::function<void(std::chrono::milliseconds)> sleep; // empty: std::this_thread::sleep_for
  // Called after every poll with a one-line status (for a progress line on a terminal).
  std::function<void(const std::string &)> progress;
};

enum class WaitStatus { ready, timed_out, stopped };

struct ServiceWaitResult {
  WaitStatus status = WaitStatus::timed_out;
  std::map<std::string, int> observed;   // counts of the last successful read (every service)
  std::optional<std::string> last_error; // the last read error, if the last read failed
  std::chrono::milliseconds elapsed{0};
  int polls = 0;
  // For timed_out: "{"judge": {"expected": 1, "observed": 0}}" or the last error; for
  // stopped: "shutdown requested while waiting for services: <file>".
  std::string message;
};

// Polls `registry` until every required service has at least its count of live endpoints,
// the deadline passes, or the stop file appears (checked before every poll). Read errors
// (registry not there yet, Redis down) are remembered and retried. Empty requirements return
// ready at once without touching the registry. Never throws for store errors.
ServiceWaitResult
wait_for_services(Registry &registry, const Requirements &requirements, const WaitOptions &options);

struct RedisWaitResult {
  WaitStatus status = WaitStatus::timed_out;
  std::optional<std::string> last_error;
  std::chrono::milliseconds elapsed{0};
  int polls = 0;
  std::string message; // "timed out waiting for Redis at <uri>: <last error>" or the stop text
};

// Polls until the registry's Redis answers PING: redis:// directly, head+ after resolving the
// head's newest `redis` record. file and sqlite registries have no server: ready at once.
RedisWaitResult wait_for_redis(Registry &registry, const WaitOptions &options);

// pb::Error for a finished wait that did not succeed: timed_out -> exit 1 with the message,
// stopped -> exit 92 (peer_shutdown). Returns normally for ready.
void throw_unless_ready(WaitStatus status, const std::string &message);

} // namespace pb::registry
