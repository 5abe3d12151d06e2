// Read-side queries: counts for `dynamiccl db stats` and the measurement stream for CSV export.
#include <sys/stat.h>

#include <array>

#include "store/store_impl.h"

namespace dynamiccl::store {
namespace {

// Fills name -> count from a two-column query.
Status countInto(sqlite3* db, const char* sql, std::map<std::string, int64_t>& out) {
  Statement st(db, sql);
  if (!st.ok()) return makeError(sqliteError(db, "prepare stats"));
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) out[columnText(st.get(), 0)] = sqlite3_column_int64(st.get(), 1);
  if (rc != SQLITE_DONE) return makeError(sqliteError(db, "stats"));
  return Ok{};
}

}  // namespace

Expected<StoreStats> Store::stats() try {
  sqlite3* db = impl_->db;
  StoreStats stats;
  {
    Statement version(db, "PRAGMA user_version");
    if (!version.ok() || sqlite3_step(version.get()) != SQLITE_ROW) return makeError(sqliteError(db, "user_version"));
    stats.schema_version = sqlite3_column_int(version.get(), 0);
  }
  for (const char* table : {"runs", "communicators", "observations", "decisions", "verdicts"}) {
    const std::string sql = std::string("SELECT '") + table + "', count(*) FROM " + table;
    if (auto s = countInto(db, sql.c_str(), stats.rows_per_table); !s) return makeError(s.error());
  }
  if (auto s = countInto(db, "SELECT collective, count(*) FROM observations GROUP BY collective",
                         stats.observations_per_collective);
      !s)
    return makeError(s.error());
  if (auto s = countInto(db,
                         "SELECT r.system, count(*) FROM observations o JOIN communicators c ON o.comm = c.id "
                         "JOIN runs r ON c.run_id = r.id GROUP BY r.system",
                         stats.observations_per_system);
      !s)
    return makeError(s.error());
  struct stat st {};
  if (::stat(impl_->path.c_str(), &st) == 0) stats.file_bytes = st.st_size;
  return stats;
} catch (const std::exception& e) {
  return makeError(e.what());
}

Status Store::forEachMeasurement(bool include_in_place, const std::function<void(const MeasurementRow&)>& fn) try {
  sqlite3* db = impl_->db;
  Statement st(db,
               "SELECT r.system, o.collective, c.n_ranks, c.n_nodes, o.bytes, o.algo, o.proto, o.n_channels, "
               "o.chunk, coalesce(o.gpu_us, o.cpu_us), o.busbw_gbps, o.note, o.in_place, "
               "coalesce(o.is_sym_coll, 0), o.kernel_variant, coalesce(o.user_tag, 0) "
               "FROM observations o JOIN communicators c ON o.comm = c.id JOIN runs r ON c.run_id = r.id "
               "WHERE ?1 OR o.in_place = 0 ORDER BY o.id");
  if (!st.ok()) return makeError(sqliteError(db, "prepare export"));
  sqlite3_bind_int(st.get(), 1, include_in_place ? 1 : 0);
  MeasurementRow row;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = st.get();
    row.system = columnText(s, 0);
    row.collective = columnText(s, 1);
    row.n_ranks = sqlite3_column_int(s, 2);
    row.n_nodes = sqlite3_column_int(s, 3);
    row.bytes = static_cast<uint64_t>(sqlite3_column_int64(s, 4));
    row.algo = columnText(s, 5);
    row.proto = columnText(s, 6);
    row.n_channels = static_cast<int>(columnIntOr(s, 7, -1));
    row.chunk = columnIntOr(s, 8, -1);
    row.time_us = columnReal(s, 9);
    row.busbw_gbps = columnReal(s, 10);
    row.note = columnText(s, 11);
    row.in_place = sqlite3_column_int(s, 12) != 0;
    row.is_sym_coll = sqlite3_column_int(s, 13) != 0;
    row.kernel_variant = columnText(s, 14);
    row.user_tag = static_cast<uint64_t>(sqlite3_column_int64(s, 15));
    fn(row);
  }
  if (rc != SQLITE_DONE) return makeError(sqliteError(db, "export"));
  return Ok{};
} catch (const std::exception& e) {
  return makeError(e.what());
}

Status Store::forEachAppliedRow(const std::function<void(const AppliedRow&)>& fn) try {
  sqlite3* db = impl_->db;
  // At most one decision per call: the first row of the same communicator, seq and collective.
  Statement st(db,
               "SELECT c.n_ranks, c.n_nodes, o.collective, o.bytes, o.algo, o.proto, o.n_channels, "
               "coalesce(o.is_sym_coll, 0), o.profiler_version, o.decision_join, d.id, d.algo, d.proto, d.n_channels, "
               "d.source, r.env_json, r.nccl_version, r.id, c.comm_id, c.rank, o.seq, o.chunk, d.chunk, "
               "coalesce(o.gpu_us, o.cpu_us) "
               "FROM observations o JOIN communicators c ON o.comm = c.id JOIN runs r ON c.run_id = r.id "
               "LEFT JOIN decisions d ON d.id = (SELECT min(x.id) FROM decisions x WHERE x.comm = o.comm AND "
               "x.seq = o.seq AND x.collective = o.collective) "
               "WHERE r.source = 'plugin' ORDER BY o.id");
  if (!st.ok()) return makeError(sqliteError(db, "prepare applied"));
  AppliedRow row;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = st.get();
    row.n_ranks = sqlite3_column_int(s, 0);
    row.n_nodes = sqlite3_column_int(s, 1);
    row.collective = columnText(s, 2);
    row.bytes = static_cast<uint64_t>(sqlite3_column_int64(s, 3));
    row.algo = columnText(s, 4);
    row.proto = columnText(s, 5);
    row.n_channels = static_cast<int>(columnIntOr(s, 6, -1));
    row.is_sym_coll = sqlite3_column_int(s, 7) != 0;
    row.profiler_version = static_cast<int>(columnIntOr(s, 8, -1));
    row.decision_join = columnText(s, 9);
    row.has_decision = sqlite3_column_type(s, 10) != SQLITE_NULL;
    row.chosen_algo = columnText(s, 11);
    row.chosen_proto = columnText(s, 12);
    row.chosen_channels = static_cast<int>(columnIntOr(s, 13, -1));
    row.source = columnText(s, 14);
    row.env_json = columnText(s, 15);
    row.nccl_version = columnText(s, 16);
    row.run_id = sqlite3_column_int64(s, 17);
    row.comm_id = static_cast<uint64_t>(sqlite3_column_int64(s, 18));
    row.rank = static_cast<int>(columnIntOr(s, 19, -1));
    row.seq = sqlite3_column_int64(s, 20);
    row.chunk = columnIntOr(s, 21, -1);
    row.chosen_chunk = columnIntOr(s, 22, -1);
    row.time_us = sqlite3_column_type(s, 23) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 23);
    fn(row);
  }
  if (rc != SQLITE_DONE) return makeError(sqliteError(db, "applied"));
  return Ok{};
} catch (const std::exception& e) {
  return makeError(e.what());
}

}  // namespace dynamiccl::store
