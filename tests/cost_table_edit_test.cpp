// The hot path's usual call is a shortcut, never a second rule: on random NCCL tables (IGNORE cells,
// zeros, NaN, infinities, denormals, negatives) and random candidates (guarded, algorithm alone, NCCL's
// own), the vector test of a usual table agrees with a cell-at-a-time one, and applyCandidates (the
// usual path first) edits the table and channels exactly as the whole rule alone does.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "plugin/tuner/cost_table_edit.h"

namespace dynamiccl::plugin {
namespace {

constexpr int kCells = kNumAlgos * kNumProtos;

float oddOrUsualCell(std::mt19937& rng) {
  switch (rng() % 12) {
    case 0: return DYNAMICCL_NCCL_ALGO_PROTO_IGNORE;
    case 1: return 0.0f;
    case 2: return -0.0f;
    case 3: return std::numeric_limits<float>::quiet_NaN();
    case 4: return (rng() & 1) ? INFINITY : -INFINITY;
    case 5: return FLT_MAX;
    case 6: return std::numeric_limits<float>::denorm_min();
    case 7: return std::bit_cast<float>(static_cast<uint32_t>(rng()));  // any bit pattern
    default: return 1.0f + static_cast<float>(rng() % 1000);
  }
}

bool usualByCell(const float* cells) {
  for (int k = 0; k < kCells; ++k)
    if (!std::isfinite(cells[k]) || cells[k] == 0.0f) return false;
  return true;
}

TEST(UsualNcclTable, AgreesWithACellAtATimeOnEveryKindOfCell) {
  std::mt19937 rng(7);
  int usual = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    float cells[kCells];
    const int oddCells = static_cast<int>(rng() % 3);  // mostly usual tables, some with one or two odd cells
    for (float& c : cells) c = 1.0f + static_cast<float>(rng() % 1000);
    for (int i = 0; i < oddCells; ++i) cells[rng() % kCells] = oddOrUsualCell(rng);
    ASSERT_EQ(usualNcclTable(cells), usualByCell(cells)) << "trial " << trial;
    usual += usualByCell(cells);
  }
  EXPECT_GT(usual, 20000);  // both kinds were tried
  EXPECT_LT(usual, 180000);
}

TEST(UsualNcclTable, SeesAnOddCellInEverySlot) {  // the last word overlaps the fifth: no cell is skipped
  for (int k = 0; k < kCells; ++k)
    for (float odd : {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN()}) {
      float cells[kCells];
      for (float& c : cells) c = 5.0f;
      cells[k] = odd;
      EXPECT_FALSE(usualNcclTable(cells)) << "cell " << k << " = " << odd;
    }
}

policy::Decision randomDecision(std::mt19937& rng) {
  policy::Decision d;
  const int kind = static_cast<int>(rng() % 6);
  if (kind == 0) {
    d.algo = Algo::Default;  // keeps NCCL's algorithm and protocol
  } else {
    d.algo = static_cast<Algo>(rng() % kNumAlgos);
    d.proto = kind == 1 ? Proto::Default : static_cast<Proto>(rng() % kNumProtos);
  }
  d.nChannels = (rng() & 1) ? static_cast<int>(rng() % 64) : 0;
  d.chunkBytes = (rng() & 1) ? uint64_t{1} << (rng() % 22) : 0;
  return d;
}

TEST(ApplyCandidates, TheUsualPathEditsAsTheWholeRuleAlone) {
  std::mt19937 rng(11);
  int usualTaken = 0;
  for (int trial = 0; trial < 100000; ++trial) {
    float table[kCells];
    for (float& c : table) c = 1.0f + static_cast<float>(rng() % 100);
    const int odd = static_cast<int>(rng() % 4);
    for (int i = 0; i < odd; ++i) table[rng() % kCells] = oddOrUsualCell(rng);
    policy::Candidates candidates;
    candidates.count = static_cast<uint8_t>(rng() % (policy::Candidates::kMax + 1));
    for (int i = 0; i < candidates.count; ++i) {
      candidates.decisions[i] = randomDecision(rng);
      if (rng() % 4 == 0) candidates.admits[i] = static_cast<policy::GuardMask>(rng());
    }
    EditLimits limits;
    limits.keepChannels = rng() % 5 == 0;
    limits.keepProto = rng() % 5 == 0;
    limits.uniqueZero = rng() % 3 == 0;
    const abi::PickRule rule = (rng() & 1) ? abi::PickRule::Nccl2_31 : abi::PickRule::Nccl2_28;

    float viaUsual[kCells], viaRule[kCells];
    std::memcpy(viaUsual, table, sizeof table);
    std::memcpy(viaRule, table, sizeof table);
    const CellScan scan = scanCostTable(CostCells{viaUsual});
    if (!scan.finite) continue;  // the caller edits no such table
    int channelsUsual = -7, channelsRule = -7;
    policy::Decision ranUsual, ranRule;
    const policy::Decision* a =
        applyCandidates(candidates, CostCells{viaUsual}, &channelsUsual, rule, limits, scan, &ranUsual);
    const policy::Decision* b = edit_detail::applyFirstFeasible(candidates, CostCells{viaRule}, &channelsRule, rule,
                                                                limits, scanOtherShape(CostCells{viaRule}), &ranRule);
    ASSERT_EQ(a, b) << "trial " << trial;
    ASSERT_EQ(std::memcmp(viaUsual, viaRule, sizeof table), 0) << "trial " << trial;
    ASSERT_EQ(channelsUsual, channelsRule) << "trial " << trial;
    if (a) {
      ASSERT_EQ(ranUsual, ranRule) << "trial " << trial;
    }
    usualTaken += usualNcclTable(table) && applyUsual(candidates, table, &channelsUsual, limits, &ranUsual) != nullptr;
  }
  EXPECT_GT(usualTaken, 5000);  // the shortcut was exercised, not only the rule
}

}  // namespace
}  // namespace dynamiccl::plugin
