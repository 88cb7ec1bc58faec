// SPDX-License-Identifier: MIT
// Redis registries over hiredis (docs/registry.md): plain string keys plus the heartbeat
// sorted set; roster reads go through the index only.
#include "stores.hpp"

#include <primebeaker/core/error.hpp>

#include <hiredis/hiredis.h>

#include <cmath>
#include <cstdio>

namespace pb::registry {

std::string tls_unsupported_message(const RedisAddress &address) {
  return "cannot connect to " + address.redacted() +
         ": rediss:// (Redis over TLS) is not supported by this build (Debian's hiredis 0.14 has "
         "no TLS); use redis:// on a trusted network or a head+ registry that publishes a "
         "redis:// endpoint";
}

namespace detail {
namespace {

using Reply = std::unique_ptr<redisReply, void (*)(redisReply *)>;

void free_reply(redisReply *reply) {
  freeReplyObject(reply);
}

timeval to_timeval(std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  return tv;
}

// One connection, reconnected lazily after any error (a failed context is never reused).
class Connection {
public:
  Connection(RedisAddress address, std::chrono::milliseconds timeout)
      : m_address(std::move(address)), m_timeout(timeout) {}
  ~Connection() { reset(); }
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  const RedisAddress &address() const { return m_address; }

  // Sends every command of `batch` in one round trip and returns the replies in order.
  // Throws pb::Error (exit 1) on I/O errors and on error replies.
  std::vector<Reply> pipeline(const std::vector<std::vector<std::string>> &batch) {
    connect();
    for (const auto &command : batch) {
      append(command);
    }
    std::vector<Reply> replies;
    for (size_t i = 0; i < batch.size(); ++i) {
      void *raw = nullptr;
      if (redisGetReply(m_context, &raw) != REDIS_OK || raw == nullptr) {
        fail_io();
      }
      Reply reply(static_cast<redisReply *>(raw), free_reply);
      if (reply->type == REDIS_REPLY_ERROR) {
        throw failure("Redis at " + m_address.redacted() + " answered " + batch[i][0] +
                      " with: " + std::string(reply->str, reply->len));
      }
      replies.push_back(std::move(reply));
    }
    return replies;
  }

  Reply command(const std::vector<std::string> &command) {
    auto replies = pipeline({command});
    return std::move(replies.front());
  }

  void reset() {
    if (m_context != nullptr) {
      redisFree(m_context);
      m_context = nullptr;
    }
  }

private:
  void append(const std::vector<std::string> &command) {
    std::vector<const char *> argv;
    std::vector<size_t> lengths;
    for (const auto &part : command) {
      argv.push_back(part.data());
      lengths.push_back(part.size());
    }
    if (redisAppendCommandArgv(
            m_context, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK) {
      fail_io();
    }
  }

  [[noreturn]] void fail_io() {
    const std::string reason = m_context != nullptr && m_context->errstr[0] != '\0'
                                   ? m_context->errstr
                                   : "connection lost";
    reset();
    throw failure("Redis at " + m_address.redacted() + " is not reachable: " + reason);
  }

  void connect() {
    if (m_context != nullptr) {
      return;
    }
    if (m_address.tls) {
      throw failure(tls_unsupported_message(m_address));
    }
    m_context =
        redisConnectWithTimeout(m_address.host.c_str(), m_address.port, to_timeval(m_timeout));
    if (m_context == nullptr) {
      throw failure("Redis at " + m_address.redacted() + " is not reachable: out of memory");
    }
    if (m_context->err != 0) {
      fail_io();
    }
    redisSetTimeout(m_context, to_timeval(m_timeout));
    std::vector<std::vector<std::string>> setup;
    if (!m_address.password.empty()) {
      setup.push_back(
          m_address.username.empty()
              ? std::vector<std::string>{"AUTH", m_address.password}
              : std::vector<std::string>{"AUTH", m_address.username, m_address.password});
    }
    if (m_address.database != 0) {
      setup.push_back({"SELECT", std::to_string(m_address.database)});
    }
    if (setup.empty()) {
      return;
    }
    for (const auto &command : setup) {
      append(command);
    }
    for (size_t i = 0; i < setup.size(); ++i) {
      void *raw = nullptr;
      if (redisGetReply(m_context, &raw) != REDIS_OK || raw == nullptr) {
        fail_io();
      }
      Reply reply(static_cast<redisReply *>(raw), free_reply);
      if (reply->type == REDIS_REPLY_ERROR) {
        const std::string what = setup[i][0];
        const std::string text(reply->str, reply->len); // never echoes the password back
        reset();
        throw failure("Redis at " + m_address.redacted() + " rejected " + what + ": " + text);
      }
    }
  }

  RedisAddress m_address;
  std::chrono::milliseconds m_timeout;
  redisContext *m_context = nullptr;
};

std::string format_score(double value) {
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.6f", value);
  return buffer.data();
}

class RedisStore final : public Registry {
public:
  RedisStore(RedisAddress address, std::chrono::milliseconds timeout)
      : m_connection(std::move(address), timeout) {}

  std::string display() const override { return m_connection.address().redacted(); }

  BackendKind kind() const override { return BackendKind::redis; }

  std::vector<ServerRecord> live_servers(double now, double window_seconds) override {
    // The cutoff is widened by a microsecond so %.6f rounding can never drop the inclusive
    // edge; the exact age rule is applied to each record afterwards.
    const auto members = m_connection.command({"ZRANGEBYSCORE",
                                               std::string(k_heartbeat_index),
                                               format_score(now - window_seconds - 1e-6),
                                               "+inf"});
    std::vector<std::string> keys;
    for (size_t i = 0; i < members->elements; ++i) {
      const redisReply *member = members->element[i];
      if (member->type == REDIS_REPLY_STRING) {
        keys.emplace_back(member->str, member->len);
      }
    }
    std::sort(keys.begin(), keys.end());
    std::vector<ServerRecord> out;
    constexpr size_t k_batch = 256;
    for (size_t start = 0; start < keys.size(); start += k_batch) {
      std::vector<std::string> mget{"MGET"};
      for (size_t i = start; i < std::min(keys.size(), start + k_batch); ++i) {
        mget.push_back(keys[i]);
      }
      const auto values = m_connection.command(mget);
      for (size_t i = 0; i < values->elements; ++i) {
        const redisReply *value = values->element[i];
        if (value->type != REDIS_REPLY_STRING) {
          continue; // the record vanished: index entries never make a record routable
        }
        auto record = decode_server_record(mget[i + 1], std::string_view(value->str, value->len));
        if (record && record->live_at(now, window_seconds)) {
          out.push_back(std::move(*record));
        }
      }
    }
    return out;
  }

  void put_server(const ServerRecord &record) override {
    const std::string key = record.key();
    m_connection.pipeline(
        {{"MULTI"},
         {"SET", key, encode_server_record(record)},
         {"ZADD", std::string(k_heartbeat_index), format_score(record.last_heartbeat), key},
         {"EXEC"}});
  }

  bool remove_server(const std::string &server_id) override {
    const std::string key = std::string(k_server_prefix) + server_id;
    const auto replies = m_connection.pipeline(
        {{"MULTI"}, {"DEL", key}, {"ZREM", std::string(k_heartbeat_index), key}, {"EXEC"}});
    const redisReply *exec = replies.back().get();
    return exec->type == REDIS_REPLY_ARRAY && exec->elements >= 1 &&
           exec->element[0]->type == REDIS_REPLY_INTEGER && exec->element[0]->integer > 0;
  }

  std::vector<EndpointRecord> endpoint_records(const std::string &name, double) override {
    const std::string pattern = "endpoint_" + name + "_*";
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
      const auto reply = m_connection.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "64"});
      if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        throw failure("Redis at " + display() + " gave an unexpected SCAN reply");
      }
      cursor.assign(reply->element[0]->str, reply->element[0]->len);
      const redisReply *batch = reply->element[1];
      for (size_t i = 0; i < batch->elements; ++i) {
        keys.emplace_back(batch->element[i]->str, batch->element[i]->len);
      }
    } while (cursor != "0");
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<EndpointRecord> out;
    if (keys.empty()) {
      return out;
    }
    std::vector<std::string> mget{"MGET"};
    mget.insert(mget.end(), keys.begin(), keys.end());
    const auto values = m_connection.command(mget);
    for (size_t i = 0; i < values->elements; ++i) {
      const redisReply *value = values->element[i];
      if (value->type == REDIS_REPLY_STRING) {
        if (auto record = decode_endpoint_record(std::string_view(value->str, value->len), name)) {
          out.push_back(std::move(*record));
        }
      }
    }
    return out;
  }

  void put_endpoint(const EndpointRecord &record, double ttl_seconds, double) override {
    if (!(ttl_seconds > 0) || !std::isfinite(ttl_seconds)) {
      throw usage_error("an endpoint TTL must be a positive number of seconds");
    }
    const auto milliseconds =
        std::max<long long>(1, static_cast<long long>(std::ceil(ttl_seconds * 1000)));
    m_connection.command(
        {"SET", record.key(), encode_endpoint_record(record), "PX", std::to_string(milliseconds)});
  }

  void check_reachable(double) override {
    const auto reply = m_connection.command({"PING"});
    if (reply->type != REDIS_REPLY_STATUS || std::string(reply->str, reply->len) != "PONG") {
      throw failure("Redis at " + display() + " did not answer PING with PONG");
    }
  }

private:
  Connection m_connection;
};

} // namespace

std::unique_ptr<Registry> open_redis_store(const Location &location, const OpenOptions &options) {
  return std::make_unique<RedisStore>(location.redis, options.redis_timeout);
}

} // namespace detail

void ping_redis(const RedisAddress &address, std::chrono::milliseconds timeout) {
  Location location;
  location.kind = BackendKind::redis;
  location.redis = address;
  OpenOptions options;
  options.redis_timeout = timeout;
  detail::open_redis_store(location, options)->check_reachable(0);
}

} // namespace pb::registry
