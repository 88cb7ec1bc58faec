// SPDX-License-Identifier: MIT
#include "database.hpp"

#include <primebeaker/core/error.hpp>
#include <primebeaker/registry/records.hpp>
#include <primebeaker/registry/sqlite.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace pb::watcher {

using registry::sqlite;
namespace {

// Schema version 1 (docs/watcher.md "Schema"): the same tables, columns, constraints, indexes
// and views as Python PrimeBeaker's, so an existing watcher.sqlite3 keeps working. Every statement
// is idempotent (IF NOT EXISTS).
constexpr std::string_view k_schema = R"sql(
CREATE TABLE IF NOT EXISTS schema_metadata (
    version INTEGER PRIMARY KEY,
    installed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS models (
    id INTEGER PRIMARY KEY,
    model_path TEXT NOT NULL UNIQUE,
    output_dir TEXT NOT NULL,
    checkpoint_step INTEGER,
    indexed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS training_runs (
    id INTEGER PRIMARY KEY,
    model_id INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    stage TEXT NOT NULL CHECK (stage IN ('rl', 'sft')),
    checkpoint_path TEXT,
    output_dir TEXT,
    config_path TEXT,
    config_sha256 TEXT,
    raw_config_toml TEXT,
    UNIQUE(model_id, stage)
);
CREATE TABLE IF NOT EXISTS wandb_runs (
    id INTEGER PRIMARY KEY,
    training_run_id INTEGER NOT NULL REFERENCES training_runs(id) ON DELETE CASCADE,
    run_id TEXT,
    project TEXT,
    entity TEXT,
    name TEXT,
    url TEXT,
    offline INTEGER NOT NULL DEFAULT 0,
    launch_spec_path TEXT,
    local_run_path TEXT,
    raw_launch_json TEXT
);
CREATE TABLE IF NOT EXISTS datasets (
    id INTEGER PRIMARY KEY,
    identity_key TEXT NOT NULL UNIQUE,
    dataset_name TEXT NOT NULL,
    manifest_path TEXT,
    config_uid TEXT,
    kind TEXT,
    train_path TEXT,
    validation_path TEXT,
    hf_dataset_path TEXT,
    raw_manifest_json TEXT
);
CREATE TABLE IF NOT EXISTS training_run_datasets (
    training_run_id INTEGER NOT NULL REFERENCES training_runs(id) ON DELETE CASCADE,
    dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    configured_path TEXT NOT NULL,
    PRIMARY KEY(training_run_id, dataset_id, role, configured_path)
);
CREATE TABLE IF NOT EXISTS dataset_sources (
    id INTEGER PRIMARY KEY,
    dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
    source_name TEXT NOT NULL,
    source_path TEXT,
    weight REAL,
    train_quota INTEGER,
    validation_quota INTEGER,
    raw_source_json TEXT NOT NULL,
    UNIQUE(dataset_id, source_name)
);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY,
    model_id INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    config_path TEXT NOT NULL,
    workflow TEXT NOT NULL,
    run_dir TEXT,
    status TEXT NOT NULL,
    error TEXT,
    raw_config_yaml TEXT NOT NULL,
    outcome_json TEXT,
    UNIQUE(model_id, config_path)
);
CREATE TABLE IF NOT EXISTS evaluation_benchmarks (
    id INTEGER PRIMARY KEY,
    evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
    dataset TEXT NOT NULL,
    runs INTEGER NOT NULL,
    mean_accuracy REAL NOT NULL,
    stdev_accuracy REAL NOT NULL,
    min_accuracy REAL NOT NULL,
    max_accuracy REAL NOT NULL,
    UNIQUE(evaluation_id, dataset)
);
CREATE INDEX IF NOT EXISTS idx_training_runs_model ON training_runs(model_id);
CREATE INDEX IF NOT EXISTS idx_wandb_training ON wandb_runs(training_run_id);
CREATE INDEX IF NOT EXISTS idx_eval_model ON evaluations(model_id);
CREATE INDEX IF NOT EXISTS idx_source_dataset ON dataset_sources(dataset_id);
CREATE VIEW IF NOT EXISTS model_provenance AS
SELECT
    m.model_path AS rl_model,
    m.checkpoint_step AS rl_checkpoint_step,
    rl.config_path AS rl_config,
    rl.output_dir AS rl_output_dir,
    sft.checkpoint_path AS sft_checkpoint,
    sft.config_path AS sft_config,
    sft.output_dir AS sft_output_dir,
    m.indexed_at
FROM models AS m
LEFT JOIN training_runs AS rl ON rl.model_id = m.id AND rl.stage = 'rl'
LEFT JOIN training_runs AS sft ON sft.model_id = m.id AND sft.stage = 'sft';
CREATE VIEW IF NOT EXISTS model_wandb_runs AS
SELECT m.model_path AS rl_model, tr.stage, w.run_id, w.project, w.entity,
       w.name, w.url, w.offline, w.launch_spec_path, w.local_run_path
FROM models AS m
JOIN training_runs AS tr ON tr.model_id = m.id
JOIN wandb_runs AS w ON w.training_run_id = tr.id;
CREATE VIEW IF NOT EXISTS dataset_mix AS
SELECT m.model_path AS rl_model, tr.stage, trd.role, trd.configured_path,
       d.dataset_name, d.manifest_path, d.config_uid, d.kind,
       ds.source_name, ds.source_path, ds.weight, ds.train_quota,
       ds.validation_quota
FROM models AS m
JOIN training_runs AS tr ON tr.model_id = m.id
JOIN training_run_datasets AS trd ON trd.training_run_id = tr.id
JOIN datasets AS d ON d.id = trd.dataset_id
LEFT JOIN dataset_sources AS ds ON ds.dataset_id = d.id;
CREATE VIEW IF NOT EXISTS evaluation_results AS
SELECT m.model_path AS rl_model, e.config_path, e.workflow, e.run_dir,
       e.status, e.error, b.dataset, b.runs, b.mean_accuracy,
       b.stdev_accuracy, b.min_accuracy, b.max_accuracy
FROM models AS m
JOIN evaluations AS e ON e.model_id = m.id
LEFT JOIN evaluation_benchmarks AS b ON b.evaluation_id = e.id;
)sql";

constexpr int k_schema_version = 1;

[[noreturn]] void sqlite_failure(sqlite3 *db, const std::string &what) {
  throw failure("SQLite: " + what + ": " + (db != nullptr ? sqlite().errmsg(db) : "out of memory"));
}

} // namespace

SqlValue sql_text(const std::optional<std::string> &value) {
  return value ? SqlValue(*value) : SqlValue(nullptr);
}

SqlValue sql_int(const std::optional<std::int64_t> &value) {
  return value ? SqlValue(*value) : SqlValue(nullptr);
}

Statement::Statement(sqlite3 *db, std::string_view sql) : m_db(db) {
  if (sqlite().prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &m_stmt, nullptr) !=
      SQLITE_OK) {
    sqlite_failure(db, "prepare");
  }
}

Statement::~Statement() {
  sqlite().finalize(m_stmt);
}

Statement &Statement::bind(const std::vector<SqlValue> &values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    int rc = SQLITE_OK;
    if (const auto *text = std::get_if<std::string>(&values[i])) {
      rc = sqlite().bind_text(
          m_stmt, index, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
    } else if (const auto *integer = std::get_if<std::int64_t>(&values[i])) {
      rc = sqlite().bind_int64(m_stmt, index, *integer);
    } else if (const auto *real = std::get_if<double>(&values[i])) {
      rc = sqlite().bind_double(m_stmt, index, *real);
    } else {
      rc = sqlite().bind_null(m_stmt, index);
    }
    if (rc != SQLITE_OK) {
      sqlite_failure(m_db, "bind");
    }
  }
  return *this;
}

bool Statement::step() {
  const int rc = sqlite().step(m_stmt);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc == SQLITE_DONE) {
    return false;
  }
  sqlite_failure(m_db, "step");
}

void Statement::reset() {
  sqlite().reset(m_stmt);
  sqlite().clear_bindings(m_stmt);
}

int Statement::columns() const {
  return sqlite().column_count(m_stmt);
}

std::string Statement::column_name(int index) const {
  return sqlite().column_name(m_stmt, index);
}

OrderedJson Statement::column_json(int index) const {
  switch (sqlite().column_type(m_stmt, index)) {
  case SQLITE_INTEGER:
    return static_cast<std::int64_t>(sqlite().column_int64(m_stmt, index));
  case SQLITE_FLOAT:
    return sqlite().column_double(m_stmt, index);
  case SQLITE_NULL:
    return nullptr;
  default: {
    const auto *text = reinterpret_cast<const char *>(sqlite().column_text(m_stmt, index));
    return std::string(text, static_cast<size_t>(sqlite().column_bytes(m_stmt, index)));
  }
  }
}

std::optional<std::int64_t> Statement::column_int(int index) const {
  if (sqlite().column_type(m_stmt, index) == SQLITE_NULL) {
    return std::nullopt;
  }
  return sqlite().column_int64(m_stmt, index);
}

std::optional<std::string> Statement::column_text(int index) const {
  if (sqlite().column_type(m_stmt, index) == SQLITE_NULL) {
    return std::nullopt;
  }
  const auto *text = reinterpret_cast<const char *>(sqlite().column_text(m_stmt, index));
  return std::string(text, static_cast<size_t>(sqlite().column_bytes(m_stmt, index)));
}

OrderedJson Statement::row_json() const {
  OrderedJson row = OrderedJson::object();
  for (int i = 0; i < columns(); ++i) {
    row[column_name(i)] = column_json(i);
  }
  return row;
}

Database::Database(const std::filesystem::path &path, Mode mode) : m_path(path) {
  if (mode == Mode::read_only) {
    // A URI so that the database is opened read-only even by a writer's rules; the path part
    // is percent-escaped where URI syntax would misread it.
    std::string uri = "file:";
    for (const char c : std::filesystem::absolute(path).string()) {
      if (c == '%' || c == '?' || c == '#') {
        char buffer[4];
        std::snprintf(buffer, sizeof buffer, "%%%02X", static_cast<unsigned char>(c));
        uri += buffer;
      } else {
        uri += c;
      }
    }
    uri += "?mode=ro";
    open_connection(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    return;
  }
  if (path.has_parent_path()) {
    std::error_code ignored;
    std::filesystem::create_directories(path.parent_path(), ignored);
  }
  open_connection(path.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  exec("PRAGMA journal_mode = WAL");
  exec(k_schema);
  run("INSERT OR IGNORE INTO schema_metadata(version, installed_at) VALUES (?, ?)",
      {std::int64_t{k_schema_version}, utc_now_iso()});
}

Database::~Database() {
  sqlite().close(m_db);
}

void Database::open_connection(const std::string &name, int flags) {
  if (sqlite().open_v2(name.c_str(), &m_db, flags, nullptr) != SQLITE_OK) {
    const std::string reason = m_db != nullptr ? sqlite().errmsg(m_db) : "out of memory";
    sqlite().close(m_db);
    m_db = nullptr;
    throw failure("cannot open watcher database " + m_path.string() + ": " + reason);
  }
  sqlite().busy_timeout(m_db, 5000);
  exec("PRAGMA foreign_keys = ON");
}

void Database::exec(std::string_view sql) {
  const std::string text(sql);
  char *message = nullptr;
  if (sqlite().exec(m_db, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string reason = message != nullptr ? message : sqlite().errmsg(m_db);
    sqlite().free(message);
    throw failure("SQLite: " + reason + " (" + m_path.string() + ")");
  }
}

std::int64_t Database::insert(std::string_view sql, const std::vector<SqlValue> &values) {
  run(sql, values);
  return sqlite().last_insert_rowid(m_db);
}

void Database::run(std::string_view sql, const std::vector<SqlValue> &values) {
  Statement statement(m_db, sql);
  statement.bind(values);
  while (statement.step()) {
  }
}

std::vector<OrderedJson> Database::rows(std::string_view sql, const std::vector<SqlValue> &values) {
  Statement statement(m_db, sql);
  statement.bind(values);
  std::vector<OrderedJson> out;
  while (statement.step()) {
    out.push_back(statement.row_json());
  }
  return out;
}

std::optional<OrderedJson> Database::row(std::string_view sql,
                                         const std::vector<SqlValue> &values) {
  Statement statement(m_db, sql);
  statement.bind(values);
  if (!statement.step()) {
    return std::nullopt;
  }
  return statement.row_json();
}

std::int64_t Database::scalar_int(std::string_view sql, const std::vector<SqlValue> &values) {
  Statement statement(m_db, sql);
  statement.bind(values);
  return statement.step() ? statement.column_int(0).value_or(0) : 0;
}

std::optional<std::string> Database::scalar_text(std::string_view sql,
                                                 const std::vector<SqlValue> &values) {
  Statement statement(m_db, sql);
  statement.bind(values);
  return statement.step() ? statement.column_text(0) : std::nullopt;
}

Transaction::Transaction(Database &db) : m_db(db) {
  m_db.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!m_done) {
    sqlite().exec(m_db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void Transaction::commit() {
  m_db.exec("COMMIT");
  m_done = true;
}

std::string utc_now(std::string_view date_time_format, std::string_view fraction_format) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, std::string(date_time_format).c_str(), &parts);
  char fraction[32];
  std::snprintf(fraction,
                sizeof fraction,
                std::string(fraction_format).c_str(),
                static_cast<long long>(micros % 1000000));
  return std::string(buffer) + fraction;
}

std::string utc_now_iso() {
  return utc_now("%Y-%m-%dT%H:%M:%S", ".%06lld+00:00");
}

std::string compact_sorted_json(const nlohmann::json &value) {
  // nlohmann::json keeps object keys sorted by bytes, which is Python's sort_keys order.
  return registry::python_json(OrderedJson(value), ",", ":");
}

} // namespace pb::watcher
