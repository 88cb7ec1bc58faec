// SPDX-License-Identifier: MIT
// Native access to LiteRegistry registries (docs/registry.md):
// directories, SQLite files, Redis (hiredis) and head+ resolution, behind one interface.
#pragma once

#include <primebeaker/core/clock.hpp>
#include <primebeaker/registry/location.hpp>
#include <primebeaker/registry/records.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pb::registry {

// Seconds since the Unix epoch, as the float LiteRegistry stores.
double epoch_seconds(std::chrono::system_clock::time_point time);

// One opened registry. Every call does real I/O against the store; failures (store missing,
// Redis down, corrupt database) throw pb::Error with exit code 1 naming the registry, so
// wait loops can retry them. Not thread-safe; open one per thread.
class Registry {
public:
  virtual ~Registry() = default;

  // The canonical URI with passwords redacted, for messages.
  virtual std::string display() const = 0;

  // Which backend this is (head for head+ registries, whatever their head backend).
  virtual BackendKind kind() const = 0;

  // Every server record live at `now` (epoch seconds) under the inclusive window, sorted by
  // key. Unparsable records are skipped; Redis reads through the heartbeat index only.
  virtual std::vector<ServerRecord> live_servers(double now, double window_seconds) = 0;

  // Writes (registers or heartbeats) one server record the way ServerRegistry does: the record
  // under server_<id> without TTL; on Redis also ZADD to the heartbeat index, in one MULTI/EXEC.
  // Creates a missing directory or database.
  virtual void put_server(const ServerRecord &record) = 0;

  // Deregisters: deletes server_<id> (Redis: DEL + ZREM). True if something was removed.
  virtual bool remove_server(const std::string &server_id) = 0;

  // Live endpoint records named `name` at `now` (TTL honoured), in key order.
  virtual std::vector<EndpointRecord> endpoint_records(const std::string &name, double now) = 0;

  // Publishes an endpoint record under its key with a TTL (seconds, > 0), as coop.endpoints.
  virtual void put_endpoint(const EndpointRecord &record, double ttl_seconds, double now) = 0;

  // Checks that the store answers: Redis PING (head: resolve, then PING); a directory or
  // database must exist and be readable. Throws pb::Error (exit 1) with the reason.
  virtual void check_reachable(double now) = 0;
};

// What opening needs besides the URI.
struct OpenOptions {
  ParseContext parse = current_parse_context();
  std::chrono::milliseconds redis_timeout{2000}; // connect and per-command timeout
  std::chrono::milliseconds sqlite_busy_timeout{30000};
  // BEAKER_NODE_HOSTNAME / BEAKER_HOST_GATEWAY for the head rewrite (docs/registry.md).
  std::optional<std::string> beaker_node_hostname;
  std::optional<std::string> beaker_host_gateway;
  double head_refresh_seconds = 5.0; // re-read the head's `redis` record at most this often
};
OpenOptions default_open_options(); // reads $HOME, the cwd and the two BEAKER_* variables

// Opens the registry at `uri` (any form of docs/registry.md). Opening does no I/O; the
// store is touched by the first call. Throws pb::Error (exit 2) for a malformed or unsupported
// URI (including rediss://, which Debian's hiredis cannot speak).
std::unique_ptr<Registry> open_registry(std::string_view uri,
                                        const OpenOptions &options = default_open_options());
std::unique_ptr<Registry> open_registry(const Location &location, const OpenOptions &options);

// Live servers grouped by service (metadata.model_path, "default" when missing): the counts
// RegistryClient.models() would give. Pure.
std::map<std::string, std::vector<ServerRecord>>
group_by_service(const std::vector<ServerRecord> &servers);
std::map<std::string, int> count_by_service(const std::vector<ServerRecord> &servers);

// The newest (greatest published_at) live endpoint record named `name`, if any.
std::optional<EndpointRecord>
newest_endpoint(Registry &registry, const std::string &name, double now);

// A fresh server id: "<host>-<uuid4 hex>" (32 hex characters from /dev/urandom).
std::string new_server_id(const std::string &host);

// Sends RESP PING (with AUTH/SELECT from the address) and expects PONG. Throws pb::Error
// (exit 1) naming the redacted address and the reason; rediss:// gets the TLS error.
void ping_redis(const RedisAddress &address, std::chrono::milliseconds timeout);

// The message every rediss:// attempt fails with.
std::string tls_unsupported_message(const RedisAddress &address);

} // namespace pb::registry
