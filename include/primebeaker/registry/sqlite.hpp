// SPDX-License-Identifier: MIT
// SQLite, dlopen()ed on first use (docs/registry.md, "SQLite"): the registry's sqlite:// store
// and the watcher's index are its only users, and linking it made every start copy its ~20 KB
// of relocated function tables (about 5 page faults of `primebeaker --version`).
#pragma once

#include <sqlite3.h>

namespace pb::registry {

// The SQLite C functions primebeaker calls, named without their `sqlite3_` prefix.
struct Sqlite {
  decltype(&::sqlite3_open) open = nullptr;
  decltype(&::sqlite3_open_v2) open_v2 = nullptr;
  decltype(&::sqlite3_close) close = nullptr;
  decltype(&::sqlite3_errmsg) errmsg = nullptr;
  decltype(&::sqlite3_busy_timeout) busy_timeout = nullptr;
  decltype(&::sqlite3_exec) exec = nullptr;
  decltype(&::sqlite3_free) free = nullptr;
  decltype(&::sqlite3_prepare_v2) prepare_v2 = nullptr;
  decltype(&::sqlite3_step) step = nullptr;
  decltype(&::sqlite3_reset) reset = nullptr;
  decltype(&::sqlite3_clear_bindings) clear_bindings = nullptr;
  decltype(&::sqlite3_finalize) finalize = nullptr;
  decltype(&::sqlite3_bind_text) bind_text = nullptr;
  decltype(&::sqlite3_bind_blob) bind_blob = nullptr;
  decltype(&::sqlite3_bind_double) bind_double = nullptr;
  decltype(&::sqlite3_bind_int64) bind_int64 = nullptr;
  decltype(&::sqlite3_bind_null) bind_null = nullptr;
  decltype(&::sqlite3_column_count) column_count = nullptr;
  decltype(&::sqlite3_column_name) column_name = nullptr;
  decltype(&::sqlite3_column_type) column_type = nullptr;
  decltype(&::sqlite3_column_text) column_text = nullptr;
  decltype(&::sqlite3_column_blob) column_blob = nullptr;
  decltype(&::sqlite3_column_bytes) column_bytes = nullptr;
  decltype(&::sqlite3_column_int64) column_int64 = nullptr;
  decltype(&::sqlite3_column_double) column_double = nullptr;
  decltype(&::sqlite3_last_insert_rowid) last_insert_rowid = nullptr;
  decltype(&::sqlite3_backup_init) backup_init = nullptr;
  decltype(&::sqlite3_backup_step) backup_step = nullptr;
  decltype(&::sqlite3_backup_finish) backup_finish = nullptr;
};

// Loads libsqlite3.so.0 once. Throws pb::Error (exit 1) naming the Debian package when it is
// missing or lacks one of the functions.
const Sqlite &sqlite();

} // namespace pb::registry
