// SPDX-License-Identifier: MIT
#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/sqlite.hpp>

#include <dlfcn.h>

#include <string>

namespace pb::registry {
namespace {

template <typename F> void bind(void *handle, F &target, const char *name) {
  target = reinterpret_cast<F>(::dlsym(handle, name));
  if (target == nullptr) {
    throw failure(std::string("the SQLite library (libsqlite3.so.0) lacks ") + name);
  }
}

Sqlite load() {
  void *handle = ::dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw failure(std::string("SQLite databases need the SQLite library (Debian package "
                              "libsqlite3-0): ") +
                  ::dlerror());
  }
  Sqlite api;
  bind(handle, api.open, "sqlite3_open");
  bind(handle, api.open_v2, "sqlite3_open_v2");
  bind(handle, api.close, "sqlite3_close");
  bind(handle, api.errmsg, "sqlite3_errmsg");
  bind(handle, api.busy_timeout, "sqlite3_busy_timeout");
  bind(handle, api.exec, "sqlite3_exec");
  bind(handle, api.free, "sqlite3_free");
  bind(handle, api.prepare_v2, "sqlite3_prepare_v2");
  bind(handle, api.step, "sqlite3_step");
  bind(handle, api.reset, "sqlite3_reset");
  bind(handle, api.clear_bindings, "sqlite3_clear_bindings");
  bind(handle, api.finalize, "sqlite3_finalize");
  bind(handle, api.bind_text, "sqlite3_bind_text");
  bind(handle, api.bind_blob, "sqlite3_bind_blob");
  bind(handle, api.bind_double, "sqlite3_bind_double");
  bind(handle, api.bind_int64, "sqlite3_bind_int64");
  bind(handle, api.bind_null, "sqlite3_bind_null");
  bind(handle, api.column_count, "sqlite3_column_count");
  bind(handle, api.column_name, "sqlite3_column_name");
  bind(handle, api.column_type, "sqlite3_column_type");
  bind(handle, api.column_text, "sqlite3_column_text");
  bind(handle, api.column_blob, "sqlite3_column_blob");
  bind(handle, api.column_bytes, "sqlite3_column_bytes");
  bind(handle, api.column_int64, "sqlite3_column_int64");
  bind(handle, api.column_double, "sqlite3_column_double");
  bind(handle, api.last_insert_rowid, "sqlite3_last_insert_rowid");
  bind(handle, api.backup_init, "sqlite3_backup_init");
  bind(handle, api.backup_step, "sqlite3_backup_step");
  bind(handle, api.backup_finish, "sqlite3_backup_finish");
  return api;
}

} // namespace

const Sqlite &sqlite() {
  // A failed load throws and is tried again by the next call, like any static initialiser.
  static const Sqlite loaded = load();
  return loaded;
}

} // namespace pb::registry
