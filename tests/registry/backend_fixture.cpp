// SPDX-License-Identifier: MIT
#include "backend_fixture.hpp"

#include <primebeaker/registry/records.hpp>
#include <primebeaker/registry/sqlite.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace pb::test {

using registry::sqlite;
namespace {

std::string python_float(double value) {
  // Enough for the test values used (they have few decimals): "%.17g" then trim like repr.
  char text[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*f", precision, value);
    if (std::strtod(text, nullptr) == value) {
      break;
    }
  }
  return text;
}

class RawFileStore final : public RawStore {
public:
  explicit RawFileStore(std::filesystem::path root) : m_root(std::move(root)) {
    std::filesystem::create_directories(m_root); // as FileSystemKVStore does on open
  }
  void put_server(const std::string &key, const std::string &bytes, double, bool) override {
    write_file(m_root / key, bytes);
  }
  void put_with_expiry(const std::string &key,
                       const std::string &bytes,
                       double expires_at,
                       double) override {
    write_file(m_root / ".literegistry_ttl" / registry::sha256_hex(key), python_float(expires_at));
    write_file(m_root / key, bytes);
  }
  std::optional<std::string> get(const std::string &key) override {
    if (!std::filesystem::exists(m_root / key)) {
      return std::nullopt;
    }
    return read_file(m_root / key);
  }

private:
  std::filesystem::path m_root;
};

class RawSqliteStore final : public RawStore {
public:
  explicit RawSqliteStore(std::filesystem::path database) : m_database(std::move(database)) {
    std::filesystem::create_directories(m_database.parent_path());
    exec("CREATE TABLE IF NOT EXISTS literegistry_kv (key TEXT PRIMARY KEY, value BLOB NOT NULL, "
         "expires_at REAL) WITHOUT ROWID",
         {},
         std::nullopt);
  }
  void put_server(const std::string &key, const std::string &bytes, double, bool) override {
    exec("INSERT OR REPLACE INTO literegistry_kv(key, value, expires_at) VALUES (?, ?, NULL)",
         {key, bytes},
         std::nullopt);
  }
  void put_with_expiry(const std::string &key,
                       const std::string &bytes,
                       double expires_at,
                       double) override {
    exec("INSERT OR REPLACE INTO literegistry_kv(key, value, expires_at) VALUES (?, ?, ?)",
         {key, bytes},
         expires_at);
  }
  std::optional<std::string> get(const std::string &key) override {
    sqlite3 *db = nullptr;
    sqlite().open(m_database.c_str(), &db);
    sqlite3_stmt *statement = nullptr;
    sqlite().prepare_v2(db,
                        "SELECT value, typeof(value) FROM literegistry_kv WHERE key = ?",
                        -1,
                        &statement,
                        nullptr);
    sqlite().bind_text(statement, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    std::optional<std::string> out;
    if (sqlite().step(statement) == SQLITE_ROW) {
      const std::string type = reinterpret_cast<const char *>(sqlite().column_text(statement, 1));
      if (type != "blob") {
        throw std::runtime_error("value stored as " + type + ", not blob");
      }
      out = std::string(static_cast<const char *>(sqlite().column_blob(statement, 0)),
                        sqlite().column_bytes(statement, 0));
    }
    sqlite().finalize(statement);
    sqlite().close(db);
    return out;
  }

private:
  void exec(const char *sql, const std::vector<std::string> &blobs, std::optional<double> real) {
    sqlite3 *db = nullptr;
    if (sqlite().open(m_database.c_str(), &db) != SQLITE_OK) {
      throw std::runtime_error("cannot open test database");
    }
    sqlite3_stmt *statement = nullptr;
    if (sqlite().prepare_v2(db, sql, -1, &statement, nullptr) != SQLITE_OK) {
      throw std::runtime_error(sqlite().errmsg(db));
    }
    int index = 1;
    for (const auto &blob : blobs) {
      if (index == 1) {
        sqlite().bind_text(
            statement, index++, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      } else {
        sqlite().bind_blob(
            statement, index++, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      }
    }
    if (real) {
      sqlite().bind_double(statement, index, *real);
    }
    if (sqlite().step(statement) != SQLITE_DONE) {
      throw std::runtime_error(sqlite().errmsg(db));
    }
    sqlite().finalize(statement);
    sqlite().close(db);
  }

  std::filesystem::path m_database;
};

class RawRedisStore final : public RawStore {
public:
  explicit RawRedisStore(const RedisServer &server) : m_server(server) {}
  void put_server(const std::string &key,
                  const std::string &bytes,
                  double heartbeat,
                  bool index) override {
    m_server.cli({"SET", key, bytes});
    if (index) {
      m_server.cli(
          {"ZADD", std::string(registry::k_heartbeat_index), python_float(heartbeat), key});
    }
  }
  void put_with_expiry(const std::string &key,
                       const std::string &bytes,
                       double expires_at,
                       double now) override {
    const auto ms = static_cast<long long>(std::ceil((expires_at - now) * 1000));
    m_server.cli({"SET", key, bytes, "PX", std::to_string(std::max(1LL, ms))});
  }
  std::optional<std::string> get(const std::string &key) override {
    if (m_server.cli({"EXISTS", key}).find('1') == std::string::npos) {
      return std::nullopt;
    }
    auto raw = m_server.cli({"GET", key});
    if (!raw.empty() && raw.back() == '\n') {
      raw.pop_back(); // redis-cli adds one newline
    }
    return raw;
  }

private:
  const RedisServer &m_server;
};

} // namespace

std::unique_ptr<RawStore> raw_file_store(const std::filesystem::path &root) {
  return std::make_unique<RawFileStore>(root);
}
std::unique_ptr<RawStore> raw_sqlite_store(const std::filesystem::path &database) {
  return std::make_unique<RawSqliteStore>(database);
}
std::unique_ptr<RawStore> raw_redis_store(const RedisServer &server) {
  return std::make_unique<RawRedisStore>(server);
}

std::string python_server_record(const std::string &server_id,
                                 const std::string &service,
                                 double heartbeat,
                                 int port) {
  return "{\"server_id\": \"" + server_id +
         "\", \"host\": \"node-a17\", \"port\": " + std::to_string(port) +
         ", \"last_heartbeat\": " + python_float(heartbeat) +
         ", \"metadata\": {\"model_path\": \"" + service +
         "\", \"host\": \"0.0.0.0\", \"port\": " + std::to_string(port) +
         ", \"backend\": \"repl\"}, \"status\": \"active\", \"uri\": "
         "\"http://node-a17.cluster.example:" +
         std::to_string(port) + "\"}";
}

std::string python_endpoint_record(const std::string &name,
                                   const std::string &uri,
                                   const std::string &publisher,
                                   double published_at) {
  return "{\"metadata\":{\"hostname\":\"node-b03\",\"pid\":77},\"name\":\"" + name +
         "\",\"published_at\":" + python_float(published_at) + ",\"publisher_id\":\"" + publisher +
         "\",\"schema_version\":1,\"uri\":\"" + uri + "\"}";
}

double wall_now() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()) /
         1000.0;
}

} // namespace pb::test
