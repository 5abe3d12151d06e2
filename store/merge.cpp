// Gathering node stores into one (`dynamiccl db merge`): another store's runs, with their
// communicators, observations and decisions, and its verdicts, copied value for value.
#include <sys/stat.h>

#include <functional>
#include <unordered_map>

#include "store/store_impl.h"

namespace dynamiccl::store {
namespace {

// The columns copied, id excluded (each store numbers its own rows). The first one of communicators,
// observations and decisions is the row it belongs to, renumbered on the way.
constexpr const char* kRunColumns = "host, system, nccl_version, fingerprint, env_json, source, source_hash, started_at_ns";
constexpr const char* kCommColumns = "run_id, comm_id, n_ranks, n_nodes, rank";
constexpr const char* kObservationColumns =
    "comm, seq, collective, bytes, algo, proto, n_channels, chunk, gpu_us, cpu_us, timing_source, ts_ns, in_place, "
    "busbw_gbps, note, kernel_variant, is_sym_coll, user_tag, profiler_version, decision_join";
constexpr const char* kDecisionColumns = "comm, seq, collective, bytes, algo, proto, n_channels, chunk, source, ts_ns";
constexpr const char* kVerdictColumns =
    "fingerprint, nccl_version, n_ranks, n_nodes, collective, min_bytes, max_bytes, algo, proto, n_channels, chunk, "
    "base_algo, base_proto, n, mean_log_us, var_log_us, base_n, base_mean_log_us, base_var_log_us, gain, gain_low, "
    "gain_high, state, ts_ns";

int columnCount(const char* columns) {
  int n = 1;
  for (const char* c = columns; *c; ++c) n += *c == ',';
  return n;
}

std::string placeholders(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += i ? ",?" : "?";
  return out;
}

// "a IS ?1 AND b IS ?2 ...": equal values, NULL equal to NULL.
std::string sameRow(const char* columns) {
  std::string out, name;
  int i = 0;
  auto flush = [&] {
    out += (i ? " AND " : "") + name + " IS ?" + std::to_string(i + 1);
    ++i;
    name.clear();
  };
  for (const char* c = columns; *c; ++c) {
    if (*c == ',') flush();
    else if (*c != ' ') name += *c;
  }
  flush();
  return out;
}

// Binds the select's columns [from, from + n) as the statement's parameters 1..n, values as they are.
void bindRow(sqlite3_stmt* to, sqlite3_stmt* from, int first, int n) {
  sqlite3_reset(to);
  for (int i = 0; i < n; ++i) sqlite3_bind_value(to, i + 1, sqlite3_column_value(from, first + i));
}

using IdMap = std::unordered_map<int64_t, int64_t>;

class Merger {
 public:
  Merger(sqlite3* out, sqlite3* in) : out_(out), in_(in) {}

  Status runs(MergeCounts& counts) {
    const int n = columnCount(kRunColumns);
    // A run is already here when a row that was here before this merge matches it value for value,
    // or has its (non-empty) source hash: the same ingested file gathered from two nodes.
    Statement before(out_, "SELECT coalesce(max(id), 0) FROM runs");
    if (!before.ok() || sqlite3_step(before.get()) != SQLITE_ROW) return makeError(sqliteError(out_, "merge: runs"));
    const std::string same = std::string("SELECT 1 FROM runs WHERE id <= ?") + std::to_string(n + 1) +
                             " AND ((" + sameRow(kRunColumns) + ") OR (?7 <> '' AND source_hash = ?7)) LIMIT 1";
    Statement present(out_, same.c_str());
    Statement select(in_, std::string("SELECT id, ").append(kRunColumns).append(" FROM runs ORDER BY id").c_str());
    if (present.ok()) sqlite3_bind_int64(present.get(), n + 1, sqlite3_column_int64(before.get(), 0));
    return copyAbsent("runs", kRunColumns, select, present, 1, counts.runs, counts.runs_present, [&](sqlite3_stmt* row) {
      runIds_[sqlite3_column_int64(row, 0)] = sqlite3_last_insert_rowid(out_);
    });
  }

  // Rows of table whose first column names a row of `parents` (old id -> new id), renumbered; their
  // own old id -> new id in `ids` when given.
  Status children(const char* table, const char* columns, const IdMap& parents, IdMap* ids, int64_t& copied) {
    const int n = columnCount(columns);
    Statement insert(out_, (std::string("INSERT INTO ") + table + "(" + columns + ") VALUES (" + placeholders(n) + ")").c_str());
    Statement select(in_, (std::string("SELECT id, ") + columns + " FROM " + table + " ORDER BY id").c_str());
    if (!insert.ok() || !select.ok()) return makeError(sqliteError(out_, "merge: prepare copy"));
    int rc;
    while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
      const auto parent = parents.find(sqlite3_column_int64(select.get(), 1));
      if (parent == parents.end()) continue;  // its run was here already
      bindRow(insert.get(), select.get(), 1, n);
      sqlite3_bind_int64(insert.get(), 1, parent->second);
      if (sqlite3_step(insert.get()) != SQLITE_DONE) return makeError(sqliteError(out_, "merge: insert"));
      if (ids) (*ids)[sqlite3_column_int64(select.get(), 0)] = sqlite3_last_insert_rowid(out_);
      ++copied;
    }
    if (rc != SQLITE_DONE) return makeError(sqliteError(in_, "merge: read"));
    return Ok{};
  }

  Status verdicts(MergeCounts& counts) {
    Statement present(out_, std::string("SELECT 1 FROM verdicts WHERE ").append(sameRow(kVerdictColumns)).append(" LIMIT 1").c_str());
    Statement select(in_, std::string("SELECT ").append(kVerdictColumns).append(" FROM verdicts ORDER BY id").c_str());
    return copyAbsent("verdicts", kVerdictColumns, select, present, 0, counts.verdicts, counts.verdicts_present,
                      [](sqlite3_stmt*) {});
  }

  // Each row of select (its columns from `first` on) that `present` does not find is inserted into
  // table; counted either way, and `inserted` told of each copy.
  Status copyAbsent(const char* table, const char* columns, Statement& select, Statement& present, int first,
                    int64_t& copied, int64_t& found, const std::function<void(sqlite3_stmt*)>& inserted) {
    const int n = columnCount(columns);
    Statement insert(out_, (std::string("INSERT INTO ") + table + "(" + columns + ") VALUES (" + placeholders(n) + ")").c_str());
    if (!present.ok() || !insert.ok() || !select.ok()) return makeError(sqliteError(out_, "merge: prepare"));
    int rc;
    while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
      bindRow(present.get(), select.get(), first, n);
      const int here = sqlite3_step(present.get());
      if (here == SQLITE_ROW) {
        ++found;
        continue;
      }
      if (here != SQLITE_DONE) return makeError(sqliteError(out_, "merge: look up"));
      bindRow(insert.get(), select.get(), first, n);
      if (sqlite3_step(insert.get()) != SQLITE_DONE) return makeError(sqliteError(out_, "merge: insert"));
      inserted(select.get());
      ++copied;
    }
    if (rc != SQLITE_DONE) return makeError(sqliteError(in_, "merge: read"));
    return Ok{};
  }

  Status all(MergeCounts& counts) {
    int64_t communicators = 0;
    if (auto s = runs(counts); !s) return s;
    if (auto s = children("communicators", kCommColumns, runIds_, &commIds_, communicators); !s) return s;
    if (auto s = children("observations", kObservationColumns, commIds_, nullptr, counts.observations); !s) return s;
    if (auto s = children("decisions", kDecisionColumns, commIds_, nullptr, counts.decisions); !s) return s;
    return verdicts(counts);
  }

 private:
  sqlite3* out_;
  sqlite3* in_;
  IdMap runIds_, commIds_;
};

bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

Expected<MergeCounts> Store::mergeFrom(const std::string& other_path) try {
  if (sameFile(other_path, impl_->path)) return makeError(other_path + " is the store merged into");
  auto other = Store::open({.path = other_path, .read_only = true});
  if (!other) return makeError(other.error());
  sqlite3* in = (*other)->impl_->db;
  // One snapshot of the input, even while a job still writes it.
  if (auto s = execute(in, "BEGIN"); !s) return makeError(other_path + ": " + s.error());
  MergeCounts counts;
  Status merged = atomically([&]() -> Status {
    counts = {};
    return Merger(impl_->db, in).all(counts);
  });
  execute(in, "ROLLBACK");
  if (!merged) return makeError(other_path + ": " + merged.error());
  return counts;
} catch (const std::exception& e) {
  return makeError(std::string("merge: ") + e.what());
}

}  // namespace dynamiccl::store
