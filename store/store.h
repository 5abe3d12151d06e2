// store: the SQLite database of runs, observed latencies and tuner decisions (one file per host).
// Public header of dynamiccl_store. Plain tables, readable with the sqlite3 shell (store/SCHEMA.md).
// No exception leaves this API; every failure is an Error value. One Store per thread.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "features/features.h"

namespace dynamiccl::store {

inline constexpr int kSchemaVersion = 4;  // PRAGMA user_version written by this build
// Readers open this version and later ones up to kSchemaVersion (what changed since reads the same).
inline constexpr int kOldestReadableSchema = 3;

struct StoreOptions {
  std::string path;             // empty: defaultDatabasePath()
  int64_t max_bytes = 0;        // 0: unlimited
  int busy_timeout_ms = 2000;   // per attempt: SQLite retries on locks for this long
  int busy_attempts = 3;        // then the batch is dropped (bounded wait, never infinite)
  bool read_only = false;       // readers: a missing file is an error, nothing is created or migrated
  // When it turns true (a caller's shutdown deadline passed), every wait for a lock ends at once: what
  // would wait fails, its rows counted as lost; what needs no wait still runs. Must outlive the Store.
  const std::atomic<bool>* give_up = nullptr;
  // The statfs(2) f_type of the file system holding a path, -1 unknown; nullptr: statfs itself.
  // Tests fake a network file system through it.
  int64_t (*filesystem_type)(const char* path) = nullptr;
};

// The name of a network or cluster file system ("NFS", "Lustre", ...) by its statfs f_type; nullptr
// for any other. On such a file system the store never runs WAL (store/SCHEMA.md says what instead).
const char* networkFileSystemName(int64_t statfs_type);

// $XDG_DATA_HOME/dynamiccl/<hostname>.db, else ~/.local/share/dynamiccl/<hostname>.db (the plugin and
// the tools put DYNAMICCL_DB, when set, in StoreOptions::path).
std::string defaultDatabasePath();
// Verdicts a job could not write into the store at `db` (it was locked) go to a side store of their own
// beside it, <db>.pending-verdicts-<pid>-<ns>, which the next job's init moves into it.
std::string pendingVerdictsPath(const std::string& db, long pid, long long ns);
// The side stores beside `db` that still hold verdicts to move.
std::vector<std::string> pendingVerdictsFiles(const std::string& db);
// DYNAMICCL_DB_MAX_MB's value as StoreOptions::max_bytes: the whole text a finite number of MB in
// (0, 1e9) of at least one byte (no int64 overflow); nullopt otherwise. The plugin and the tools read it alike.
std::optional<int64_t> maxBytesFromMegabytes(const char* text);

// Text names as stored (and as in the interchange CSV): "RING", "LL128", "default".
std::string algoStoredName(Algo a);
std::string protoStoredName(Proto p);

struct RunInfo {
  std::string host;
  std::string system;         // free-text hardware description (interchange CSV "system")
  std::string nccl_version;
  std::string fingerprint;    // topology fingerprint text
  std::string env_json;       // environment knobs as a JSON object
  std::string source;         // where the rows came from: "plugin", a log path, a CSV path
  std::string source_hash;    // content hash of that source (ingest skips what it already has)
  int64_t started_at_ns = 0;  // 0: now
};

struct CommInfo {
  int64_t run_id = 0;
  uint64_t comm_id = 0;  // NCCL commHash; 0 for logs
  int n_ranks = 0;
  int n_nodes = 0;
  int rank = -1;  // -1: unknown
};

enum class TimingSource : uint8_t { Gpu, Host };

struct ObservationRow {
  int64_t comm_row = 0;     // communicators.id from addCommunicator
  int64_t seq = 0;          // call number within the communicator
  std::string collective;   // "allreduce", ..., "alltoall", "sendrecv"
  uint64_t bytes = 0;
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  int n_channels = -1;      // -1: unknown
  int64_t chunk = -1;       // -1: unknown
  double gpu_us = NAN;      // NaN: unknown
  double cpu_us = NAN;
  TimingSource timing = TimingSource::Gpu;
  int64_t ts_ns = 0;
  bool in_place = false;
  double busbw_gbps = NAN;
  std::string note;         // free text (interchange source_note), may be empty
  // Profiler v7 (NCCL 2.31+): NULL (the defaults here) for older profilers and for logs.
  std::string kernel_variant;        // symmetric kernel variant; empty: NULL
  int is_sym_coll = -1;              // 1: symmetric-memory kernel (algo/proto "default"); -1: NULL
  std::optional<uint64_t> user_tag;  // ncclCollConfig_t userProfilerTag, 0 untagged
  int profiler_version = -1;         // ncclProfiler_vN of the plugin's row; -1: NULL
  std::string decision_join;         // plugin rows: joined|no_tuner|not_asked|lost; empty: NULL
};

struct DecisionRow {
  int64_t comm_row = 0;
  int64_t seq = 0;
  std::string collective;
  uint64_t bytes = 0;
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  int n_channels = -1;
  int64_t chunk = -1;
  std::string source;  // "table", "explore", "default", "nccl" (NCCL's own choice from a TUNING log)
  int64_t ts_ns = 0;
};

// What one Writer::write commits in one transaction.
struct Batch {
  std::vector<ObservationRow> observations;
  std::vector<DecisionRow> decisions;
  size_t rows() const { return observations.size() + decisions.size(); }
  void clear() {
    observations.clear();
    decisions.clear();
  }
};

struct LossCounters {
  uint64_t dropped_batches = 0;
  uint64_t dropped_rows = 0;
  uint64_t committed_rows = 0;
};

struct WriteResult {
  bool committed = false;
  std::string report_once;  // non-empty only for the first loss of this Writer: log it, then stay quiet
};

struct StoreStats {
  std::map<std::string, int64_t> rows_per_table;
  std::map<std::string, int64_t> observations_per_collective;
  std::map<std::string, int64_t> observations_per_system;
  int schema_version = 0;
  int64_t file_bytes = 0;
};

// One observation joined with its run and communicator, in the shape of the interchange CSV.
struct MeasurementRow {
  std::string system;
  std::string collective;
  int n_ranks = 0;
  int n_nodes = 0;
  uint64_t bytes = 0;
  std::string algo;   // stored name
  std::string proto;
  int n_channels = -1;
  int64_t chunk = -1;
  double time_us = NAN;  // gpu_us when known, else cpu_us
  double busbw_gbps = NAN;
  std::string note;
  bool in_place = false;
  bool is_sym_coll = false;      // a symmetric-memory kernel: not an algorithm/protocol choice
  std::string kernel_variant;
  uint64_t user_tag = 0;         // 0: untagged or unknown
};

// One observation of a plugin run with the decision for the same call (communicator and seq), if
// any, and what that run's environment forced: the rows of `dynamiccl db applied`.
struct AppliedRow {
  int n_ranks = 0, n_nodes = 0;
  std::string collective;
  uint64_t bytes = 0;
  std::string algo, proto;        // what ran (stored names)
  int n_channels = -1;
  bool is_sym_coll = false;
  int profiler_version = -1;      // -1 unknown
  std::string decision_join;      // "" unknown
  bool has_decision = false;
  std::string chosen_algo, chosen_proto, source;
  int chosen_channels = -1;
  std::string env_json;           // the run's NCCL_* knobs
  std::string nccl_version;       // the run's NCCL ("" unknown): whose channel semantics hold
  // Which call it was and what it took (`dynamiccl report`): the run, the communicator, NCCL's seqNumber.
  int64_t run_id = 0;
  uint64_t comm_id = 0;           // NCCL commHash
  int rank = -1;                  // -1 unknown
  int64_t seq = 0;
  int64_t chunk = -1, chosen_chunk = -1;  // -1 unknown / NCCL's
  double time_us = NAN;           // gpu_us when known, else cpu_us
};

// How one candidate rule fared against NCCL's default in a job (in-job verification). Latencies
// as natural logs of microseconds: what the verdict was computed from and what the next job resumes.
struct VerdictRow {
  std::string fingerprint;  // the communicator's hardware as clusterHardwareToJson; "" unknown
  std::string nccl_version;
  int n_ranks = 0, n_nodes = 0;
  std::string collective;   // "allreduce", ...
  uint64_t min_bytes = 0, max_bytes = 0;  // the size bucket it was tested on
  std::string algo, proto;  // the candidate (stored names)
  int n_channels = -1;      // -1: NCCL's count
  int64_t chunk = -1;       // -1: NCCL's chunk
  std::string base_algo, base_proto;  // NCCL's default it was compared with
  int64_t n = 0, base_n = 0;
  double mean_log_us = 0, var_log_us = 0, base_mean_log_us = 0, base_var_log_us = 0;
  double gain = NAN, gain_low = NAN, gain_high = NAN;  // speed-up over the default minus 1; the decision rule's one-sided 95% bounds
  std::string state;        // "testing", "promoted", "dropped"
  int64_t ts_ns = 0;        // 0: now
  // Read back only: what in the stored row this build never writes (text in a number column, a
  // negative byte count); empty for a row as written. Such a row's values are not to be trusted.
  std::string problem;
};

// What Store::mergeFrom copied, and what it found already there.
struct MergeCounts {
  int64_t runs = 0, runs_present = 0;  // a run present is skipped with all its rows
  int64_t observations = 0, decisions = 0;
  int64_t verdicts = 0, verdicts_present = 0;
};

class Writer;

class Store {
 public:
  // Creates the file (0600) and its directories (0700) if needed, migrates an older schema,
  // refuses (and leaves untouched) a database whose schema is newer than kSchemaVersion.
  // With options.read_only: opens an existing store as it is (a schema outside
  // kOldestReadableSchema..kSchemaVersion is refused).
  static Expected<std::unique_ptr<Store>> open(const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const;
  // One line for the opener's log when the file system changed how the store runs (on a network
  // file system: a rollback journal, not WAL); empty otherwise.
  const std::string& notice() const;
  Expected<int64_t> addRun(const RunInfo& run);
  Expected<int64_t> addCommunicator(const CommInfo& comm);
  // Whether a run with this source_hash exists (ingest skips content it already has).
  Expected<bool> hasSourceHash(const std::string& source_hash);
  // All or nothing: what body writes through this Store (addRun, addCommunicator, Writer::write) is
  // committed in one transaction when it returns Ok, and rolled back when it fails, throws or the
  // process dies before the commit.
  Status atomically(const std::function<Status()>& body);
  Expected<StoreStats> stats();
  // Appends verdicts in one transaction.
  Status addVerdicts(const std::vector<VerdictRow>& rows);
  // The latest verdict per (fingerprint, shape, collective, bucket, candidate); empty fingerprint and
  // n_ranks 0 select every value.
  Expected<std::vector<VerdictRow>> latestVerdicts(const std::string& fingerprint = "", int n_ranks = 0,
                                                   int n_nodes = 0);
  // Copies another store's runs (with their communicators, observations and decisions) and verdicts
  // into this one, in one transaction; the other is read as it is (read-only, one snapshot).
  // Idempotent: a run already here (the same row, or an ingest of the same source hash) and a verdict
  // row already here are skipped, so gathering a file twice adds nothing.
  Expected<MergeCounts> mergeFrom(const std::string& other_path);
  // Streams observations in insertion order; with in_place false, out-of-place rows only.
  Status forEachMeasurement(bool include_in_place, const std::function<void(const MeasurementRow&)>& fn);
  // Streams every observation of plugin runs joined with its decision, in insertion order.
  Status forEachAppliedRow(const std::function<void(const AppliedRow&)>& fn);

  struct Impl;

 private:
  friend class Writer;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// At most one process records into a store file (the plugin's ranks of one node share it): a
// non-blocking flock on `<db>.writer`, held while this object lives and dropped by the kernel when the
// holder dies. Never waits; for the open path only (a syscall or two).
class RecorderLock {
 public:
  // The lock; nullptr when another process holds it; an error when the lock file cannot be used.
  static Expected<std::unique_ptr<RecorderLock>> tryTake(const std::string& dbPath);
  // "host:pid" of the process that last took it ("" unknown), for the line the others log.
  static std::string holder(const std::string& dbPath);
  ~RecorderLock();
  RecorderLock(const RecorderLock&) = delete;
  RecorderLock& operator=(const RecorderLock&) = delete;

 private:
  explicit RecorderLock(int fd);
  int fd_;
};

// Commits a Batch in one transaction with prepared statements (inside Store::atomically, in that one). A batch that cannot be written
// (locked past the bounded wait, database full, disk full) is dropped and counted; the caller goes on.
// Intended use by the profiler worker: fill a Batch from the queue, write() it every ~10k rows or
// ~100 ms, log WriteResult::report_once when non-empty, read losses() at shutdown.
class Writer {
 public:
  static Expected<std::unique_ptr<Writer>> create(Store& store);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  WriteResult write(const Batch& batch);
  LossCounters losses() const { return losses_; }

  struct Statements;

 private:
  Writer(Store& store, std::unique_ptr<Statements> statements);
  Store& store_;
  std::unique_ptr<Statements> statements_;
  LossCounters losses_;
  bool reported_ = false;
};

}  // namespace dynamiccl::store
