// RCCL as the host: the built library driven through dlopen as AMD's RCCL drives a tuner, by the
// rules in shared/RCCL_FACTS.md (never RCCL's code): each release's symbol order; init with RCCL's
// constants layout (NCCL's prefix, then bwRatio[2][7][3]) in a buffer freed right after init; 7x3,
// 7x4 and 8x4 tables with RCCL's IGNORE patterns; collective ids 5-18; the chosen cell exactly 0.0,
// the table's only zero; no negative cost written; no chunk size; what the user fixed stands.
// Deliberately without the harness, whose exported ncclGetVersion speaks for NCCL.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "abi/abi.h"

namespace {

using dynamiccl::abi::kRcclLoaders;

constexpr int kAllReduce = 4, kAllGather = 2;
constexpr int kTree = 0, kRing = 1, kLL = 0, kLL128 = 1, kSimple = 2;

std::mutex gMutex;
std::vector<std::string> gLines;

void capture(ncclDebugLogLevel, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::lock_guard lock(gMutex);
  gLines.emplace_back(buf);
}
int linesWith(const std::string& text) {
  std::lock_guard lock(gMutex);
  int n = 0;
  for (const std::string& l : gLines) n += l.find(text) != std::string::npos;
  return n;
}

void* plugin() {
  static void* lib = dlopen(DYNAMICCL_PLUGIN_DIR "/libnccl-tuner-dynamiccl.so", RTLD_NOW | RTLD_LOCAL);
  return lib;
}

// A profile of its own per test (the plugin re-reads a profile only when the path changes).
class Profile {
 public:
  explicit Profile(const std::string& rules) {
    char name[] = "/tmp/dynamiccl-rccl-XXXXXX";
    const int fd = mkstemp(name);
    close(fd);
    path_ = name;
    std::ofstream(path_) << R"({"format":"dynamiccl-profile","version":1,"name":"rccl","rules":[)" << rules << "]}";
    setenv("DYNAMICCL_PROFILE", path_.c_str(), 1);
  }
  ~Profile() { std::remove(path_.c_str()); }

 private:
  std::string path_;
};

// RCCL's environment: the host named (unless a test looks it up), hand-written rules trusted, one
// process playing the communicator, nothing the user fixed.
void rcclEnvironment(const char* host = "rccl", const char* version = "2.31.2") {
  {
    std::lock_guard lock(gMutex);
    gLines.clear();  // each test counts its own lines (one process may run them all)
  }
  if (host) setenv("DYNAMICCL_HOST", host, 1);
  else unsetenv("DYNAMICCL_HOST");
  if (version) setenv("DYNAMICCL_NCCL_VERSION", version, 1);
  else unsetenv("DYNAMICCL_NCCL_VERSION");
  setenv("DYNAMICCL_TRUST", "all", 1);
  setenv("DYNAMICCL_INPUTS_CHECK", "0", 1);
  setenv("DYNAMICCL_RECORD", "0", 1);
  for (const char* v : {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "RCCL_OVERRIDE_ALGO", "RCCL_OVERRIDE_PROTO",
                        "DYNAMICCL_ONLINE", "DYNAMICCL_VERIFY", "NCCL_TUNER_CONFIG_FILE"})
    unsetenv(v);
}

// RCCL's constants: NCCL's v5 prefix, then double bwRatio[2][7][3], here a guard pattern.
constexpr size_t kGuardDoubles = 2 * 7 * 3;
struct RcclConstants {
  unsigned char* bytes;
  RcclConstants() : bytes(static_cast<unsigned char*>(std::malloc(size()))) {
    auto* prefix = reinterpret_cast<double*>(bytes);
    for (size_t i = 0; i < sizeof(ncclTunerConstants_v5_t) / sizeof(double); ++i) prefix[i] = 1.0 + static_cast<double>(i);
    std::memset(bytes + sizeof(ncclTunerConstants_v5_t), 0xA5, kGuardDoubles * sizeof(double));
  }
  static size_t size() { return sizeof(ncclTunerConstants_v5_t) + kGuardDoubles * sizeof(double); }
  bool guardIntact() const {
    for (size_t i = sizeof(ncclTunerConstants_v5_t); i < size(); ++i)
      if (bytes[i] != 0xA5) return false;
    return true;
  }
  bool prefixIntact() const {
    const auto* prefix = reinterpret_cast<const double*>(bytes);
    for (size_t i = 0; i < sizeof(ncclTunerConstants_v5_t) / sizeof(double); ++i)
      if (prefix[i] != 1.0 + static_cast<double>(i)) return false;
    return true;
  }
  auto* asV5() { return reinterpret_cast<ncclTunerConstants_v5_t*>(bytes); }
};

// One communicator through one tuner interface version, as RCCL's loader for that version calls it.
class Comm {
 public:
  explicit Comm(int version, size_t nRanks = 8) : version_(version) {
    char sym[32];
    std::snprintf(sym, sizeof sym, "ncclTunerPlugin_v%d", version);
    symbol_ = dlsym(plugin(), sym);
    if (!symbol_) return;
    ncclNvlDomainInfo_v5_t nvl{1, static_cast<int>(nRanks), static_cast<int>(nRanks)};
    ncclResult_t r = ncclInternalError;
    if (version <= 4) {  // v2, v3, v4 share the init signature
      r = static_cast<const ncclTuner_v4_t*>(symbol_)->init(nRanks, 1, &capture, &ctx_);
    } else {
      RcclConstants constants;  // RCCL 2.31 hands init a stack copy: gone once init returns
      r = version == 5 ? static_cast<const ncclTuner_v5_t*>(symbol_)->init(&ctx_, 0xabc, nRanks, 1, &capture, &nvl, constants.asV5())
                       : static_cast<const ncclTuner_v6_t*>(symbol_)->init(&ctx_, 0xabc, nRanks, 1, &capture, &nvl, constants.asV5());
      guardIntact_ = constants.guardIntact();
      prefixIntact_ = constants.prefixIntact();
      std::free(constants.bytes);
    }
    ok_ = r == ncclSuccess && ctx_;
  }
  ~Comm() {
    if (!ok_) return;
    if (version_ <= 4) static_cast<const ncclTuner_v4_t*>(symbol_)->destroy(ctx_);
    else static_cast<const ncclTuner_v5_t*>(symbol_)->finalize(ctx_);
  }
  bool ok() const { return ok_; }
  bool guardIntact() const { return guardIntact_; }
  bool prefixIntact() const { return prefixIntact_; }

  ncclResult_t getCollInfo(int coll, size_t nBytes, std::vector<float>& table, int numAlgo, int numProto, int* nChannels) {
    ncclFunc_t f;
    std::memcpy(&f, &coll, sizeof f);  // ids beyond ncclFunc_t's enumerators, as the host passes them
    float** t = reinterpret_cast<float**>(table.data());
    if (version_ == 3) return static_cast<const ncclTuner_v3_t*>(symbol_)->getCollInfo(ctx_, f, nBytes, 1, t, numAlgo, numProto, nChannels);
    return static_cast<const ncclTuner_v4_t*>(symbol_)->getCollInfo(ctx_, f, nBytes, 1, t, numAlgo, numProto, 0, nChannels);
  }
  ncclResult_t getCollInfoV2(int coll, size_t nBytes, int* algorithm, int* protocol, int* nChannels) {
    ncclFunc_t f;
    std::memcpy(&f, &coll, sizeof f);
    return static_cast<const ncclTuner_v2_t*>(symbol_)->getCollInfo(ctx_, f, nBytes, 0, 0, 1, algorithm, protocol, nChannels);
  }
  ncclResult_t getChunkSize(int coll, size_t nBytes, int algo, int proto, size_t* chunk) {
    ncclFunc_t f;
    std::memcpy(&f, &coll, sizeof f);
    return static_cast<const ncclTuner_v6_t*>(symbol_)->getChunkSize(ctx_, f, nBytes, algo, proto, 1, chunk);
  }

 private:
  int version_;
  const void* symbol_ = nullptr;
  void* ctx_ = nullptr;
  bool ok_ = false, guardIntact_ = true, prefixIntact_ = true;
};

// RCCL's table on one node (RCCL_FACTS.md section 3): LL128 off (not all-XGMI), CollNet, NVLS and
// PAT IGNORE; ring and tree LL and Simple filled; every cell beyond NCCL's 7x3 IGNORE or, with
// `extra`, a filled cost the plugin must leave as it is.
std::vector<float> rcclTable(int numAlgo, int numProto, float extra = DYNAMICCL_NCCL_ALGO_PROTO_IGNORE) {
  std::vector<float> t(static_cast<size_t>(numAlgo * numProto), DYNAMICCL_NCCL_ALGO_PROTO_IGNORE);
  auto at = [&](int a, int p) -> float& { return t[static_cast<size_t>(a * numProto + p)]; };
  at(kTree, kLL) = 21.5f, at(kTree, kSimple) = 40.25f;
  at(kRing, kLL) = 18.75f, at(kRing, kSimple) = 35.0f;
  for (int a = 0; a < numAlgo; ++a)
    for (int p = 0; p < numProto; ++p)
      if (a >= 7 || p >= 3) at(a, p) = extra;
  return t;
}

struct Shape {
  int numAlgo, numProto;
};
constexpr Shape kShapes[] = {{7, 3}, {7, 4}, {8, 4}};

// What a conforming edit of `before` into `after` choosing (algo, proto) looks like: the chosen cell
// exactly +0.0 and the table's only zero; every other cell as it was, or a 0 moved to FLT_MIN;
// nothing written negative; cells beyond NCCL's 7x3 bit-identical.
::testing::AssertionResult conformingEdit(const std::vector<float>& before, const std::vector<float>& after, Shape s,
                                          int algo, int proto) {
  const int chosen = algo * s.numProto + proto;
  uint32_t bits;
  std::memcpy(&bits, &after[static_cast<size_t>(chosen)], sizeof bits);
  if (bits != 0u) return ::testing::AssertionFailure() << "chosen cell " << chosen << " holds " << after[chosen] << ", not exactly 0.0";
  for (int i = 0; i < s.numAlgo * s.numProto; ++i) {
    if (i == chosen) continue;
    const float b = before[static_cast<size_t>(i)], a = after[static_cast<size_t>(i)];
    const bool ours = i / s.numProto < 7 && i % s.numProto < 3;
    if (a == 0.0f) return ::testing::AssertionFailure() << "cell " << i << " is another 0";
    if (std::memcmp(&a, &b, sizeof a) == 0) continue;
    if (!ours) return ::testing::AssertionFailure() << "cell " << i << " beyond NCCL's 7x3 written: " << b << " -> " << a;
    if (!(b == 0.0f && a == FLT_MIN)) return ::testing::AssertionFailure() << "cell " << i << " written: " << b << " -> " << a;
  }
  for (size_t i = 0; i < after.size(); ++i)
    if (after[i] < 0.0f && after[i] != before[i]) return ::testing::AssertionFailure() << "negative written at " << i;
  return ::testing::AssertionSuccess();
}

// ---- each RCCL release's loader ----

// The symbols each release looks up, newest first: the first one found is the one it uses. 2.20.5
// looks up only v1, which this library does not export (no tuner there, as before 2.20.5).
TEST(RcclConformance, EachReleasesLoaderFindsItsSymbolAndItChoosesByExactZero) {
  ASSERT_NE(plugin(), nullptr) << dlerror();
  rcclEnvironment();
  Profile profile(R"({"collective":"allreduce","algo":"ring","proto":"ll","channels":8})");
  EXPECT_EQ(dlsym(plugin(), "ncclTunerPlugin_v1"), nullptr);
  for (const auto& loader : kRcclLoaders) {
    int found = 0;
    for (int k = 0; loader.symbols[k] != 0 && !found; ++k) {
      const std::string sym = "ncclTunerPlugin_v" + std::to_string(loader.symbols[k]);
      if (void* s = dlsym(plugin(), sym.c_str())) {
        found = loader.symbols[k];
        EXPECT_STREQ(static_cast<const ncclTuner_v2_t*>(s)->name, "DynamICCL");
      }
    }
    if (loader.symbols[0] == 1) {
      EXPECT_EQ(found, 0) << loader.versionCode;
      continue;
    }
    EXPECT_EQ(found, loader.symbols[0]) << loader.versionCode;  // every later one is exported too
    setenv("DYNAMICCL_NCCL_VERSION", std::to_string(loader.versionCode).c_str(), 1);
    Comm comm(found);
    ASSERT_TRUE(comm.ok()) << loader.versionCode;
    int nChannels = 0;
    if (found == 2) {
      int algorithm = -1, protocol = -1;
      ASSERT_EQ(comm.getCollInfoV2(kAllReduce, 4096, &algorithm, &protocol, &nChannels), ncclSuccess);
      EXPECT_EQ(algorithm, kRing) << loader.versionCode;
      EXPECT_EQ(protocol, kLL) << loader.versionCode;
    } else {
      const std::vector<float> before = rcclTable(7, 3);
      std::vector<float> table = before;
      ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, 7, 3, &nChannels), ncclSuccess);
      EXPECT_TRUE(conformingEdit(before, table, {7, 3}, kRing, kLL)) << loader.versionCode;
    }
    EXPECT_EQ(nChannels, 8) << loader.versionCode;
  }
}

// ---- init with RCCL's constants ----

// RCCL's struct is NCCL's plus bwRatio at the end, and 2.31 hands init a stack copy: the plugin writes
// nothing past NCCL's prefix and keeps no pointer (the buffer is freed right after init; ASan sees any
// later touch, scripts/sanitize.sh address).
TEST(RcclConformance, InitWithRcclsConstantsWritesNothingPastNcclsPrefixAndKeepsNoPointer) {
  rcclEnvironment();
  Profile profile(R"({"collective":"allreduce","algo":"tree","proto":"ll"})");
  for (int version : {5, 6}) {
    Comm comm(version);
    ASSERT_TRUE(comm.ok()) << version;
    EXPECT_TRUE(comm.guardIntact()) << version;
    EXPECT_TRUE(comm.prefixIntact()) << version;  // this plugin edits no constant at all
    const std::vector<float> before = rcclTable(7, 3);
    for (int call = 0; call < 100; ++call) {
      std::vector<float> table = before;
      int nChannels = 0;
      ASSERT_EQ(comm.getCollInfo(kAllReduce, 1 << 16, table, 7, 3, &nChannels), ncclSuccess);
      EXPECT_TRUE(conformingEdit(before, table, {7, 3}, kTree, kLL)) << version;
    }
  }
}

// ---- tables of every shape RCCL hands, with its IGNORE patterns ----

class RcclTables : public ::testing::TestWithParam<std::tuple<Shape, const char*, int>> {};

TEST_P(RcclTables, TheChosenCellIsTheOnlyExactZeroAndNothingElseMoves) {
  const auto [shape, release, version] = GetParam();
  rcclEnvironment("rccl", release);
  Profile profile(R"({"collective":"allreduce","bytes":[0,4095],"algo":"ring","proto":"ll","channels":16},
                     {"collective":"allreduce","bytes":[4096,65535],"algo":"tree","proto":"ll"},
                     {"collective":"allreduce","bytes":[65536,1048575],"algo":"ring","proto":"simple"},
                     {"collective":"allreduce","bytes":[1048576,4194303],"algo":"ring","proto":"ll128"},
                     {"collective":"allreduce","bytes":[4194304,16777215],"algo":"collnetdirect","proto":"simple"},
                     {"collective":"allgather","algo":"ring"})");
  Comm comm(version);
  ASSERT_TRUE(comm.ok());
  struct Case {
    size_t nBytes;
    int algo, proto, channels;  // algo -1: the table must stay as RCCL filled it
  };
  const Case cases[] = {{1024, kRing, kLL, 16},   {8192, kTree, kLL, 0},     {1 << 17, kRing, kSimple, 0},
                        {1 << 21, -1, -1, 0},     {1 << 23, -1, -1, 0}};
  for (float extra : {DYNAMICCL_NCCL_ALGO_PROTO_IGNORE, 3.5f}) {
    for (const Case& c : cases) {
      std::vector<float> before = rcclTable(shape.numAlgo, shape.numProto, extra);
      before[kTree * shape.numProto + kSimple] = 0.0f;  // a zero RCCL filled: moved aside, never left to tie
      std::vector<float> table = before;
      int nChannels = 0;
      ASSERT_EQ(comm.getCollInfo(kAllReduce, c.nBytes, table, shape.numAlgo, shape.numProto, &nChannels), ncclSuccess);
      if (c.algo < 0) {
        EXPECT_EQ(0, std::memcmp(table.data(), before.data(), table.size() * sizeof(float))) << c.nBytes;
      } else {
        EXPECT_TRUE(conformingEdit(before, table, shape, c.algo, c.proto)) << c.nBytes << " extra " << extra;
      }
      EXPECT_EQ(nChannels, c.channels) << c.nBytes;
    }
    // An algorithm alone: the protocol RCCL's own costs pick in that row (ring: LL below Simple).
    std::vector<float> before = rcclTable(shape.numAlgo, shape.numProto, extra);
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllGather, 1 << 20, table, shape.numAlgo, shape.numProto, &nChannels), ncclSuccess);
    EXPECT_TRUE(conformingEdit(before, table, shape, kRing, kLL)) << "extra " << extra;
  }
  // A 0 beyond NCCL's 7x3 is not ours to move, and would tie ours: RCCL's own choice stands.
  if (shape.numProto > 3) {
    std::vector<float> before = rcclTable(shape.numAlgo, shape.numProto);
    before[kRing * shape.numProto + 3] = 0.0f;
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllReduce, 8192, table, shape.numAlgo, shape.numProto, &nChannels), ncclSuccess);
    EXPECT_EQ(0, std::memcmp(table.data(), before.data(), table.size() * sizeof(float)));
  }
}

INSTANTIATE_TEST_SUITE_P(Rccl, RcclTables,
                         ::testing::Combine(::testing::ValuesIn(kShapes), ::testing::Values("2.27.7", "2.31.2"),
                                            ::testing::Values(4, 6)),
                         [](const auto& info) {
                           const Shape s = std::get<0>(info.param);
                           std::string release = std::get<1>(info.param);
                           for (char& ch : release) ch = ch == '.' ? '_' : ch;
                           return std::to_string(s.numAlgo) + "x" + std::to_string(s.numProto) + "_" + release + "_v" +
                                  std::to_string(std::get<2>(info.param));
                         });

// A shape RCCL never hands (and NCCL's host refusing RCCL's 7x4): the table as it came.
TEST(RcclConformance, AShapeTheHostNeverHandsIsLeftAlone) {
  rcclEnvironment();
  Profile profile(R"({"collective":"allreduce","algo":"ring","proto":"ll","channels":4})");
  {
    Comm comm(6);
    ASSERT_TRUE(comm.ok());
    for (Shape s : {Shape{6, 3}, Shape{7, 2}, Shape{9, 4}, Shape{7, 5}}) {
      const std::vector<float> before(static_cast<size_t>(s.numAlgo * s.numProto), 10.0f);
      std::vector<float> table = before;
      int nChannels = 0;
      ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, s.numAlgo, s.numProto, &nChannels), ncclSuccess);
      EXPECT_EQ(table, before) << s.numAlgo << "x" << s.numProto;
      EXPECT_EQ(nChannels, 0);
    }
  }
  setenv("DYNAMICCL_HOST", "nccl", 1);
  Comm nccl(6);
  ASSERT_TRUE(nccl.ok());
  const std::vector<float> before = rcclTable(7, 4);
  std::vector<float> table = before;
  int nChannels = 0;
  ASSERT_EQ(nccl.getCollInfo(kAllReduce, 4096, table, 7, 4, &nChannels), ncclSuccess);
  EXPECT_EQ(0, std::memcmp(table.data(), before.data(), table.size() * sizeof(float)));
}

// ---- collective ids ----

// Ids 0-4 mean the same in both libraries; above them RCCL numbers its own (AlltoAll, Scatter, Gather,
// AllToAllPivot, AlltoAllGda, ...), and may ask the tuner about them: passed through untouched.
TEST(RcclConformance, CollectiveIdsFiveToEighteenPassThroughUntouched) {
  rcclEnvironment();
  std::string rules;
  for (const char* coll : {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"})
    rules += std::string(rules.empty() ? "" : ",") + R"({"collective":")" + coll +
             R"(","algo":"ring","proto":"ll","channels":8})";
  Profile profile(rules);
  for (int version : {2, 4, 6}) {
    Comm comm(version);
    ASSERT_TRUE(comm.ok());
    for (int coll = 5; coll <= 18; ++coll) {
      int nChannels = 3;
      if (version == 2) {
        int algorithm = 5, protocol = 2;
        ASSERT_EQ(comm.getCollInfoV2(coll, 4096, &algorithm, &protocol, &nChannels), ncclSuccess);
        EXPECT_EQ(algorithm, 5) << coll;
        EXPECT_EQ(protocol, 2) << coll;
      } else {
        for (Shape s : kShapes) {
          const std::vector<float> before = rcclTable(s.numAlgo, s.numProto, 2.0f);
          std::vector<float> table = before;
          ASSERT_EQ(comm.getCollInfo(coll, 4096, table, s.numAlgo, s.numProto, &nChannels), ncclSuccess);
          EXPECT_EQ(0, std::memcmp(table.data(), before.data(), table.size() * sizeof(float))) << coll;
        }
      }
      EXPECT_EQ(nChannels, 3) << coll;
    }
    // The ids both libraries share are still decided.
    std::vector<float> table = rcclTable(7, 3);
    int nChannels = 0;
    if (version != 2) {
      ASSERT_EQ(comm.getCollInfo(kAllGather, 4096, table, 7, 3, &nChannels), ncclSuccess);
      EXPECT_EQ(nChannels, 8);
    }
  }
}

// ---- chunks ----

// RCCL's chunking never calls getChunkSize: a rule's chunk is not claimed there, and a call anyway
// leaves RCCL's chunk alone.
TEST(RcclConformance, NoChunkWhereRcclNeverAsks) {
  rcclEnvironment();
  Profile profile(R"({"collective":"allreduce","algo":"ring","proto":"simple","chunk":131072})");
  Comm comm(6);
  ASSERT_TRUE(comm.ok());
  std::vector<float> table = rcclTable(7, 4);
  int nChannels = 0;
  ASSERT_EQ(comm.getCollInfo(kAllReduce, 1 << 22, table, 7, 4, &nChannels), ncclSuccess);
  size_t chunk = 12345;
  ASSERT_EQ(comm.getChunkSize(kAllReduce, 1 << 20, kRing, kSimple, &chunk), ncclSuccess);
  EXPECT_EQ(chunk, 12345u);
  // NCCL asks, and gets it.
  setenv("DYNAMICCL_HOST", "nccl", 1);
  Comm nccl(6);
  ASSERT_TRUE(nccl.ok());
  std::vector<float> t3 = rcclTable(7, 3);
  ASSERT_EQ(nccl.getCollInfo(kAllReduce, 1 << 22, t3, 7, 3, &nChannels), ncclSuccess);
  ASSERT_EQ(nccl.getChunkSize(kAllReduce, 1 << 20, kRing, kSimple, &chunk), ncclSuccess);
  EXPECT_EQ(chunk, 131072u);
}

// ---- what the user fixed stands ----

// NCCL_MIN/MAX_NCHANNELS (base counts on RCCL, which a tuner's total would override) and RCCL's
// RCCL_OVERRIDE_ALGO/PROTO: the plugin leaves those knobs alone, said in one INFO line.
TEST(RcclConformance, WhatTheUserFixedStands) {
  rcclEnvironment();
  Profile profile(R"({"collective":"allreduce","algo":"tree","proto":"ll","channels":24})");
  setenv("NCCL_MAX_NCHANNELS", "16", 1);
  for (int round = 0; round < 2; ++round) {  // a second communicator: no second line
    Comm comm(6);
    ASSERT_TRUE(comm.ok());
    const std::vector<float> before = rcclTable(7, 4);
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, 7, 4, &nChannels), ncclSuccess);
    EXPECT_TRUE(conformingEdit(before, table, {7, 4}, kTree, kLL));
    EXPECT_EQ(nChannels, 0);
  }
  EXPECT_EQ(linesWith("the user fixed NCCL_MAX_NCHANNELS=16: the plugin leaves channel counts to RCCL"), 1);

  // RCCL_OVERRIDE_PROTO: the algorithm is still forced, with the protocol RCCL's costs pick in its row.
  unsetenv("NCCL_MAX_NCHANNELS");
  setenv("RCCL_OVERRIDE_PROTO", "Simple", 1);
  {
    Comm comm(6);
    ASSERT_TRUE(comm.ok());
    std::vector<float> before = rcclTable(7, 4);
    before[kTree * 4 + kSimple] = 1.0f;  // tree's cheapest protocol by RCCL's costs
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, 7, 4, &nChannels), ncclSuccess);
    EXPECT_TRUE(conformingEdit(before, table, {7, 4}, kTree, kSimple));
    EXPECT_EQ(nChannels, 24);
  }
  EXPECT_EQ(linesWith("the user fixed RCCL_OVERRIDE_PROTO=Simple"), 1);

  // RCCL_OVERRIDE_ALGO: RCCL runs the user's algorithm whatever the table says; nothing is written.
  unsetenv("RCCL_OVERRIDE_PROTO");
  setenv("RCCL_OVERRIDE_ALGO", "Ring", 1);
  {
    Comm comm(6);
    ASSERT_TRUE(comm.ok());
    const std::vector<float> before = rcclTable(7, 4);
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, 7, 4, &nChannels), ncclSuccess);
    EXPECT_EQ(0, std::memcmp(table.data(), before.data(), table.size() * sizeof(float)));
    EXPECT_EQ(nChannels, 0);
    int algorithm = -1, protocol = -1;
    Comm v2(2);
    ASSERT_TRUE(v2.ok());
    ASSERT_EQ(v2.getCollInfoV2(kAllReduce, 4096, &algorithm, &protocol, &nChannels), ncclSuccess);
    EXPECT_EQ(algorithm, -1);
    EXPECT_EQ(nChannels, 0);
  }
  EXPECT_EQ(linesWith("the user fixed RCCL_OVERRIDE_ALGO=Ring: the plugin leaves every choice to RCCL"), 1);

  // On NCCL, RCCL's variables mean nothing; NCCL_MIN_NCHANNELS still stands.
  setenv("DYNAMICCL_HOST", "nccl", 1);
  setenv("NCCL_MIN_NCHANNELS", "4", 1);
  {
    Comm comm(6);
    ASSERT_TRUE(comm.ok());
    const std::vector<float> before = rcclTable(7, 3);
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, 7, 3, &nChannels), ncclSuccess);
    EXPECT_EQ(table[kTree * 3 + kLL], 0.0f);
    EXPECT_EQ(nChannels, 0);
  }
  EXPECT_EQ(linesWith("the user fixed NCCL_MIN_NCHANNELS=4: the plugin leaves channel counts to NCCL"), 1);
}

// ---- which host ----

// Without DYNAMICCL_HOST the plugin looks: no RCCL in this process at first (NCCL's rules, 7x4
// refused), then a librccl.so.1 loaded RTLD_LOCAL (as from a Python wheel) is found, and its version read.
TEST(RcclHost, FoundInTheProcessAndSaidOnce) {
  rcclEnvironment(nullptr, nullptr);
  Profile profile(R"({"collective":"allreduce","algo":"ring","proto":"ll"})");
  const std::vector<float> before = rcclTable(7, 4);
  {
    Comm comm(6);
    ASSERT_TRUE(comm.ok());
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, 7, 4, &nChannels), ncclSuccess);
    EXPECT_EQ(0, std::memcmp(table.data(), before.data(), table.size() * sizeof(float)));
  }
  EXPECT_EQ(linesWith("host RCCL"), 0);
  void* rccl = dlopen(RCCL_STAND_IN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(rccl, nullptr) << dlerror();
  ASSERT_EQ(dlsym(RTLD_DEFAULT, "mscclLoadAlgo"), nullptr) << "loaded locally: invisible to RTLD_DEFAULT";
  for (int round = 0; round < 2; ++round) {
    Comm comm(6);
    ASSERT_TRUE(comm.ok());
    std::vector<float> table = before;
    int nChannels = 0;
    ASSERT_EQ(comm.getCollInfo(kAllReduce, 4096, table, 7, 4, &nChannels), ncclSuccess);
    EXPECT_TRUE(conformingEdit(before, table, {7, 4}, kRing, kLL));
  }
  EXPECT_EQ(linesWith("host RCCL (seen in the process), version 2.31.2 (ncclGetVersion)"), 1);
  dlclose(rccl);
}

}  // namespace
