// Ingest: every real nccl-tests log under shared/data, TUNING lines, and the interchange CSV round trip.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "offline/ingest/ingest.h"
#include "offline/measurements/measurements.h"
#include "tests/shipped_data.h"

namespace dynamiccl::ingest {
namespace {

using measurements::formatInterchangeRow;
using measurements::InterchangeRow;
using measurements::kInterchangeHeader;
using measurements::parseInterchangeCsv;

namespace fs = std::filesystem;
const std::string kData = std::string(DYNAMICCL_SHARED_DIR) + "/data";

struct TempDb {
  std::string dir, path;
  TempDb() {
    char tmpl[] = "/tmp/dynamiccl_ingest_test_XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/t.db";
  }
  ~TempDb() { fs::remove_all(dir); }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int64_t csvRows(const std::string& path) {
  auto rows = parseInterchangeCsv(readFile(path));
  return rows.ok() ? static_cast<int64_t>(rows->size()) : -1;
}

TEST(TuningLine, ParsesNcclInfoLine) {
  auto t = parseTuningLine("node1:123:456 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->collective, "allreduce");
  EXPECT_EQ(t->bytes, 1048576u);
  EXPECT_EQ(t->algo, Algo::Ring);
  EXPECT_EQ(t->proto, Proto::Simple);
  EXPECT_EQ(t->nChannels(), 16);
  auto g = parseTuningLine("h:1:1 [3] NCCL INFO ReduceScatter: 64 Bytes -> Algo NVLS_TREE proto LL128 channel{Lo..Hi}={2..3}");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->collective, "reducescatter");
  EXPECT_EQ(g->algo, Algo::NvlsTree);
  EXPECT_EQ(g->proto, Proto::LL128);
  EXPECT_EQ(g->nChannels(), 2);
  EXPECT_FALSE(parseTuningLine("NCCL INFO AllReduce: x Bytes -> Algo RING proto LL").has_value());
  EXPECT_FALSE(parseTuningLine("NCCL INFO AllReduce: 8 Bytes -> Algo WARP proto LL channel{Lo..Hi}={0..1}").has_value());
  EXPECT_FALSE(parseTuningLine("#  Rank  0 Group  0 Pid 1 on h device 0 [0000:4a:00] NVIDIA L40S").has_value());
}

TEST(NcclTestsLog, EnvLinesForceConfigAndTuningLinesAnnotateRows) {
  const std::string log =
      "NCCL_ALGO=Tree\n"
      "NCCL_MIN_NCHANNELS=4\nNCCL_MAX_NCHANNELS=4\n"
      "# Collective test starting: all_gather_perf\n"
      "#  Rank  0 Group  0 Pid 1 on hostA device  0 [0000:01:00] GPU X\n"
      "#  Rank  1 Group  0 Pid 2 on hostB device  0 [0000:01:00] GPU X\n"
      "h:1:1 [0] NCCL INFO AllGather: 512 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "        1024           256     float    none      -1    10.00    0.10    0.05      0    11.00    0.09    0.05      0\n"
      "        2048           512     float    none      -1    12.00    0.17    0.09      0      N/A     N/A     N/A    N/A\n";
  const ParsedLog parsed = parseNcclTestsLog(log, "/x/y.log");
  ASSERT_EQ(parsed.sections.size(), 1u);
  const NcclTestsSection& s = parsed.sections[0];
  EXPECT_EQ(s.collective, "allgather");
  EXPECT_EQ(s.n_ranks, 2);
  EXPECT_EQ(s.n_nodes, 2);
  EXPECT_EQ(s.forced_algo, Algo::Tree);
  EXPECT_EQ(s.forced_proto, Proto::Default);
  EXPECT_EQ(s.forced_channels, 4);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(s.rows[0].ip_time_us, 11.0);
  EXPECT_TRUE(std::isnan(s.rows[1].ip_time_us));
  ASSERT_EQ(parsed.tuning.size(), 1u);

  TempDb db;
  { std::ofstream(db.dir + "/ag.log") << log; }
  auto store = store::Store::open({.path = db.path});
  ASSERT_TRUE(store.ok()) << store.error();
  auto writer = store::Writer::create(**store);
  ASSERT_TRUE(writer.ok());
  auto report = ingestFile(**store, **writer, db.dir + "/ag.log");
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report->observations, 3);  // 2 out-of-place + 1 in-place (the other is N/A)
  EXPECT_EQ(report->decisions, 1);
  // AllGather's TUNING line prints the per-rank share: 512 B of a 1024 B total on 2 ranks.
  std::vector<std::string> algos;
  ASSERT_TRUE((*store)->forEachMeasurement(true, [&](const store::MeasurementRow& m) {
                       algos.push_back(m.algo + "/" + m.proto + "/" + std::to_string(m.n_channels));
                     }).ok());
  EXPECT_EQ(algos, (std::vector<std::string>{"RING/LL/2", "RING/LL/2", "TREE/default/4"}));
  auto again = ingestFile(**store, **writer, db.dir + "/ag.log");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->observations, 0);
  EXPECT_EQ(again->skipped.count("already ingested (same content)"), 1u);
}

// One allreduce section on 2 ranks of one host, two sizes: what each source test below adds to.
const std::string kAllReduceBody =
    "# Collective test starting: all_reduce_perf\n"
    "#  Rank  0 Group  0 Pid 1 on hostA device  0 [0000:01:00] GPU X\n"
    "#  Rank  1 Group  0 Pid 2 on hostA device  1 [0000:02:00] GPU X\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "        1024           256     float     sum      -1    10.00    0.10    0.05      0    11.00    0.09    0.05      0\n"
    "     1048576        262144     float     sum      -1    50.00   20.97   20.97      0    51.00   20.56   20.56      0\n";

// Ingests `files` (under db.dir) into db's store and reads the store back through the interchange CSV,
// as export and the tools do: each file's report, then the rows.
struct Ingested {
  std::vector<FileReport> reports;
  measurements::LoadedMeasurements rows;
};
Ingested ingestAndReadBack(const TempDb& db, const std::vector<std::string>& files) {
  Ingested out;
  auto store = store::Store::open({.path = db.path});
  EXPECT_TRUE(store.ok()) << store.error();
  if (!store.ok()) return out;
  auto writer = store::Writer::create(**store);
  EXPECT_TRUE(writer.ok());
  if (!writer.ok()) return out;
  for (const std::string& f : files) {
    auto report = ingestFile(**store, **writer, db.dir + "/" + f);
    EXPECT_TRUE(report.ok()) << f << ": " << report.error();
    if (report.ok()) out.reports.push_back(*report);
  }
  std::ostringstream csv;
  EXPECT_TRUE(exportInterchangeCsv(**store, csv).ok());
  const std::string path = db.dir + "/out.csv";
  { std::ofstream(path) << csv.str(); }
  auto rows = measurements::loadMeasurements(path);
  EXPECT_TRUE(rows.ok()) << rows.error();
  if (rows.ok()) out.rows = std::move(*rows);
  return out;
}

Detection detectOnly(const std::string& text, const std::string& path) {
  const ParsedLog log = parseNcclTestsLog(text, path);
  EXPECT_EQ(log.sections.size(), 1u) << path;
  return log.sections.empty() ? Detection{} : detect(log.sections[0], log.tuning);
}

TEST(IngestDetects, ForcedRunFromAnEnvLine) {
  const Detection d = detectOnly("export NCCL_ALGO=Ring\nNCCL_PROTO=LL128\n" + kAllReduceBody, "/logs/run1.txt");
  EXPECT_EQ(d.collective, "allreduce");
  EXPECT_EQ(d.n_ranks, 2);
  EXPECT_EQ(d.n_nodes, 1);
  EXPECT_EQ(d.config, "forced RING/LL128");
  EXPECT_EQ(d.from, "env line NCCL_ALGO=Ring, env line NCCL_PROTO=LL128");
  EXPECT_EQ(describe(d), "allreduce, 2 ranks x 1 node, forced RING/LL128 (env line NCCL_ALGO=Ring, env line NCCL_PROTO=LL128)");
}

TEST(IngestDetects, ForcedRunFromNcclSetByEnvironment) {
  const Detection d = detectOnly("hostA:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n" + kAllReduceBody,
                                 "/logs/run1.txt");
  EXPECT_EQ(d.config, "forced protocol SIMPLE (NCCL's algorithm)");
  EXPECT_EQ(d.from, "NCCL INFO set by environment: NCCL_PROTO=Simple");
  EXPECT_TRUE(d.ambiguous.empty());
}

TEST(IngestDetects, NcclsChoicePerSizeFromTuningLines) {
  const std::string tuning =
      "hostA:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}\n"
      "hostA:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}\n";
  const Detection d = detectOnly(kAllReduceBody + tuning, "/logs/run1.txt");
  EXPECT_EQ(d.config, "NCCL's choice per size");
  EXPECT_EQ(d.from, "TUNING lines at 2 of 2 sizes");
  // Forced by an env line and confirmed by NCCL's own lines: both sources said.
  const Detection agreed = detectOnly("NCCL_PROTO=LL\n" + kAllReduceBody +
                                          "hostA:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}\n",
                                      "/logs/run1.txt");
  EXPECT_EQ(agreed.config, "forced protocol LL (NCCL's algorithm)");
  EXPECT_EQ(agreed.from, "env line NCCL_PROTO=LL; TUNING lines at 1 of 2 sizes agree");
  // NCCL ran another protocol than the env line forced at one size: what NCCL says it ran stands there, and is said.
  const Detection overridden = detectOnly("NCCL_PROTO=LL\n" + kAllReduceBody + tuning, "/logs/run1.txt");
  EXPECT_TRUE(overridden.ambiguous.empty()) << overridden.ambiguous;
  EXPECT_EQ(overridden.from, "env line NCCL_PROTO=LL; TUNING lines at 2 of 2 sizes, 1 naming another (NCCL ran that)");
}

TEST(IngestDetects, ForcedRunFromADirectoryName) {
  const Detection d = detectOnly(kAllReduceBody, "/logs/ring_ll128/2026-02-22_15-08-18.txt");
  EXPECT_EQ(d.config, "forced RING/LL128");
  EXPECT_EQ(d.from, "directory ring_ll128");
  EXPECT_EQ(detectOnly(kAllReduceBody, "/logs/auto_simple/x.txt").config, "forced protocol SIMPLE (NCCL's algorithm)");
}

TEST(IngestDetects, ForcedRunFromAFileName) {
  const Detection tree = detectOnly(kAllReduceBody, "/logs/allreduce_tree.txt");
  EXPECT_EQ(tree.config, "forced algorithm TREE (NCCL's protocol)");
  EXPECT_EQ(tree.from, "file name allreduce_tree.txt");
  const Detection both = detectOnly(kAllReduceBody, "/logs/ring_ll128.log");
  EXPECT_EQ(both.config, "forced RING/LL128");
  EXPECT_EQ(both.from, "file name ring_ll128.log");
  // Named after a feature NCCL_NVLS_ENABLE switches on: NCCL's default with NVLS on, not a forced NVLS.
  EXPECT_EQ(detectOnly(kAllReduceBody, "/logs/all_reduce_nvls.out").config, "NCCL's default (nothing forced)");
  EXPECT_EQ(detectOnly(kAllReduceBody, "/logs/all_reduce_perf.txt").config, "NCCL's default (nothing forced)");
  // The same source twice, in agreement: one forced configuration.
  EXPECT_EQ(detectOnly(kAllReduceBody, "/logs/tree/allreduce_tree.txt").from, "directory tree; file name allreduce_tree.txt");
}

TEST(IngestDetects, AmbiguousFileIsRefusedWhole) {
  TempDb db;
  const std::string path = db.dir + "/allreduce_tree.txt";  // the file name says tree ...
  { std::ofstream(path) << "NCCL_ALGO=Ring\n" + kAllReduceBody; }  // ... and an env line ring
  const Detection d = detectOnly("NCCL_ALGO=Ring\n" + kAllReduceBody, path);
  EXPECT_EQ(d.ambiguous, "env line NCCL_ALGO=Ring says RING, file name allreduce_tree.txt says TREE");
  EXPECT_EQ(describe(d), "allreduce, 2 ranks x 1 node, ambiguous: " + d.ambiguous);

  auto store = store::Store::open({.path = db.path});
  ASSERT_TRUE(store.ok()) << store.error();
  auto writer = store::Writer::create(**store);
  ASSERT_TRUE(writer.ok());
  auto report = ingestFile(**store, **writer, path);
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report->kind, "ambiguous");
  EXPECT_EQ(report->observations, 0);
  ASSERT_EQ(report->detected.size(), 1u);
  EXPECT_EQ(report->detected[0].ambiguous, d.ambiguous);
  EXPECT_EQ(report->skipped.count("ambiguous forced configuration (" + d.ambiguous + ")"), 1u);
  // Nothing of it went in, not even the "already ingested" mark: once renamed, it is ingested.
  auto stats = (*store)->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->observations_per_collective.empty());
  const std::string renamed = db.dir + "/allreduce_run.txt";
  std::filesystem::rename(path, renamed);
  auto again = ingestFile(**store, **writer, renamed);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->kind, "nccl-tests");
  EXPECT_EQ(again->observations, 4);
  ASSERT_EQ(again->detected.size(), 1u);
  EXPECT_EQ(again->detected[0].config, "forced algorithm RING (NCCL's protocol)");
}

int64_t countRows(const std::string& dbPath, const char* table) {
  sqlite3* db = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(dbPath.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 1000);
    sqlite3_stmt* st = nullptr;
    const std::string sql = std::string("SELECT count(*) FROM ") + table;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return n;
}

// kill -9 during an ingest: the file must not count as ingested unless all its rows are in, so the
// re-run stores every row. The child is killed as soon as the file's run row is visible to another
// connection (before the fix that was before its observations were committed).
TEST(Ingest, KilledMidIngestLeavesTheFileToTheNextRun) {
  TempDb db;
  constexpr int kRows = 200000;
  const std::string csv = db.dir + "/big.csv";
  {
    std::ofstream out(csv);
    out << kInterchangeHeader << "\n";
    for (int i = 0; i < kRows; ++i)
      out << "sys,allreduce,8,1," << (8 << (i % 20)) << ",RING,SIMPLE,4,-1," << 10 + i % 97 << ",1.5,row " << i << "\n";
  }
  { ASSERT_TRUE(store::Store::open({.path = db.path}).ok()); }  // schema in place before the race

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = store::Store::open({.path = db.path});
    if (!store) _exit(2);
    auto writer = store::Writer::create(**store);
    if (!writer) _exit(2);
    _exit(ingestFile(**store, **writer, csv).ok() ? 0 : 1);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int status = 0;
  bool exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(child, &status, WNOHANG) == child) {
      exited = true;
      break;
    }
    if (countRows(db.path, "runs") > 0) break;
    usleep(200);
  }
  if (!exited) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }

  auto store = store::Store::open({.path = db.path});
  ASSERT_TRUE(store.ok()) << store.error();
  auto writer = store::Writer::create(**store);
  ASSERT_TRUE(writer.ok());
  auto rerun = ingestFile(**store, **writer, csv);
  ASSERT_TRUE(rerun.ok()) << rerun.error();
  EXPECT_EQ(countRows(db.path, "observations"), kRows);
  EXPECT_EQ(countRows(db.path, "runs"), 1);
}

// Corners of the line forms that the former std::regex reader accepted, kept as they were when the
// reader became hand-written: a '\r' inside a device line cuts the GPU name ('.' stopped there), an
// env line may have a prefix and trailing spaces but nothing else, "-x" flags are taken one by one
// (the value runs up to a space), -np/--ntasks must start a word, and paths drop leading zeros.
TEST(NcclTestsLog, LineFormsOfTheFormerRegexReaderStillParse) {
  const std::string log =
      "  export   NCCL_ALGO=Ring  \r\n"
      "NCCL_PROTO=LL trailing words\n"
      "x NCCL_DEBUG set by environment to INFO\n"
      "> mpirun x-np 3 --ntasks=8 -npernode 4 -x NCCL_A=1 -x NCCL_B=2-x NCCL_C=3 all_gather_perf\n"
      "# nccl-tests version 2.17.9 nccl-headers=22902 nccl-library=22902\n"
      "#  Rank  1 Group  0 Pid 2 on h2 device  0 [0000:4b:00] GPU B\n"
      "#  Rank  0 Group  0 Pid 1 on h1 device  0 [0000:4a:00] \r GPU A \r tail\n"
      "           8             2     float     sum      -1    17.29    0.00    0.00       0    17.78    0.00    0.00       0\n";
  const ParsedLog parsed = parseNcclTestsLog(log, "/x/y.log");
  ASSERT_EQ(parsed.sections.size(), 1u);
  const NcclTestsSection& s = parsed.sections[0];
  EXPECT_EQ(s.collective, "allgather");
  EXPECT_EQ(s.gpu_name, "GPU A");
  EXPECT_EQ(s.host, "h1");
  EXPECT_EQ(s.n_ranks, 8);
  EXPECT_EQ(s.n_nodes, 2);
  EXPECT_EQ(s.nccl_version, "2.29.2");
  EXPECT_EQ(s.env, (std::map<std::string, std::string>{
                       {"NCCL_A", "1"}, {"NCCL_ALGO", "Ring"}, {"NCCL_B", "2-x"}, {"NCCL_DEBUG", "INFO"}}));
  EXPECT_EQ(s.forced_algo, Algo::Ring);

  const std::string row = "           8             2     float     sum      -1    17.29    0.00    0.00       0\n";
  const ParsedLog fromPath = parseNcclTestsLog(row, "runs/job_n-0016-N-000_nccl-2.18.1/all_reduce_perf.log");
  ASSERT_EQ(fromPath.sections.size(), 1u);
  EXPECT_EQ(fromPath.sections[0].collective, "allreduce");
  EXPECT_EQ(fromPath.sections[0].n_ranks, 16);
  EXPECT_EQ(fromPath.sections[0].n_nodes, 0);
  EXPECT_EQ(fromPath.sections[0].nccl_version, "2.18.1");
  const ParsedLog nodesGpus = parseNcclTestsLog(row, "logs/nccl_N0010_G8_x/sendrecv.log");
  ASSERT_EQ(nodesGpus.sections.size(), 1u);
  EXPECT_EQ(nodesGpus.sections[0].n_ranks, 80);
  EXPECT_EQ(nodesGpus.sections[0].n_nodes, 10);
}

// Archives that condense the device list to one line per host still give ranks and nodes.
TEST(Ingest, CondensedDeviceLinesGiveRanksAndNodes) {
  const std::string text =
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
      "#  Rank  0-7 Group  0 on hostA devices 0-7 NVIDIA H100 80GB HBM3\n"
      "#  Rank  8-15 Group  0 on hostB devices 0-7 NVIDIA H100 80GB HBM3\n"
      "           8             2     float     sum      -1    17.29    0.00    0.00       0    17.00    0.00    0.00       0\n";
  const ParsedLog log = parseNcclTestsLog(text, "x.log");
  ASSERT_EQ(log.sections.size(), 1u);
  EXPECT_EQ(log.sections[0].n_ranks, 16);
  EXPECT_EQ(log.sections[0].n_nodes, 2);
  EXPECT_EQ(log.sections[0].gpu_name, "NVIDIA H100 80GB HBM3");
}

// Every real nccl-tests log of shared/data: rows agree with each folder's normalized.csv.
TEST(Ingest, EveryRealNcclTestsLogMatchesNormalizedCounts) {
  if (!fs::is_directory(kData)) GTEST_SKIP() << kData << " absent";
  TempDb db;
  auto store = store::Store::open({.path = db.path});
  ASSERT_TRUE(store.ok()) << store.error();
  auto writer = store::Writer::create(**store);
  ASSERT_TRUE(writer.ok());
  int logs = 0;
  for (const auto& folder : fs::directory_iterator(kData)) {
    if (!fs::is_directory(folder.path() / "raw")) continue;
    int64_t outOfPlace = 0, wrongOutOfPlace = 0, files = 0, headerless = 0;
    for (const std::string& f : expandPaths({(folder.path() / "raw").string()}).files) {
      const std::string text = readFile(f);
      const ParsedLog log = parseNcclTestsLog(text, f);
      if (log.sections.empty()) continue;
      ++files;
      auto report = ingestFile(**store, **writer, f);
      ASSERT_TRUE(report.ok()) << report.error();
      EXPECT_EQ(report->kind, "nccl-tests") << f;
      for (const auto& s : log.sections) {
        if (s.collective.empty()) {  // a file of bare result rows (no nccl-tests header): refused, and said so
          bool said = false;
          for (const auto& [why, n] : report->skipped) said = said || why.find("unknown collective") != std::string::npos;
          EXPECT_TRUE(said) << f;
          headerless += static_cast<int64_t>(s.rows.size());
          continue;
        }
        EXPECT_GT(s.n_ranks, 0) << f;
        EXPECT_GE(s.n_nodes, 0) << f;  // 0: unknown (no device lines name hosts), stored as such
        EXPECT_LE(s.n_nodes, s.n_ranks) << f;
        for (const auto& r : s.rows) {
          EXPECT_GT(r.oop_time_us, 0.0) << f;
          (r.oop_wrong > 0 ? wrongOutOfPlace : outOfPlace) += 1;
        }
      }
      if (report->observations == 0) {
        EXPECT_FALSE(report->skipped.empty()) << f << ": nothing read and nothing said";
      }
    }
    logs += static_cast<int>(files);
    const std::string name = folder.path().filename().string();
    const int64_t normalized = csvRows((folder.path() / "normalized.csv").string());
    SCOPED_TRACE(name);
    if (name == "xla-collective-perf-table" || name == "mi355x-rccl-1node") {
      EXPECT_EQ(files, 0);  // a protobuf table, a sweep's merged medians: not nccl-tests logs
    } else if (name == "h100-ib-cluster-xxrjun") {
      EXPECT_EQ(outOfPlace + wrongOutOfPlace, normalized + 10);  // + the smoke run normalized.csv leaves out
    } else if (name == "h100-8gpu-together") {  // its ring rows stand under both of its systems in normalized.csv
      EXPECT_EQ(outOfPlace + wrongOutOfPlace + 42, normalized);
    } else if (headerless > 0) {  // the dataset's own conversion knew what the bare rows were
      EXPECT_LE(outOfPlace + wrongOutOfPlace, normalized);
    } else if (normalized > 0) {
      EXPECT_EQ(outOfPlace + wrongOutOfPlace, normalized);
    }
  }
  EXPECT_GE(logs, 300);
  auto stats = (*store)->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GT(stats->observations_per_collective["allreduce"], 5000);
  EXPECT_GT(stats->observations_per_collective["alltoall"], 1000);
  EXPECT_GT(stats->observations_per_collective["sendrecv"], 1000);
  EXPECT_GT(stats->observations_per_collective["allgather"], 400);
  EXPECT_GT(stats->observations_per_collective["reducescatter"], 400);
}

// Text form of everything the log reader returns; doubles in shortest round-trip form so that any
// change of a parsed value changes the text.
std::string num(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : "?";
}

std::string dumpParsedLog(const ParsedLog& log) {
  std::ostringstream out;
  for (const NcclTestsSection& s : log.sections) {
    out << "section " << s.collective << " ranks=" << s.n_ranks << " nodes=" << s.n_nodes << " version=" << s.nccl_version
        << " gpu=" << s.gpu_name << " host=" << s.host << " algo=" << static_cast<int>(s.forced_algo)
        << " proto=" << static_cast<int>(s.forced_proto) << " channels=" << s.forced_channels << "\n";
    for (const auto& [k, v] : s.env) out << "  env " << k << "=" << v << "\n";
    for (const NcclTestsRow& r : s.rows)
      out << "  row " << r.bytes << " " << r.count << " " << r.type << " " << r.redop << " " << r.root << " "
          << num(r.oop_time_us) << " " << num(r.oop_busbw_gbps) << " " << r.oop_wrong << " " << num(r.ip_time_us) << " "
          << num(r.ip_busbw_gbps) << " " << r.ip_wrong << "\n";
  }
  for (const TuningChoice& t : log.tuning)
    out << "tuning " << t.collective << " " << t.bytes << " " << static_cast<int>(t.algo) << " "
        << static_cast<int>(t.proto) << " " << t.channel_lo << ".." << t.channel_hi << "\n";
  return out.str();
}

// Pins the reader's whole output over every raw file of shared/data (captured from the std::regex
// reader before it was rewritten by hand): any change in what it accepts or produces shows here.
// DYNAMICCL_INGEST_DUMP=<file> writes the text to diff when the checksum moves.
TEST(Ingest, ParsedOutputOfEveryRawFileIsPinned) {
  if (!fs::is_directory(kData)) GTEST_SKIP() << kData << " absent";
  std::string dump;
  // The datasets the pin was taken on: a dataset added to shared/data later does not move it.
  const std::set<std::string> pinned = {"alps-gh200-slingshot-allreduce", "gcp-a3mega-h100-2node",
                                        "h100-ib-cluster-xxrjun", "l40s-pcie-cs244c", "xla-collective-perf-table"};
  for (const std::string& f : expandPaths({kData}).files) {  // sorted; the hint is relative so the pin moves with the data
    const std::string rel = fs::relative(f, kData).string();
    if (rel.find("/raw/") == std::string::npos || !pinned.count(rel.substr(0, rel.find('/')))) continue;
    dump += "file " + rel + "\n" + dumpParsedLog(parseNcclTestsLog(readFile(f), rel));
  }
  if (const char* to = std::getenv("DYNAMICCL_INGEST_DUMP")) std::ofstream(to, std::ios::binary) << dump;
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char ch : dump) h = (h ^ ch) * 1099511628211ull;
  EXPECT_EQ(dump.size(), 488748u);
  EXPECT_EQ(h, 7539607547634963513ull);
}

TEST(Ingest, ForcedRunsOfL40sFolderCarryTheirProtocolAndAlgorithm) {
  const std::string root = kData + "/l40s-pcie-cs244c/raw/phase1-baseline/nvidial40s_2gpu_results";
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " absent";
  for (auto [dir, algo, proto] : {std::tuple{"auto_ll128", Algo::Default, Proto::LL128},
                                  std::tuple{"ring", Algo::Ring, Proto::Default},
                                  std::tuple{"iteration_1", Algo::Default, Proto::Default}}) {
    for (const std::string& f : expandPaths({root + "/" + dir}).files) {
      const ParsedLog log = parseNcclTestsLog(readFile(f), f);
      ASSERT_EQ(log.sections.size(), 1u) << f;
      EXPECT_EQ(log.sections[0].forced_algo, algo) << f;
      EXPECT_EQ(log.sections[0].forced_proto, proto) << f;
      EXPECT_EQ(log.sections[0].n_ranks, 2) << f;
      EXPECT_EQ(log.sections[0].rows.size(), 25u) << f;
    }
  }
}

TEST(InterchangeCsv, RoundTripThroughTheStoreKeepsEveryField) {
  // The shipped L40S copy always; two more datasets where shared/data is beside the clone.
  std::vector<std::string> csvs = {dynamiccl::testing::shippedL40sCsv()};
  if (fs::is_directory(kData))
    for (const char* dataset : {"h100-ib-cluster-xxrjun", "xla-collective-perf-table"})
      csvs.push_back(kData + "/" + dataset + "/normalized.csv");
  for (const std::string& csv : csvs) {
    SCOPED_TRACE(csv);
    auto original = parseInterchangeCsv(readFile(csv));
    ASSERT_TRUE(original.ok()) << original.error();
    TempDb db;
    auto store = store::Store::open({.path = db.path});
    ASSERT_TRUE(store.ok());
    auto writer = store::Writer::create(**store);
    ASSERT_TRUE(writer.ok());
    auto report = ingestFile(**store, **writer, csv);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_EQ(report->kind, "interchange-csv");
    EXPECT_EQ(report->observations, static_cast<int64_t>(original->size()));
    std::ostringstream out;
    auto n = exportInterchangeCsv(**store, out);
    ASSERT_TRUE(n.ok()) << n.error();
    auto back = parseInterchangeCsv(out.str());
    ASSERT_TRUE(back.ok()) << back.error();
    ASSERT_EQ(back->size(), original->size());
    for (size_t i = 0; i < back->size(); ++i) {
      const InterchangeRow &a = (*original)[i], &b = (*back)[i];
      EXPECT_EQ(formatInterchangeRow(a), formatInterchangeRow(b)) << "row " << i;
    }
  }
  // Quoting survives: commas, quotes and an empty note.
  InterchangeRow tricky;
  tricky.system = "GPU \"X\", 8 per node";
  tricky.collective = "allreduce";
  tricky.n_ranks = 8;
  tricky.n_nodes = 1;
  tricky.bytes = 8;
  tricky.time_us = 1.25;
  const std::string text = std::string(kInterchangeHeader) + "\n" + formatInterchangeRow(tricky) + "\n";
  auto parsed = parseInterchangeCsv(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].system, tricky.system);
  EXPECT_EQ((*parsed)[0].time_us, 1.25);
  EXPECT_TRUE(std::isnan((*parsed)[0].busbw_gbps));
}

// A forced channel count from a sweep's log (both bounds in one line, or NCCL's INFO echo of a single
// NCCL_NCHANNELS) reaches the interchange rows as a configuration of its own; where NCCL's TUNING
// line says it ran fewer channels than asked, the row is what ran.
TEST(IngestChannels, ForcedChannelCountsBecomeArmsOfTheirOwn) {
  TempDb db;
  const std::string eight = "NCCL_ALGO=Ring\nNCCL_PROTO=LL\nNCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8\n" + kAllReduceBody;
  const std::string four = "NCCL_ALGO=Ring\nNCCL_PROTO=LL\nhostA:1:1 [0] NCCL INFO NCCL_NCHANNELS set by environment to 4\n" +
                           kAllReduceBody;
  // Asked for 8, NCCL ran 2 at 1 KiB (its TUNING line), 8 at 1 MiB (no line: the request stands).
  const std::string trimmed = "NCCL_ALGO=Ring\nNCCL_PROTO=LL\nNCCL_MIN_NCHANNELS=8\nNCCL_MAX_NCHANNELS=8\n"
                              "h:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}\n" +
                              kAllReduceBody;
  const Detection d = detectOnly(eight, "/logs/ch8.txt");
  EXPECT_EQ(d.config, "forced RING/LL, forced 8 channels");
  EXPECT_NE(d.from.find("NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8"), std::string::npos) << d.from;
  EXPECT_EQ(parseNcclTestsLog(four, "/logs/ch4.txt").sections.at(0).forced_channels, 4);
  { std::ofstream(db.dir + "/ch8.log") << eight; }
  { std::ofstream(db.dir + "/ch4.log") << four; }
  { std::ofstream(db.dir + "/ch8-trimmed.log") << trimmed; }
  const Ingested in = ingestAndReadBack(db, {"ch8.log", "ch4.log", "ch8-trimmed.log"});
  ASSERT_EQ(in.reports.size(), 3u);
  for (const FileReport& r : in.reports) EXPECT_EQ(r.observations, 4) << r.path;
  std::multiset<std::pair<uint64_t, int>> forced;
  for (const measurements::Measurement& m : in.rows.rows) {
    EXPECT_EQ(m.forcedAlgo, Algo::Ring);
    forced.insert({m.bytes, m.forcedChannels});
  }
  EXPECT_EQ(forced, (std::multiset<std::pair<uint64_t, int>>{{1024, 2}, {1024, 4}, {1024, 8}, {1048576, 4}, {1048576, 8},
                                                             {1048576, 8}}));
  // Two counts at one size are two arms; the same count from two files is two repeats of one.
  for (const measurements::MeasuredPoint& p : measurements::groupRepeats(in.rows.rows)) {
    ASSERT_EQ(p.arms.size(), p.bytes == 1024 ? 3u : 2u) << p.bytes;
    for (const measurements::MeasuredArm& a : p.arms)
      EXPECT_EQ(a.samples_us.size(), p.bytes == 1048576 && a.forcedChannels == 8 ? 2u : 1u);
  }
}

// rccl-tests logs, composed from the format strings of ROCm/rccl-tests (src/common.cu before 2025: no
// '#' on its version line, rank lines without "Group"; 2025: NVIDIA's rank line and the algo/proto/
// nchannels report columns) and librccl's version block (ROCm/rccl src/init.cc): host, numbers,
// substitutions, and the measurement rows keyed as RCCL's.
const std::string kRcclTestsBefore2025 =
    "# nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 1024(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n"
    "#\n"
    "rccl-tests: Version develop:0a1b2c3\n"
    "# Using devices\n"
    "#   Rank  0 Pid  41001 on     node-a device  0 [0000:05:00.0] AMD Instinct MI300X\n"
    "#   Rank  1 Pid  41002 on     node-a device  1 [0000:25:00.0] AMD Instinct MI300X\n"
    "#   Rank  2 Pid  52001 on     node-b device  0 [0000:05:00.0] AMD Instinct MI300X\n"
    "#   Rank  3 Pid  52002 on     node-b device  1 [0000:25:00.0] AMD Instinct MI300X\n"
    "RCCL version : 2.22.3-HEAD:9f8e7d6\n"
    "HIP version  : 6.4.43484-0123456\n"
    "ROCm version : 6.4.2.0-120-abcdef0\n"
    "Hostname     : node-a\n"
    "Librccl path : /opt/rocm/lib/librccl.so.1\n"
    "#\n"
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "        1024           256     float     sum      -1    31.50    0.03    0.05      0    31.20    0.03    0.05      0\n"
    "     1048576        262144     float     sum      -1    98.40   10.66   15.99      0    97.90   10.71   16.07      0\n"
    "# Errors with asterisks indicate errors that have exceeded the maximum threshold.\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 8.04\n";

const std::string kRcclTestsWithReport =
    "NCCL_ALGO=Ring\nNCCL_PROTO=LL128\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 8 minBytes 1024 maxBytes 1048576 step: 1024(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n"
    "#\n"
    "rccl-tests: Version develop:1234abc\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   7001 on     mi355x device  0 [0000:05:00] AMD Instinct MI355X\n"
    "#  Rank  7 Group  0 Pid   7008 on     mi355x device  7 [0000:e5:00] AMD Instinct MI355X\n"
    "mi355x:7001:7001 [0] NCCL INFO RCCL version : 2.28.3-develop:2e42aa8\n"
    "#\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    "      algo     proto   nchannels\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
    "                                \n"
    "        1024           256     float     sum      -1    12.10    0.08    0.15      0    12.00    0.09    0.15      0"
    "      RING        LL           4\n"
    "     1048576        262144     float     sum      -1    40.20   26.08   45.65      0    40.00   26.21   45.88      0"
    "      RING     LL128          32\n"
    "# Collective test concluded: all_reduce_perf\n";

TEST(RcclTestsLog, ReadsTheHostItsVersionAndRankLinesWithoutAGroup) {
  const ParsedLog log = parseNcclTestsLog(kRcclTestsBefore2025, "/logs/all_reduce_perf.txt");
  ASSERT_EQ(log.sections.size(), 1u);
  const NcclTestsSection& s = log.sections[0];
  EXPECT_EQ(s.library, "RCCL");
  EXPECT_EQ(s.nccl_version, "2.22.3");  // the number; RCCL's suffix is a git branch and hash
  EXPECT_EQ(s.collective, "allreduce");
  EXPECT_EQ(s.n_ranks, 4);
  EXPECT_EQ(s.n_nodes, 2);
  EXPECT_EQ(s.gpu_name, "AMD Instinct MI300X");
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(s.rows[1].oop_time_us, 98.40);
  EXPECT_DOUBLE_EQ(s.rows[1].ip_time_us, 97.90);
  EXPECT_FALSE(s.rows[0].reported_algo);
  // NCCL's own logs still say NCCL, with the version word as printed.
  const ParsedLog nccl = parseNcclTestsLog("h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n" + kAllReduceBody, "/x.txt");
  ASSERT_EQ(nccl.sections.size(), 1u);
  EXPECT_EQ(nccl.sections[0].library, "NCCL");
  EXPECT_EQ(nccl.sections[0].nccl_version, "2.21.5+cuda12.4");
}

TEST(RcclTestsLog, ReportColumnsSayWhatRanAndTheStoreKeysTheRowsAsRccls) {
  const ParsedLog log = parseNcclTestsLog(kRcclTestsWithReport, "/logs/ring_ll128.txt");
  ASSERT_EQ(log.sections.size(), 1u);
  const NcclTestsSection& s = log.sections[0];
  EXPECT_EQ(s.library, "RCCL");
  EXPECT_EQ(s.nccl_version, "2.28.3");
  EXPECT_EQ(s.n_ranks, 8);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].reported_algo, Algo::Ring);
  EXPECT_EQ(s.rows[0].reported_proto, Proto::LL);  // RING/LL128 asked, RCCL ran RING/LL at 1 KiB
  EXPECT_EQ(s.rows[0].reported_channels, 4);
  EXPECT_EQ(s.rows[1].reported_proto, Proto::LL128);

  TempDb db;
  { std::ofstream(db.dir + "/ring_ll128.log") << kRcclTestsWithReport; }
  const Ingested in = ingestAndReadBack(db, {"ring_ll128.log"});
  ASSERT_EQ(in.reports.size(), 1u);
  EXPECT_EQ(in.reports[0].observations, 4);
  ASSERT_EQ(in.rows.rows.size(), 2u);
  for (const measurements::Measurement& m : in.rows.rows) {
    EXPECT_TRUE(measurements::measuredOnRccl(m.system)) << m.system;  // replays take RCCL's rules
    EXPECT_EQ(m.forcedAlgo, Algo::Ring);
    EXPECT_EQ(m.forcedProto, m.bytes == 1024 ? Proto::LL : Proto::LL128) << m.bytes << ": the pair that ran";
    EXPECT_NE(m.note.find("channels: a ceiling"), std::string::npos) << m.note;
  }
}

TEST(InterchangeCsv, RejectsMalformedRows) {
  EXPECT_FALSE(parseInterchangeCsv("a,b,c\n1,2,3\n").ok());
  EXPECT_FALSE(parseInterchangeCsv(std::string(kInterchangeHeader) + "\nsys,allreduce,x,1,8,default,default,,,1,1,n\n").ok());
  EXPECT_FALSE(parseInterchangeCsv(std::string(kInterchangeHeader) + "\nsys,allreduce,8,1\n").ok());
}

}  // namespace
}  // namespace dynamiccl::ingest
