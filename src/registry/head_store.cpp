// SPDX-License-Identifier: MIT
// head+ registries (docs/registry.md): the roster lives in whichever Redis the head
// backend's newest `redis` endpoint record names, re-read at most every few seconds.
#include "stores.hpp"

#include <primebeaker/core/error.hpp>

#include <spdlog/spdlog.h>

namespace pb::registry::detail {
namespace {

class HeadStore final : public Registry {
public:
  HeadStore(const Location &location, const OpenOptions &options)
      : m_location(location), m_options(options),
        m_head(open_registry(*location.head_backend, options)) {}

  std::string display() const override { return m_location.display(); }

  BackendKind kind() const override { return BackendKind::head; }

  std::vector<ServerRecord> live_servers(double now, double window_seconds) override {
    return with_redis(now,
                      [&](Registry &redis) { return redis.live_servers(now, window_seconds); });
  }

  void put_server(const ServerRecord &record) override {
    with_redis(record.last_heartbeat, [&](Registry &redis) {
      redis.put_server(record);
      return 0;
    });
  }

  bool remove_server(const std::string &server_id) override {
    return with_redis(m_last_check,
                      [&](Registry &redis) { return redis.remove_server(server_id); });
  }

  // Endpoint records (gateway, redis) live in the head backend itself (docs/registry.md).
  std::vector<EndpointRecord> endpoint_records(const std::string &name, double now) override {
    return m_head->endpoint_records(name, now);
  }

  void put_endpoint(const EndpointRecord &record, double ttl_seconds, double now) override {
    m_head->put_endpoint(record, ttl_seconds, now);
  }

  void check_reachable(double now) override {
    with_redis(now, [](Registry &redis) {
      redis.check_reachable(0);
      return 0;
    });
  }

private:
  // Runs `operation` on the current Redis; any failure drops the client so the next call
  // re-reads the head (failover), then rethrows for the caller's retry loop.
  template <typename Operation>
  auto with_redis(double now, Operation operation)
      -> decltype(operation(std::declval<Registry &>())) {
    Registry &redis = resolve(now);
    try {
      return operation(redis);
    } catch (const Error &) {
      m_redis.reset();
      m_identity.clear();
      throw;
    }
  }

  Registry &resolve(double now) {
    if (m_redis && now - m_last_check < m_options.head_refresh_seconds && now >= m_last_check) {
      return *m_redis;
    }
    const auto record = newest_endpoint(*m_head, "redis", now);
    if (!record) {
      if (m_redis) {
        return *m_redis; // a short publication gap: keep the working client
      }
      throw failure("head registry " + m_head->display() +
                    " has no live 'redis' endpoint record (yet)");
    }
    const std::string uri =
        beaker_rewrite(record->uri, m_options.beaker_node_hostname, m_options.beaker_host_gateway);
    const std::string identity = uri + "\n" + record->publisher_id;
    if (m_redis && identity == m_identity) {
      m_last_check = now;
      return *m_redis;
    }
    Location target;
    try {
      target = parse_location(uri, m_options.parse);
    } catch (const Error &error) {
      throw failure("head registry " + m_head->display() +
                    " publishes an unusable Redis: " + error.what());
    }
    if (target.kind != BackendKind::redis) {
      throw failure("head registry " + m_head->display() + " publishes " + redact_uri(uri) +
                    " as its Redis, which is not a redis:// URI");
    }
    if (target.redis.tls) {
      throw failure(tls_unsupported_message(target.redis));
    }
    auto fresh = open_registry(target, m_options);
    fresh->check_reachable(now);
    spdlog::info("head registry {} -> {}", m_head->display(), fresh->display());
    m_redis = std::move(fresh);
    m_identity = identity;
    m_last_check = now;
    return *m_redis;
  }

  Location m_location;
  OpenOptions m_options;
  std::unique_ptr<Registry> m_head;
  std::unique_ptr<Registry> m_redis;
  std::string m_identity;
  double m_last_check = 0;
};

} // namespace

std::unique_ptr<Registry> open_head_store(const Location &location, const OpenOptions &options) {
  return std::make_unique<HeadStore>(location, options);
}

} // namespace pb::registry::detail
