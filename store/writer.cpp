// The batched writer: one transaction per Batch, prepared statements, bounded waits, counted losses.
#include <sqlite3.h>

#include <chrono>
#include <thread>

#include "store/store_impl.h"

namespace dynamiccl::store {

struct Writer::Statements {
  explicit Statements(sqlite3* db)
      : begin(db, "BEGIN IMMEDIATE"),
        commit(db, "COMMIT"),
        rollback(db, "ROLLBACK"),
        observation(db,
                    "INSERT INTO observations(comm, seq, collective, bytes, algo, proto, n_channels, chunk, gpu_us, "
                    "cpu_us, timing_source, ts_ns, in_place, busbw_gbps, note, kernel_variant, is_sym_coll, user_tag, "
                    "profiler_version, decision_join) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        decision(db,
                 "INSERT INTO decisions(comm, seq, collective, bytes, algo, proto, n_channels, chunk, source, ts_ns) "
                 "VALUES (?,?,?,?,?,?,?,?,?,?)") {}
  bool ok() const { return begin.ok() && commit.ok() && rollback.ok() && observation.ok() && decision.ok(); }
  Statement begin, commit, rollback, observation, decision;
};

namespace {

void bindOptionalInt(sqlite3_stmt* st, int i, int64_t v) {
  if (v < 0) sqlite3_bind_null(st, i);
  else sqlite3_bind_int64(st, i, v);
}

void bindOptionalReal(sqlite3_stmt* st, int i, double v) {
  if (std::isnan(v)) sqlite3_bind_null(st, i);
  else sqlite3_bind_double(st, i, v);
}

// No copy: every parameter is rebound before each step, so SQLite never reads a stale pointer.
void bindStatic(sqlite3_stmt* st, int i, std::string_view s) {
  sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
}

std::string_view algoText(Algo a) { return a == Algo::Default ? std::string_view("default") : algoNcclName(a); }
std::string_view protoText(Proto p) { return p == Proto::Default ? std::string_view("default") : protoNcclName(p); }

bool stepDone(sqlite3_stmt* st) {
  const int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE;
}

bool insertObservation(sqlite3_stmt* st, const ObservationRow& r) {
  sqlite3_bind_int64(st, 1, r.comm_row);
  sqlite3_bind_int64(st, 2, r.seq);
  bindStatic(st, 3, r.collective);
  sqlite3_bind_int64(st, 4, static_cast<int64_t>(r.bytes));
  bindStatic(st, 5, algoText(r.algo));
  bindStatic(st, 6, protoText(r.proto));
  bindOptionalInt(st, 7, r.n_channels);
  bindOptionalInt(st, 8, r.chunk);
  bindOptionalReal(st, 9, r.gpu_us);
  bindOptionalReal(st, 10, r.cpu_us);
  bindStatic(st, 11, r.timing == TimingSource::Gpu ? "gpu" : "host");
  sqlite3_bind_int64(st, 12, r.ts_ns);
  sqlite3_bind_int(st, 13, r.in_place ? 1 : 0);
  bindOptionalReal(st, 14, r.busbw_gbps);
  if (r.note.empty()) sqlite3_bind_null(st, 15);
  else bindStatic(st, 15, r.note);
  if (r.kernel_variant.empty()) sqlite3_bind_null(st, 16);
  else bindStatic(st, 16, r.kernel_variant);
  bindOptionalInt(st, 17, r.is_sym_coll);
  if (r.user_tag) sqlite3_bind_int64(st, 18, static_cast<int64_t>(*r.user_tag));  // bit pattern kept
  else sqlite3_bind_null(st, 18);
  bindOptionalInt(st, 19, r.profiler_version);
  if (r.decision_join.empty()) sqlite3_bind_null(st, 20);
  else bindStatic(st, 20, r.decision_join);
  return stepDone(st);
}

bool insertDecision(sqlite3_stmt* st, const DecisionRow& r) {
  sqlite3_bind_int64(st, 1, r.comm_row);
  sqlite3_bind_int64(st, 2, r.seq);
  bindStatic(st, 3, r.collective);
  sqlite3_bind_int64(st, 4, static_cast<int64_t>(r.bytes));
  bindStatic(st, 5, algoText(r.algo));
  bindStatic(st, 6, protoText(r.proto));
  bindOptionalInt(st, 7, r.n_channels);
  bindOptionalInt(st, 8, r.chunk);
  bindStatic(st, 9, r.source);
  sqlite3_bind_int64(st, 10, r.ts_ns);
  return stepDone(st);
}

bool isBusy(sqlite3* db) {
  const int primary = sqlite3_extended_errcode(db) & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

}  // namespace

Writer::Writer(Store& store, std::unique_ptr<Statements> statements)
    : store_(store), statements_(std::move(statements)) {}
Writer::~Writer() = default;

Expected<std::unique_ptr<Writer>> Writer::create(Store& store) try {
  sqlite3* db = store.impl_->db;
  auto s = std::make_unique<Statements>(db);
  if (!s->ok())
    return makeError(sqliteError(db, "prepare writer statements"));
  return std::unique_ptr<Writer>(new Writer(store, std::move(s)));
} catch (const std::exception& e) {
  return makeError(std::string("writer: ") + e.what());
}

WriteResult Writer::write(const Batch& batch) {
  if (batch.rows() == 0) return {true, {}};
  sqlite3* db = store_.impl_->db;
  const StoreOptions& options = store_.impl_->options;
  std::string failure;

  // Inside Store::atomically the rows join that transaction, which commits or rolls back as a whole.
  const bool joined = sqlite3_get_autocommit(db) == 0;
  // BEGIN IMMEDIATE waits up to busy_timeout_ms for the write lock; a few attempts, then give up.
  bool began = joined;
  for (int attempt = 0; attempt < options.busy_attempts && !began && mayAttempt(options, attempt); ++attempt) {
    began = stepDone(statements_->begin.get());
    if (!began && !isBusy(db)) break;
  }
  // SQLite's own message says "not an error" when the owner's deadline, not SQLite, stopped the wait.
  const auto why = [&](const char* what) {
    return givenUp(options) ? std::string(what) + ": the owner's time bound passed (finalize does not wait longer)"
                            : sqliteError(db, what);
  };
  if (!began) {
    failure = why("begin");
  } else {
    bool ok = true;
    for (const ObservationRow& r : batch.observations)
      if (!(ok = insertObservation(statements_->observation.get(), r))) break;
    if (ok)
      for (const DecisionRow& r : batch.decisions)
        if (!(ok = insertDecision(statements_->decision.get(), r))) break;
    if (ok && joined) {
      losses_.committed_rows += batch.rows();
      return {true, {}};
    }
    if (ok) {
      // In WAL a commit rarely waits (checkpoint); retry briefly, then roll back.
      bool committed = false;
      for (int attempt = 0; attempt < options.busy_attempts && !committed && mayAttempt(options, attempt); ++attempt) {
        committed = stepDone(statements_->commit.get());
        if (!committed && !isBusy(db)) break;
        if (!committed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (committed) {
        losses_.committed_rows += batch.rows();
        return {true, {}};
      }
    }
    failure = why("write batch");
    if (!joined) stepDone(statements_->rollback.get());
  }

  losses_.dropped_batches += 1;
  losses_.dropped_rows += batch.rows();
  WriteResult result{false, {}};
  if (!reported_) {
    reported_ = true;
    result.report_once = "dynamiccl store " + store_.path() + ": dropped a batch of " +
                         std::to_string(batch.rows()) + " rows (" + failure +
                         "); further losses are counted, not reported";
  }
  return result;
}

}  // namespace dynamiccl::store
