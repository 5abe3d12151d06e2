// Internal to dynamiccl_store: the connection behind a Store and small RAII helpers over sqlite3.
#pragma once

#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "store/store.h"

namespace dynamiccl::store {

// A prepared statement, finalized on destruction.
class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

struct Store::Impl {
  sqlite3* db = nullptr;
  std::string path;
  StoreOptions options;
  std::string notice;
  ~Impl() { sqlite3_close_v2(db); }
};

// The owner's deadline passed (StoreOptions::give_up): stop waiting for locks.
inline bool givenUp(const StoreOptions& o) { return o.give_up && o.give_up->load(std::memory_order_relaxed); }
// The first attempt always runs (waiting on nothing once the owner gave up: the busy handler returns at
// once); retries only before then. The bound stops waits, not writes that need none.
inline bool mayAttempt(const StoreOptions& o, int attempt) { return attempt == 0 || !givenUp(o); }

// Column readers: NULL reads as "", NaN or `missing`.
inline void bindText(sqlite3_stmt* st, int i, const std::string& s) {
  sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}
inline std::string columnText(sqlite3_stmt* st, int i) {
  const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
  return t != nullptr ? std::string(t, static_cast<size_t>(sqlite3_column_bytes(st, i))) : std::string();
}
inline double columnReal(sqlite3_stmt* st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}
inline int64_t columnIntOr(sqlite3_stmt* st, int i, int64_t missing) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? missing : sqlite3_column_int64(st, i);
}

// "what: sqlite message (code)" for the last error on db.
std::string sqliteError(sqlite3* db, const char* what);
// Runs SQL with no result rows; error value on failure.
Status execute(sqlite3* db, const char* sql);
// Brings an open connection's schema to kSchemaVersion; refuses a newer one without writing.
Status migrateSchema(sqlite3* db, const std::string& path);
// The network file system holding path (filesystem.cpp's table), nullptr when local or unknown.
const char* networkFileSystemOf(const std::string& path, const StoreOptions& options);
// Creates missing parent directories (0700) and the file itself (0600) before SQLite opens it.
Status prepareDatabaseFile(const std::string& path);

}  // namespace dynamiccl::store
