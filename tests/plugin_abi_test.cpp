// The built library driven through dlopen exactly as NCCL drives it, for every tuner ABI version.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::Choice;
using harness::CostTable;
using harness::ScopedEnv;
using testing::openPlugin;
using testing::profileJson;
using testing::TempFile;

constexpr int kAllReduce = 4, kAllGather = 2, kSendRecv = 5;

class EveryAbiVersion : public ::testing::TestWithParam<int> {};

TEST_P(EveryAbiVersion, ResolvesNewestSymbolUpToTheProbedVersion) {
  auto lib = openPlugin(GetParam());
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->version(), GetParam());
  EXPECT_EQ(lib->name(), "DynamICCL");
}

TEST_P(EveryAbiVersion, ForcesTheRuleAndKeepsNcclElsewhere) {
  TempFile profile(profileJson(
      R"({"collective":"allreduce","bytes":[0,65535],"algo":"ring","proto":"ll","channels":8})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  auto lib = openPlugin(GetParam());
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok()) << comm.error();
  const CostTable table = harness::allAvailable();
  EXPECT_EQ((*comm)->decide(kAllReduce, 4096, table), (Choice{1, 0, 8}));
  EXPECT_EQ((*comm)->decide(kAllReduce, 65535, table), (Choice{1, 0, 8}));
  // Outside the rule: NCCL's own minimum and channel count stand, the table untouched.
  CostTable copy = table;
  int nChannels = 0;
  EXPECT_EQ((*comm)->getCollInfo(kAllReduce, 65536, 1, 0, copy, &nChannels), ncclSuccess);
  EXPECT_EQ(copy, table);
  EXPECT_EQ(nChannels, 0);
  EXPECT_EQ((*comm)->decide(kAllGather, 4096, table), harness::selectLikeNccl(table, lib->pickRule()));
}

TEST_P(EveryAbiVersion, NoProfileLeavesEverythingToNccl) {
  ScopedEnv env("DYNAMICCL_PROFILE", nullptr);
  ScopedEnv env2("NCCL_TUNER_CONFIG_FILE", nullptr);
  auto lib = openPlugin(GetParam());
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  const CostTable table = harness::allAvailable();
  for (int coll = 0; coll < 5; ++coll)
    for (size_t n : {size_t{8}, size_t{1} << 20, size_t{1} << 34}) {
      CostTable copy = table;
      int nChannels = 0;
      EXPECT_EQ((*comm)->getCollInfo(coll, n, 1, 0, copy, &nChannels), ncclSuccess);
      EXPECT_EQ(copy, table);
      EXPECT_EQ(nChannels, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Tuner, EveryAbiVersion, ::testing::Values(2, 3, 4, 5, 6, 7),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

TEST(PluginAbi, NameResolutionLikeNccl) {
  harness::OpenOptions options;
  options.searchDir = DYNAMICCL_PLUGIN_DIR;
  auto byName = harness::TunerLibrary::open("dynamiccl", options);
  ASSERT_TRUE(byName.ok()) << byName.error();
  EXPECT_EQ(byName.value()->path(), "libnccl-tuner-dynamiccl.so");
  EXPECT_EQ(byName.value()->version(), 7);  // NCCL 2.32.6 probes v7 first
  auto missing = harness::TunerLibrary::open("nosuchtuner", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("libnccl-tuner-nosuchtuner.so"), std::string::npos);
}

TEST(PluginAbi, FallsThroughToTheNextRuleWhenNcclIgnoresTheEntry) {
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"nvls","proto":"simple"},
                                  {"collective":"allreduce","algo":"ring","proto":"ll128"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  for (int v : {2, 5}) {
    auto lib = openPlugin(v);
    auto comm = lib->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
    CostTable table = harness::allAvailable();
    EXPECT_EQ((*comm)->decide(kAllReduce, 1 << 20, table), (Choice{4, 2, 0})) << "v" << v;
    table[4][2] = table[5][2] = -1.0f;  // no NVLS here
    EXPECT_EQ((*comm)->decide(kAllReduce, 1 << 20, table), (Choice{1, 1, 0})) << "v" << v;
    table[1][1] = -1.0f;  // nothing the profile names is possible: NCCL's choice stands
    EXPECT_EQ((*comm)->decide(kAllReduce, 1 << 20, table), harness::selectLikeNccl(table, lib->pickRule())) << "v" << v;
  }
}

// A rule naming the algorithm alone forces it and runs the protocol NCCL's own costs pick in that
// row, under each release's rule; where NCCL can run none of it, or v2 gives no costs, NCCL's choice stands.
TEST(PluginAbi, AnAlgorithmAloneRunsTheProtocolNcclsCostsPickInIt) {
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"tree"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  const std::string path = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  for (int release : {22809, 23007, 23206}) {
    auto lib = harness::TunerLibrary::open(path, harness::asRelease(release));
    ASSERT_TRUE(lib.ok()) << lib.error();
    auto comm = lib.value()->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok()) << release;
    CostTable table = harness::ncclPicks(1, 0);  // NCCL alone runs ring/ll
    table[0][0] = 30.0f, table[0][1] = 25.0f, table[0][2] = 28.0f;  // tree's row
    EXPECT_EQ((*comm)->decide(kAllReduce, 1 << 20, table), (Choice{0, 1, 0})) << release;
    table[0][2] = 24.0f;
    EXPECT_EQ((*comm)->decide(kAllReduce, 1 << 20, table), (Choice{0, 2, 0})) << release;
    table[0][0] = table[0][1] = table[0][2] = -1.0f;
    EXPECT_EQ((*comm)->decide(kAllReduce, 1 << 20, table), (Choice{1, 0, 0})) << release;
  }
  auto lib2 = openPlugin(2);
  auto v2 = lib2->init(harness::CommSpec{});
  ASSERT_TRUE(v2.ok());
  CostTable table = harness::ncclPicks(1, 0);
  EXPECT_EQ((*v2)->decide(kAllReduce, 1 << 20, table), harness::selectLikeNccl(table, lib2->pickRule())) << "v2";
}

// Each release loads the library through the newest tuner interface it probes: 2.32.6 through v7,
// 2.32.3 and 2.30/2.31 through v6, 2.28 through v5; the decision is the same through each.
TEST(PluginAbi, EachNcclReleaseLoadsItsNewestInterface) {
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll128","channels":4})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  const std::string path = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  for (const auto& [release, version] : std::vector<std::pair<int, int>>{{22809, 5}, {23007, 6}, {23102, 6},
                                                                          {23203, 6}, {23206, 7}}) {
    auto lib = harness::TunerLibrary::open(path, harness::asRelease(release));
    ASSERT_TRUE(lib.ok()) << lib.error();
    EXPECT_EQ(lib.value()->version(), version) << release;
    auto comm = lib.value()->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok()) << release;
    EXPECT_EQ((*comm)->decide(kAllReduce, 1 << 20, harness::allAvailable()), (Choice{1, 1, 4})) << release;
    EXPECT_EQ((*comm)->hasChunkSize(), version >= 6) << release;
  }
}

// NCCL 2.32.6's constants carry a fifth compute-capability row (Rubin). A v7 init receives all five
// and may edit the fifth; a v6 library loaded by 2.32.6 gets four (converted) and cannot reach it.
// DynamICCL edits no constant: every row comes back as NCCL wrote it.
TEST(PluginAbi, AV7InitSeesAndMayEditTheRubinRow) {
  auto filled = [] {
    ncclTunerConstants_v7_t k{};
    for (int cc = 0; cc < DYNAMICCL_NCCL_NUM_COMPCAPS_V7; ++cc) k.perChMaxTreeBws[cc][0] = 10.0 * (cc + 1);
    return k;
  };
  for (const auto& [release, editedRow] : std::vector<std::pair<int, int>>{{23206, 4}, {23203, 3}}) {
    auto stand = harness::TunerLibrary::open(RUBIN_ROW_TUNER, harness::asRelease(release));
    ASSERT_TRUE(stand.ok()) << stand.error();
    ncclTunerConstants_v7_t k = filled();
    harness::CommSpec spec;
    spec.constantsV7 = &k;
    ASSERT_TRUE(stand.value()->init(spec).ok());
    for (int cc = 0; cc < DYNAMICCL_NCCL_NUM_COMPCAPS_V7; ++cc)
      EXPECT_EQ(k.perChMaxTreeBws[cc][0], 10.0 * (cc + 1) + (cc == editedRow ? 1.0 : 0.0))
          << "NCCL " << release << ", row " << cc;
  }
  auto ours = harness::TunerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR), harness::asRelease(23206));
  ASSERT_TRUE(ours.ok());
  ASSERT_EQ(ours.value()->version(), 7);
  ncclTunerConstants_v7_t k = filled();
  harness::CommSpec spec;
  spec.constantsV7 = &k;
  ASSERT_TRUE(ours.value()->init(spec).ok());
  const ncclTunerConstants_v7_t untouched = filled();
  EXPECT_EQ(std::memcmp(&k, &untouched, sizeof k), 0);
}

TEST(PluginAbi, ChosenEntryWinsEvenAgainstAnEarlierZero) {
  TempFile profile(profileJson(R"({"algo":"pat","proto":"simple"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  CostTable table = harness::allAvailable();
  table[0][0] = 0.0f;  // NCCL ties go to the lowest index: this would beat our 0
  EXPECT_EQ((*comm)->decide(kAllGather, 4096, table), (Choice{6, 2, 0}));
}

TEST(PluginAbi, UntunableCollectivesAreLeftAlone) {
  TempFile profile(profileJson(R"({"algo":"ring","proto":"simple"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  const CostTable table = harness::allAvailable();
  for (int coll : {kSendRecv, 6, 7, 8, 10, -1, 1000}) {
    CostTable copy = table;
    int nChannels = 0;
    EXPECT_EQ((*comm)->getCollInfo(coll, 4096, 1, 0, copy, &nChannels), ncclSuccess);
    EXPECT_EQ(copy, table);
  }
}

TEST(PluginAbi, PipeOpsAndRegBuffSelectRules) {
  TempFile profile(profileJson(R"({"pipe_ops":2,"algo":"tree","proto":"ll"},
                                  {"reg_buff":1,"algo":"nvls","proto":"simple"},
                                  {"algo":"ring","proto":"simple"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  auto comm = openPlugin()->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  const CostTable t = harness::allAvailable();
  EXPECT_EQ((*comm)->decide(kAllReduce, 1024, t, 2, 0), (Choice{0, 0, 0}));
  EXPECT_EQ((*comm)->decide(kAllReduce, 1024, t, 1, 1), (Choice{4, 2, 0}));
  EXPECT_EQ((*comm)->decide(kAllReduce, 1024, t, 1, 0), (Choice{1, 2, 0}));
}

TEST(PluginAbi, ChunkSizeOnlyForTheDecisionNcclRan) {
  TempFile profile(profileJson(R"({"collective":"allreduce","bytes":[0,1048576],"algo":"ring","proto":"simple","chunk":131072},
                                  {"collective":"allreduce","bytes":[1048577,null],"algo":"ring","proto":"ll","chunk":20})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  auto comm = openPlugin(6)->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  ASSERT_TRUE((*comm)->hasChunkSize());
  CostTable t = harness::allAvailable();
  int nCh = 0;
  (*comm)->getCollInfo(kAllReduce, 1 << 20, 1, 0, t, &nCh);
  size_t chunk = 2 << 20;  // NCCL's value on entry
  EXPECT_EQ((*comm)->getChunkSize(kAllReduce, 1 << 17, 1, 2, 1, &chunk), ncclSuccess);
  EXPECT_EQ(chunk, 131072u);
  chunk = 2 << 20;
  (*comm)->getChunkSize(kAllReduce, 1 << 17, 0, 2, 1, &chunk);  // NCCL ran Tree: not ours
  EXPECT_EQ(chunk, size_t{2} << 20);
  // A chunk below the protocol grain (LL: 16 B, requested 20 -> 16) never reaches 0.
  t = harness::allAvailable();
  (*comm)->getCollInfo(kAllReduce, 8 << 20, 1, 0, t, &nCh);
  chunk = 32768;
  (*comm)->getChunkSize(kAllReduce, 1 << 17, 1, 0, 1, &chunk);
  EXPECT_EQ(chunk, 16u);
  // A call outside every rule clears what the last one remembered.
  TempFile none(profileJson(R"({"collective":"allreduce","bytes":[0,10],"algo":"ring","proto":"simple","chunk":4096})"));
  ScopedEnv env2("DYNAMICCL_PROFILE", none.path().c_str());
  auto comm2 = openPlugin(6)->init(harness::CommSpec{});
  t = harness::allAvailable();
  (*comm2)->getCollInfo(kAllReduce, 8, 1, 0, t, &nCh);
  t = harness::allAvailable();
  (*comm2)->getCollInfo(kAllReduce, 1 << 20, 1, 0, t, &nCh);
  chunk = 777;
  (*comm2)->getChunkSize(kAllReduce, 1 << 17, 1, 2, 1, &chunk);
  EXPECT_EQ(chunk, 777u);
}

// A chunk NCCL would clamp, or overrun its buffer with (NVLS: 512 KiB clamp over a 128 KiB step), is
// never returned: a rule naming such a pair is refused at load with one line; a chunk-only rule keeps
// NCCL's chunk where NCCL runs a protocol it exceeds, with one line per communicator.
TEST(PluginAbi, AChunkNcclWouldNotRunCorrectlyIsNeverReturned) {
  const std::string tooLarge = "more than NCCL runs correctly";
  for (int version : {6, 7}) {
    SCOPED_TRACE("tuner v" + std::to_string(version));
    TempFile chunkOnly(profileJson(R"({"collective":"allreduce","chunk":1048576})"));
    ScopedEnv env("DYNAMICCL_PROFILE", chunkOnly.path().c_str());
    const size_t before = testing::logLinesMentioning(tooLarge);
    auto comm = openPlugin(version)->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
    ASSERT_TRUE((*comm)->hasChunkSize());
    int nCh = 0;
    for (int call = 0; call < 3; ++call) {
      CostTable t = harness::ncclPicks(1, 0);  // NCCL runs ring/LL: at most 32 KiB
      (*comm)->getCollInfo(kAllReduce, 4096, 1, 0, t, &nCh);
      size_t chunk = 16384;  // NCCL's own
      EXPECT_EQ((*comm)->getChunkSize(kAllReduce, 4096, 1, 0, 1, &chunk), ncclSuccess);
      EXPECT_EQ(chunk, 16384u) << "NCCL's chunk stands";
      t = harness::ncclPicks(1, 2);  // ring/Simple runs up to 2 MiB: the rule's chunk applies
      (*comm)->getCollInfo(kAllReduce, 1 << 20, 1, 0, t, &nCh);
      chunk = 131072;
      (*comm)->getChunkSize(kAllReduce, 1 << 20, 1, 2, 1, &chunk);
      EXPECT_EQ(chunk, 1048576u);
    }
    comm.value().reset();  // the hot path only counts; the line is said at finalize
    EXPECT_EQ(testing::logLinesMentioning(tooLarge) - before, 1u) << "one line per communicator";

    TempFile nvls(profileJson(R"({"collective":"allreduce","algo":"nvls","proto":"simple","chunk":262144})"));
    ScopedEnv env2("DYNAMICCL_PROFILE", nvls.path().c_str());
    const size_t refusedBefore = testing::logLinesMentioning("more than NCCL runs correctly for nvls/simple");
    auto refused = openPlugin(version)->init(harness::CommSpec{});
    ASSERT_TRUE(refused.ok());
    EXPECT_EQ(testing::logLinesMentioning("more than NCCL runs correctly for nvls/simple") - refusedBefore, 1u);
    CostTable t = harness::ncclPicks(4, 2);
    (*refused)->getCollInfo(kAllReduce, 1 << 20, 1, 0, t, &nCh);
    size_t chunk = 65536;
    (*refused)->getChunkSize(kAllReduce, 1 << 20, 4, 2, 1, &chunk);
    EXPECT_EQ(chunk, 65536u) << "the refused rule returns nothing";
  }
}

TEST(PluginAbi, EveryRankOfACommunicatorDecidesTheSame) {
  TempFile profile(profileJson(R"({"collective":"allreduce","bytes":[0,65535],"algo":"tree","proto":"ll"},
                                  {"collective":"allreduce","bytes_per_rank":[8192,null],"algo":"ring","proto":"simple","channels":12})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  auto lib = openPlugin();
  std::vector<std::unique_ptr<harness::TunerComm>> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back(std::move(lib->init(harness::CommSpec{0x77, 8, 1}).value()));
  const CostTable t = harness::allAvailable();
  for (uint64_t n = 1; n < (uint64_t{1} << 32); n = n * 3 + 1) {
    const Choice first = ranks[0]->decide(kAllReduce, n, t);
    for (auto& rank : ranks) ASSERT_EQ(rank->decide(kAllReduce, n, t), first) << n;
  }
}

// The last word of each line of a tool's output about the built plugin that contains `having`.
struct ToolWords {
  int rc = -1;
  std::vector<std::string> words;
};
ToolWords pluginToolWords(const std::string& tool, const std::string& having = "") {
  const testing::ShellResult r = testing::runShell(tool + " " + harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR) + " 2>/dev/null");
  ToolWords out{r.rc, {}};
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.find(having) != std::string::npos && !line.empty()) out.words.push_back(line.substr(line.find_last_of(' ') + 1));
  return out;
}

TEST(PluginAbi, ExportsOnlyPluginSymbols) {
  const ToolWords nm = pluginToolWords("nm -D --defined-only");
  if (nm.words.empty() && nm.rc != 0) GTEST_SKIP() << "nm not available";
  int tuner = 0;
  for (const std::string& sym : nm.words) {
    tuner += sym.rfind("ncclTunerPlugin_v", 0) == 0;
    EXPECT_TRUE(sym.rfind("ncclTunerPlugin_v", 0) == 0 || sym.rfind("ncclProfiler_v", 0) == 0) << "exported: " << sym;
  }
  EXPECT_EQ(tuner, 6) << "ncclTunerPlugin_v2..v7";
  EXPECT_EQ(static_cast<int>(nm.words.size()) - tuner, 7) << "ncclProfiler_v1..v7";
}

// The learned policy is evaluated with Eigen in the plugin: LibTorch stays in the offline tool.
TEST(PluginAbi, NeedsNoLibTorch) {
  const ToolWords needed = pluginToolWords("objdump -p", "NEEDED");
  if (needed.words.empty() && needed.rc != 0) GTEST_SKIP() << "objdump not available";
  ASSERT_FALSE(needed.words.empty());
  for (const std::string& lib : needed.words)
    for (const char* torch : {"torch", "c10"}) EXPECT_EQ(lib.find(torch), std::string::npos) << "needs " << lib;
}

// libcurl is loaded at run time and only for DYNAMICCL_ETCD: the plugin loads where it is absent.
TEST(PluginAbi, NeedsNoLibcurl) {
  const ToolWords needed = pluginToolWords("objdump -p", "NEEDED");
  if (needed.words.empty() && needed.rc != 0) GTEST_SKIP() << "objdump not available";
  ASSERT_FALSE(needed.words.empty());
  for (const std::string& lib : needed.words) EXPECT_EQ(lib.find("curl"), std::string::npos) << "needs " << lib;
}

}  // namespace
}  // namespace dynamiccl
