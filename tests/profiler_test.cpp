// The profiler role through dlopen, as NCCL drives it: every ABI version, both event orders NCCL
// produces, malformed and missing events, exhausted pool and queue, concurrent emitters, and the
// observations reaching the sinks (the CSV log sink and the SQLite store).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <filesystem>
#include <thread>

#include <sqlite3.h>

#include "store/store.h"
#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::ProfilerColl;
using harness::ProfilerCommSpec;
using harness::ProfilerLibrary;
using harness::ScopedEnv;
using testing::TempFile;

// Environment of one measurement channel: read when the first profiler init starts the worker.
struct ChannelEnv {
  explicit ChannelEnv(const char* records = "4096", const char* queue = "65536", const char* grace_ms = "2000",
                      bool store = false)
      : log("", ".csv"), db("", ".db"), logEnv("DYNAMICCL_OBSERVATION_LOG", log.path().c_str()),
        dbEnv("DYNAMICCL_DB", db.path().c_str()), recordEnv("DYNAMICCL_RECORD", store ? "1" : "0"),
        poolsEnv("DYNAMICCL_PROFILER", (std::string("records=") + records + ",queue=" + queue + ",grace_ms=" + grace_ms).c_str()) {}
  std::vector<std::vector<std::string>> lines() const {
    std::vector<std::vector<std::string>> out;
    std::ifstream in(log.path());
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> fields;
      std::stringstream ss(line);
      for (std::string f; std::getline(ss, f, ',');) fields.push_back(f);
      out.push_back(fields);
    }
    return out;
  }
  TempFile log, db;
  ScopedEnv logEnv, dbEnv, recordEnv, poolsEnv;
};

// CSV columns of the log sink.
enum Col { kComm, kRank, kSeq, kColl, kBytes, kAlgo, kProto, kChannels, kGpuUs, kCpuUs, kTiming, kNRanks };

// The counters of the summary line the plugin logs at its last finalize for that session (v4+: those
// get a logger). Tests clear the capture first, so the last line is theirs.
struct Summary {
  unsigned long long delivered = 0, queueFull = 0, poolFull = 0, unknown = 0, forced = 0, sinkErrors = 0;
};
Summary lastSummary() {
  Summary s;
  for (const std::string& line : harness::LogCapture::lines()) {
    const size_t at = line.find("profiler: ");
    if (at == std::string::npos || line.find("observations delivered") == std::string::npos) continue;
    std::sscanf(line.c_str() + at,
                "profiler: %llu observations delivered; dropped: queue full %llu, record pool full %llu; "
                "unknown handles %llu; forced completions %llu; sink errors %llu",
                &s.delivered, &s.queueFull, &s.poolFull, &s.unknown, &s.forced, &s.sinkErrors);
  }
  return s;
}

std::shared_ptr<ProfilerLibrary> openProfiler(int maxVersion) {
  auto lib = ProfilerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR), maxVersion);
  EXPECT_TRUE(lib.ok()) << (lib.ok() ? "" : lib.error());
  return lib.ok() ? lib.value() : nullptr;
}

// One collective as NCCL 2.28 emits it: Coll start, then per channel KernelCh start(pTimer) /
// KernelChStop(pTimer) / stop; Coll stop either right after start (NCCL's order) or after the channels.
void emitCollective(const ProfilerLibrary& lib, void* ctx, const ProfilerColl& coll,
                    const std::vector<std::pair<uint64_t, uint64_t>>& channelTimes, bool collStopFirst) {
  void* h = nullptr;
  ASSERT_EQ(lib.startColl(ctx, coll, &h), ncclSuccess);
  if (collStopFirst) {
    ASSERT_EQ(lib.stop(h), ncclSuccess);
  }
  for (size_t ch = 0; ch < channelTimes.size(); ++ch) {
    void* k = nullptr;
    ASSERT_EQ(lib.startKernelCh(ctx, h, static_cast<int>(ch), channelTimes[ch].first, &k), ncclSuccess);
    ASSERT_EQ(lib.kernelChStop(k, channelTimes[ch].second), ncclSuccess);
    ASSERT_EQ(lib.stop(k), ncclSuccess);
  }
  if (!collStopFirst) {
    ASSERT_EQ(lib.stop(h), ncclSuccess);
  }
}

class EveryVersion : public ::testing::TestWithParam<int> {};

TEST_P(EveryVersion, MeasuresCollectivesInBothEventOrders) {
  const int v = GetParam();
  ChannelEnv env;
  auto lib = openProfiler(v);
  ASSERT_TRUE(lib);
  ASSERT_EQ(lib->version(), v);
  EXPECT_EQ(lib->name(), "DynamICCL");
  int mask = 0x100;  // a bit someone else set: must survive
  void* ctx = nullptr;
  ProfilerCommSpec spec;
  spec.rank = 3;
  ASSERT_EQ(lib->init(spec, &mask, &ctx), ncclSuccess);
  ASSERT_NE(ctx, nullptr);
  // Rank 3 decides nothing: from v4 (whose init names the rank) no bit is set for it, so NCCL profiles
  // none of its calls; v1-v3 cannot know a leader and profile every call. Others' bits survive.
  EXPECT_EQ(mask, 0x100 | (v >= 4 ? 0 : 2));

  ProfilerColl coll;
  coll.func = "AllGather";
  coll.count = 1024;
  coll.datatype = "ncclFloat16";
  coll.algo = "NVLS_TREE";
  coll.proto = "LL128";
  coll.nChannels = 2;
  coll.rank = 3;
  coll.commHash = v <= 2 ? spec.commId : 0;
  const std::vector<std::pair<uint64_t, uint64_t>> times = {{1'000'000, 5'000'000}, {1'500'000, 6'200'000}};
  coll.seq = 7;
  emitCollective(*lib, ctx, coll, times, /*collStopFirst=*/true);
  coll.seq = 8;
  emitCollective(*lib, ctx, coll, times, /*collStopFirst=*/false);
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);

  const auto lines = env.lines();
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& f = lines[i];
    ASSERT_EQ(f.size(), 12u);
    EXPECT_EQ(f[kSeq], std::to_string(7 + i));
    EXPECT_EQ(f[kRank], "3");
    EXPECT_EQ(f[kColl], "allgather");
    EXPECT_EQ(f[kAlgo], "NVLS_TREE");
    EXPECT_EQ(f[kProto], "LL128");
    EXPECT_EQ(f[kChannels], "2");
    if (v >= 4) {
      EXPECT_EQ(f[kComm], std::to_string(spec.commId));
      EXPECT_EQ(f[kBytes], "16384");  // nccl-tests size: 1024 x 2 B x 8 ranks
      EXPECT_EQ(f[kTiming], "gpu");
      EXPECT_EQ(f[kGpuUs], "5200.000");  // max stop 6.2 ms - min start 1.0 ms
    } else {
      EXPECT_EQ(f[kComm], v <= 2 ? std::to_string(spec.commId) : "0");
      EXPECT_EQ(f[kBytes], "2048");  // no nRanks before v4 (and no tuner context here): per-rank bytes
      EXPECT_EQ(f[kTiming], "host");
      EXPECT_EQ(f[kGpuUs], "0.000");
    }
  }
}

TEST(Profiler, ReadsEveryNcclCollectiveNameAndNoNearMiss) {
  ChannelEnv env;
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  ProfilerColl coll;
  coll.count = 256;
  coll.datatype = "ncclFloat32";
  coll.algo = "RING";
  coll.proto = "SIMPLE";
  coll.nChannels = 1;
  const std::vector<std::pair<uint64_t, uint64_t>> times = {{1'000'000, 2'000'000}};
  for (const char* nearMiss : {"Reduc", "AllReduceX", "allreduce", "SendRecv", ""}) {
    coll.func = nearMiss;
    emitCollective(*lib, ctx, coll, times, /*collStopFirst=*/true);
    ++coll.seq;
  }
  for (int c = 0; c < kNumCollectives; ++c) {
    coll.func = collectiveNcclName(Collective(c)).data();
    emitCollective(*lib, ctx, coll, times, /*collStopFirst=*/true);
    ++coll.seq;
  }
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  const auto lines = env.lines();
  ASSERT_EQ(lines.size(), static_cast<size_t>(kNumCollectives));
  for (int c = 0; c < kNumCollectives; ++c) EXPECT_EQ(lines[c][kColl], collectiveName(Collective(c)));
}

INSTANTIATE_TEST_SUITE_P(Profiler, EveryVersion, ::testing::Values(1, 2, 3, 4, 5, 6, 7));

TEST(Profiler, SurvivesMalformedStaleAndRepeatedEvents) {
  ChannelEnv env;
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  const Summary before{};
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  void* h = reinterpret_cast<void*>(0x1);
  // Null and garbage everywhere NCCL hands us a pointer.
  EXPECT_EQ(lib->startRaw(ctx, &h, nullptr), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(lib->startRaw(ctx, nullptr, nullptr), ncclSuccess);
  EXPECT_EQ(lib->startColl(nullptr, ProfilerColl{}, &h), ncclSuccess);
  EXPECT_EQ(h, nullptr);
  uint64_t notAContext[8] = {42};  // context-sized: the magic check reads 8 bytes, never past a foreign object
  EXPECT_EQ(lib->startColl(&notAContext, ProfilerColl{}, &h), ncclSuccess);
  for (uintptr_t bad : {uintptr_t{1}, uintptr_t{2}, uintptr_t{5}, uintptr_t{0xdeadbeef}, ~uintptr_t{0}}) {
    void* p = reinterpret_cast<void*>(bad);
    EXPECT_EQ(lib->stop(p), ncclSuccess);
    EXPECT_EQ(lib->kernelChStop(p, 123), ncclSuccess);
    void* k = nullptr;
    EXPECT_EQ(lib->startKernelCh(ctx, p, 0, 100, &k), ncclSuccess);
    EXPECT_EQ(k, nullptr);
  }
  EXPECT_EQ(lib->stop(nullptr), ncclSuccess);
  EXPECT_EQ(lib->recordStateRaw(nullptr, 22, nullptr), ncclSuccess);
  // An unknown function (p2p) is not measured; an unknown datatype/algo still is, marked default.
  ProfilerColl p2p;
  p2p.func = "SendRecv";
  EXPECT_EQ(lib->startColl(ctx, p2p, &h), ncclSuccess);
  EXPECT_EQ(h, nullptr);

  // A real collective with repeated stops, a KernelChStop without args, a duplicate channel and a
  // channel arriving after its collective completed: counted, never crashes, measured once.
  ProfilerColl coll;
  coll.nChannels = 1;
  coll.algo = "WHATEVER";
  void* c = nullptr;
  ASSERT_EQ(lib->startColl(ctx, coll, &c), ncclSuccess);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(lib->stop(c), ncclSuccess);
  EXPECT_EQ(lib->stop(c), ncclSuccess);  // repeated
  void* k = nullptr, *dup = nullptr;
  ASSERT_EQ(lib->startKernelCh(ctx, c, 0, 10'000, &k), ncclSuccess);
  ASSERT_EQ(lib->startKernelCh(ctx, c, 0, 10'000, &dup), ncclSuccess);
  EXPECT_EQ(dup, nullptr);
  EXPECT_EQ(lib->recordStateRaw(k, 22, nullptr), ncclSuccess);
  EXPECT_EQ(lib->kernelChStop(k, 30'000), ncclSuccess);
  EXPECT_EQ(lib->stop(k), ncclSuccess);
  EXPECT_EQ(lib->stop(k), ncclSuccess);   // after completion: stale
  EXPECT_EQ(lib->stop(c), ncclSuccess);   // stale
  void* late = nullptr;
  EXPECT_EQ(lib->startKernelCh(ctx, c, 1, 1, &late), ncclSuccess);
  EXPECT_EQ(late, nullptr);
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  EXPECT_EQ(lib->finalize(nullptr), ncclSuccess);
  EXPECT_EQ(lib->finalize(&notAContext), ncclSuccess);

  const auto lines = env.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0][kAlgo], "DEFAULT");
  EXPECT_EQ(lines[0][kGpuUs], "20.000");
  const Summary after = lastSummary();
  EXPECT_GE(after.unknown - before.unknown, 5u * 3 + 4);
}

// A v6 profiler, initialised with a fresh log, and one Coll of `channels` whose host stop has come.
struct StartedColl {
  std::shared_ptr<ProfilerLibrary> lib;
  void* ctx = nullptr;
  void* coll = nullptr;
};
StartedColl startOneColl(int channels) {
  StartedColl s;
  s.lib = openProfiler(6);
  if (!s.lib) return s;
  harness::LogCapture::clear();
  int mask = 0;
  if (s.lib->init({}, &mask, &s.ctx) != ncclSuccess) return s;
  ProfilerColl coll;
  coll.nChannels = channels;
  if (s.lib->startColl(s.ctx, coll, &s.coll) == ncclSuccess) s.lib->stop(s.coll);
  return s;
}

TEST(Profiler, CompletesRecordsWhoseStopsNeverCome) {
  ChannelEnv env("4096", "65536", /*grace_ms=*/"30");
  const Summary before{};
  auto [lib, ctx, a] = startOneColl(4);  // Coll stop arrives, channels never do
  ASSERT_TRUE(lib && ctx && a);
  ProfilerColl coll;
  coll.nChannels = 4;
  void* b = nullptr;
  coll.seq = 1;
  ASSERT_EQ(lib->startColl(ctx, coll, &b), ncclSuccess);  // nothing ever stops: nothing to report
  for (int i = 0; i < 200 && lastSummary().forced == before.forced && env.lines().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto lines = env.lines();  // the sweep completed the first with host timing, before finalize
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0][kTiming], "host");
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  EXPECT_EQ(lastSummary().forced - before.forced, 2u);
  EXPECT_EQ(env.lines().size(), 1u);
}

// NCCL enqueues ahead: a call queued behind long ones starts its kernel seconds after its Coll start
// (13 queued 216 ms calls on an H200). Its record waits for the channels instead of completing on
// host time at the grace, and the grace then counts from its first channel.
TEST(Profiler, QueuedKernelKeepsItsRecordUntilItRuns) {
  ChannelEnv env("4096", "65536", /*grace_ms=*/"100");
  const Summary before{};
  auto [lib, ctx, c] = startOneColl(2);  // the host's enqueue is done; the kernel waits in the stream
  ASSERT_TRUE(lib && ctx && c);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // four graces, the worker sweeping
  void* k0 = nullptr, *k1 = nullptr;
  ASSERT_EQ(lib->startKernelCh(ctx, c, 0, 1'000'000, &k0), ncclSuccess);
  ASSERT_EQ(lib->startKernelCh(ctx, c, 1, 1'000'500, &k1), ncclSuccess);
  ASSERT_NE(k0, nullptr);
  ASSERT_NE(k1, nullptr);
  ASSERT_EQ(lib->kernelChStop(k0, 217'000'000), ncclSuccess);
  ASSERT_EQ(lib->kernelChStop(k1, 217'000'000), ncclSuccess);
  ASSERT_EQ(lib->stop(k0), ncclSuccess);
  ASSERT_EQ(lib->stop(k1), ncclSuccess);
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  const auto lines = env.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0][kTiming], "gpu");
  EXPECT_EQ(lines[0][kGpuUs], "216000.000");
  EXPECT_EQ(lastSummary().forced - before.forced, 0u);
}

TEST(Profiler, ExhaustedRecordPoolDropsAndCounts) {
  ChannelEnv env(/*records=*/"8");
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  const Summary before{};
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  std::vector<void*> handles;
  for (int i = 0; i < 20; ++i) {
    void* h = nullptr;
    ProfilerColl coll;
    coll.seq = i;
    ASSERT_EQ(lib->startColl(ctx, coll, &h), ncclSuccess);
    handles.push_back(h);
  }
  EXPECT_EQ(std::count(handles.begin(), handles.end(), nullptr), 12);
  for (void* h : handles) lib->stop(h);  // the 8 live ones wait for channels; finalize completes them
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  const Summary after = lastSummary();
  EXPECT_EQ(after.poolFull - before.poolFull, 12u);
  EXPECT_EQ(env.lines().size(), 8u);
}

TEST(Profiler, FullQueueDropsWithoutBlocking) {
  ChannelEnv env("4096", /*queue=*/"2");
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  const Summary before{};
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  constexpr int kCalls = 200'000;
  ProfilerColl coll;
  coll.nChannels = 0;  // complete at Coll stop
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    void* h = nullptr;
    coll.seq = i;
    lib->startColl(ctx, coll, &h);
    lib->stop(h);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  const Summary after = lastSummary();
  EXPECT_GT(after.queueFull - before.queueFull, 0u);
  EXPECT_EQ((after.delivered - before.delivered) + (after.queueFull - before.queueFull), unsigned(kCalls));
  EXPECT_EQ(env.lines().size(), after.delivered - before.delivered);
  EXPECT_LT(s, 5.0) << "the producer must never wait for the worker";
}

// One profiler context per rank 0..n-1 (the communicators of a multi-threaded process).
void initRanks(ProfilerLibrary& lib, int n, std::vector<void*>& ctxs) {
  int mask = 0;
  ctxs.assign(n, nullptr);
  for (int t = 0; t < n; ++t) {
    ProfilerCommSpec spec;
    spec.rank = t;
    ASSERT_EQ(lib.init(spec, &mask, &ctxs[t]), ncclSuccess);
  }
}

// Every rank's thread emits `calls` collectives at once (channel times 4 us and 2.8 us when the
// rank's collectives have channels; half the Coll stops before the channels, half after).
void emitFromEveryRank(const ProfilerLibrary& lib, const std::vector<void*>& ctxs, int calls,
                       const std::function<int(int rank)>& nChannelsOf) {
  std::vector<std::thread> threads;
  for (int t = 0; t < static_cast<int>(ctxs.size()); ++t)
    threads.emplace_back([&, t] {
      ProfilerColl coll;
      coll.rank = t;
      coll.nChannels = nChannelsOf(t);
      for (int i = 0; i < calls; ++i) {
        coll.seq = i;
        const uint64_t base = 1'000'000ull * i;
        std::vector<std::pair<uint64_t, uint64_t>> channels;
        if (coll.nChannels) channels = {{base + 100, base + 4100}, {base + 200, base + 3000}};
        emitCollective(lib, ctxs[t], coll, channels, (i & 1) != 0);
      }
    });
  for (auto& th : threads) th.join();
}

TEST(Profiler, ManyThreadsEmitConcurrently) {
  ChannelEnv env;
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  constexpr int kThreads = 8, kCalls = 5000;
  std::vector<void*> ctxs;
  ASSERT_NO_FATAL_FAILURE(initRanks(*lib, kThreads, ctxs));
  emitFromEveryRank(*lib, ctxs, kCalls, [](int) { return 2; });
  for (void* c : ctxs) ASSERT_EQ(lib->finalize(c), ncclSuccess);
  const auto lines = env.lines();
  ASSERT_EQ(lines.size(), size_t{kThreads} * kCalls);
  for (const auto& f : lines) {
    ASSERT_EQ(f[kTiming], "gpu");
    ASSERT_EQ(f[kGpuUs], "4.000");
  }
}

// The sweep forcing records (grace 0: every 10 ms, whatever is open) while threads stop them: a record
// completes once, through whichever side gets there first, and is never reported twice.
TEST(Profiler, SweepRacingStopsCompletesEachRecordOnce) {
  ChannelEnv env("4096", "65536", /*grace_ms=*/"0");
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  constexpr int kThreads = 4, kCalls = 3000;
  std::vector<void*> ctxs;
  ASSERT_NO_FATAL_FAILURE(initRanks(*lib, kThreads, ctxs));
  // Half complete at Coll stop (no channels), half wait for their channels.
  emitFromEveryRank(*lib, ctxs, kCalls, [](int rank) { return rank % 2 ? 2 : 0; });
  for (void* c : ctxs) ASSERT_EQ(lib->finalize(c), ncclSuccess);
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& f : env.lines()) ASSERT_TRUE(seen.emplace(f[kRank], f[kSeq]).second) << f[kRank] << " " << f[kSeq];
  EXPECT_GT(seen.size(), 0u);
  EXPECT_LE(seen.size(), size_t{kThreads} * kCalls);
}

// One rank's profiler from init to finalize: ten allreduces of 4 KiB, 2 us on the GPU.
void profileTenCalls() {
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  ProfilerColl coll;
  for (int i = 0; i < 10; ++i) {
    coll.seq = i;
    emitCollective(*lib, ctx, coll, {{1000, 3000}, {1100, 2500}}, true);
  }
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
}

TEST(Profiler, ObservationsReachTheStore) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  ASSERT_NO_FATAL_FAILURE(profileTenCalls());
  store::StoreOptions options;
  options.path = env.db.path();
  auto db = store::Store::open(options);
  ASSERT_TRUE(db.ok()) << db.error();
  auto stats = db.value()->stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats.value().rows_per_table["observations"], 10);
  EXPECT_EQ(stats.value().rows_per_table["communicators"], 1);
  int measured = 0;
  ASSERT_TRUE(db.value()->forEachMeasurement(true, [&](const store::MeasurementRow& m) {
    ++measured;
    EXPECT_EQ(m.collective, "allreduce");
    EXPECT_EQ(m.bytes, 4096u);
    EXPECT_DOUBLE_EQ(m.time_us, 2.0);
    EXPECT_EQ(m.n_ranks, 8);
  }).ok());
  EXPECT_EQ(measured, 10);
}

// A run's row says which host ran it and what the user fixed (env_json); NCCL's rows read as before.
TEST(Profiler, AStoreRunSaysWhichHostRanAndWhatTheUserFixed) {
  auto envJson = [](const std::string& path) {
    sqlite3* db = nullptr;
    std::string out;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, "SELECT env_json FROM runs", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return out;
  };
  {
    ChannelEnv env("4096", "65536", "2000", /*store=*/true);
    ScopedEnv host("DYNAMICCL_HOST", "rccl"), fixed("NCCL_MAX_NCHANNELS", "16"), proto("RCCL_OVERRIDE_PROTO", "LL");
    ASSERT_NO_FATAL_FAILURE(profileTenCalls());
    EXPECT_EQ(envJson(env.db.path()), R"({"NCCL_MAX_NCHANNELS":"16","RCCL_OVERRIDE_PROTO":"LL","host":"rccl"})");
  }
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  ScopedEnv host("DYNAMICCL_HOST", "nccl"), proto("RCCL_OVERRIDE_PROTO", "LL");
  ASSERT_NO_FATAL_FAILURE(profileTenCalls());
  EXPECT_EQ(envJson(env.db.path()), "{}");
}

// The ranks of a node share its store file: one records, the others record nothing and say why.
TEST(Profiler, OneProcessPerStoreFileRecordsTheOthersSayWhy) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  auto observations = [&] {
    auto db = store::Store::open({.path = env.db.path(), .read_only = true});
    return db.ok() ? (*db)->stats()->rows_per_table["observations"] : -1;
  };
  {
    auto otherRank = store::RecorderLock::tryTake(env.db.path());  // another process of this node records
    ASSERT_TRUE(otherRank.ok() && *otherRank);
    harness::LogCapture::clear();
    ASSERT_NO_FATAL_FAILURE(profileTenCalls());
    EXPECT_LE(observations(), 0);
    size_t said = 0;
    for (const std::string& line : harness::LogCapture::lines())
      said += line.find("another process") != std::string::npos && line.find("records nothing") != std::string::npos;
    EXPECT_EQ(said, 1u) << ::testing::PrintToString(harness::LogCapture::lines());
    // Left to the recorder, not lost: the summary keeps the two apart.
    size_t summaries = 0;
    for (const std::string& line : harness::LogCapture::lines())
      if (line.find("observations delivered") != std::string::npos) {
        ++summaries;
        EXPECT_NE(line.find("not written to store/log 0;"), std::string::npos) << line;
        EXPECT_NE(line.find("left to the node's recorder 10"), std::string::npos) << line;
      }
    EXPECT_EQ(summaries, 1u) << ::testing::PrintToString(harness::LogCapture::lines());
  }
  ASSERT_NO_FATAL_FAILURE(profileTenCalls());  // the lock is free: this process records
  EXPECT_EQ(observations(), 10);

  // A rank with nothing to record (it decides nothing) leaves the file to one that has.
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the sink's first commit
  auto free = store::RecorderLock::tryTake(env.db.path());
  ASSERT_TRUE(free.ok()) << free.error();
  EXPECT_NE(*free, nullptr);
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
}

// A communicator whose tuner runs the rule RING/LL on 4 channels for allreduce up to 8 KiB, and a v5
// profiler context of the same communicator.
struct RuleAndProfiler {
  explicit RuleAndProfiler(uint64_t commId)
      : profile(testing::profileJson(R"({"collective":"allreduce","bytes":[0,8192],"algo":"ring","proto":"ll","channels":4})")),
        profileEnv("DYNAMICCL_PROFILE", profile.path().c_str()),
        tuner(testing::openPlugin(5)),
        comm(tuner->init(harness::CommSpec{commId, 8, 1})),
        lib(openProfiler(5)) {
    ProfilerCommSpec spec;
    spec.commId = commId;
    if (lib && lib->init(spec, &mask, &ctx) != ncclSuccess) ctx = nullptr;
  }
  bool ready() const { return comm.ok() && lib && ctx; }
  TempFile profile;
  ScopedEnv profileEnv;
  std::shared_ptr<harness::TunerLibrary> tuner;
  Expected<std::unique_ptr<harness::TunerComm>> comm;
  std::shared_ptr<ProfilerLibrary> lib;
  int mask = 0;  // NCCL's activation mask: the profiler keeps its address
  void* ctx = nullptr;
};

TEST(Profiler, ObservationsJoinTheTunersDecisionForTheSameCall) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  RuleAndProfiler job(0xfeedbeef);
  ASSERT_TRUE(job.ready());
  auto& comm = job.comm;
  auto& lib = job.lib;
  void* ctx = job.ctx;
  ProfilerColl coll;  // AllReduce of 1024 float32: 4096 bytes, what the tuner was asked about
  coll.algo = "RING";
  coll.proto = "LL";
  for (int i = 0; i < 12; ++i) {
    // Calls 0..9 at 4 KiB (the rule applies), 10..11 at 64 KiB (NCCL's own choice).
    const size_t bytes = i < 10 ? 4096 : 65536;
    (*comm)->decide(4, bytes, harness::allAvailable());
    coll.seq = i;
    coll.count = bytes / 4;
    emitCollective(*lib, ctx, coll, {{1000, 3000}}, true);
  }
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(env.db.path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT seq, algo, proto, n_channels, source, bytes FROM decisions ORDER BY seq", -1,
                               &st, nullptr),
            SQLITE_OK);
  int rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const int seq = sqlite3_column_int(st, 0);
    const std::string source = reinterpret_cast<const char*>(sqlite3_column_text(st, 4));
    EXPECT_EQ(seq, rows);
    if (seq < 10) {
      EXPECT_EQ(source, "table") << seq;
      EXPECT_EQ(sqlite3_column_int(st, 3), 4);
      EXPECT_EQ(sqlite3_column_int64(st, 5), 4096);
    } else {
      EXPECT_EQ(source, "default") << seq;
    }
    ++rows;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_EQ(rows, 12);
}

// A group of two 4 KiB allreduces the tuner decided differently (the rule's RING/LL where NCCL's table
// allows it, NCCL's own choice where it does not), the first left unmeasured because another
// communicator turned the process-wide mask off as the group was enqueued: the measured one is joined
// to its own decision, not its neighbour's, and so are the calls after it.
TEST(Profiler, AGroupedCallMeasuredAfterAMaskChangeJoinsItsOwnDecision) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  constexpr int kRing = 1, kLL = 0;
  RuleAndProfiler job(0xfeedcafe);
  ASSERT_TRUE(job.ready());
  auto& comm = job.comm;
  auto& lib = job.lib;
  void* ctx = job.ctx;
  harness::CostTable noRingLL = harness::allAvailable();
  noRingLL[kRing][kLL] = -1;
  ProfilerColl coll;  // 1024 float32: 4096 bytes
  for (int group = 0; group < 3; ++group) {
    EXPECT_EQ((*comm)->decide(4, 4096, harness::allAvailable()).algo, kRing);  // call 2g: the rule
    const harness::Choice own = (*comm)->decide(4, 4096, noRingLL);                // call 2g+1: NCCL's own
    EXPECT_FALSE(own.algo == kRing && own.proto == kLL);
    if (group == 0) {  // only the second call of the first group measured
      coll.seq = 1;
      coll.algo = "TREE";
      coll.proto = "SIMPLE";
      emitCollective(*lib, ctx, coll, {{1000, 3000}}, true);
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      coll.seq = 2 * group + i;
      coll.algo = i == 0 ? "RING" : "TREE";
      coll.proto = i == 0 ? "LL" : "SIMPLE";
      emitCollective(*lib, ctx, coll, {{1000, 3000}}, true);
    }
  }
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(env.db.path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT o.seq, o.decision_join, d.source, d.algo FROM observations o LEFT JOIN "
                               "decisions d ON d.comm = o.comm AND d.seq = o.seq ORDER BY o.seq",
                               -1, &st, nullptr),
            SQLITE_OK);
  int rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const int seq = sqlite3_column_int(st, 0);
    const auto text = [&](int i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      return t ? std::string(reinterpret_cast<const char*>(t)) : std::string("NULL");
    };
    EXPECT_EQ(text(1), "joined") << "seq " << seq;
    EXPECT_EQ(text(2), seq % 2 == 0 ? "table" : "default") << "seq " << seq << " joined to its neighbour's decision";
    ++rows;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_EQ(rows, 5);
}

// ---- Profiler v7 (NCCL 2.31): symmetric kernels, user tags, KernelPhase events, and the decision join.


// One v7 collective as NCCL 2.31 emits it: Coll start and stop, then per channel KernelCh start, its
// KernelPhase children (initial sync, compute, final sync), KernelChStop and stop.
void emitWithPhases(const ProfilerLibrary& lib, void* ctx, const ProfilerColl& coll, int channels) {
  void* h = nullptr;
  ASSERT_EQ(lib.startColl(ctx, coll, &h), ncclSuccess);
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(lib.stop(h), ncclSuccess);
  for (int ch = 0; ch < channels; ++ch) {
    void* k = nullptr;
    ASSERT_EQ(lib.startKernelCh(ctx, h, ch, 1000, &k), ncclSuccess);
    for (int phase = 0; phase < 3; ++phase)
      ASSERT_EQ(lib.kernelPhase(ctx, k, ch, phase, 1000 + 500 * phase, 1500 + 500 * phase), ncclSuccess);
    ASSERT_EQ(lib.kernelChStop(k, 3000 + 1000 * ch), ncclSuccess);
    ASSERT_EQ(lib.stop(k), ncclSuccess);
  }
}

struct ObservedRow {
  int64_t seq;
  std::string algo, proto, variant, join;
  int64_t sym = -1, tag = -1, version = -1;  // -1: NULL
  double gpu_us = 0;
};

std::vector<ObservedRow> storedObservations(const std::string& path) {
  std::vector<ObservedRow> out;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT seq, algo, proto, coalesce(kernel_variant, ''), coalesce(decision_join, ''), "
                               "coalesce(is_sym_coll, -1), coalesce(user_tag, -1), coalesce(profiler_version, -1), "
                               "gpu_us FROM observations ORDER BY seq",
                               -1, &st, nullptr),
            SQLITE_OK);
  auto text = [&](int i) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i))); };
  while (sqlite3_step(st) == SQLITE_ROW)
    out.push_back({sqlite3_column_int64(st, 0), text(1), text(2), text(3), text(4), sqlite3_column_int64(st, 5),
                   sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7), sqlite3_column_double(st, 8)});
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// Calls 0..3 of a communicator whose tuner chose RING/LL on 4 channels for 4 KiB allreduce: a
// symmetric kernel, an honoured tagged call, a call NCCL ran on TREE, then a call the tuner was never
// asked about. Returns the log lines saying a decision was not honoured.
size_t runV7Job(int maxVersion) {
  TempFile profile(testing::profileJson(
      R"({"collective":"allreduce","bytes":[0,8192],"algo":"ring","proto":"ll","channels":4})"));
  ScopedEnv profileEnv("DYNAMICCL_PROFILE", profile.path().c_str());
  constexpr uint64_t kCommId = 0x7777;
  auto tuner = testing::openPlugin(6);
  auto comm = tuner->init(harness::CommSpec{kCommId, 8, 1});
  EXPECT_TRUE(comm.ok());
  auto lib = openProfiler(maxVersion);
  EXPECT_TRUE(lib);
  if (!lib || !comm.ok()) return 0;
  EXPECT_EQ(lib->version(), maxVersion);
  harness::LogCapture::clear();
  int mask = 0;
  void* ctx = nullptr;
  ProfilerCommSpec spec;
  spec.commId = kCommId;
  ScopedEnv everyCall("DYNAMICCL_BUDGET", "record=1");  // every call profiled, as a diagnostic run asks
  EXPECT_EQ(lib->init(spec, &mask, &ctx), ncclSuccess);
  EXPECT_EQ(mask, 66) << "KernelPhase is not asked for";
  for (int call = 0; call < 3; ++call) {
    const harness::Choice c = (*comm)->decide(4, 4096, harness::allAvailable());
    EXPECT_EQ(c.algo, static_cast<int>(Algo::Ring));
    EXPECT_EQ(c.nChannels, 4);
  }
  ProfilerColl coll;  // 1024 float32: 4096 bytes
  coll.seq = 0;
  coll.kernelVariant = "AllReduce_AGxLL_R";
  coll.isSymColl = true;
  coll.algo = "R";  // what NCCL 2.31 puts there: the variant's suffix
  coll.proto = "";
  coll.nChannels = 2;
  emitWithPhases(*lib, ctx, coll, 2);
  coll = ProfilerColl{};
  coll.algo = "RING";
  coll.proto = "LL";
  coll.nChannels = 4;
  coll.seq = 1;
  coll.userTag = 42;
  emitWithPhases(*lib, ctx, coll, 4);
  coll.seq = 2;
  coll.userTag = 0;
  coll.algo = "TREE";
  emitWithPhases(*lib, ctx, coll, 4);
  coll.seq = 3;  // e.g. a CUDA-graph replay: NCCL ran it, the tuner was asked only three times
  coll.algo = "RING";
  emitWithPhases(*lib, ctx, coll, 4);
  EXPECT_EQ(lib->finalize(ctx), ncclSuccess);
  comm.value().reset();  // the tuner's finalize, which says what share of the profiled calls reached it
  return testing::logLinesMentioning("did not run the plugin's choice");
}

TEST(ProfilerV7, SymmetricKernelsUserTagsAndPhasesRoundTripIntoTheStore) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  const size_t notHonouredLines = runV7Job(7);
  EXPECT_EQ(notHonouredLines, 1u) << "one line per communicator, however many calls"
                                  << ::testing::PrintToString(harness::LogCapture::lines());
  const auto rows = storedObservations(env.db.path());
  ASSERT_EQ(rows.size(), 4u);
  // The symmetric kernel: kept apart (no algorithm/protocol), its variant and GPU time stored.
  EXPECT_EQ(rows[0].sym, 1);
  EXPECT_EQ(rows[0].variant, "AllReduce_AGxLL_R");
  EXPECT_EQ(rows[0].algo, "default");
  EXPECT_EQ(rows[0].proto, "default");
  EXPECT_DOUBLE_EQ(rows[0].gpu_us, 3.0);  // channels 1000..3000 and 1000..4000 ns
  EXPECT_EQ(rows[0].tag, 0);
  EXPECT_EQ(rows[1].sym, 0);
  EXPECT_EQ(rows[1].variant, "");
  EXPECT_EQ(rows[1].tag, 42);
  EXPECT_EQ(rows[1].algo, "RING");
  for (const auto& r : rows) EXPECT_EQ(r.version, 7);
  EXPECT_EQ(rows[0].join, "joined");
  EXPECT_EQ(rows[2].join, "joined");
  EXPECT_EQ(rows[3].join, "not_asked");
}

// The call the tuner was never asked about is no sample and no "not honoured": the tuner's finalize
// says what share of the profiled calls reached it, once per communicator.
TEST(ProfilerV7, TheTunersFinalizeSaysWhatShareOfTheProfiledCallsReachedIt) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  runV7Job(7);
  EXPECT_EQ(testing::logLinesMentioning("reached the tuner"), 1u) << ::testing::PrintToString(harness::LogCapture::lines());
  EXPECT_EQ(testing::logLinesMentioning("3 of 4 profiled calls reached the tuner (75.0%)"), 1u)
      << ::testing::PrintToString(harness::LogCapture::lines());
}

TEST(ProfilerV7, OlderProfilersStoreNullForTheNewFields) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  runV7Job(6);  // the same job through ncclProfiler_v6: NCCL drops the v7 fields and phases
  const auto rows = storedObservations(env.db.path());
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.version, 6);
    EXPECT_EQ(r.sym, -1);
    EXPECT_EQ(r.tag, -1);
    EXPECT_EQ(r.variant, "");
  }
}

TEST(ProfilerV7, KernelPhaseEventsWithGarbageAreIgnoredSafely) {
  ChannelEnv env;
  auto lib = openProfiler(7);
  ASSERT_TRUE(lib);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  ProfilerColl coll;
  coll.nChannels = 1;
  void* h = nullptr;
  ASSERT_EQ(lib->startColl(ctx, coll, &h), ncclSuccess);
  void* k = nullptr;
  ASSERT_EQ(lib->startKernelCh(ctx, h, 0, 1000, &k), ncclSuccess);
  for (uintptr_t bad : {uintptr_t{0}, uintptr_t{1}, uintptr_t{0xdeadbeef}, reinterpret_cast<uintptr_t>(h)})
    EXPECT_EQ(lib->kernelPhase(ctx, reinterpret_cast<void*>(bad), 0, 7, 5, 1), ncclSuccess);
  // A KernelPhase descriptor with a null name, and its stop state sent to our channel and Coll handles.
  ncclProfilerEventDescr_v7_t phase{};
  phase.type = ncclProfileKernelPhase;
  phase.parentObj = k;
  void* ph = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(lib->startRaw(ctx, &ph, &phase), ncclSuccess);
  EXPECT_EQ(ph, nullptr);
  ncclProfilerEventStateArgs_v7_t args{};
  args.kernelCh.pTimer = 1;
  EXPECT_EQ(lib->recordStateRaw(k, ncclProfilerKernelPhaseStop, &args), ncclSuccess);
  EXPECT_EQ(lib->recordStateRaw(h, ncclProfilerKernelPhaseStop, nullptr), ncclSuccess);
  // An event type from the future: no handle, no crash.
  phase.type = uint64_t{1} << 40;
  EXPECT_EQ(lib->startRaw(ctx, &ph, &phase), ncclSuccess);
  EXPECT_EQ(ph, nullptr);
  ASSERT_EQ(lib->kernelChStop(k, 4000), ncclSuccess);
  ASSERT_EQ(lib->stop(k), ncclSuccess);
  ASSERT_EQ(lib->stop(h), ncclSuccess);
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  const auto lines = env.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0][kGpuUs], "3.000") << "the phase stop on a channel handle is not a channel stop";
}

// ---- Bounds: nothing the plugin opens or writes may block finalize, leak across reloads or lose
// observations silently.

// "not written to store/log N" of the last summary line.
unsigned long long lastUnwritten() {
  unsigned long long n = 0;
  for (const std::string& line : harness::LogCapture::lines()) {
    const size_t at = line.find("not written to store/log ");
    if (at != std::string::npos) n = std::stoull(line.substr(at + 25));
  }
  return n;
}

double secondsOf(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A FIFO in a private directory; after `after`, unless released first, a watchdog opens its other end
// so that code blocked on it returns (the test then fails on time instead of hanging).
class WatchedFifo {
 public:
  explicit WatchedFifo(int watchdogFlags, std::chrono::seconds after = std::chrono::seconds(3)) {
    char dir[] = "/tmp/dynamiccl-fifo-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/fifo";
    EXPECT_EQ(mkfifo(path_.c_str(), 0600), 0);
    watchdog_ = std::thread([this, watchdogFlags, after] {
      const auto until = std::chrono::steady_clock::now() + after;
      while (!released_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!released_) fd_ = ::open(path_.c_str(), watchdogFlags | O_NONBLOCK);
    });
  }
  ~WatchedFifo() {
    released_ = true;
    watchdog_.join();
    if (fd_ >= 0) ::close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  std::atomic<bool> released_{false};
  int fd_ = -1;
  std::thread watchdog_;
};

void emitSome(const ProfilerLibrary& lib, void* ctx, int n, int firstSeq = 0) {
  ProfilerColl coll;
  for (int i = 0; i < n; ++i) {
    coll.seq = firstSeq + i;
    emitCollective(lib, ctx, coll, {{1000, 3000}}, true);
  }
}

// A FIFO where the plugin expects a file: finalize stays bounded and one line says why.
void expectFifoRefusedAndFinalizeBounded(const char* variable, int fifoPeerMode) {
  WatchedFifo fifo(fifoPeerMode);
  ScopedEnv named(variable, fifo.path().c_str());
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  emitSome(*lib, ctx, 3);
  EXPECT_LT(secondsOf([&] { lib->finalize(ctx); }), 1.0);
  EXPECT_EQ(testing::logLinesMentioning("not a regular file"), 1u) << ::testing::PrintToString(harness::LogCapture::lines());
}

TEST(ProfilerBounds, ObservationLogNamingAFifoNeverBlocksFinalize) {
  ChannelEnv env;
  expectFifoRefusedAndFinalizeBounded("DYNAMICCL_OBSERVATION_LOG", O_RDONLY);  // a reader would let a blocked open() go on
}

TEST(ProfilerBounds, StorePathNamingAFifoNeverBlocksFinalize) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  // A writer that closes gives SQLite's blocked read an end of file.
  expectFifoRefusedAndFinalizeBounded("DYNAMICCL_DB", O_WRONLY);
}

TEST(ProfilerBounds, ObservationLogWriteFailuresAreCountedAndSaidOnce) {
  ChannelEnv env;  // its log file exists before the size limit below
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  // A full disk, as the file size limit makes it: write() fails (EFBIG) after 64 bytes.
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto oldSignal = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  for (int batch = 0; batch < 3; ++batch) {  // several batches fail: one line, every loss counted
    emitSome(*lib, ctx, 5, batch * 5);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, oldSignal);
  EXPECT_EQ(testing::logLinesMentioning("cannot write DYNAMICCL_OBSERVATION_LOG"), 1u)
      << ::testing::PrintToString(harness::LogCapture::lines());
  EXPECT_GE(lastUnwritten(), 10u);
}

TEST(ProfilerBounds, FinalizeIsBoundedWhileAnotherProcessHoldsTheStoreWriteLock) {
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  // The store opens at the first rows to record: wait until one is in, then take the write lock.
  emitSome(*lib, ctx, 1);
  sqlite3* other = nullptr;
  int rows = 0;
  for (int i = 0; i < 500 && rows == 0; ++i) {
    if (!other && std::filesystem::exists(env.db.path()) && sqlite3_open(env.db.path().c_str(), &other) == SQLITE_OK)
      sqlite3_busy_timeout(other, 5000);
    if (other)
      sqlite3_exec(other, "SELECT count(*) FROM observations", [](void* n, int, char** v, char**) {
        *static_cast<int*>(n) = std::atoi(v[0]);
        return 0;
      }, &rows, nullptr);
    if (rows == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(rows, 1);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  harness::LogCapture::clear();
  emitSome(*lib, ctx, 10, 1);
  EXPECT_LT(secondsOf([&] { lib->finalize(ctx); }), 1.0);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(lastUnwritten(), 10u) << ::testing::PrintToString(harness::LogCapture::lines());
}

TEST(ProfilerBounds, FinalizeIsBoundedWhileAReaderHoldsARollbackJournalStore) {
  // Switching such a store to WAL needs it exclusively: the worker retried for 60 s.
  ChannelEnv env("4096", "65536", "2000", /*store=*/true);
  sqlite3* reader = nullptr;
  ASSERT_EQ(sqlite3_open(env.db.path().c_str(), &reader), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "PRAGMA journal_mode=DELETE; CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr,
                         nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT * FROM t;", nullptr, nullptr, nullptr), SQLITE_OK);
  auto lib = openProfiler(5);
  ASSERT_TRUE(lib);
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
  emitSome(*lib, ctx, 5);
  EXPECT_LT(secondsOf([&] { lib->finalize(ctx); }), 1.0);
  sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(reader);
}

long residentKb() {
  long pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

TEST(ProfilerBounds, MemoryStaysFlatOverLoadUnloadCycles) {
  // NCCL unloads the plugin when the last communicator is destroyed and loads it again for the next.
  ChannelEnv env;
  auto cycle = [] {
    auto lib = openProfiler(5);
    ASSERT_TRUE(lib);
    int mask = 0;
    void* ctx = nullptr;
    ASSERT_EQ(lib->init({}, &mask, &ctx), ncclSuccess);
    emitSome(*lib, ctx, 2);
    ASSERT_EQ(lib->finalize(ctx), ncclSuccess);
  };  // the library is dlclosed here
  for (int i = 0; i < 5; ++i) cycle();
  const long before = residentKb();
  for (int i = 0; i < 100; ++i) cycle();
  EXPECT_LT(residentKb() - before, 16 * 1024) << "kB resident growth over 100 load/unload cycles";
}

}  // namespace
}  // namespace dynamiccl
