// SPDX-License-Identifier: MIT
#include <primebeaker/core/dynamic_library.hpp>
#include <primebeaker/registry/sqlite.hpp>

#include <string>

namespace pb::registry {
namespace {

Sqlite load() {
  void *handle =
      dl::open("libsqlite3.so.0",
               "SQLite databases need the SQLite library (Debian package libsqlite3-0): ");
  const std::string lacking = "the SQLite library (libsqlite3.so.0) lacks ";
  Sqlite api;
  dl::bind(handle, api.open, "sqlite3_open", lacking);
  dl::bind(handle, api.open_v2, "sqlite3_open_v2", lacking);
  dl::bind(handle, api.close, "sqlite3_close", lacking);
  dl::bind(handle, api.errmsg, "sqlite3_errmsg", lacking);
  dl::bind(handle, api.busy_timeout, "sqlite3_busy_timeout", lacking);
  dl::bind(handle, api.exec, "sqlite3_exec", lacking);
  dl::bind(handle, api.free, "sqlite3_free", lacking);
  dl::bind(handle, api.prepare_v2, "sqlite3_prepare_v2", lacking);
  dl::bind(handle, api.step, "sqlite3_step", lacking);
  dl::bind(handle, api.reset, "sqlite3_reset", lacking);
  dl::bind(handle, api.clear_bindings, "sqlite3_clear_bindings", lacking);
  dl::bind(handle, api.finalize, "sqlite3_finalize", lacking);
  dl::bind(handle, api.bind_text, "sqlite3_bind_text", lacking);
  dl::bind(handle, api.bind_blob, "sqlite3_bind_blob", lacking);
  dl::bind(handle, api.bind_double, "sqlite3_bind_double", lacking);
  dl::bind(handle, api.bind_int64, "sqlite3_bind_int64", lacking);
  dl::bind(handle, api.bind_null, "sqlite3_bind_null", lacking);
  dl::bind(handle, api.column_count, "sqlite3_column_count", lacking);
  dl::bind(handle, api.column_name, "sqlite3_column_name", lacking);
  dl::bind(handle, api.column_type, "sqlite3_column_type", lacking);
  dl::bind(handle, api.column_text, "sqlite3_column_text", lacking);
  dl::bind(handle, api.column_blob, "sqlite3_column_blob", lacking);
  dl::bind(handle, api.column_bytes, "sqlite3_column_bytes", lacking);
  dl::bind(handle, api.column_int64, "sqlite3_column_int64", lacking);
  dl::bind(handle, api.column_double, "sqlite3_column_double", lacking);
  dl::bind(handle, api.last_insert_rowid, "sqlite3_last_insert_rowid", lacking);
  dl::bind(handle, api.backup_init, "sqlite3_backup_init", lacking);
  dl::bind(handle, api.backup_step, "sqlite3_backup_step", lacking);
  dl::bind(handle, api.backup_finish, "sqlite3_backup_finish", lacking);
  return api;
}

} // namespace

const Sqlite &sqlite() {
  // A failed load throws and is tried again by the next call, like any static initialiser.
  static const Sqlite loaded = load();
  return loaded;
}

} // namespace pb::registry
