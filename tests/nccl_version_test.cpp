// NCCL releases: the plugin reads the version of the NCCL in its process (the harness exports
// ncclGetVersion as libnccl does) or DYNAMICCL_NCCL_VERSION, says which rules it follows, and its
// cost-table edits are right under each release's selection rule as the harness emulates it:
// in 2.31 mode no negative cost, no revived IGNORE entry, channels above NCCL's own reported capped.
#include <gtest/gtest.h>

#include <random>

#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using abi::PickRule;
using harness::Choice;
using harness::CostTable;
using harness::LogCapture;
using harness::ScopedEnv;
using testing::profileJson;
using testing::TempFile;

constexpr int kAllReduce = 4, kAllGather = 2;
constexpr PickRule kRules[] = {PickRule::Nccl2_28, PickRule::Nccl2_30, PickRule::Nccl2_31};

std::shared_ptr<harness::TunerLibrary> openAs(int ncclVersion, int maxVersion = 6) {
  harness::OpenOptions options;
  options.maxVersion = maxVersion;
  options.ncclVersion = ncclVersion;
  auto lib = harness::TunerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR), options);
  EXPECT_TRUE(lib.ok()) << (lib.ok() ? "" : lib.error());
  return lib.ok() ? lib.value() : nullptr;
}

TEST(NcclVersion, ThePluginReadsTheVersionOfTheNcclInItsProcessAndSaysSoOnce) {
  ScopedEnv unset("DYNAMICCL_NCCL_VERSION", nullptr);
  LogCapture::clear();
  auto lib = openAs(23102);
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->pickRule(), PickRule::Nccl2_31);
  auto a = lib->init(harness::CommSpec{});
  auto b = lib->init(harness::CommSpec{});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(testing::logLinesMentioning("NCCL 2.31.2 (ncclGetVersion): following NCCL 2.31's selection rules"), 1u)
      << ::testing::PrintToString(LogCapture::lines());

  LogCapture::clear();
  auto older = openAs(22809, 5);
  ASSERT_TRUE(older->init(harness::CommSpec{}).ok());
  EXPECT_EQ(testing::logLinesMentioning("NCCL 2.28.9 (ncclGetVersion): following NCCL 2.28's selection rules"), 1u);
}

TEST(NcclVersion, UnknownVersionMeansTheNewestRules) {
  ScopedEnv unset("DYNAMICCL_NCCL_VERSION", nullptr);
  LogCapture::clear();
  auto lib = openAs(0);  // ncclGetVersion fails, as where no libnccl is visible
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->pickRule(), PickRule::Nccl2_31);
  ASSERT_TRUE(lib->init(harness::CommSpec{}).ok());
  EXPECT_EQ(testing::logLinesMentioning("NCCL version unknown"), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(testing::logLinesMentioning("newest selection rules known, NCCL 2.31's"), 1u);
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 0u);
}

TEST(NcclVersion, TheSettingOverridesTheDetectedVersion) {
  ScopedEnv set("DYNAMICCL_NCCL_VERSION", "2.30");
  LogCapture::clear();
  auto lib = openAs(23102);
  ASSERT_TRUE(lib->init(harness::CommSpec{}).ok());
  EXPECT_EQ(testing::logLinesMentioning("NCCL 2.30.0 (DYNAMICCL_NCCL_VERSION): following NCCL 2.30's selection rules"), 1u)
      << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(testing::logLinesMentioning("DYNAMICCL_NCCL_VERSION=2.30.0"), 1u) << "the settings line shows it";
}

TEST(NcclVersion, HarnessSelectionFollowsEachRelease) {
  CostTable before = harness::allIgnored();
  before[1][2] = 30.0f;
  before[4][2] = 20.0f;
  CostTable after = before;
  after[4][2] = -1.0f;  // "disable" NVLS the pre-2.31 way
  after[0][0] = 0.0f;   // write into an entry NCCL left IGNORE
  EXPECT_EQ(harness::selectLikeNccl(after, PickRule::Nccl2_28, &before), (Choice{0, 0, 0}));
  EXPECT_EQ(harness::selectLikeNccl(after, PickRule::Nccl2_30, &before), (Choice{0, 0, 0}));
  EXPECT_EQ(harness::selectLikeNccl(after, PickRule::Nccl2_31, &before), (Choice{4, 2, 0}));
  CostTable huge = before;
  huge[1][2] = 4.0e9f;
  huge[4][2] = -1.0f;
  EXPECT_EQ(harness::selectLikeNccl(huge, PickRule::Nccl2_28, &before), (Choice{-1, -1, 0}));
  EXPECT_EQ(harness::selectLikeNccl(huge, PickRule::Nccl2_30, &before), (Choice{1, 2, 0}));
}

class EveryRelease : public ::testing::TestWithParam<PickRule> {};

TEST_P(EveryRelease, TheRuleWinsWithoutNegativeCostsOrRevivedEntries) {
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"nvls","proto":"simple"},
                                  {"collective":"allreduce","algo":"ring","proto":"ll"},
                                  {"collective":"allgather","algo":"pat","proto":"simple"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  ScopedEnv unset("DYNAMICCL_NCCL_VERSION", nullptr);
  auto lib = openAs(harness::emulatedVersionOf(GetParam()));
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> cost(1.0f, 500.0f);
  std::uniform_int_distribution<int> kind(0, 5);
  int forced = 0;
  for (int n = 0; n < 2000; ++n) {
    CostTable table;
    for (auto& row : table)
      for (float& v : row) v = kind(rng) == 0 ? -1.0f : kind(rng) == 1 ? 0.0f : cost(rng);
    const int coll = n % 2 ? kAllReduce : kAllGather;
    const harness::Outcome o = (*comm)->run(coll, 1 << 20, table, 0);
    EXPECT_FALSE(o.wroteNegative) << n;
    EXPECT_FALSE(o.revivedIgnored) << n;
    // The first rule NCCL can run is what NCCL runs under this release's rule.
    Choice want = harness::selectLikeNccl(table, GetParam());
    if (coll == kAllGather && table[6][2] >= 0) want = Choice{6, 2, 0};
    else if (coll == kAllReduce && table[4][2] >= 0) want = Choice{4, 2, 0};
    else if (coll == kAllReduce && table[1][0] >= 0) want = Choice{1, 0, 0};
    forced += !(want == harness::selectLikeNccl(table, GetParam()));
    EXPECT_EQ(o.choice, want) << n;
  }
  EXPECT_GT(forced, 500);
}

INSTANTIATE_TEST_SUITE_P(Nccl, EveryRelease, ::testing::ValuesIn(kRules),
                         [](const auto& info) { return std::string("v") + (abi::pickRuleName(info.param) + 2); });

TEST(NcclVersion, In2_31ALaterZeroCannotStealTheChoice) {
  TempFile profile(profileJson(R"({"algo":"ring","proto":"ll"})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  ScopedEnv unset("DYNAMICCL_NCCL_VERSION", nullptr);
  CostTable table = harness::allAvailable();
  table[6][2] = 0.0f;  // 2.31 breaks ties towards the highest slot
  auto lib31 = openAs(23102);
  auto comm = lib31->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok());
  EXPECT_EQ((*comm)->decide(kAllGather, 4096, table), (Choice{1, 0, 0}));
  // The same edit made with 2.28's rule in mind loses under 2.31: the test can tell them apart.
  ScopedEnv as228("DYNAMICCL_NCCL_VERSION", "2.28");
  auto wrong = lib31->init(harness::CommSpec{});
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ((*wrong)->decide(kAllGather, 4096, table), (Choice{6, 2, 0}));
}

TEST(NcclVersion, ChannelsAboveNcclsOwnAreCappedFrom2_31) {
  TempFile profile(profileJson(R"({"collective":"allreduce","algo":"ring","proto":"simple","channels":16},
                                  {"collective":"allgather","channels":4})"));
  ScopedEnv env("DYNAMICCL_PROFILE", profile.path().c_str());
  ScopedEnv unset("DYNAMICCL_NCCL_VERSION", nullptr);
  const CostTable table = harness::allAvailable();
  for (PickRule rule : kRules) {
    auto comm = openAs(harness::emulatedVersionOf(rule))->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok());
    const harness::Outcome up = (*comm)->run(kAllReduce, 1 << 20, table, 8);
    EXPECT_EQ(up.choice, (Choice{1, 2, 16}));
    const bool cap = rule == PickRule::Nccl2_31;
    EXPECT_EQ(up.channelsRun, cap ? 8 : 16) << abi::pickRuleName(rule);
    EXPECT_EQ(up.channelsCapped, cap) << abi::pickRuleName(rule);
    const harness::Outcome down = (*comm)->run(kAllGather, 1 << 20, table, 8);
    EXPECT_EQ(down.channelsRun, 4);
    EXPECT_FALSE(down.channelsCapped);
  }
}

}  // namespace
}  // namespace dynamiccl
