// Store: schema, batched writes, and the faults it must survive (kill -9, 8 writers, full, newer schema).
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "store/store.h"

namespace dynamiccl::store {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dynamiccl_store_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One scalar from an SQL query, through the plain sqlite3 API (what any reader would use).
int64_t queryInt(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt* st = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

std::string queryText(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  std::string v;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(h);
  return v;
}

RunInfo runOnHost(std::string host) {
  RunInfo run;
  run.host = std::move(host);
  run.source = "test";
  return run;
}

Batch makeBatch(int64_t comm, int64_t batchIndex, int rows) {
  Batch b;
  for (int i = 0; i < rows; ++i) {
    ObservationRow o;
    o.comm_row = comm;
    o.seq = batchIndex * 100000 + i;  // batch identity survives in the row
    o.collective = "allreduce";
    o.bytes = uint64_t{1} << (i % 30);
    o.algo = Algo::Ring;
    o.proto = Proto::Simple;
    o.n_channels = 8;
    o.gpu_us = 10.0 + i;
    o.timing = TimingSource::Gpu;
    b.observations.push_back(o);
  }
  return b;
}

// A store with one run and one communicator; returns the communicator row.
int64_t setUpComm(Store& store) {
  auto run = store.addRun(runOnHost("h"));
  EXPECT_TRUE(run.ok()) << run.error();
  auto comm = store.addCommunicator({*run, 42, 8, 1, 0});
  EXPECT_TRUE(comm.ok()) << comm.error();
  return *comm;
}

TEST(Store, CreatesPrivateFileWithVersionedSchemaInWalMode) {
  TempDir dir;
  const std::string path = dir.path + "/a/b/x.db";
  auto store = Store::open({.path = path});
  ASSERT_TRUE(store.ok()) << store.error();
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir.path + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(queryInt(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(queryText(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM sqlite_master WHERE name = 'observations_training'"), 1);
}

int64_t nfsType(const char*) { return 0x6969; }
int64_t ext4Type(const char*) { return 0xEF53; }

// SQLite documents WAL as not working across hosts: on a network file system the store runs a
// rollback journal, says so in one line, and still writes; on a local one WAL stays.
TEST(Store, OnANetworkFileSystemTheStoreRefusesWalAndSaysSo) {
  TempDir dir;
  const std::string local = dir.path + "/local.db", nfs = dir.path + "/nfs.db";
  {
    auto store = Store::open({.path = local, .filesystem_type = ext4Type});
    ASSERT_TRUE(store.ok()) << store.error();
    EXPECT_EQ((*store)->notice(), "");
    EXPECT_EQ(queryText(local, "PRAGMA journal_mode"), "wal");
  }
  auto store = Store::open({.path = nfs, .filesystem_type = nfsType});
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_NE(queryText(nfs, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(queryText(nfs, "PRAGMA journal_mode"), "delete");
  const std::string line = (*store)->notice();
  EXPECT_NE(line.find(nfs), std::string::npos) << line;
  EXPECT_NE(line.find("NFS"), std::string::npos) << line;
  EXPECT_NE(line.find("no WAL"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
  auto writer = Writer::create(**store);
  ASSERT_TRUE(writer.ok()) << writer.error();
  EXPECT_TRUE((*writer)->write(makeBatch(setUpComm(**store), 0, 10)).committed);
  EXPECT_EQ(queryInt(nfs, "SELECT count(*) FROM observations"), 10);

  // A store made in WAL (on a local disk, then moved) leaves WAL when opened on the network one.
  store->reset();
  ASSERT_EQ(rename(local.c_str(), nfs.c_str()), 0);
  ASSERT_EQ(queryText(nfs, "PRAGMA journal_mode"), "wal");
  auto moved = Store::open({.path = nfs, .filesystem_type = nfsType});
  ASSERT_TRUE(moved.ok()) << moved.error();
  EXPECT_EQ(queryText(nfs, "PRAGMA journal_mode"), "delete");
  EXPECT_FALSE((*moved)->notice().empty());
}

TEST(Store, NetworkFileSystemsAreKnownByTheirStatfsType) {
  for (const int64_t type : {0x6969L, 0x0BD00BD0L, 0x47504653L, 0x19830326L, 0xFF534D42L, 0xFE534D42L, 0x517BL,
                             0x00C36400L, 0x65735546L, 0x01021997L})
    EXPECT_NE(networkFileSystemName(type), nullptr) << std::hex << type;
  for (const int64_t type : {0xEF53L, 0x58465342L, 0x01021994L, 0x9123683EL, 0x794C7630L})  // ext4 xfs tmpfs btrfs overlay
    EXPECT_EQ(networkFileSystemName(type), nullptr) << std::hex << type;
  EXPECT_STREQ(networkFileSystemName(0x0BD00BD0), "Lustre");
}

// One recorder per store file: a second taker is told another holds it (never waits), and who; the
// lock passes on once its holder is gone, even killed.
TEST(RecorderLock, OneProcessRecordsTheOthersAreToldWhoDoes) {
  TempDir dir;
  const std::string path = dir.path + "/x.db";
  {
    auto first = RecorderLock::tryTake(path);
    ASSERT_TRUE(first.ok()) << first.error();
    ASSERT_NE(*first, nullptr);
    auto second = RecorderLock::tryTake(path);  // another open of the file: flock sees two holders
    ASSERT_TRUE(second.ok()) << second.error();
    EXPECT_EQ(*second, nullptr);
    EXPECT_EQ(RecorderLock::holder(path).substr(RecorderLock::holder(path).find(':') + 1), std::to_string(getpid()));
  }
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto held = RecorderLock::tryTake(path);
    const char c = held.ok() && *held ? '1' : '0';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = '?';
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  const auto started = std::chrono::steady_clock::now();
  auto refused = RecorderLock::tryTake(path);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(100)) << "it must not wait";
  ASSERT_TRUE(refused.ok()) << refused.error();
  EXPECT_EQ(*refused, nullptr);
  EXPECT_TRUE(RecorderLock::holder(path).ends_with(":" + std::to_string(child))) << RecorderLock::holder(path);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  auto after = RecorderLock::tryTake(path);
  ASSERT_TRUE(after.ok()) << after.error();
  EXPECT_NE(*after, nullptr);
}

VerdictRow verdictOf(const std::string& collective, int64_t ts) {
  VerdictRow v;
  v.fingerprint = "{}";
  v.n_ranks = 8;
  v.n_nodes = 1;
  v.collective = collective;
  v.max_bytes = 4096;
  v.algo = "RING";
  v.proto = "LL";
  v.base_algo = "TREE";
  v.base_proto = "SIMPLE";
  v.n = v.base_n = 10;
  v.gain = 0.1;
  v.state = "promoted";
  v.ts_ns = ts;
  return v;
}

// A node's store: one plugin run (observations, decisions) and one verdict.
void writeNodeStore(const std::string& path, const std::string& host, int64_t startedAt) {
  auto store = Store::open({.path = path});
  ASSERT_TRUE(store.ok()) << store.error();
  RunInfo run = runOnHost(host);
  run.started_at_ns = startedAt;
  auto id = (*store)->addRun(run);
  ASSERT_TRUE(id.ok());
  auto comm = (*store)->addCommunicator({*id, 7, 8, 2, 0});
  ASSERT_TRUE(comm.ok());
  auto writer = Writer::create(**store);
  ASSERT_TRUE(writer.ok());
  Batch b = makeBatch(*comm, 0, 20);
  b.decisions.push_back({*comm, 3, "allreduce", 8, Algo::Ring, Proto::LL, -1, -1, "table", 1});
  ASSERT_TRUE((*writer)->write(b).committed);
  ASSERT_TRUE((*store)->addVerdicts({verdictOf(host, startedAt)}).ok());
}

// Node stores gathered into one: every run with its rows renumbered, every verdict; gathering the
// same file again (or a node store already gathered) adds nothing.
TEST(Store, MergeGathersNodeStoresOnceEach) {
  TempDir dir;
  const std::string a = dir.path + "/a.db", b = dir.path + "/b.db", out = dir.path + "/all.db";
  writeNodeStore(a, "node-a", 100);
  writeNodeStore(b, "node-b", 200);
  auto store = Store::open({.path = out});
  ASSERT_TRUE(store.ok()) << store.error();
  auto fromA = (*store)->mergeFrom(a);
  ASSERT_TRUE(fromA.ok()) << fromA.error();
  EXPECT_EQ(fromA->runs, 1);
  EXPECT_EQ(fromA->observations, 20);
  EXPECT_EQ(fromA->decisions, 1);
  EXPECT_EQ(fromA->verdicts, 1);
  auto fromB = (*store)->mergeFrom(b);
  ASSERT_TRUE(fromB.ok()) << fromB.error();
  auto again = (*store)->mergeFrom(a);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->runs, 0);
  EXPECT_EQ(again->runs_present, 1);
  EXPECT_EQ(again->observations + again->decisions + again->verdicts, 0);
  EXPECT_EQ(again->verdicts_present, 1);

  EXPECT_EQ(queryInt(out, "SELECT count(*) FROM runs"), 2);
  EXPECT_EQ(queryInt(out, "SELECT count(*) FROM observations"), 40);
  EXPECT_EQ(queryInt(out, "SELECT count(*) FROM decisions"), 2);
  EXPECT_EQ(queryInt(out, "SELECT count(*) FROM verdicts"), 2);
  // Each row still belongs to its own node's run.
  EXPECT_EQ(queryInt(out, "SELECT count(*) FROM observations o JOIN communicators c ON o.comm = c.id "
                          "JOIN runs r ON c.run_id = r.id WHERE r.host = 'node-b' AND c.n_nodes = 2"),
            20);
  EXPECT_EQ(queryText(out, "SELECT group_concat(collective) FROM (SELECT collective FROM verdicts ORDER BY id)"),
            "node-a,node-b");
  auto latest = (*store)->latestVerdicts();
  ASSERT_TRUE(latest.ok()) << latest.error();
  EXPECT_EQ(latest->size(), 2u);

  EXPECT_FALSE((*store)->mergeFrom(out).ok()) << "a store merged into itself";
  EXPECT_FALSE((*store)->mergeFrom(dir.path + "/missing.db").ok());
  EXPECT_EQ(queryInt(out, "SELECT count(*) FROM runs"), 2);
}

TEST(Store, DefaultPathFollowsEnvironment) {
  // DYNAMICCL_DB is read by the plugin (settings_test) and the tools, which pass it as StoreOptions::path.
  setenv("XDG_DATA_HOME", "/tmp/xdg", 1);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(defaultDatabasePath(), std::string("/tmp/xdg/dynamiccl/") + host + ".db");
  unsetenv("XDG_DATA_HOME");
  EXPECT_TRUE(defaultDatabasePath().ends_with(std::string("/.local/share/dynamiccl/") + host + ".db"));
}

TEST(Store, WriterCommitsObservationsAndDecisionsReadableWithPlainSql) {
  TempDir dir;
  const std::string path = dir.path + "/x.db";
  auto store = Store::open({.path = path});
  ASSERT_TRUE(store.ok()) << store.error();
  const int64_t comm = setUpComm(**store);
  auto writer = Writer::create(**store);
  ASSERT_TRUE(writer.ok()) << writer.error();
  Batch b = makeBatch(comm, 0, 100);
  b.decisions.push_back({comm, 7, "allgather", 4096, Algo::Nvls, Proto::LL128, 16, 131072, "explore", 1});
  const WriteResult r = (*writer)->write(b);
  EXPECT_TRUE(r.committed);
  EXPECT_TRUE(r.report_once.empty());
  EXPECT_EQ((*writer)->losses().committed_rows, 101u);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations WHERE algo = 'RING' AND proto = 'SIMPLE'"), 100);
  EXPECT_EQ(queryText(path, "SELECT algo || '/' || proto || '/' || n_channels || '/' || chunk || '/' || source FROM decisions"),
            "NVLS/LL128/16/131072/explore");
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations WHERE cpu_us IS NULL AND timing_source = 'gpu'"), 100);
  auto stats = (*store)->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->rows_per_table["observations"], 100);
  EXPECT_EQ(stats->observations_per_collective["allreduce"], 100);
}

// A schema-1 file as the first release wrote it (the tables of version 1, verbatim), with rows.
void writeVersion1Store(const std::string& path) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  const char* sql = R"sql(
CREATE TABLE runs (id INTEGER PRIMARY KEY, host TEXT NOT NULL DEFAULT '', system TEXT NOT NULL DEFAULT '',
  nccl_version TEXT NOT NULL DEFAULT '', fingerprint TEXT NOT NULL DEFAULT '', env_json TEXT NOT NULL DEFAULT '{}',
  source TEXT NOT NULL DEFAULT '', source_hash TEXT NOT NULL DEFAULT '', started_at_ns INTEGER NOT NULL);
CREATE INDEX runs_source_hash ON runs(source_hash);
CREATE TABLE communicators (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
  comm_id INTEGER NOT NULL, n_ranks INTEGER NOT NULL, n_nodes INTEGER NOT NULL, rank INTEGER);
CREATE INDEX communicators_run ON communicators(run_id);
CREATE TABLE observations (id INTEGER PRIMARY KEY, comm INTEGER NOT NULL REFERENCES communicators(id),
  seq INTEGER NOT NULL, collective TEXT NOT NULL, bytes INTEGER NOT NULL, algo TEXT NOT NULL, proto TEXT NOT NULL,
  n_channels INTEGER, chunk INTEGER, gpu_us REAL, cpu_us REAL,
  timing_source TEXT NOT NULL CHECK (timing_source IN ('gpu', 'host')), ts_ns INTEGER NOT NULL,
  in_place INTEGER NOT NULL DEFAULT 0, busbw_gbps REAL, note TEXT);
CREATE INDEX observations_training ON observations(collective, bytes, algo, proto);
CREATE INDEX observations_comm ON observations(comm, seq);
CREATE TABLE decisions (id INTEGER PRIMARY KEY, comm INTEGER NOT NULL REFERENCES communicators(id),
  seq INTEGER NOT NULL, collective TEXT NOT NULL, bytes INTEGER NOT NULL, algo TEXT NOT NULL, proto TEXT NOT NULL,
  n_channels INTEGER, chunk INTEGER, source TEXT NOT NULL, ts_ns INTEGER NOT NULL);
CREATE INDEX decisions_training ON decisions(collective, bytes, algo, proto);
CREATE INDEX decisions_comm ON decisions(comm, seq);
CREATE TABLE profiles (id INTEGER PRIMARY KEY, name TEXT NOT NULL, text TEXT NOT NULL, created_ns INTEGER NOT NULL);
INSERT INTO runs(id, host, system, source, started_at_ns) VALUES (1, 'h', 'dgx-h100', 'plugin', 5);
INSERT INTO communicators VALUES (1, 1, 42, 8, 1, 0);
INSERT INTO observations(comm, seq, collective, bytes, algo, proto, n_channels, gpu_us, timing_source, ts_ns)
  VALUES (1, 0, 'allreduce', 4096, 'RING', 'LL', 4, 12.5, 'gpu', 6), (1, 1, 'allreduce', 4096, 'TREE', 'LL', 4, 13.5, 'gpu', 7);
INSERT INTO decisions(comm, seq, collective, bytes, algo, proto, n_channels, source, ts_ns)
  VALUES (1, 0, 'allreduce', 4096, 'RING', 'LL', 4, 'table', 6);
PRAGMA user_version = 1;
)sql";
  ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
}

// An existing version-1 store migrates in place: its rows stay, the new columns read NULL (unknown),
// the verdicts table appears, and rows with profiler v7 fields can be written next to the old ones.
TEST(Store, Version1StoreMigratesInPlaceAndKeepsItsRows) {
  TempDir dir;
  const std::string path = dir.path + "/old.db";
  writeVersion1Store(path);
  ASSERT_EQ(queryInt(path, "PRAGMA user_version"), 1);
  {
    StoreOptions readOnly{.path = path, .read_only = true};
    EXPECT_FALSE(Store::open(readOnly).ok()) << "a reader must not migrate";
    EXPECT_EQ(queryInt(path, "PRAGMA user_version"), 1);
  }
  auto store = Store::open({.path = path});
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_EQ(queryInt(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), 2);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM decisions"), 1);
  EXPECT_EQ(queryText(path, "SELECT group_concat(algo || gpu_us, ',') FROM observations ORDER BY id"), "RING12.5,TREE13.5");
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations WHERE kernel_variant IS NULL AND is_sym_coll IS NULL "
                           "AND user_tag IS NULL AND profiler_version IS NULL AND decision_join IS NULL"),
            2);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM verdicts"), 0);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM sqlite_master WHERE name = 'profiles'"), 0) << "never written: dropped";

  auto writer = Writer::create(**store);
  ASSERT_TRUE(writer.ok()) << writer.error();
  Batch b;
  ObservationRow sym;
  sym.comm_row = 1;
  sym.seq = 2;
  sym.collective = "allreduce";
  sym.bytes = 4096;
  sym.gpu_us = 9;
  sym.kernel_variant = "AllReduce_AGxLL_R";
  sym.is_sym_coll = 1;
  sym.user_tag = 0xfedcba9876543210ull;  // the full 64 bits come back
  sym.profiler_version = 7;
  sym.decision_join = "not_asked";
  b.observations.push_back(sym);
  ASSERT_TRUE((*writer)->write(b).committed);
  EXPECT_EQ(queryText(path, "SELECT kernel_variant || '/' || is_sym_coll || '/' || profiler_version || '/' || "
                            "decision_join || '/' || algo FROM observations WHERE seq = 2"),
            "AllReduce_AGxLL_R/1/7/not_asked/default");
  std::vector<MeasurementRow> rows;
  ASSERT_TRUE((*store)->forEachMeasurement(true, [&](const MeasurementRow& m) { rows.push_back(m); }).ok());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].is_sym_coll);
  EXPECT_EQ(rows[0].user_tag, 0u);
  EXPECT_TRUE(rows[2].is_sym_coll);
  EXPECT_EQ(rows[2].kernel_variant, "AllReduce_AGxLL_R");
  EXPECT_EQ(rows[2].user_tag, 0xfedcba9876543210ull);
  // The old rows join their decisions for the applied report (no join state: an older build's rows).
  std::vector<AppliedRow> applied;
  ASSERT_TRUE((*store)->forEachAppliedRow([&](const AppliedRow& r) { applied.push_back(r); }).ok());
  ASSERT_EQ(applied.size(), 3u);
  EXPECT_TRUE(applied[0].has_decision);
  EXPECT_EQ(applied[0].chosen_algo, "RING");
  EXPECT_EQ(applied[0].source, "table");
  EXPECT_FALSE(applied[1].has_decision);
  EXPECT_EQ(applied[1].decision_join, "");
  EXPECT_EQ(applied[2].decision_join, "not_asked");
  EXPECT_TRUE(applied[2].is_sym_coll);
}

// What a transaction body writes lands whole or not at all: a failing body leaves no run, no
// communicator and none of the batch it wrote through a Writer.
TEST(Store, AtomicallyCommitsWholeOrRollsBackWhole) {
  TempDir dir;
  const std::string path = dir.path + "/x.db";
  auto store = Store::open({.path = path});
  ASSERT_TRUE(store.ok()) << store.error();
  auto writer = Writer::create(**store);
  ASSERT_TRUE(writer.ok()) << writer.error();
  auto body = [&](bool fail) {
    return [&, fail]() -> Status {
      RunInfo run = runOnHost("h");
      run.source_hash = fail ? "failed" : "kept";
      auto id = (*store)->addRun(run);
      if (!id) return makeError(id.error());
      auto comm = (*store)->addCommunicator({*id, 1, 8, 1, -1});
      if (!comm) return makeError(comm.error());
      if (!(*writer)->write(makeBatch(*comm, 0, 50)).committed) return makeError("write");
      if (fail) return makeError("body failed after its writes");
      return Ok{};
    };
  };
  EXPECT_FALSE((*store)->atomically(body(true)).ok());
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM runs"), 0);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), 0);
  EXPECT_FALSE(*(*store)->hasSourceHash("failed"));
  EXPECT_FALSE((*store)->atomically([]() -> Status { throw std::runtime_error("boom"); }).ok());
  ASSERT_TRUE((*store)->atomically(body(false)).ok());
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), 50);
}

// Readers open read-only: a mistyped path is an error that creates nothing (no directory, no file),
// and a store opened so cannot be written.
TEST(Store, ReadOnlyOpenCreatesNothingAndWritesNothing) {
  TempDir dir;
  const std::string missing = dir.path + "/typo/x.db";
  auto none = Store::open({.path = missing, .read_only = true});
  ASSERT_FALSE(none.ok());
  struct stat st {};
  EXPECT_NE(stat((dir.path + "/typo").c_str(), &st), 0);

  const std::string path = dir.path + "/x.db";
  {
    auto store = Store::open({.path = path});
    ASSERT_TRUE(store.ok()) << store.error();
    setUpComm(**store);
  }
  auto reader = Store::open({.path = path, .read_only = true});
  ASSERT_TRUE(reader.ok()) << reader.error();
  auto stats = (*reader)->stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->rows_per_table["runs"], 1);
  EXPECT_FALSE((*reader)->addRun(runOnHost("h")).ok());
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM runs"), 1);

  { std::ofstream(dir.path + "/empty.db"); }
  EXPECT_FALSE(Store::open({.path = dir.path + "/empty.db", .read_only = true}).ok());
  EXPECT_EQ(readBytes(dir.path + "/empty.db"), "");
}

// Opens in a child that is killed after limit_s: true when open returned in time (a hang fails).
bool readOnlyOpenReturns(const std::string& path, double limit_s, bool* opened) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const char ok = Store::open({.path = path, .read_only = true}).ok() ? '1' : '0';
    (void)!write(fds[1], &ok, 1);
    _exit(0);
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      close(fds[0]);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  char ok = '?';
  (void)!read(fds[0], &ok, 1);
  close(fds[0]);
  *opened = ok == '1';
  return true;
}

TEST(Store, ReadOnlyOpenOfAFifoADeviceOrGarbageIsRefusedAtOnce) {
  TempDir dir;
  const std::string fifo = dir.path + "/fifo.db";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string garbage = dir.path + "/garbage.db";
  std::ofstream(garbage, std::ios::binary) << std::string(8192, '\x5a');
  for (const std::string& path : {fifo, std::string("/dev/zero"), std::string("/dev/null"), garbage, dir.path}) {
    bool opened = true;
    ASSERT_TRUE(readOnlyOpenReturns(path, 5.0, &opened)) << path << ": open hung";
    EXPECT_FALSE(opened) << path;
  }
  auto refused = Store::open({.path = fifo, .read_only = true});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("not a regular file"), std::string::npos) << refused.error();
  auto notADb = Store::open({.path = garbage, .read_only = true});
  ASSERT_FALSE(notADb.ok());
  EXPECT_NE(notADb.error().find(garbage), std::string::npos) << notADb.error();
}

TEST(Store, ReadingAStoreNoProcessHoldsLeavesNoWalOrShmBehind) {
  TempDir dir;
  const std::string path = dir.path + "/x.db";
  {
    auto store = Store::open({.path = path});
    ASSERT_TRUE(store.ok()) << store.error();
    setUpComm(**store);
  }
  struct stat st {};
  ASSERT_NE(stat((path + "-wal").c_str(), &st), 0) << "the writer's close removes its WAL";
  {
    auto reader = Store::open({.path = path, .read_only = true});
    ASSERT_TRUE(reader.ok()) << reader.error();
    auto stats = (*reader)->stats();
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->rows_per_table["runs"], 1);
  }
  EXPECT_NE(stat((path + "-wal").c_str(), &st), 0);
  EXPECT_NE(stat((path + "-shm").c_str(), &st), 0);
  // Any file name: the reader hands SQLite a URI, whose reserved characters must not change the path.
  const std::string odd = dir.path + "/a?b#c%20d:e.db";
  ASSERT_EQ(rename(path.c_str(), odd.c_str()), 0);
  for (const std::string& name : {odd, "/" + odd}) {
    auto reader = Store::open({.path = name, .read_only = true});
    ASSERT_TRUE(reader.ok()) << name << ": " << reader.error();
    EXPECT_EQ((*reader)->stats()->rows_per_table["runs"], 1);
  }
  ASSERT_EQ(rename(odd.c_str(), path.c_str()), 0);

  // While a writer holds it, a reader goes through the WAL and sees what the writer committed.
  auto writer = Store::open({.path = path});
  ASSERT_TRUE(writer.ok()) << writer.error();
  ASSERT_TRUE((*writer)->addRun(runOnHost("second")).ok());
  auto reader = Store::open({.path = path, .read_only = true});
  ASSERT_TRUE(reader.ok()) << reader.error();
  auto stats = (*reader)->stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->rows_per_table["runs"], 2);
}

// A version-3 store (with the profiles table every store had then, rows in it too) is read as it is,
// and a writer migrates it: the table goes, the rest stays.
TEST(Store, Version3StoreIsReadAsItIsAndMigratesWithoutItsProfilesTable) {
  TempDir dir;
  const std::string path = dir.path + "/v3.db";
  writeVersion1Store(path);
  {
    auto store = Store::open({.path = path});
    ASSERT_TRUE(store.ok()) << store.error();
  }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h,
                         "CREATE TABLE profiles (id INTEGER PRIMARY KEY, name TEXT NOT NULL, text TEXT NOT NULL, "
                         "created_ns INTEGER NOT NULL); INSERT INTO profiles VALUES (1, 'p', '{}', 1); "
                         "PRAGMA user_version = 3;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  {
    auto reader = Store::open({.path = path, .read_only = true});
    ASSERT_TRUE(reader.ok()) << reader.error();
    auto stats = (*reader)->stats();
    ASSERT_TRUE(stats.ok()) << stats.error();
    EXPECT_EQ(stats->schema_version, 3);
    EXPECT_EQ(stats->rows_per_table["observations"], 2);
    EXPECT_EQ(queryInt(path, "PRAGMA user_version"), 3) << "a reader must not migrate";
  }
  auto store = Store::open({.path = path});
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_EQ(queryInt(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM sqlite_master WHERE name = 'profiles'"), 0);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), 2);
  EXPECT_EQ((*store)->stats()->rows_per_table.count("profiles"), 0u);
}

TEST(Store, NewerSchemaIsRefusedAndLeftByteForByte) {
  TempDir dir;
  const std::string path = dir.path + "/future.db";
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "CREATE TABLE future(x); INSERT INTO future VALUES (1); PRAGMA user_version = 99;", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  const std::string before = readBytes(path);
  ASSERT_FALSE(before.empty());

  auto store = Store::open({.path = path});
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().find("newer"), std::string::npos) << store.error();
  EXPECT_EQ(readBytes(path), before);
  EXPECT_EQ(queryInt(path, "PRAGMA user_version"), 99);
}

TEST(Store, KillDashNineMidBatchLosesNoCommittedBatch) {
  TempDir dir;
  const std::string path = dir.path + "/kill.db";
  constexpr int kRows = 2000;
  {
    auto store = Store::open({.path = path});
    ASSERT_TRUE(store.ok()) << store.error();
    setUpComm(**store);
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = Store::open({.path = path});
    if (!store) _exit(3);
    auto writer = Writer::create(**store);
    if (!writer) _exit(4);
    for (int64_t i = 0;; ++i) (*writer)->write(makeBatch(1, i, kRows));
  }
  // Wait until some batches are in, then kill it wherever it is.
  for (int i = 0; i < 200 && queryInt(path, "SELECT count(*) FROM observations") < 5 * kRows; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(37));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto store = Store::open({.path = path});
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_EQ(queryText(path, "PRAGMA integrity_check"), "ok");
  const int64_t rows = queryInt(path, "SELECT count(*) FROM observations");
  EXPECT_GE(rows, 5 * kRows);
  EXPECT_EQ(rows % kRows, 0) << "a partial batch is visible";
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM (SELECT seq / 100000 AS b, count(*) AS n FROM observations GROUP BY b "
                           "HAVING n != " + std::to_string(kRows) + ")"),
            0);
  auto writer = Writer::create(**store);  // and the store stays writable
  ASSERT_TRUE(writer.ok());
  EXPECT_TRUE((*writer)->write(makeBatch(1, 999999, 10)).committed);
}

TEST(Store, EightProcessesWritingAtOnceLoseNothing) {
  TempDir dir;
  const std::string path = dir.path + "/shared.db";  // no pre-creation: they race on the schema too
  constexpr int kProcs = 8, kBatches = 40, kRows = 250;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = Store::open({.path = path, .busy_timeout_ms = 5000});
      if (!store) _exit(100);
      auto run = (*store)->addRun(runOnHost("p" + std::to_string(p)));
      if (!run) _exit(101);
      auto comm = (*store)->addCommunicator({*run, static_cast<uint64_t>(p), kProcs, 1, p});
      if (!comm) _exit(102);
      auto writer = Writer::create(**store);
      if (!writer) _exit(103);
      for (int b = 0; b < kBatches; ++b) (*writer)->write(makeBatch(*comm, b, kRows));
      _exit(static_cast<int>(std::min<uint64_t>((*writer)->losses().dropped_batches, 99)));
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child dropped batches or failed to open";
  }
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), int64_t{kProcs} * kBatches * kRows);
  EXPECT_EQ(queryInt(path, "SELECT count(DISTINCT comm) FROM observations"), kProcs);
  EXPECT_EQ(queryText(path, "PRAGMA integrity_check"), "ok");
}

TEST(Store, FullDatabaseDropsBatchesCountsThemAndReportsOnce) {
  TempDir dir;
  const std::string path = dir.path + "/small.db";
  auto store = Store::open({.path = path, .max_bytes = 256 * 1024});  // DYNAMICCL_DB_MAX_MB=0.25
  ASSERT_TRUE(store.ok()) << store.error();
  const int64_t comm = setUpComm(**store);
  auto writer = Writer::create(**store);
  ASSERT_TRUE(writer.ok());
  int reports = 0, committed = 0, dropped = 0;
  for (int i = 0; i < 60; ++i) {
    const WriteResult r = (*writer)->write(makeBatch(comm, i, 200));
    committed += r.committed;
    dropped += !r.committed;
    if (!r.report_once.empty()) {
      ++reports;
      EXPECT_NE(r.report_once.find("full"), std::string::npos) << r.report_once;
    }
  }
  EXPECT_GT(committed, 0);
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(reports, 1);
  EXPECT_EQ((*writer)->losses().dropped_batches, static_cast<uint64_t>(dropped));
  EXPECT_EQ((*writer)->losses().dropped_rows, static_cast<uint64_t>(dropped) * 200);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), int64_t{committed} * 200);
  EXPECT_EQ(queryText(path, "PRAGMA integrity_check"), "ok");
}

// Once the owner's bound passed (finalize), the store still opens and writes what waits on no lock,
// and drops at once what would wait: the bound stops waits, not writes.
TEST(Store, PastTheOwnersBoundWritesThatNeedNoWaitStillCommit) {
  TempDir dir;
  const std::string path = dir.path + "/late.db";
  std::atomic<bool> givenUp{true};
  auto store = Store::open({.path = path, .busy_timeout_ms = 2000, .give_up = &givenUp});
  ASSERT_TRUE(store.ok()) << store.error();
  const int64_t comm = setUpComm(**store);
  auto writer = Writer::create(**store);
  ASSERT_TRUE(writer.ok()) << writer.error();
  EXPECT_TRUE((*writer)->write(makeBatch(comm, 0, 10)).committed);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), 10);

  sqlite3* other = nullptr;  // another process of the node holds the write lock
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto start = std::chrono::steady_clock::now();
  const WriteResult r = (*writer)->write(makeBatch(comm, 1, 10));
  const auto waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.committed);
  EXPECT_LT(waited_ms, 500) << "a busy_timeout of 2000 ms per attempt, 3 attempts, would wait 6 s";
  EXPECT_NE(r.report_once.find("time bound"), std::string::npos) << r.report_once;
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(queryInt(path, "SELECT count(*) FROM observations"), 10);
}

// DYNAMICCL_DB_MAX_MB: one rule for the plugin and the tools.
TEST(Store, MaxMegabytesIsAWholeFiniteNumberBelowABillion) {
  EXPECT_EQ(maxBytesFromMegabytes("0.25"), std::optional<int64_t>(256 * 1024));
  EXPECT_EQ(maxBytesFromMegabytes("100"), std::optional<int64_t>(int64_t{100} * 1024 * 1024));
  for (const char* bad : {"", "0", "-1", "1e9", "nan", "inf", "12MB", "1e-400", "1e-7"})  // 1e-7: under one byte (0 means no cap)
    EXPECT_FALSE(maxBytesFromMegabytes(bad).has_value()) << bad;
  EXPECT_FALSE(maxBytesFromMegabytes(nullptr).has_value());
}

}  // namespace
}  // namespace dynamiccl::store
