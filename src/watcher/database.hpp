// SPDX-License-Identifier: MIT
// A thin RAII layer over SQLite's C API and the watcher's schema version 1 (docs/watcher.md).
#pragma once

#include <primebeaker/core/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace pb::watcher {

using SqlValue = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

SqlValue sql_text(const std::optional<std::string> &value);
SqlValue sql_int(const std::optional<std::int64_t> &value);

class Statement {
public:
  Statement(sqlite3 *db, std::string_view sql);
  ~Statement();
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;

  Statement &bind(const std::vector<SqlValue> &values);
  bool step(); // true while a row is available
  void reset();
  int columns() const;
  std::string column_name(int index) const;
  OrderedJson column_json(int index) const;
  std::optional<std::int64_t> column_int(int index) const;
  std::optional<std::string> column_text(int index) const;
  OrderedJson row_json() const; // {column: value} in column order

private:
  sqlite3 *m_db;
  sqlite3_stmt *m_stmt = nullptr;
};

class Database {
public:
  enum class Mode { read_write_schema, read_only };
  // read_write_schema: creates the file and parents, enables foreign keys and WAL, runs the
  // idempotent schema script and records schema version 1. read_only: a `mode=ro` URI open of
  // an existing file, foreign keys on.
  Database(const std::filesystem::path &path, Mode mode);
  ~Database();
  Database(const Database &) = delete;
  Database &operator=(const Database &) = delete;

  void exec(std::string_view sql);
  std::int64_t insert(std::string_view sql, const std::vector<SqlValue> &values);
  void run(std::string_view sql, const std::vector<SqlValue> &values = {});
  std::vector<OrderedJson> rows(std::string_view sql, const std::vector<SqlValue> &values = {});
  std::optional<OrderedJson> row(std::string_view sql, const std::vector<SqlValue> &values = {});
  std::int64_t scalar_int(std::string_view sql, const std::vector<SqlValue> &values = {});
  std::optional<std::string> scalar_text(std::string_view sql,
                                         const std::vector<SqlValue> &values = {});
  sqlite3 *handle() const { return m_db; }
  const std::filesystem::path &path() const { return m_path; }

private:
  void open_connection(const std::string &name, int flags); // busy timeout, foreign keys on
  sqlite3 *m_db = nullptr;
  std::filesystem::path m_path;
};

// An IMMEDIATE transaction rolled back unless committed.
class Transaction {
public:
  explicit Transaction(Database &db);
  ~Transaction();
  void commit();

private:
  Database &m_db;
  bool m_done = false;
};

// The current UTC time: strftime's `date_time_format`, then the microseconds through
// printf's `fraction_format` (given a long long).
std::string utc_now(std::string_view date_time_format, std::string_view fraction_format);
// "2026-05-01T12:00:00.123456+00:00", Python's datetime.now(timezone.utc).isoformat().
std::string utc_now_iso();

// Compact JSON with sorted keys and \u escapes: Python's
// json.dumps(value, sort_keys=True, separators=(",", ":")).
std::string compact_sorted_json(const nlohmann::json &value);

} // namespace pb::watcher
