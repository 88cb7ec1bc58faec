// SPDX-License-Identifier: MIT
// One registry of each kind on real storage, plus a "raw" writer that stores bytes exactly as
// LiteRegistry's Python stores do (files + TTL sidecars, the literegistry_kv table, Redis
// strings + the heartbeat sorted set) without going through the code under test.
#pragma once

#include "redis_server.hpp"
#include "test_support.hpp"

#include <primebeaker/registry/registry.hpp>

#include <memory>
#include <optional>
#include <string>

namespace pb::test {

class RawStore {
public:
  virtual ~RawStore() = default;
  // A value without TTL (server records); `heartbeat` is the sorted-set score on Redis.
  virtual void put_server(const std::string &key,
                          const std::string &bytes,
                          double heartbeat,
                          bool index = true) = 0;
  // A value with an absolute expiry (endpoint records).
  virtual void put_with_expiry(const std::string &key,
                               const std::string &bytes,
                               double expires_at,
                               double now) = 0;
  virtual std::optional<std::string> get(const std::string &key) = 0;
};

// The store at `uri`'s location written raw. For redis the RedisServer is used.
std::unique_ptr<RawStore> raw_file_store(const std::filesystem::path &root);
std::unique_ptr<RawStore> raw_sqlite_store(const std::filesystem::path &database);
std::unique_ptr<RawStore> raw_redis_store(const RedisServer &server);

// A server record as ServerRegistry writes it (Python json.dumps bytes).
std::string python_server_record(const std::string &server_id,
                                 const std::string &service,
                                 double heartbeat,
                                 int port = 20306);
// An endpoint record as coop.endpoints writes it.
std::string python_endpoint_record(const std::string &name,
                                   const std::string &uri,
                                   const std::string &publisher,
                                   double published_at);

// Real wall-clock epoch seconds, truncated to milliseconds (so Redis TTLs and our `now` agree).
double wall_now();

} // namespace pb::test
