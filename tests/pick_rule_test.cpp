// NCCL's pick rule (plugin/abi/pick_rule.h): the scalar and SSE2 versions agree, and both are 2.28's
// rule (strict minimum below the cap over entries >= 0, ties to the lowest slot).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "plugin/abi/abi.h"

namespace {

using namespace dynamiccl::abi;
using Table = std::array<float, kCostSlots>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Both versions, checked against each other; returns the scalar answer.
int pickBoth(const Table& t) {
  const int scalar = pickLowestCostScalar(t.data());
#if defined(__SSE2__)
  EXPECT_EQ(pickLowestCostSse2(t.data()), scalar);
#endif
  EXPECT_EQ(pickLowestCost(t.data()), scalar);
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

}  // namespace
