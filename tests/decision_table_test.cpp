// DecisionTable must answer exactly what "first matching rule wins" answers, for every input.
#include <gtest/gtest.h>

#include <random>

#include "policy/policy.h"

namespace dynamiccl::policy {
namespace {

// The obvious, slow reading of a profile: the reference the compiled table is checked against.
std::vector<Decision> referenceCandidates(const Profile& p, const CommShape& shape, int coll, uint64_t nBytes,
                                          int numPipeOps, int regBuff) {
  std::vector<Decision> out;
  for (const Rule& r : p.rules) {
    if (r.collective && static_cast<int>(*r.collective) != coll) continue;
    if (shape.nNodes < r.minNodes || shape.nNodes > r.maxNodes) continue;
    if (shape.nRanks < r.minRanks || shape.nRanks > r.maxRanks) continue;
    if (r.numPipeOps != -1 && r.numPipeOps != numPipeOps) continue;
    if (r.regBuff != -1 && r.regBuff != regBuff) continue;
    const uint64_t size = r.sizeKey == SizeKey::Bytes ? nBytes : bytesPerRank(nBytes, shape.nRanks);
    if (size < r.minBytes || size > r.maxBytes) continue;
    if (std::find(out.begin(), out.end(), r.decision) != out.end()) continue;
    if (out.size() < Candidates::kMax) out.push_back(r.decision);
  }
  return out;
}

Rule randomRule(std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  Rule r;
  if (pick(4)) r.collective = Collective(pick(kNumCollectives));
  r.sizeKey = pick(3) ? SizeKey::Bytes : SizeKey::BytesPerRank;
  const uint64_t a = uint64_t{1} << pick(34), b = uint64_t{1} << pick(34);
  r.minBytes = std::min(a, b) + (pick(2) ? 0 : rng() % 100);
  r.maxBytes = pick(8) ? std::max(a, b) * (1 + pick(3)) : UINT64_MAX;
  if (r.minBytes > r.maxBytes) std::swap(r.minBytes, r.maxBytes);
  if (pick(3) == 0) {
    r.minNodes = 1 + pick(4);
    r.maxNodes = r.minNodes + pick(4);
  }
  if (pick(3) == 0) {
    r.minRanks = 1 + pick(16);
    r.maxRanks = r.minRanks + pick(32);
  }
  if (pick(4) == 0) r.numPipeOps = 1 + pick(3);
  if (pick(4) == 0) r.regBuff = pick(2);
  r.decision.algo = Algo(pick(kNumAlgos));
  r.decision.proto = Proto(pick(kNumProtos));
  r.decision.nChannels = pick(3) ? 0 : 1 + pick(32);
  return r;
}

TEST(DecisionTable, EmptyProfileDecidesNothing) {
  Profile p;
  auto t = DecisionTable::compile(p, CommShape{1, 8, 1});
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.lookup(4, 1 << 20, 1, 0).count, 0);
  EXPECT_EQ(t.lookup(0, 0, 0, 1).count, 0);
  EXPECT_EQ(t.lookup(3, UINT64_MAX, 300, 0).count, 0);
}

TEST(DecisionTable, IntervalEdgesAreInclusive) {
  Profile p;
  Rule r;
  r.collective = Collective::AllReduce;
  r.minBytes = 1000;
  r.maxBytes = 5000;
  r.decision = {Algo::Tree, Proto::LL, 0, 0};
  p.rules.push_back(r);
  auto t = DecisionTable::compile(p, CommShape{1, 8, 1});
  EXPECT_EQ(t.lookup(4, 999, 1, 0).count, 0);
  EXPECT_EQ(t.lookup(4, 1000, 1, 0).count, 1);
  EXPECT_EQ(t.lookup(4, 5000, 1, 0).count, 1);
  EXPECT_EQ(t.lookup(4, 5001, 1, 0).count, 0);
  EXPECT_EQ(t.lookup(2, 2000, 1, 0).count, 0) << "other collectives untouched";
}

TEST(DecisionTable, ManyIntervalsInsideOneSizeBucketAreFoundExactly) {
  // 10k rules cut the bucket [2^19, 2^20) into 10k intervals (the lookup searches inside a bucket).
  Profile p;
  const uint64_t base = uint64_t{1} << 19, width = 52;
  for (int i = 0; i < 10000; ++i) {
    Rule r;
    r.collective = Collective::AllReduce;
    r.minBytes = base + i * width;
    r.maxBytes = base + (i + 1) * width - 1;
    r.decision = {Algo::Ring, Proto::Simple, 1 + i % 64, 0};
    p.rules.push_back(r);
  }
  auto t = DecisionTable::compile(p, CommShape{1, 8, 1});
  for (int i = 0; i < 10000; ++i)
    for (uint64_t n : {base + i * width, base + i * width + 17, base + (i + 1) * width - 1}) {
      const Candidates& c = t.lookup(4, n, 1, 0);
      ASSERT_EQ(c.count, 1) << n;
      ASSERT_EQ(c.decisions[0].nChannels, 1 + i % 64) << n;
    }
  EXPECT_EQ(t.lookup(4, base - 1, 1, 0).count, 0);
  EXPECT_EQ(t.lookup(4, base + 10000 * width, 1, 0).count, 0);
}

TEST(DecisionTable, BytesPerRankScalesWithTheCommunicator) {
  Profile p;
  Rule r;
  r.sizeKey = SizeKey::BytesPerRank;
  r.minBytes = 1024;
  r.maxBytes = 2047;
  r.decision = {Algo::Ring, Proto::Simple, 0, 0};
  p.rules.push_back(r);
  auto t8 = DecisionTable::compile(p, CommShape{1, 8, 1});
  EXPECT_EQ(t8.lookup(4, 8 * 1024 - 1, 1, 0).count, 0);
  EXPECT_EQ(t8.lookup(4, 8 * 1024, 1, 0).count, 1);
  EXPECT_EQ(t8.lookup(4, 8 * 2048 - 1, 1, 0).count, 1);
  EXPECT_EQ(t8.lookup(4, 8 * 2048, 1, 0).count, 0);
}

TEST(DecisionTable, ShapeFiltersRules) {
  Profile p;
  Rule r;
  r.minNodes = 2;
  r.maxNodes = 4;
  r.decision = {Algo::Tree, Proto::Simple, 0, 0};
  p.rules.push_back(r);
  EXPECT_TRUE(DecisionTable::compile(p, CommShape{1, 8, 1}).empty());
  EXPECT_FALSE(DecisionTable::compile(p, CommShape{1, 16, 2}).empty());
  EXPECT_TRUE(DecisionTable::compile(p, CommShape{1, 40, 5}).empty());
}

TEST(DecisionTable, MatchesTheReferenceOnRandomProfiles) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 60; ++trial) {
    Profile p;
    const int nRules = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < nRules; ++i) p.rules.push_back(randomRule(rng));
    const CommShape shape{7, 1 + static_cast<int>(rng() % 32), 1 + static_cast<int>(rng() % 6)};
    auto t = DecisionTable::compile(p, shape);
    // Probe every rule edge and random sizes.
    std::vector<uint64_t> sizes = {0, 1, 2, 3, UINT64_MAX, UINT64_MAX - 1};
    for (const Rule& r : p.rules)
      for (uint64_t base : {r.minBytes, r.maxBytes})
        for (uint64_t scale : {uint64_t{1}, static_cast<uint64_t>(shape.nRanks)})
          for (int d = -1; d <= 1; ++d) sizes.push_back(base * scale + static_cast<uint64_t>(d));
    for (int i = 0; i < 200; ++i) sizes.push_back(rng() >> (rng() % 64));
    for (uint64_t n : sizes)
      for (int coll = 0; coll < kNumCollectives; ++coll)
        for (int pipe : {0, 1, 2, 3, 4, 200, 1000})
          for (int reg : {0, 1}) {
            const auto expected = referenceCandidates(p, shape, coll, n, pipe, reg);
            const Candidates& got = t.lookup(coll, n, pipe, reg);
            ASSERT_EQ(got.count, expected.size()) << "trial " << trial << " n=" << n << " coll=" << coll;
            for (size_t k = 0; k < expected.size(); ++k) ASSERT_EQ(got.decisions[k], expected[k]);
          }
  }
}

}  // namespace
}  // namespace dynamiccl::policy
