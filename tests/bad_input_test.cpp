// Bad input never hurts the job: one clear warning through NCCL's logger and NCCL's table untouched.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::CostTable;
using harness::LogCapture;
using harness::ScopedEnv;
using testing::openPlugin;
using testing::profileJson;
using testing::TempFile;

// Drives every size and collective through getCollInfo and asserts NCCL's table came back untouched.
void expectNcclTableUntouched(harness::TunerComm& comm, const CostTable& table) {
  for (int coll = 0; coll < 5; ++coll)
    for (size_t n = 1; n < (size_t{1} << 36); n *= 7) {
      CostTable copy = table;
      int nChannels = 0;
      ASSERT_EQ(comm.getCollInfo(coll, n, 1, 0, copy, &nChannels), ncclSuccess);
      ASSERT_EQ(0, std::memcmp(copy.data(), table.data(), sizeof table)) << "coll " << coll << " n " << n;
      ASSERT_EQ(nChannels, 0);
    }
}

struct BadProfile {
  const char* name;
  std::string content;
  const char* expectInWarning;
};

class BadProfileKeepsNccl : public ::testing::TestWithParam<BadProfile> {};

TEST_P(BadProfileKeepsNccl, OneWarningAndNcclTableUntouched) {
  TempFile file(GetParam().content);
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", nullptr);
  LogCapture::clear();
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  std::vector<std::unique_ptr<harness::TunerComm>> comms;
  for (int i = 0; i < 3; ++i) {  // several communicators: still one warning for the process
    auto comm = lib->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok()) << comm.error();
    comms.push_back(std::move(comm.value()));
  }
  expectNcclTableUntouched(*comms[0], harness::allAvailable());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u);
  EXPECT_EQ(testing::logLinesMentioning(GetParam().expectInWarning), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(testing::logLinesMentioning("NCCL's own choices stand"), 1u);
}

TEST_P(BadProfileKeepsNccl, StrictModeFailsInit) {
  TempFile file(GetParam().content);
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", "1");
  auto lib = openPlugin();
  auto comm = lib->init(harness::CommSpec{});
  EXPECT_FALSE(comm.ok());
  EXPECT_EQ(lib->lastInitResult(), ncclInvalidUsage);
}

const BadProfile kBadProfiles[] = {
    {"corrupt_json", "{\"format\":\"dynamiccl-profile\",\"version\":1,\"rules\":[{\"algo\":", "not valid JSON"},
    {"binary_garbage", std::string("\x7f" "ELF\x01\x02\x00\xff\xfe", 9), "line 1"},
    {"unknown_algo", profileJson(R"({"algo":"ringg","proto":"ll"})"), "unknown algo"},
    {"inverted_range", profileJson(R"({"bytes":[9,1],"algo":"ring","proto":"ll"})"), "inverted"},
    {"negative_channels", profileJson(R"({"algo":"ring","proto":"ll","channels":-4})"), "channels"},
    {"nan", profileJson(R"({"algo":"ring","proto":"ll","confidence":NaN})"), "not valid JSON"},
    {"newer_version", R"({"format":"dynamiccl-profile","version":7,"rules":[]})", "newer"},
    {"csv_unknown_name", "allreduce,0,100,ring,lll,-1,-1,-1\n", "unknown protocol"},
    // Deep nesting crashed init through unbounded recursion (stack overflow), in "policy" or anywhere.
    {"deep_policy",
     R"({"format":"dynamiccl-profile","version":1,"rules":[],"policy":)" + std::string(100000, '[') +
         std::string(100000, ']') + "}",
     "nests deeper than"},
    {"deep_rule", profileJson(R"({"algo":"ring","proto":"ll","note":)" + std::string(100000, '[') +
                              std::string(100000, ']') + "}"),
     "nests deeper than"},
    {"fingerprint_missing_fact",
     R"({"format":"dynamiccl-profile","version":1,"fingerprint":{"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8},)"
     R"("rules":[{"algo":"ring","proto":"ll"}]})",
     "fingerprint: missing \"nic_GBps\""},
};

INSTANTIATE_TEST_SUITE_P(Profiles, BadProfileKeepsNccl, ::testing::ValuesIn(kBadProfiles),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BadInput, MissingFile) {
  ScopedEnv env("DYNAMICCL_PROFILE", "/nonexistent/dir/profile.json");
  ScopedEnv strict("DYNAMICCL_STRICT", nullptr);
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  expectNcclTableUntouched(**comm, harness::allAvailable());
  EXPECT_EQ(testing::logLinesMentioning("/nonexistent/dir/profile.json"), 1u);
}

TEST(BadInput, UnreadablePath) {
  // A directory cannot be read as a file (a chmod 000 file would still be readable by root).
  char dir[] = "/tmp/dynamiccl-dir-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ScopedEnv env("DYNAMICCL_PROFILE", dir);
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  expectNcclTableUntouched(**comm, harness::allAvailable());
  EXPECT_EQ(testing::logLinesMentioning("not a regular file"), 1u);
  rmdir(dir);
}

TEST(BadInput, FifoNeverBlocksInit) {
  // A named pipe with no writer would block a plain open/read forever inside NCCL's init.
  char dir[] = "/tmp/dynamiccl-fifo-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/profile.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ScopedEnv env("DYNAMICCL_PROFILE", fifo.c_str());
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  expectNcclTableUntouched(**comm, harness::allAvailable());
  EXPECT_EQ(testing::logLinesMentioning("not a regular file"), 1u);
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST(BadInput, JsonWithByteOrderMarkIsAccepted) {
  // Editors on Windows prefix a UTF-8 BOM; the profile was refused as bad CSV.
  TempFile file("\xEF\xBB\xBF" + profileJson(R"({"algo":"ring","proto":"simple","channels":4})"));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 0u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ((*comm)->decide(4, 4096, harness::allAvailable()), (harness::Choice{1, 2, 4}));
}

// The profile is read by the first communicator's init: the "loaded" line says what that cost. A file
// over 1 MiB (60k rules with evidence: tens of MB of JSON) is parsed off the init path: init says so,
// and the loaded line, once the parse ends, says what the parse cost.
TEST(BadInput, TheLoadedLineSaysWhatReadingTheProfileCost) {
  std::string rules;
  for (int i = 0; i < 60000; ++i)
    rules += std::string(i ? "," : "") + R"({"collective":"allreduce","bytes":[)" + std::to_string(i * 1000) + "," +
             std::to_string(i * 1000 + 999) +
             R"(],"algo":"ring","proto":"ll","channels":4,"evidence":{"provenance":"measured-offline","fingerprint":)"
             R"({"gpu_cc":90,"nvlink_GBps":450,"nics_per_node":8,"nic_GBps":50,"source":"a long description of the )"
             R"(cluster this was measured on, as the probe wrote it down"},"nccl_version":"2.28.9","samples":27,)"
             R"("default_samples":27,"gain":0.125,"gain_ci":[0.0625,0.1875],"date":"2026-11-20T10:00:00Z"}})";
  TempFile big(R"({"format":"dynamiccl-profile","version":2,"name":"big","rules":[)" + rules + "]}");
  TempFile small(profileJson(R"({"algo":"ring","proto":"simple","channels":4})", "small"));
  for (const TempFile* file : {&small, &big}) {
    ScopedEnv env("DYNAMICCL_PROFILE", file->path().c_str());
    LogCapture::clear();
    auto lib = openPlugin();
    ASSERT_TRUE(lib);
    const auto t0 = std::chrono::steady_clock::now();
    auto comm = lib->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
    const double initMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (file == &big) {
      EXPECT_EQ(testing::logLinesMentioning("is parsed off NCCL's init path"), 1u) << ::testing::PrintToString(LogCapture::lines());
      for (int i = 0; i <= 1000; ++i) (*comm)->decide(4, 4096, harness::allAvailable());  // the switch waits for the parse
    }
    std::vector<std::string> loaded;
    for (const std::string& l : LogCapture::lines())
      if (l.find(" loaded from ") != std::string::npos) loaded.push_back(l);
    ASSERT_EQ(loaded.size(), 1u) << ::testing::PrintToString(LogCapture::lines());
    EXPECT_NE(loaded[0].find(" ms"), std::string::npos) << loaded[0];
    if (file == &big) {
      EXPECT_NE(loaded[0].find("parsed in "), std::string::npos) << loaded[0];
      EXPECT_NE(loaded[0].find("off NCCL's init path"), std::string::npos) << loaded[0];
      continue;
    }
    EXPECT_NE(loaded[0].find("read in "), std::string::npos) << loaded[0];
    if (initMs < 50) {
      EXPECT_EQ(loaded[0].find("over the 50 ms budget"), std::string::npos) << loaded[0];
    }
  }
}

TEST(BadInput, OversizedFileIsRefusedUnread) {
  TempFile file("");
  ASSERT_EQ(truncate(file.path().c_str(), 100ll << 20), 0);  // sparse 100 MiB
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  expectNcclTableUntouched(**comm, harness::allAvailable());
  EXPECT_EQ(testing::logLinesMentioning("limit"), 1u);
}

TEST(BadInput, NvidiaCsvThroughItsOwnVariable) {
  TempFile csv("allreduce,0,100,ring,ll,-1,-1,-1,x\n", ".conf");
  ScopedEnv env("DYNAMICCL_PROFILE", nullptr);
  ScopedEnv env2("NCCL_TUNER_CONFIG_FILE", csv.path().c_str());
  LogCapture::clear();
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  expectNcclTableUntouched(**comm, harness::allAvailable());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u);
}

class OddCostTable : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = std::make_unique<TempFile>(profileJson(R"({"algo":"ring","proto":"simple","channels":4})"));
    env_ = std::make_unique<ScopedEnv>("DYNAMICCL_PROFILE", file_->path().c_str());
    LogCapture::clear();
    auto comm = openPlugin()->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
    comm_ = std::move(comm.value());
  }
  std::unique_ptr<TempFile> file_;
  std::unique_ptr<ScopedEnv> env_;
  std::unique_ptr<harness::TunerComm> comm_;
};

TEST_F(OddCostTable, AllIgnored) {
  expectNcclTableUntouched(*comm_, harness::allIgnored());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 0u) << "an all-IGNORE table is NCCL's business, not an error of ours";
}

TEST_F(OddCostTable, NaNAndInfinity) {
  CostTable t = harness::allAvailable();
  t[3][0] = std::nanf("");
  for (int i = 0; i < 3; ++i) {
    CostTable copy = t;
    int nChannels = 0;
    EXPECT_EQ(comm_->getCollInfo(4, 4096, 1, 0, copy, &nChannels), ncclSuccess);
    EXPECT_EQ(0, std::memcmp(copy.data(), t.data(), sizeof t));
    EXPECT_EQ(nChannels, 0);
  }
  t[3][0] = INFINITY;
  expectNcclTableUntouched(*comm_, t);
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u) << "one line, not one per call";
}

TEST(BadInput, NaNCostTableWarnsOncePerProcess) {
  TempFile file(profileJson(R"({"algo":"ring","proto":"simple","channels":4})"));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  LogCapture::clear();
  auto lib = openPlugin();
  CostTable t = harness::allAvailable();
  t[3][0] = std::nanf("");
  for (int i = 0; i < 20; ++i) {  // jobs create hundreds of communicators: one line, not one each
    auto comm = lib->init(harness::CommSpec{static_cast<uint64_t>(100 + i), 8, 1});
    ASSERT_TRUE(comm.ok());
    CostTable copy = t;
    int nChannels = 0;
    EXPECT_EQ((*comm)->getCollInfo(4, 4096, 1, 0, copy, &nChannels), ncclSuccess);
    EXPECT_EQ(0, std::memcmp(copy.data(), t.data(), sizeof t));
  }
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u) << ::testing::PrintToString(LogCapture::lines());
}

TEST_F(OddCostTable, WrongShapeOrNullArguments) {
  float raw[7][3];
  for (auto& row : raw)
    for (float& v : row) v = 5.0f;
  int nChannels = 0;
  for (auto [na, np] : {std::pair{6, 3}, std::pair{7, 2}, std::pair{8, 4}, std::pair{0, 0}, std::pair{-1, 3}}) {
    EXPECT_EQ(comm_->getCollInfoRaw(4, 4096, 1, reinterpret_cast<float**>(raw), na, np, 0, &nChannels), ncclSuccess);
    for (auto& row : raw)
      for (float v : row) EXPECT_EQ(v, 5.0f);
    EXPECT_EQ(nChannels, 0);
  }
  EXPECT_EQ(comm_->getCollInfoRaw(4, 4096, 1, nullptr, 7, 3, 0, &nChannels), ncclSuccess);
  EXPECT_EQ(comm_->getCollInfoRaw(4, 4096, 1, reinterpret_cast<float**>(raw), 7, 3, 0, nullptr), ncclSuccess);
  for (auto& row : raw)
    for (float v : row) EXPECT_EQ(v, 5.0f);
  EXPECT_LE(LogCapture::count(NCCL_LOG_WARN), 1u);
}

TEST(Concurrency, ManyCommunicatorsFromSeveralThreads) {
  TempFile profile(profileJson(R"({"collective":"allreduce","bytes":[0,65535],"algo":"tree","proto":"ll"},
                                  {"collective":"allreduce","algo":"ring","proto":"simple","channels":16})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const CostTable table = harness::allAvailable();
      for (int i = 0; i < 300; ++i) {
        auto comm = lib->init(harness::CommSpec{static_cast<uint64_t>(t * 1000 + i), 8 + t, 1 + t % 3});
        if (!comm.ok()) {
          ++failures;
          continue;
        }
        if ((*comm)->decide(4, 1024, table) != harness::Choice{0, 0, 0}) ++mismatches;
        if ((*comm)->decide(4, 1 << 20, table) != harness::Choice{1, 2, 16}) ++mismatches;
      }  // each communicator finalized here, while others are created
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}


// DYNAMICCL_ONLINE=1 without the profiler role: no rank measures, so no leader ever publishes; the
// first epoch boundary used to block getCollInfo for DYNAMICCL_EPOCH_TIMEOUT_MS. Now refused at init.
TEST(BadInput, OnlineWithoutTheProfilerRoleIsRefusedNeverBlocks) {
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"ring","proto":"simple"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  ScopedEnv online("DYNAMICCL_ONLINE", "1"), calls("DYNAMICCL_EPOCH_CALLS", "10"),
      timeout("DYNAMICCL_EPOCH_TIMEOUT_MS", "3000"), noProfiler("NCCL_PROFILER_PLUGIN", nullptr),
      noDir("DYNAMICCL_COORD_DIR", nullptr), noEtcd("DYNAMICCL_ETCD", nullptr), record("DYNAMICCL_RECORD", "0");
  LogCapture::clear();
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  harness::CommSpec spec;
  spec.commId = 0x0badc0de0000ull ^ static_cast<uint64_t>(getpid());  // no record left by an earlier run
  auto comm = lib->init(spec);
  ASSERT_TRUE(comm.ok()) << comm.error();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 35; ++i) ASSERT_EQ((*comm)->decide(4, 1 << 20, harness::allAvailable()), (harness::Choice{1, 2, 0}));
  const auto took_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took_ms, 1000) << "getCollInfo waited at an epoch boundary";
  EXPECT_EQ(testing::logLinesMentioning("DYNAMICCL_ONLINE=1 refused"), 1u) << ::testing::PrintToString(LogCapture::lines());
}

// The one exception boundary: an exception inside any entry point of either role is logged once and
// NCCL gets success with its own choice (DYNAMICCL_TEST=throw=ENTRY makes the entry point throw).
class ThrowingEntry : public ::testing::TestWithParam<const char*> {};

TEST_P(ThrowingEntry, TunerEntryLogsOnceAndLeavesNcclsChoice) {
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"ring","proto":"simple","channels":4,"chunk":131072})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  ScopedEnv hook("DYNAMICCL_TEST", (std::string("throw=") + GetParam()).c_str());
  LogCapture::clear();
  auto lib = openPlugin();
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok()) << comm.error();
  const CostTable nccl = harness::ncclPicks(0, 0);
  for (int i = 0; i < 3; ++i) {
    CostTable copy = nccl;
    int nChannels = 0;
    ASSERT_EQ((*comm)->getCollInfo(4, 1 << 20, 1, 0, copy, &nChannels), ncclSuccess);
    size_t chunk = 12345;
    ASSERT_EQ((*comm)->getChunkSize(4, 1 << 20, 1, 2, 4, &chunk), ncclSuccess);
    const std::string entry = GetParam();
    if (entry == "init" || entry == "getCollInfo") {  // they throw before deciding anything
      EXPECT_EQ(0, std::memcmp(copy.data(), nccl.data(), sizeof nccl));
      EXPECT_EQ(nChannels, 0);
    }
    if (entry != "finalize") {
      EXPECT_EQ(chunk, 12345u);
    }
  }
  comm->reset();  // finalize
  EXPECT_EQ(testing::logLinesMentioning(std::string(GetParam()) + ": internal error caught"), 1u)
      << ::testing::PrintToString(LogCapture::lines());
}

INSTANTIATE_TEST_SUITE_P(Tuner, ThrowingEntry, ::testing::Values("init", "getCollInfo", "getChunkSize", "finalize"));

class ThrowingProfilerEntry : public ::testing::TestWithParam<const char*> {};

TEST_P(ThrowingProfilerEntry, ProfilerEntryLogsOnceAndReturnsSuccess) {
  ScopedEnv hook("DYNAMICCL_TEST", (std::string("throw=") + GetParam()).c_str());
  ScopedEnv record("DYNAMICCL_RECORD", "0");
  LogCapture::clear();
  auto prof = harness::ProfilerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR));
  ASSERT_TRUE(prof.ok()) << prof.error();
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ((*prof)->init({}, &mask, &ctx), ncclSuccess);
  for (int i = 0; i < 3; ++i) {
    void* coll = nullptr;
    void* channel = nullptr;
    EXPECT_EQ((*prof)->startColl(ctx, harness::ProfilerColl{}, &coll), ncclSuccess);
    EXPECT_EQ((*prof)->startKernelCh(ctx, coll, 0, 1000, &channel), ncclSuccess);
    EXPECT_EQ((*prof)->kernelChStop(channel, 2000), ncclSuccess);
    EXPECT_EQ((*prof)->stop(channel), ncclSuccess);
    EXPECT_EQ((*prof)->stop(coll), ncclSuccess);
  }
  EXPECT_EQ((*prof)->finalize(ctx), ncclSuccess);
  EXPECT_EQ(testing::logLinesMentioning(std::string(GetParam()) + ": internal error caught"), 1u)
      << ::testing::PrintToString(LogCapture::lines());
}

INSTANTIATE_TEST_SUITE_P(Profiler, ThrowingProfilerEntry,
                         ::testing::Values("profilerInit", "startEvent", "stopEvent", "recordEventState",
                                           "profilerFinalize"));

}  // namespace
}  // namespace dynamiccl
