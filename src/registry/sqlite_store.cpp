// SPDX-License-Identifier: MIT
// SQLite registries (docs/registry.md): the literegistry_kv table, opened per operation.
#include "stores.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/sqlite.hpp>

#include <cmath>

namespace pb::registry::detail {
namespace {

namespace stdfs = std::filesystem;

constexpr const char *k_schema = R"sql(
CREATE TABLE IF NOT EXISTS literegistry_kv (
  key        TEXT PRIMARY KEY,
  value      BLOB NOT NULL,
  expires_at REAL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS literegistry_kv_expires_at ON literegistry_kv(expires_at);
CREATE TABLE IF NOT EXISTS literegistry_affinity (
  key           TEXT PRIMARY KEY,
  service       TEXT NOT NULL,
  affinity_type TEXT NOT NULL,
  server_id     TEXT NOT NULL,
  value         BLOB NOT NULL,
  expires_at    REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS literegistry_affinity_lookup
  ON literegistry_affinity(affinity_type, service, server_id);
CREATE INDEX IF NOT EXISTS literegistry_affinity_server
  ON literegistry_affinity(affinity_type, server_id, service);
CREATE INDEX IF NOT EXISTS literegistry_affinity_expires_at
  ON literegistry_affinity(expires_at);
)sql";

// The exclusive upper bound of a prefix range: the last character incremented (docs/registry.md).
std::string prefix_upper_bound(std::string prefix) {
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

// One connection for one operation, closed on scope exit.
class Connection {
public:
  Connection(const stdfs::path &path, bool writable, std::chrono::milliseconds busy_timeout)
      : m_path(path) {
    const int flags =
        writable ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
    if (sqlite().open_v2(path.c_str(), &m_db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      const std::string reason = m_db != nullptr ? sqlite().errmsg(m_db) : "out of memory";
      sqlite().close(m_db);
      m_db = nullptr;
      throw failure("cannot open registry database " + path.string() + ": " + reason);
    }
    sqlite().busy_timeout(m_db, static_cast<int>(busy_timeout.count()));
    if (writable) {
      exec("PRAGMA journal_mode = DELETE");
      exec(k_schema);
    } else {
      exec("PRAGMA query_only = ON");
    }
  }
  ~Connection() { sqlite().close(m_db); }
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  void exec(const char *sql) {
    char *message = nullptr;
    if (sqlite().exec(m_db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string reason = message != nullptr ? message : sqlite().errmsg(m_db);
      sqlite().free(message);
      throw failure("registry database " + m_path.string() + ": " + reason);
    }
  }

  sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement = nullptr;
    if (sqlite().prepare_v2(m_db, sql, -1, &statement, nullptr) != SQLITE_OK) {
      throw failure("registry database " + m_path.string() + ": " + sqlite().errmsg(m_db));
    }
    return statement;
  }

  [[noreturn]] void fail(sqlite3_stmt *statement) {
    const std::string reason = sqlite().errmsg(m_db);
    sqlite().finalize(statement);
    throw failure("registry database " + m_path.string() + ": " + reason);
  }

private:
  stdfs::path m_path;
  sqlite3 *m_db = nullptr;
};

class SqliteStore final : public Registry {
public:
  SqliteStore(stdfs::path path, std::chrono::milliseconds busy_timeout)
      : m_path(std::move(path)), m_busy_timeout(busy_timeout) {}

  std::string display() const override { return "sqlite://" + m_path.string(); }

  BackendKind kind() const override { return BackendKind::sqlite; }

  std::vector<ServerRecord> live_servers(double now, double window_seconds) override {
    std::vector<ServerRecord> out;
    for (const auto &[key, value] : live_items(std::string(k_server_prefix), now)) {
      if (auto record = decode_server_record(key, value);
          record && record->live_at(now, window_seconds)) {
        out.push_back(std::move(*record));
      }
    }
    return out;
  }

  void put_server(const ServerRecord &record) override {
    upsert(record.key(), encode_server_record(record), std::nullopt);
  }

  bool remove_server(const std::string &server_id) override {
    auto db = open_writable();
    sqlite3_stmt *statement = db.prepare("DELETE FROM literegistry_kv WHERE key = ?");
    const std::string key = std::string(k_server_prefix) + server_id;
    sqlite().bind_text(statement, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    if (sqlite().step(statement) != SQLITE_DONE) {
      db.fail(statement);
    }
    sqlite().finalize(statement);
    return true;
  }

  std::vector<EndpointRecord> endpoint_records(const std::string &name, double now) override {
    std::vector<EndpointRecord> out;
    for (const auto &[key, value] : live_items("endpoint_" + name + "_", now)) {
      if (auto record = decode_endpoint_record(value, name)) {
        out.push_back(std::move(*record));
      }
    }
    return out;
  }

  void put_endpoint(const EndpointRecord &record, double ttl_seconds, double now) override {
    if (!(ttl_seconds > 0) || !std::isfinite(ttl_seconds)) {
      throw usage_error("an endpoint TTL must be a positive number of seconds");
    }
    upsert(record.key(), encode_endpoint_record(record), now + ttl_seconds);
  }

  void check_reachable(double now) override { live_items(std::string(k_server_prefix), now); }

private:
  Connection open_writable() {
    std::error_code ec;
    stdfs::create_directories(m_path.parent_path(), ec);
    return Connection(m_path, true, m_busy_timeout);
  }

  void upsert(const std::string &key, const std::string &value, std::optional<double> expires_at) {
    auto db = open_writable();
    sqlite3_stmt *statement = db.prepare(
        "INSERT INTO literegistry_kv(key, value, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at");
    sqlite().bind_text(statement, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    sqlite().bind_blob(
        statement, 2, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    if (expires_at) {
      sqlite().bind_double(statement, 3, *expires_at);
    } else {
      sqlite().bind_null(statement, 3);
    }
    if (sqlite().step(statement) != SQLITE_DONE) {
      db.fail(statement);
    }
    sqlite().finalize(statement);
  }

  std::vector<std::pair<std::string, std::string>> live_items(const std::string &prefix,
                                                              double now) {
    std::error_code ec;
    if (!stdfs::exists(m_path, ec)) {
      throw failure("registry database " + m_path.string() + " does not exist (yet)");
    }
    Connection db(m_path, false, m_busy_timeout);
    sqlite3_stmt *statement = db.prepare(
        "SELECT key, value FROM literegistry_kv WHERE (expires_at IS NULL OR expires_at > ?) "
        "AND key >= ? AND key < ? ORDER BY key");
    const std::string upper = prefix_upper_bound(prefix);
    sqlite().bind_double(statement, 1, now);
    sqlite().bind_text(
        statement, 2, prefix.data(), static_cast<int>(prefix.size()), SQLITE_TRANSIENT);
    sqlite().bind_text(
        statement, 3, upper.data(), static_cast<int>(upper.size()), SQLITE_TRANSIENT);
    std::vector<std::pair<std::string, std::string>> items;
    int rc = 0;
    while ((rc = sqlite().step(statement)) == SQLITE_ROW) {
      const auto *key = reinterpret_cast<const char *>(sqlite().column_text(statement, 0));
      const auto *blob = static_cast<const char *>(sqlite().column_blob(statement, 1));
      const int size = sqlite().column_bytes(statement, 1);
      items.emplace_back(key != nullptr ? key : "", std::string(blob != nullptr ? blob : "", size));
    }
    if (rc != SQLITE_DONE) {
      db.fail(statement);
    }
    sqlite().finalize(statement);
    return items;
  }

  stdfs::path m_path;
  std::chrono::milliseconds m_busy_timeout;
};

} // namespace

std::unique_ptr<Registry> open_sqlite_store(const Location &location, const OpenOptions &options) {
  return std::make_unique<SqliteStore>(location.path, options.sqlite_busy_timeout);
}

} // namespace pb::registry::detail
