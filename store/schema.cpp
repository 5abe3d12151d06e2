// Schema versions and migrations: each step takes user_version from N-1 to N in one transaction.
#include <array>

#include "store/store_impl.h"

namespace dynamiccl::store {
namespace {

struct Migration {
  int to_version;
  const char* sql;
};

// Version 1: the initial schema (documented in store/SCHEMA.md). Append new steps; never edit old ones.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  host          TEXT NOT NULL DEFAULT '',
  system        TEXT NOT NULL DEFAULT '',
  nccl_version  TEXT NOT NULL DEFAULT '',
  fingerprint   TEXT NOT NULL DEFAULT '',
  env_json      TEXT NOT NULL DEFAULT '{}',
  source        TEXT NOT NULL DEFAULT '',
  source_hash   TEXT NOT NULL DEFAULT '',
  started_at_ns INTEGER NOT NULL
);
CREATE INDEX runs_source_hash ON runs(source_hash);
CREATE TABLE communicators (
  id      INTEGER PRIMARY KEY,
  run_id  INTEGER NOT NULL REFERENCES runs(id),
  comm_id INTEGER NOT NULL,
  n_ranks INTEGER NOT NULL,
  n_nodes INTEGER NOT NULL,
  rank    INTEGER
);
CREATE INDEX communicators_run ON communicators(run_id);
CREATE TABLE observations (
  id            INTEGER PRIMARY KEY,
  comm          INTEGER NOT NULL REFERENCES communicators(id),
  seq           INTEGER NOT NULL,
  collective    TEXT NOT NULL,
  bytes         INTEGER NOT NULL,
  algo          TEXT NOT NULL,
  proto         TEXT NOT NULL,
  n_channels    INTEGER,
  chunk         INTEGER,
  gpu_us        REAL,
  cpu_us        REAL,
  timing_source TEXT NOT NULL CHECK (timing_source IN ('gpu', 'host')),
  ts_ns         INTEGER NOT NULL,
  in_place      INTEGER NOT NULL DEFAULT 0,
  busbw_gbps    REAL,
  note          TEXT
);
CREATE INDEX observations_training ON observations(collective, bytes, algo, proto);
CREATE INDEX observations_comm ON observations(comm, seq);
CREATE TABLE decisions (
  id         INTEGER PRIMARY KEY,
  comm       INTEGER NOT NULL REFERENCES communicators(id),
  seq        INTEGER NOT NULL,
  collective TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  algo       TEXT NOT NULL,
  proto      TEXT NOT NULL,
  n_channels INTEGER,
  chunk      INTEGER,
  source     TEXT NOT NULL,
  ts_ns      INTEGER NOT NULL
);
CREATE INDEX decisions_training ON decisions(collective, bytes, algo, proto);
CREATE INDEX decisions_comm ON decisions(comm, seq);
CREATE TABLE profiles (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  text       TEXT NOT NULL,
  created_ns INTEGER NOT NULL
);
)sql";

// Version 2: in-job verification's verdicts, one row per candidate rule per job (the latest row of
// a key carries every earlier job's samples too: each job starts from the previous verdict).
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE verdicts (
  id             INTEGER PRIMARY KEY,
  fingerprint    TEXT NOT NULL,
  nccl_version   TEXT NOT NULL DEFAULT '',
  n_ranks        INTEGER NOT NULL,
  n_nodes        INTEGER NOT NULL,
  collective     TEXT NOT NULL,
  min_bytes      INTEGER NOT NULL,
  max_bytes      INTEGER NOT NULL,
  algo           TEXT NOT NULL,
  proto          TEXT NOT NULL,
  n_channels     INTEGER,
  chunk          INTEGER,
  base_algo      TEXT NOT NULL,
  base_proto     TEXT NOT NULL,
  n              INTEGER NOT NULL,
  mean_log_us    REAL NOT NULL,
  var_log_us     REAL NOT NULL,
  base_n         INTEGER NOT NULL,
  base_mean_log_us REAL NOT NULL,
  base_var_log_us  REAL NOT NULL,
  gain           REAL,
  gain_low       REAL,
  gain_high      REAL,
  state          TEXT NOT NULL CHECK (state IN ('testing', 'promoted', 'dropped')),
  ts_ns          INTEGER NOT NULL
);
CREATE INDEX verdicts_key ON verdicts(fingerprint, n_ranks, n_nodes, collective, min_bytes, id);
)sql";

// Version 3: profiler v7 (NCCL 2.31) fields and how each plugin observation found its decision. NULL
// where unknown: rows of older profilers, of logs, and of every earlier version of this schema.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE observations ADD COLUMN kernel_variant TEXT;
ALTER TABLE observations ADD COLUMN is_sym_coll INTEGER;
ALTER TABLE observations ADD COLUMN user_tag INTEGER;
ALTER TABLE observations ADD COLUMN profiler_version INTEGER;
ALTER TABLE observations ADD COLUMN decision_join TEXT;
)sql";

// Version 4: the profiles table goes (nothing ever wrote it; profiles live in files). IF EXISTS: a
// file that lost it by hand still migrates.
constexpr const char* kSchemaV4 = R"sql(
DROP TABLE IF EXISTS profiles;
)sql";

constexpr std::array kMigrations = {Migration{1, kSchemaV1}, Migration{2, kSchemaV2}, Migration{3, kSchemaV3},
                                    Migration{4, kSchemaV4}};
static_assert(kMigrations.back().to_version == kSchemaVersion, "kSchemaVersion must name the last migration");

Expected<int> userVersion(sqlite3* db) {
  Statement st(db, "PRAGMA user_version");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return makeError(sqliteError(db, "read user_version"));
  return sqlite3_column_int(st.get(), 0);
}

}  // namespace

Status migrateSchema(sqlite3* db, const std::string& path) {
  // Read first, write nothing: a newer database must stay byte-for-byte as it is.
  auto version = userVersion(db);
  if (!version) return makeError(version.error());
  if (*version > kSchemaVersion)
    return makeError(path + " has schema version " + std::to_string(*version) + ", newer than this build's " +
                     std::to_string(kSchemaVersion) + "; refusing to open it (upgrade dynamiccl)");
  if (*version == kSchemaVersion) return Ok{};

  // Several processes may create the database at once: take the write lock, then look again.
  if (auto s = execute(db, "BEGIN IMMEDIATE"); !s) return s;
  version = userVersion(db);
  if (!version) {
    execute(db, "ROLLBACK");
    return makeError(version.error());
  }
  for (const Migration& m : kMigrations) {
    if (m.to_version <= *version) continue;
    if (auto s = execute(db, m.sql); !s) {
      execute(db, "ROLLBACK");
      return makeError("migration to schema " + std::to_string(m.to_version) + ": " + s.error());
    }
  }
  const std::string setVersion = "PRAGMA user_version = " + std::to_string(kSchemaVersion);
  if (auto s = execute(db, setVersion.c_str()); !s) {
    execute(db, "ROLLBACK");
    return s;
  }
  return execute(db, "COMMIT");
}

}  // namespace dynamiccl::store
