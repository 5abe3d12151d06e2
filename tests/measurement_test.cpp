// What measuring costs and how much the leader measures: the published prices, a calibration read and
// made from two runs, the plan's rate while searching, settled and not paying, and the table's rule
// that only measured calls explore.
#include <gtest/gtest.h>

#include <cmath>

#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::learner {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

TEST(MeasurementCost, PublishedFiguresPriceNccl231FarAbove229) {
  const MeasurementCost v231 = MeasurementCost::published(23102), v229 = MeasurementCost::published(22907);
  EXPECT_NEAR(v231.share(1 * kMiB), 0.1049, 1e-9);  // PR #2357: 52.265 -> 46.783 GB/s
  EXPECT_NEAR(v229.share(1 * kMiB), 0.0044, 1e-9);
  EXPECT_NEAR(v231.share(128 * kKiB), 0.043, 1e-9);
  EXPECT_NEAR(v231.share(4 * kMiB), 0.133, 1e-9);
  // Outside the measured sizes: the nearest measured share, never an extrapolation.
  EXPECT_DOUBLE_EQ(v231.share(8), v231.share(128 * kKiB));
  EXPECT_DOUBLE_EQ(v231.share(1ull << 34), v231.share(4 * kMiB));
  // Between points: log-linear, so 2 MiB lies between 1 and 4 MiB's shares.
  EXPECT_GT(v231.share(2 * kMiB), v231.share(1 * kMiB));
  EXPECT_LT(v231.share(2 * kMiB), v231.share(4 * kMiB));
  for (uint64_t b = 8; b <= (1ull << 30); b *= 2) EXPECT_GT(v231.share(b), 5 * v229.share(b)) << b;
  // An unknown release is priced as the dearest known one; 2.28 as 2.29 (no figure of its own).
  EXPECT_DOUBLE_EQ(MeasurementCost::published(0).share(kMiB), v231.share(kMiB));
  EXPECT_DOUBLE_EQ(MeasurementCost::published(22809).share(kMiB), v229.share(kMiB));
  EXPECT_NE(v231.source().find("2355"), std::string::npos);
}

TEST(MeasurementCost, ACalibrationFromTwoRunsReadsBackAndBadFilesAreRefused) {
  auto m = MeasurementCost::fromRuns({{1024, 10.0}, {1 * kMiB, 100.0}, {4 * kMiB, 300.0}},
                                     {{1024, 11.0}, {1 * kMiB, 102.0}, {4 * kMiB, 290.0}}, "two runs");
  ASSERT_TRUE(m) << m.error();
  ASSERT_EQ(m->points().size(), 3u);
  EXPECT_NEAR(m->share(1024), 0.1, 1e-12);
  EXPECT_NEAR(m->share(kMiB), 0.02, 1e-12);
  EXPECT_DOUBLE_EQ(m->share(4 * kMiB), 0);  // faster with the profiler: noise, never a negative price
  auto back = MeasurementCost::fromJson(m->toJson());
  ASSERT_TRUE(back) << back.error();
  EXPECT_DOUBLE_EQ(back->share(kMiB), m->share(kMiB));
  EXPECT_EQ(back->source(), "two runs");

  EXPECT_FALSE(MeasurementCost::fromRuns({{1024, 10.0}}, {{2048, 11.0}}, "no common size"));
  EXPECT_FALSE(MeasurementCost::fromJson(""));
  EXPECT_FALSE(MeasurementCost::fromJson("[]"));
  EXPECT_FALSE(MeasurementCost::fromJson(R"({"points":[]})"));
  EXPECT_FALSE(MeasurementCost::fromJson(R"({"points":[{"bytes":-1,"share":0.1}]})"));
  EXPECT_FALSE(MeasurementCost::fromJson(R"({"points":[{"bytes":8,"share":"x"}]})"));
  EXPECT_FALSE(MeasurementCost::fromJson(R"({"points":[{"bytes":8,"share":0.1},{"bytes":8,"share":0.2}]})"));
  EXPECT_FALSE(MeasurementCost::fromJson(R"({"points":[{"bytes":8,"share":1e300}]})"));
  EXPECT_FALSE(MeasurementCost::fromJson(std::string(100, '[') + std::string(100, ']')));
}

TEST(MeasurementPlan, ASearchingKeyMeasuresWhatItsTrialsNeedWithinHalfItsOwnBudget) {
  // Two searching keys of equal time and calls. At 10% a profiled call, trials taking 2% of the key's
  // calls need 4% measured (a sample of what runs beside each), within what half of a 1% budget
  // affords (5%); at 2%, trials at 30% would need 60%, but half the budget affords 25%.
  std::vector<KeyMeasurement> keys = {{1000, 0.10, true, 0, 0.02, 100}, {1000, 0.02, true, 0, 0.30, 100}};
  MeasurementPlan p = planMeasurement(keys, 0.01, 0.01, 0.5);
  EXPECT_TRUE(p.searching);
  ASSERT_EQ(p.keyRates.size(), 2u);
  EXPECT_NEAR(p.keyRates[0], 0.04, 1e-12);
  EXPECT_NEAR(p.keyRates[1], 0.25, 1e-12);
  EXPECT_NEAR(p.rate, (0.04 + 0.25) / 2, 1e-12);
  EXPECT_NEAR(p.costShare, (0.04 * 0.10 + 0.25 * 0.02) / 2, 1e-12);
  EXPECT_EQ(p.searchingKeys, 2);
  // The second settles: it measures the settled share, whatever the first still searches.
  keys[1].searching = false;
  p = planMeasurement(keys, 0.01, 0.01, 0.5);
  EXPECT_NEAR(p.keyRates[0], 0.04, 1e-12);
  EXPECT_NEAR(p.keyRates[1], 0.01, 1e-12);
  EXPECT_EQ(p.searchingKeys, 1);
  // A search of a key with a sliver of the job's time measures no less than a settled job would.
  keys = {{1, 0.10, true, 0}, {1e6, 0.10, false, 0}};
  EXPECT_DOUBLE_EQ(planMeasurement(keys, 0.01, 0.01, 0.5).rate, 0.01);
  // Cheap measurement (NCCL 2.29's prices): trials at half the calls measure every call of the key.
  keys = {{1000, 0.001, true, 0, 0.5, 10}};
  EXPECT_DOUBLE_EQ(planMeasurement(keys, 0.01, 0.01, 0.5).rate, 1.0);
  // Nothing measured yet: the initial rate.
  EXPECT_DOUBLE_EQ(planMeasurement({}, 0.01, 0.01, 0.25).rate, 0.25);
  EXPECT_NEAR(initialMeasureRate(0.01, 0.133), 0.005 / 0.133, 1e-12);
  EXPECT_DOUBLE_EQ(initialMeasureRate(0.01, 0), 1.0);
}

TEST(MeasurementPlan, SettledItMeasuresTheSettledShareWhileTheGainRepaysItAndStopsWhenNot) {
  // Settled with a 5% gain at one key: drift re-tests at 1% of calls cost 1% x 10% = 0.1% < 2.5%.
  std::vector<KeyMeasurement> keys = {{1000, 0.10, false, 0.05}, {1000, 0.10, false, 0}};
  MeasurementPlan p = planMeasurement(keys, 0.01, 0.01, 0.5);
  EXPECT_FALSE(p.stopped);
  EXPECT_DOUBLE_EQ(p.rate, 0.01);
  EXPECT_NEAR(p.gainShare, 0.025, 1e-12);
  // No gain anywhere (NCCL's default is the best): measuring cannot pay, so it stops.
  keys = {{1000, 0.10, false, 0}, {1000, 0.10, false, 0}};
  p = planMeasurement(keys, 0.01, 0.01, 0.5);
  EXPECT_TRUE(p.stopped);
  EXPECT_DOUBLE_EQ(p.rate, 0);
  // A gain below the price of re-testing: stops too.
  keys = {{1000, 0.5, false, 0.001}};
  EXPECT_TRUE(planMeasurement(keys, 0.01, 0.01, 0.5).stopped);
  // Free measurement is never stopped for its price.
  keys = {{1000, 0, false, 0}};
  p = planMeasurement(keys, 0.01, 0.01, 0.5);
  EXPECT_FALSE(p.stopped);
  EXPECT_DOUBLE_EQ(p.rate, 0.01);
}

TEST(MeasurementPlan, ASearchMustRepayItsMeasurementWithinTheJob) {
  // NCCL 2.31 at 4 MiB: 12 profiled calls at 13.3% cost 1.6 calls' time; a 10% gain repays it only
  // over 16 calls or more of the key still to come.
  EXPECT_FALSE(searchRepays(15, 0.133, 6, 0.10));
  EXPECT_TRUE(searchRepays(16, 0.133, 6, 0.10));
  // NCCL 2.29's price is repaid at once; a free measurement always.
  EXPECT_TRUE(searchRepays(2, 0.011, 6, 0.10));
  EXPECT_TRUE(searchRepays(0, 0.0, 6, 0.10));
  EXPECT_FALSE(searchRepays(1000, 0.133, 6, 0.0));  // nothing plausible to gain: never searched
}

TEST(OnlineTableMeasure, OnlyMeasuredCallsExploreAndTheShareTravelsInTheRecord) {
  OnlineTable t;
  t.setVersion(3);
  OnlineEntry& e = t.entry(onlineKey(4, 4096));
  e.exploit.count = 1;
  e.exploit.decisions[0] = Decision{Algo::Ring, Proto::Simple, 0, 0};
  e.nArms = 1;
  e.cumulativeThreshold[0] = UINT32_MAX;  // every measured call explores
  e.arms[0].count = 1;
  e.arms[0].decisions[0] = Decision{Algo::Tree, Proto::LL, 0, 0};
  t.setMeasureThreshold(rateThreshold(0.02));
  const uint64_t commId = 0xfeed;
  int explored = 0, measured = 0;
  const int calls = 100000;
  for (int k = 0; k < calls; ++k) {
    const Candidates* c = t.pick(4, 4096, commId, k);
    ASSERT_NE(c, nullptr);
    const bool m = t.measures(commId, k);
    measured += m;
    explored += c->decisions[0].algo == Algo::Tree;
    if (!m) {
      EXPECT_EQ(c->decisions[0].algo, Algo::Ring) << "call " << k << " explored unmeasured";
    }
  }
  EXPECT_EQ(explored, measured);
  EXPECT_NEAR(measured, 0.02 * calls, 0.002 * calls);
  auto back = OnlineTable::deserialize(t.serialize());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ((*back)->measureThreshold(), t.measureThreshold());
  EXPECT_EQ(rateThreshold(1), kMeasureEveryCall);
  EXPECT_EQ(rateThreshold(0), 0u);
  EXPECT_EQ(rateThreshold(-1), 0u);
}

TEST(OnlineTableMeasure, AKeyMeasuresAtItsOwnShareAndItTravelsInTheRecord) {
  OnlineTable t;
  t.setVersion(5);
  t.setMeasureThreshold(kMeasureEveryCall);  // settled keys: every call (as DYNAMICCL_BUDGET=measure=1)
  const uint32_t key = onlineKey(4, 4096);
  OnlineEntry& e = t.entry(key);
  e.exploit.count = 1;
  e.exploit.decisions[0] = Decision{Algo::Ring, Proto::LL, 0, 0};
  e.nArms = 1;
  e.cumulativeThreshold[0] = UINT32_MAX;
  e.arms[0].count = 1;
  e.arms[0].decisions[0] = Decision{Algo::Tree, Proto::LL, 0, 0};
  e.ownMeasureThreshold = true;
  e.measureThreshold = rateThreshold(0.1);
  auto back = OnlineTable::deserialize(t.serialize());
  ASSERT_TRUE(back) << back.error();
  const uint64_t commId = 0xbeef;
  int measured = 0, explored = 0, other = 0;
  const int calls = 50000;
  for (int k = 0; k < calls; ++k) {
    measured += (*back)->measures(commId, k, key);
    explored += (*back)->pick(4, 4096, commId, k)->decisions[0].algo == Algo::Tree;
    other += (*back)->measures(commId, k, onlineKey(4, 1 << 20));  // a key the table does not name
  }
  EXPECT_NEAR(measured, 0.1 * calls, 0.01 * calls);
  EXPECT_EQ(explored, measured) << "only the key's own measured calls explore";
  EXPECT_EQ(other, calls);
}

}  // namespace
}  // namespace dynamiccl::learner
