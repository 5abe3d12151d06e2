// NCCL's pick rules (abi/pick_rule.h): the scalar and SSE2 versions agree under every release's
// rule; 2.28's is the strict minimum below the cap over entries >= 0, ties to the lowest slot; 2.30's
// the same below FLT_MAX; 2.31's the minimum over the slots NCCL filled, negatives included, ties to
// the highest slot. Also the channel rule and the version text.
#include <gtest/gtest.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>

#include "abi/abi.h"

namespace {

using namespace dynamiccl::abi;
using Table = std::array<float, kCostSlots>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Both versions, checked against each other; returns the scalar answer.
int pickBoth(const Table& t) {
  const int scalar = pickLowestCostScalar(t.data(), PickRule::Nccl2_28, kAllSlots);
#if defined(__SSE2__)
  EXPECT_EQ(pickLowestCostSse2(t.data(), PickRule::Nccl2_28, kAllSlots), scalar);
#endif
  EXPECT_EQ(pickLowestCost(t.data(), PickRule::Nccl2_28, kAllSlots), scalar);
  EXPECT_EQ(ncclChoice(t.data(), PickRule::Nccl2_28), scalar);
  return scalar;
}

int pickBoth(const Table& t, PickRule rule, uint32_t candidates = kAllSlots) {
  const int scalar = pickLowestCostScalar(t.data(), rule, candidates);
#if defined(__SSE2__)
  EXPECT_EQ(pickLowestCostSse2(t.data(), rule, candidates), scalar);
#endif
  EXPECT_EQ(pickLowestCost(t.data(), rule, candidates), scalar);
  return scalar;
}

Table filled(float v) {
  Table t;
  t.fill(v);
  return t;
}

TEST(PickRule, LowestCostWinsTiesGoToTheLowestSlot) {
  Table t = filled(50.0f);
  t[13] = 7.0f;
  EXPECT_EQ(pickBoth(t), 13);
  t[20] = 7.0f;
  EXPECT_EQ(pickBoth(t), 13);
  t[4] = 7.0f;
  EXPECT_EQ(pickBoth(t), 4);
  EXPECT_EQ(pickBoth(filled(3.0f)), 0);  // all equal: the first slot
}

TEST(PickRule, IgnoreNegativeAndNaNEntriesNeverWin) {
  Table t = filled(DYNAMICCL_NCCL_ALGO_PROTO_IGNORE);
  EXPECT_EQ(pickBoth(t), kNoPick);
  t[20] = 9.0f;
  EXPECT_EQ(pickBoth(t), 20);  // the lone lane outside the five full vectors
  t[3] = -5.0f;
  t[7] = kNaN;
  t[8] = -kInf;
  EXPECT_EQ(pickBoth(t), 20);
  EXPECT_EQ(pickBoth(filled(kNaN)), kNoPick);
  EXPECT_EQ(pickBoth(filled(-0.5f)), kNoPick);
}

TEST(PickRule, ZeroWinsAndNegativeZeroCountsAsZero) {
  Table t = filled(1.0f);
  t[9] = 0.0f;
  t[12] = -0.0f;
  EXPECT_EQ(pickBoth(t), 9);
  t[2] = -0.0f;
  EXPECT_EQ(pickBoth(t), 2);
}

TEST(PickRule, CostsAtOrAboveTheCapNeverWin) {
  Table t = filled(kPickCap_us);
  EXPECT_EQ(pickBoth(t), kNoPick);
  t[5] = kInf;
  EXPECT_EQ(pickBoth(t), kNoPick);
  t[6] = std::nextafter(kPickCap_us, 0.0f);
  EXPECT_EQ(pickBoth(t), 6);
}

TEST(PickRule, ScalarAndSse2AgreeOnRandomTables) {
  std::mt19937 rng(2028);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_real_distribution<float> cost(0.0f, 100.0f);
  std::uniform_int_distribution<int> small(0, 3);  // few distinct values: many ties
  const float specials[] = {DYNAMICCL_NCCL_ALGO_PROTO_IGNORE, -3.0f, kNaN, kInf, kPickCap_us, 0.0f, -0.0f};
  std::uniform_int_distribution<int> special(0, 6);
  int picked = 0;
  for (int n = 0; n < 20000; ++n) {
    Table t;
    const int usual = n % 10;  // how many kinds in ten are plain costs: from none to most
    for (float& v : t) {
      const int k = kind(rng);
      v = k < usual ? cost(rng) : k < usual + 2 ? static_cast<float>(small(rng)) : specials[special(rng)];
    }
    const int slot = pickBoth(t);
    if (slot == kNoPick) {
      for (float v : t) ASSERT_FALSE(v >= 0.0f && v < kPickCap_us) << n;
      continue;
    }
    ++picked;
    for (int i = 0; i < kCostSlots; ++i) {  // the rule itself, stated plainly
      if (!(t[i] >= 0.0f && t[i] < kPickCap_us)) continue;
      ASSERT_TRUE(t[slot] < t[i] || (t[slot] == t[i] && slot <= i)) << n;
    }
  }
  EXPECT_GT(picked, 1000);
}

TEST(PickRule, Nccl2_30LikeNccl2_28ButCostsUpToFltMaxCanWin) {
  Table t = filled(DYNAMICCL_NCCL_ALGO_PROTO_IGNORE);
  t[4] = 4.0e9f;  // above 2.28's hour-long cap
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_28), kNoPick);
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_30), 4);
  t[9] = -0.5f;  // negatives still skipped
  t[2] = 4.0e9f;  // ties still to the lowest slot
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_30), 2);
  t[3] = FLT_MAX;
  t[2] = kInf;
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_30), 4);
}

TEST(PickRule, Nccl2_31TakesNegativesInFilledSlotsAndNeverUnfilledOnes) {
  Table before = filled(DYNAMICCL_NCCL_ALGO_PROTO_IGNORE);
  before[4] = 30.0f, before[5] = 20.0f, before[13] = 25.0f;
  const uint32_t filled31 = filledSlots(before.data());
  EXPECT_EQ(filled31, (1u << 4) | (1u << 5) | (1u << 13));
  EXPECT_EQ(pickBoth(before, PickRule::Nccl2_31, filled31), 5);
  Table after = before;
  after[13] = DYNAMICCL_NCCL_ALGO_PROTO_IGNORE;  // "disabling" a slot with -1 selects it in 2.31
  EXPECT_EQ(pickBoth(after, PickRule::Nccl2_31, filled31), 13);
  EXPECT_EQ(pickBoth(after, PickRule::Nccl2_28), 5);  // 2.28 skips it
  after = before;
  after[0] = 0.0f;  // writing into a slot NCCL left unfilled: no candidate in 2.31
  EXPECT_EQ(pickBoth(after, PickRule::Nccl2_31, filled31), 5);
  EXPECT_EQ(pickBoth(after, PickRule::Nccl2_28), 0);
  after[4] = -kInf;
  EXPECT_EQ(pickBoth(after, PickRule::Nccl2_31, filled31), 4);
  after[4] = kNaN;
  after[5] = kInf;
  after[13] = FLT_MAX;
  EXPECT_EQ(pickBoth(after, PickRule::Nccl2_31, filled31), kNoPick);  // NaN, inf, FLT_MAX never win
  EXPECT_EQ(pickBoth(filled(5.0f), PickRule::Nccl2_31, 0), kNoPick);
}

TEST(PickRule, Nccl2_31TiesGoToTheHighestSlot) {
  Table t = filled(50.0f);
  t[4] = 7.0f;
  t[13] = 7.0f;
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_31), 13);
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_28), 4);
  t[20] = 7.0f;
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_31), 20);
  EXPECT_EQ(pickBoth(t, PickRule::Nccl2_31, kAllSlots & ~(1u << 20)), 13);
  EXPECT_EQ(pickBoth(filled(3.0f), PickRule::Nccl2_31), 20);
}

TEST(PickRule, ScalarAndSse2AgreeUnderEveryRuleAndMask) {
  std::mt19937 rng(2031);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_real_distribution<float> cost(-5.0f, 100.0f);
  std::uniform_int_distribution<int> small(-1, 3);
  std::uniform_int_distribution<uint32_t> mask(0, kAllSlots);
  const float specials[] = {DYNAMICCL_NCCL_ALGO_PROTO_IGNORE, -3.0f, kNaN, kInf, -kInf, kPickCap_us, FLT_MAX, 0.0f,
                            -0.0f, 4.0e9f};
  std::uniform_int_distribution<int> special(0, 9);
  for (PickRule rule : {PickRule::Nccl2_28, PickRule::Nccl2_30, PickRule::Nccl2_31}) {
    int picked = 0;
    for (int n = 0; n < 10000; ++n) {
      Table t;
      for (float& v : t) {
        const int k = kind(rng);
        v = k < 5 ? cost(rng) : k < 7 ? static_cast<float>(small(rng)) : specials[special(rng)];
      }
      const uint32_t candidates = n % 3 == 0 ? kAllSlots : mask(rng);
      const int slot = pickBoth(t, rule, candidates);
      const bool in31 = rule == PickRule::Nccl2_31;
      auto counts = [&](int i) {
        return in31 ? ((candidates >> i) & 1u) && t[i] < FLT_MAX : t[i] >= 0.0f && t[i] < pickCap(rule);
      };
      if (slot == kNoPick) {
        for (int i = 0; i < kCostSlots; ++i) ASSERT_FALSE(counts(i)) << n;
        continue;
      }
      ++picked;
      ASSERT_TRUE(counts(slot)) << n;
      for (int i = 0; i < kCostSlots; ++i)  // the rule itself, stated plainly
        if (counts(i)) {
          ASSERT_TRUE(t[slot] < t[i] || (t[slot] == t[i] && (in31 ? slot >= i : slot <= i))) << n;
        }
    }
    EXPECT_GT(picked, 1000) << pickRuleName(rule);
  }
}

TEST(PickRule, TunerChannelsReplaceBefore2_31AndOnlyLowerFrom2_31) {
  EXPECT_EQ(channelsRun(PickRule::Nccl2_28, 0, 12), 12);
  EXPECT_EQ(channelsRun(PickRule::Nccl2_28, 32, 12), 32);
  EXPECT_EQ(channelsRun(PickRule::Nccl2_30, 32, 12), 32);
  EXPECT_EQ(channelsRun(PickRule::Nccl2_31, 32, 12), 12);
  EXPECT_EQ(channelsRun(PickRule::Nccl2_31, 4, 12), 4);
  EXPECT_EQ(channelsRun(PickRule::Nccl2_31, 0, 12), 12);
  EXPECT_FALSE(channelsAreCap(PickRule::Nccl2_30));
  EXPECT_TRUE(channelsAreCap(PickRule::Nccl2_31));
}

TEST(PickRule, VersionTextAndCodes) {
  EXPECT_EQ(parseNcclVersion("2.31"), 23100);
  EXPECT_EQ(parseNcclVersion("2.31.2"), 23102);
  EXPECT_EQ(parseNcclVersion("2.28.9"), 22809);
  EXPECT_EQ(parseNcclVersion("23007"), 23007);
  for (const char* bad : {"", "2", "2.", ".31", "2.31.", "2.31.2.1", "abc", "-1", "1e309", "nan", "2.310", "1.31",
                          "2800", "2.3x", "999999"})
    EXPECT_FALSE(parseNcclVersion(bad).has_value()) << bad;
  EXPECT_EQ(pickRuleFor(22809), PickRule::Nccl2_28);
  EXPECT_EQ(pickRuleFor(22100), PickRule::Nccl2_28);
  EXPECT_EQ(pickRuleFor(23003), PickRule::Nccl2_30);
  EXPECT_EQ(pickRuleFor(23102), PickRule::Nccl2_31);
  EXPECT_EQ(pickRuleFor(23300), PickRule::Nccl2_31);
  EXPECT_EQ(parsePickRule("2.30"), PickRule::Nccl2_30);
  EXPECT_EQ(kNewestPickRule, PickRule::Nccl2_31);
}

// NCCL's own choice on a table NCCL filled with IGNORE around a few slots: the filled-slot mask is
// computed inside ncclChoice, so no rule can return an IGNORE slot as what NCCL runs. Without the mask
// 2.31's rule counts -1 as the lowest cost and answers slot 20, which NCCL can never run.
TEST(PickRule, NcclsOwnChoiceOnATableWithIgnoreEntriesIsAFilledSlotUnderEveryRelease) {
  Table t = filled(-1.0f);
  t[2] = 30.0f, t[3] = 10.0f, t[5] = 20.0f;
  for (int version : {22809, 23007, 23102, 23206}) {
    const PickRule rule = pickRuleFor(version);
    EXPECT_EQ(ncclChoice(t.data(), rule), 3) << version;
  }
  EXPECT_EQ(pickLowestCost(t.data(), PickRule::Nccl2_31, kAllSlots), 20) << "the raw rule without NCCL's mask";
  Table after = t;  // a tuner forcing slot 5 by a zero: 2.31 runs it, a revived IGNORE slot never
  after[5] = 0.0f, after[20] = -5.0f;
  EXPECT_EQ(ncclChoice(after.data(), PickRule::Nccl2_31, t.data()), 5);
  EXPECT_EQ(ncclChoice(after.data(), PickRule::Nccl2_28, t.data()), 5);
}

TEST(PickRule, EachReleaseProbesItsNewestTunerInterface) {
  EXPECT_EQ(tunerProbeFrom(22809), 5);
  EXPECT_EQ(tunerProbeFrom(23007), 6);
  EXPECT_EQ(tunerProbeFrom(23102), 6);
  EXPECT_EQ(tunerProbeFrom(23203), 6) << "2.32.3 still probes v6 down";
  EXPECT_EQ(tunerProbeFrom(23206), 7) << "2.32.6 looks up ncclTunerPlugin_v7 first";
  EXPECT_EQ(pickRuleFor(23206), PickRule::Nccl2_31) << "2.32 keeps 2.31's selection rules";
}

}  // namespace

