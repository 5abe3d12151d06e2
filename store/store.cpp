// Opening a Store: file, pragmas (journal, busy timeout, size limit), schema; and the small one-row inserts.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "store/store_impl.h"

namespace dynamiccl::store {
namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Expected<int> readUserVersion(sqlite3* db) {
  Statement st(db, "PRAGMA user_version");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return makeError(sqliteError(db, "read user_version"));
  return sqlite3_column_int(st.get(), 0);
}

// SQLite's busy_timeout, in short steps that also end the wait once the owner gives up.
constexpr int kBusyStep_ms = 2;
int waitForLock(void* options, int count) {
  const auto* o = static_cast<const StoreOptions*>(options);
  if (givenUp(*o) || count * kBusyStep_ms >= o->busy_timeout_ms) return 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(kBusyStep_ms));
  return 1;
}

// Switching the journal mode needs a moment of exclusive access; other openers may hold it briefly.
Status setJournalMode(sqlite3* db, const StoreOptions& options, const std::string& mode) {
  const std::string sql = "PRAGMA journal_mode=" + mode;
  for (int attempt = 0; attempt < options.busy_attempts * 10 && mayAttempt(options, attempt); ++attempt) {
    Statement st(db, sql.c_str());
    if (st.ok() && sqlite3_step(st.get()) == SQLITE_ROW) {
      const auto* now = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
      if (now != nullptr && sqlite3_stricmp(now, mode.c_str()) == 0) return Ok{};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return makeError(sqliteError(db, ("journal_mode " + mode).c_str()));
}

// WAL where every process is on one host; on a network file system a rollback journal, which takes
// the file's own lock for each transaction (SQLite: WAL does not work across hosts), synced fully.
Status chooseJournal(Store::Impl& impl) {
  const char* network = networkFileSystemOf(impl.path, impl.options);
  if (network == nullptr) {
    if (auto s = setJournalMode(impl.db, impl.options, "wal"); !s) return makeError(impl.path + ": " + s.error());
    // NORMAL is crash-safe in WAL mode (a killed process loses nothing committed); only power loss may
    // drop the last transactions.
    return execute(impl.db, "PRAGMA synchronous=NORMAL");
  }
  if (auto s = setJournalMode(impl.db, impl.options, "delete"); !s)
    return makeError(impl.path + " is on " + network + ", where WAL must not run, and it cannot leave WAL (" +
                     s.error() + "): not writing it");
  impl.notice = "store " + impl.path + " is on " + network +
                " (a network file system): no WAL there (it does not work across hosts); a rollback journal "
                "instead, one writer at a time (a node-local DYNAMICCL_DB is faster)";
  return execute(impl.db, "PRAGMA synchronous=FULL");
}

Status applySizeLimit(sqlite3* db, int64_t maxBytes) {
  if (maxBytes <= 0) return Ok{};
  Statement pageSize(db, "PRAGMA page_size");
  if (!pageSize.ok() || sqlite3_step(pageSize.get()) != SQLITE_ROW) return makeError(sqliteError(db, "page_size"));
  const int64_t pages = std::max<int64_t>(1, maxBytes / sqlite3_column_int64(pageSize.get(), 0));
  const std::string sql = "PRAGMA max_page_count = " + std::to_string(pages);
  Statement limit(db, sql.c_str());
  if (!limit.ok() || sqlite3_step(limit.get()) != SQLITE_ROW) return makeError(sqliteError(db, "max_page_count"));
  return Ok{};
}


Expected<int64_t> stepInsert(sqlite3* db, sqlite3_stmt* st, const char* what) {
  if (sqlite3_step(st) != SQLITE_DONE) return makeError(sqliteError(db, what));
  return sqlite3_last_insert_rowid(db);
}

// "file:" URI of a path: the characters URIs reserve are percent-encoded, and an absolute path gets
// an empty authority ("//tmp/x.db" would otherwise name a host).
std::string fileUri(const std::string& path, const char* query) {
  std::string uri = path.starts_with('/') ? "file://" : "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      uri += hex;
    } else {
      uri += c;
    }
  }
  return uri + "?" + query;
}

// What a reader hands SQLite: a regular file only (a FIFO or device would block open or read), and
// a WAL store no process holds open (no -wal beside it) as immutable, since SQLite would otherwise
// create -wal and -shm files beside it that a read-only connection can never remove.
Expected<std::string> readOnlyUri(const std::string& path) {
  auto fd = openRegularFile(path, O_RDONLY);
  if (!fd) return makeError(fd.error());
  unsigned char header[20] = {};
  const ssize_t got = ::pread(*fd, header, sizeof header, 0);
  ::close(*fd);
  const bool wal = got == static_cast<ssize_t>(sizeof header) && header[18] == 2 && header[19] == 2;
  struct stat st {};
  const bool inUse = ::lstat((path + "-wal").c_str(), &st) == 0 || ::lstat((path + "-shm").c_str(), &st) == 0;
  return fileUri(path, wal && !inUse ? "mode=ro&immutable=1" : "mode=ro");
}

}  // namespace

std::string sqliteError(sqlite3* db, const char* what) {
  return std::string(what) + ": " + sqlite3_errmsg(db) + " (" + std::to_string(sqlite3_extended_errcode(db)) + ")";
}

Status execute(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) == SQLITE_OK) return Ok{};
  std::string text = message != nullptr ? message : sqlite3_errmsg(db);
  sqlite3_free(message);
  return makeError(text + " (" + std::to_string(sqlite3_extended_errcode(db)) + ")");
}

std::string algoStoredName(Algo a) { return a == Algo::Default ? "default" : std::string(algoNcclName(a)); }
std::string protoStoredName(Proto p) { return p == Proto::Default ? "default" : std::string(protoNcclName(p)); }

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;
const std::string& Store::path() const { return impl_->path; }
const std::string& Store::notice() const { return impl_->notice; }

Expected<std::unique_ptr<Store>> Store::open(const StoreOptions& options) try {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->path = options.path.empty() ? defaultDatabasePath() : options.path;
  if (!options.read_only)
    if (auto s = prepareDatabaseFile(impl->path); !s) return makeError(s.error());

  std::string target = impl->path;
  if (options.read_only && impl->path != ":memory:") {
    auto uri = readOnlyUri(impl->path);
    if (!uri) return makeError(uri.error());
    target = *uri;
  }
  const int flags = (options.read_only ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
                                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                    SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(target.c_str(), &impl->db, flags, nullptr) != SQLITE_OK)
    return makeError(sqliteError(impl->db, ("open " + impl->path).c_str()));
  sqlite3_extended_result_codes(impl->db, 1);
  sqlite3_busy_handler(impl->db, waitForLock, &impl->options);

  // Refuse a newer schema before anything (WAL switch included) could write to the file.
  auto version = readUserVersion(impl->db);
  if (!version) return makeError(impl->path + ": " + version.error());
  if (*version > kSchemaVersion) return makeError(migrateSchema(impl->db, impl->path).error());
  if (options.read_only) {
    if (*version < kOldestReadableSchema)
      return makeError(impl->path + ": not a dynamiccl store of schema " + std::to_string(kOldestReadableSchema) +
                       ".." + std::to_string(kSchemaVersion) + " (user_version " + std::to_string(*version) + ")");
    return std::unique_ptr<Store>(new Store(std::move(impl)));
  }

  if (auto s = chooseJournal(*impl); !s) return makeError(s.error());
  if (auto s = migrateSchema(impl->db, impl->path); !s) return makeError(s.error());
  if (auto s = applySizeLimit(impl->db, impl->options.max_bytes); !s) return makeError(s.error());
  return std::unique_ptr<Store>(new Store(std::move(impl)));
} catch (const std::exception& e) {
  return makeError(std::string("store open: ") + e.what());
}

Expected<int64_t> Store::addRun(const RunInfo& run) try {
  Statement st(impl_->db,
               "INSERT INTO runs(host, system, nccl_version, fingerprint, env_json, source, source_hash, "
               "started_at_ns) VALUES (?,?,?,?,?,?,?,?)");
  if (!st.ok()) return makeError(sqliteError(impl_->db, "prepare run insert"));
  bindText(st.get(), 1, run.host);
  bindText(st.get(), 2, run.system);
  bindText(st.get(), 3, run.nccl_version);
  bindText(st.get(), 4, run.fingerprint);
  bindText(st.get(), 5, run.env_json.empty() ? std::string("{}") : run.env_json);
  bindText(st.get(), 6, run.source);
  bindText(st.get(), 7, run.source_hash);
  sqlite3_bind_int64(st.get(), 8, run.started_at_ns != 0 ? run.started_at_ns : nowNs());
  return stepInsert(impl_->db, st.get(), "insert run");
} catch (const std::exception& e) {
  return makeError(e.what());
}

Expected<int64_t> Store::addCommunicator(const CommInfo& comm) try {
  Statement st(impl_->db, "INSERT INTO communicators(run_id, comm_id, n_ranks, n_nodes, rank) VALUES (?,?,?,?,?)");
  if (!st.ok()) return makeError(sqliteError(impl_->db, "prepare communicator insert"));
  sqlite3_bind_int64(st.get(), 1, comm.run_id);
  sqlite3_bind_int64(st.get(), 2, static_cast<int64_t>(comm.comm_id));  // bit pattern kept; read back as uint64
  sqlite3_bind_int(st.get(), 3, comm.n_ranks);
  sqlite3_bind_int(st.get(), 4, comm.n_nodes);
  if (comm.rank >= 0) sqlite3_bind_int(st.get(), 5, comm.rank);
  return stepInsert(impl_->db, st.get(), "insert communicator");
} catch (const std::exception& e) {
  return makeError(e.what());
}

Expected<bool> Store::hasSourceHash(const std::string& source_hash) try {
  Statement st(impl_->db, "SELECT 1 FROM runs WHERE source_hash = ? LIMIT 1");
  if (!st.ok()) return makeError(sqliteError(impl_->db, "prepare source lookup"));
  bindText(st.get(), 1, source_hash);
  const int rc = sqlite3_step(st.get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return makeError(sqliteError(impl_->db, "source lookup"));
  return rc == SQLITE_ROW;
} catch (const std::exception& e) {
  return makeError(e.what());
}

Status Store::atomically(const std::function<Status()>& body) {
  sqlite3* db = impl_->db;
  if (sqlite3_get_autocommit(db) == 0) return makeError("store: transactions do not nest");
  // BEGIN IMMEDIATE takes the write lock now, waiting up to busy_timeout_ms per attempt.
  Status began = makeError("store: begin was not attempted");
  for (int attempt = 0; attempt < impl_->options.busy_attempts; ++attempt)
    if ((began = execute(db, "BEGIN IMMEDIATE"))) break;
  if (!began) return makeError(impl_->path + ": begin: " + began.error());
  Status result = makeError("store: transaction body threw");
  try {
    result = body();
  } catch (const std::exception& e) {
    result = makeError(std::string("store: transaction body threw: ") + e.what());
  } catch (...) {
  }
  if (result) result = execute(db, "COMMIT");
  if (!result && sqlite3_get_autocommit(db) == 0) execute(db, "ROLLBACK");
  return result;
}

}  // namespace dynamiccl::store
