// policy::mergeProfiles at scale (two 200k-rule profiles, merged in near-linear time; the time is
// printed, the budget lives in bench_policy_init) and against a brute-force judge on random profiles:
// the same first conflict, named the same way, or the same merged rules.
#include <gtest/gtest.h>

#include <bitset>
#include <chrono>
#include <climits>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "tests/profile_fixture.h"

namespace {

using namespace dynamiccl;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// 5 collectives x 200 shapes x 200 sizes each; shapes 101..200 in both (they agree there), plus a rule
// for every call above 1 TiB in the first, which no rule of the second reaches.
TEST(ProfileMerge, TwoProfilesOf200kRulesMergeAndAConflictAmongThemIsNamed) {
  policy::Profile a = fixture::shapedProfile("a.json", 1, 200, 200);
  const policy::Profile b = fixture::shapedProfile("b.json", 101, 200, 200);
  policy::Rule huge;
  huge.minBytes = uint64_t{1} << 40;
  huge.decision.algo = Algo::Ring;
  huge.decision.proto = Proto::Simple;
  huge.origin = "rules[200000]";
  a.rules.push_back(huge);
  ASSERT_EQ(b.rules.size(), 200000u);

  const std::vector<policy::Profile> both = {a, b};
  auto start = std::chrono::steady_clock::now();
  auto merged = policy::mergeProfiles(both);
  std::printf("merge of %zu + %zu rules: %.2f s\n", a.rules.size(), b.rules.size(), secondsSince(start));
  ASSERT_TRUE(merged.ok()) << merged.error();
  ASSERT_EQ(merged->rules.size(), a.rules.size() + b.rules.size());
  EXPECT_EQ(merged->rules[a.rules.size()].origin, b.rules.front().origin);  // in the order given
  EXPECT_EQ(merged->rules[a.rules.size()].minRanks, 101);
  EXPECT_EQ(merged->rules.back().minRanks, 300);

  // One rule of the second, late in it, answers a size of shape 150 (shared) differently.
  policy::Profile clash = b;
  const size_t late = (4 * 200 + 49) * 200 + 199;  // allreduce, shape 150 (the 50th of b), its last bin
  ASSERT_EQ(clash.rules[late].minRanks, 150);
  clash.rules[late].decision.algo = clash.rules[late].decision.algo == Algo::Ring ? Algo::Tree : Algo::Ring;
  const std::vector<policy::Profile> clashing = {a, clash};
  start = std::chrono::steady_clock::now();
  auto refused = policy::mergeProfiles(clashing);
  std::printf("merge refusing a conflict at rule %zu of 200000: %.2f s\n", late, secondsSince(start));
  ASSERT_FALSE(refused.ok());
  const size_t inA = (4 * 200 + 149) * 200 + 199;
  EXPECT_EQ(refused.error(), "conflict: a.json rules[" + std::to_string(inA) + "] and b.json rules[" + std::to_string(late) +
                                 "] answer the same calls differently; keep one (or narrow a rule) and merge again");
}

// The judge: calls on a small grid, each rule as the set of calls it matches (sizes in another unit
// than the other rule's are taken to match, as the merge says); the first rule, in order, that an
// earlier profile's rule answers differently on a shared call.
constexpr int kColls = 3, kNodes = 3, kRanks = 4, kPipe = 2, kReg = 2, kSizes = 16;
using Calls = std::bitset<kColls * kNodes * kRanks * kPipe * kReg>;

Calls callsOf(const policy::Rule& r) {
  Calls out;
  int cell = 0;
  for (int c = 0; c < kColls; ++c)
    for (int n = 1; n <= kNodes; ++n)
      for (int k = 1; k <= kRanks; ++k)
        for (int p = 1; p <= kPipe; ++p)
          for (int g = 0; g < kReg; ++g, ++cell)
            out[cell] = (!r.collective || static_cast<int>(*r.collective) == c) && r.minNodes <= n && n <= r.maxNodes &&
                        r.minRanks <= k && k <= r.maxRanks && (r.numPipeOps < 0 || r.numPipeOps == p) &&
                        (r.regBuff < 0 || r.regBuff == g);
  return out;
}

std::bitset<kSizes> sizesOf(const policy::Rule& r) {
  std::bitset<kSizes> out;
  for (uint64_t b = 0; b < kSizes; ++b) out[b] = r.minBytes <= b && b <= r.maxBytes;
  return out;
}

std::optional<std::string> judge(const std::vector<policy::Profile>& profiles) {
  for (size_t i = 1; i < profiles.size(); ++i)
    for (const policy::Rule& r : profiles[i].rules)
      for (size_t j = 0; j < i; ++j)
        for (const policy::Rule& e : profiles[j].rules) {
          const bool sizes = e.sizeKey != r.sizeKey || (sizesOf(e) & sizesOf(r)).any();
          if (sizes && (callsOf(e) & callsOf(r)).any() && !(e.decision == r.decision))
            return "conflict: " + profiles[j].source + " " + e.origin + " and " + profiles[i].source + " " + r.origin +
                   " answer the same calls differently; keep one (or narrow a rule) and merge again";
        }
  return std::nullopt;
}

policy::Rule randomRule(std::mt19937& rng, const std::vector<policy::Decision>& decisions) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  policy::Rule r;
  if (pick(0, 4)) r.collective = static_cast<Collective>(pick(0, kColls - 1));
  r.sizeKey = pick(0, 9) ? policy::SizeKey::Bytes : policy::SizeKey::BytesPerRank;
  r.minBytes = pick(0, kSizes - 1);
  r.maxBytes = pick(0, 5) ? std::min<uint64_t>(kSizes - 1, r.minBytes + pick(0, 3)) : UINT64_MAX;
  r.minNodes = pick(1, kNodes);
  r.maxNodes = pick(0, 5) ? r.minNodes : INT_MAX;
  r.minRanks = pick(1, kRanks);
  r.maxRanks = pick(0, 2) ? r.minRanks : std::min(kRanks, r.minRanks + pick(0, 2));
  r.numPipeOps = pick(0, 3) ? -1 : pick(1, kPipe);
  r.regBuff = pick(0, 3) ? -1 : pick(0, kReg - 1);
  // Mostly what every profile answers at these sizes, so that many merges go through.
  r.decision = pick(0, 14) ? decisions[r.minBytes % decisions.size()] : decisions[pick(0, int(decisions.size()) - 1)];
  return r;
}

TEST(ProfileMerge, AgreesWithABruteForceJudgeOnRandomProfiles) {
  std::mt19937 rng(20261127);
  std::vector<policy::Decision> decisions(3);
  decisions[0].algo = Algo::Ring, decisions[0].proto = Proto::LL;
  decisions[1].algo = Algo::Tree, decisions[1].proto = Proto::Simple;
  decisions[2].nChannels = 8;
  int merged = 0, refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<policy::Profile> profiles(1 + trial % 4);
    for (size_t p = 0; p < profiles.size(); ++p) {
      profiles[p].source = "p" + std::to_string(p) + ".json";
      const int n = std::uniform_int_distribution<int>(0, 12)(rng);
      for (int k = 0; k < n; ++k) {
        profiles[p].rules.push_back(randomRule(rng, decisions));
        profiles[p].rules.back().origin = "rules[" + std::to_string(k) + "]";
      }
    }
    const std::optional<std::string> expected = judge(profiles);
    auto got = policy::mergeProfiles(profiles);
    if (expected) {
      ++refused;
      ASSERT_FALSE(got.ok()) << "trial " << trial << ": expected " << *expected;
      EXPECT_EQ(got.error(), *expected) << "trial " << trial;
    } else {
      ++merged;
      ASSERT_TRUE(got.ok()) << "trial " << trial << ": " << got.error();
      size_t total = 0;
      for (const policy::Profile& p : profiles) total += p.rules.size();
      EXPECT_EQ(got->rules.size(), total) << "trial " << trial;
    }
  }
  EXPECT_GT(merged, 100);  // both outcomes well represented
  EXPECT_GT(refused, 100);
}

}  // namespace
