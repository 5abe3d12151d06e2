// In-job verification's verdicts: appended by the plugin's leader at finalize, read back by the next
// job (warm start) and by `dynamiccl export --from-store`.
#include <chrono>
#include <algorithm>
#include <climits>
#include <cmath>

#include "store/store_impl.h"

namespace dynamiccl::store {
namespace {

void bindReal(sqlite3_stmt* st, int i, double v) {
  if (std::isfinite(v)) sqlite3_bind_double(st, i, v);
  else sqlite3_bind_null(st, i);
}

constexpr const char* kColumns =
    "fingerprint, nccl_version, n_ranks, n_nodes, collective, min_bytes, max_bytes, algo, proto, n_channels, chunk, "
    "base_algo, base_proto, n, mean_log_us, var_log_us, base_n, base_mean_log_us, base_var_log_us, gain, gain_low, "
    "gain_high, state, ts_ns";

// Column indexes in kColumns of the numbers a reader relies on, and which of them may be NULL.
struct NumberColumn {
  int index;
  const char* name;
  bool integer, nullable;
};
constexpr NumberColumn kNumberColumns[] = {
    {2, "n_ranks", true, false},      {3, "n_nodes", true, false},        {5, "min_bytes", true, false},
    {6, "max_bytes", true, false},    {9, "n_channels", true, true},      {10, "chunk", true, true},
    {13, "n", true, false},           {14, "mean_log_us", false, false},  {15, "var_log_us", false, false},
    {16, "base_n", true, false},      {17, "base_mean_log_us", false, false}, {18, "base_var_log_us", false, false},
    {19, "gain", false, true},        {20, "gain_low", false, true},      {21, "gain_high", false, true},
    {23, "ts_ns", true, false}};

// SQLite keeps whatever a hand edit or another tool stored; sqlite3_column_int reads text as 0.
std::string storedValueProblem(sqlite3_stmt* s) {
  for (const NumberColumn& c : kNumberColumns) {
    const int type = sqlite3_column_type(s, c.index);
    if (type == SQLITE_NULL && c.nullable) continue;
    if (type == SQLITE_NULL) return std::string(c.name) + " is NULL";
    if (type != SQLITE_INTEGER && (c.integer || type != SQLITE_FLOAT))
      return std::string(c.name) + " holds " + (type == SQLITE_TEXT ? "text" : type == SQLITE_BLOB ? "a blob" : "a real") +
             ", not " + (c.integer ? "an integer" : "a number");
  }
  for (const int byteColumn : {5, 6})
    if (sqlite3_column_int64(s, byteColumn) < 0)
      return std::string(byteColumn == 5 ? "min_bytes" : "max_bytes") + " is negative";
  return {};
}

}  // namespace

Status Store::addVerdicts(const std::vector<VerdictRow>& rows) {
  if (rows.empty()) return Ok{};
  return atomically([&]() -> Status {
    sqlite3* db = impl_->db;
    const std::string sql = std::string("INSERT INTO verdicts(") + kColumns +
                            ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    Statement st(db, sql.c_str());
    if (!st.ok()) return makeError(sqliteError(db, "prepare verdicts"));
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
    for (const VerdictRow& r : rows) {
      sqlite3_stmt* s = st.get();
      sqlite3_reset(s);
      bindText(s, 1, r.fingerprint);
      bindText(s, 2, r.nccl_version);
      sqlite3_bind_int(s, 3, r.n_ranks);
      sqlite3_bind_int(s, 4, r.n_nodes);
      bindText(s, 5, r.collective);
      sqlite3_bind_int64(s, 6, static_cast<int64_t>(r.min_bytes));
      sqlite3_bind_int64(s, 7, static_cast<int64_t>(std::min<uint64_t>(r.max_bytes, INT64_MAX)));
      bindText(s, 8, r.algo);
      bindText(s, 9, r.proto);
      if (r.n_channels >= 0) sqlite3_bind_int(s, 10, r.n_channels);
      else sqlite3_bind_null(s, 10);
      if (r.chunk >= 0) sqlite3_bind_int64(s, 11, r.chunk);
      else sqlite3_bind_null(s, 11);
      bindText(s, 12, r.base_algo);
      bindText(s, 13, r.base_proto);
      sqlite3_bind_int64(s, 14, r.n);
      sqlite3_bind_double(s, 15, std::isfinite(r.mean_log_us) ? r.mean_log_us : 0);
      sqlite3_bind_double(s, 16, std::isfinite(r.var_log_us) ? r.var_log_us : 0);
      sqlite3_bind_int64(s, 17, r.base_n);
      sqlite3_bind_double(s, 18, std::isfinite(r.base_mean_log_us) ? r.base_mean_log_us : 0);
      sqlite3_bind_double(s, 19, std::isfinite(r.base_var_log_us) ? r.base_var_log_us : 0);
      bindReal(s, 20, r.gain);
      bindReal(s, 21, r.gain_low);
      bindReal(s, 22, r.gain_high);
      bindText(s, 23, r.state);
      sqlite3_bind_int64(s, 24, r.ts_ns ? r.ts_ns : now_ns);
      if (sqlite3_step(s) != SQLITE_DONE) return makeError(sqliteError(db, "insert verdict"));
    }
    return Ok{};
  });
}

Expected<std::vector<VerdictRow>> Store::latestVerdicts(const std::string& fingerprint, int n_ranks, int n_nodes) try {
  sqlite3* db = impl_->db;
  const std::string sql =
      std::string("SELECT ") + kColumns +
      " FROM verdicts v WHERE id = (SELECT max(id) FROM verdicts w WHERE w.fingerprint = v.fingerprint AND "
      "w.n_ranks = v.n_ranks AND w.n_nodes = v.n_nodes AND w.collective = v.collective AND w.min_bytes = v.min_bytes "
      "AND w.algo = v.algo AND w.proto = v.proto AND coalesce(w.n_channels, -1) = coalesce(v.n_channels, -1)) AND (?1 = '' OR fingerprint = ?1) AND (?2 = 0 OR "
      "(n_ranks = ?2 AND n_nodes = ?3)) ORDER BY fingerprint, n_ranks, n_nodes, collective, min_bytes, id";
  Statement st(db, sql.c_str());
  if (!st.ok()) return makeError(sqliteError(db, "prepare verdicts query"));
  bindText(st.get(), 1, fingerprint);
  sqlite3_bind_int(st.get(), 2, n_ranks);
  sqlite3_bind_int(st.get(), 3, n_nodes);
  std::vector<VerdictRow> out;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = st.get();
    VerdictRow r;
    r.fingerprint = columnText(s, 0);
    r.nccl_version = columnText(s, 1);
    r.n_ranks = sqlite3_column_int(s, 2);
    r.n_nodes = sqlite3_column_int(s, 3);
    r.collective = columnText(s, 4);
    r.min_bytes = static_cast<uint64_t>(sqlite3_column_int64(s, 5));
    r.max_bytes = static_cast<uint64_t>(sqlite3_column_int64(s, 6));
    r.algo = columnText(s, 7);
    r.proto = columnText(s, 8);
    r.n_channels = static_cast<int>(columnIntOr(s, 9, -1));
    r.chunk = columnIntOr(s, 10, -1);
    r.base_algo = columnText(s, 11);
    r.base_proto = columnText(s, 12);
    r.n = sqlite3_column_int64(s, 13);
    r.mean_log_us = sqlite3_column_double(s, 14);
    r.var_log_us = sqlite3_column_double(s, 15);
    r.base_n = sqlite3_column_int64(s, 16);
    r.base_mean_log_us = sqlite3_column_double(s, 17);
    r.base_var_log_us = sqlite3_column_double(s, 18);
    r.gain = columnReal(s, 19);
    r.gain_low = columnReal(s, 20);
    r.gain_high = columnReal(s, 21);
    r.state = columnText(s, 22);
    r.ts_ns = sqlite3_column_int64(s, 23);
    r.problem = storedValueProblem(s);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return makeError(sqliteError(db, "verdicts query"));
  return out;
} catch (const std::exception& e) {
  return makeError(e.what());
}

}  // namespace dynamiccl::store
