// The learner's channel search: once a key's (algorithm, protocol) has settled, its channel count is
// searched from the count NCCL runs, in steps of two, then between the two best; only counts the host
// runs are asked for; the same observations build the same tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "learner/learner.h"
#include "learner/verifier.h"
#include "policy/policy.h"

namespace dynamiccl::learner {
namespace {

constexpr int kAllReduce = 4;
constexpr uint64_t kBytes = 4 << 20;

// The host: what NCCL runs alone (ring/simple at `own` channels), and the count it runs when asked for
// one: the asked count up to what it built (and `clip`) before 2.31, at most its own from 2.31.
struct Host {
  int own = 4;
  int built = 64;
  int clip = 64;       // e.g. the 16 KiB-per-channel floor at this size
  bool capOnly = false;
  int runs(int asked) const {
    if (asked <= 0) return own;
    if (capOnly) return std::min(asked, own);
    return std::min({asked, built, clip});
  }
};

struct SearchRun {
  double total_us = 0, exploreExtra_us = 0;
  Decision last;          // the exploit decision at the end
  int lastRan = 0;        // the channels it runs
  std::set<int> asked;    // every channel count any call asked for
  uint64_t channelTrials = 0;  // calls that ran a channel count other than the exploit's
  uint64_t lastTrialCall = 0;
  std::vector<std::string> tables;  // every build's wire form
};

// One key searched over `calls` calls, a table every 500; latency truth(channels that ran) with 3% noise;
// every call observed with the channels it ran and those it asked for.
SearchRun searchKey(OnlineLearner& l, const Host& host, uint64_t calls, uint64_t seed, const std::function<double(int)>& truth) {
  const int bucket = SizeBucket::of(kBytes);
  l.setNcclDefault(kAllReduce, bucket, Algo::Ring, Proto::Simple);
  float table[kNumAlgos * kNumProtos];
  std::fill(std::begin(table), std::end(table), -1.0f);  // only ring/simple: the pair search has nothing to try
  table[static_cast<int>(Algo::Ring) * kNumProtos + static_cast<int>(Proto::Simple)] = 10.0f;
  l.setModelledCost(kAllReduce, bucket, table);
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> noise(0, 0.03);
  std::unique_ptr<OnlineTable> t;
  SearchRun r;
  const Decision nccl{Algo::Ring, Proto::Simple, 0, 0};
  for (uint64_t k = 0; k < calls; ++k) {
    if (k % 500 == 0) {
      t = l.build(k / 500);
      r.tables.push_back(t->serialize());
    }
    const Candidates* c = t->pick(kAllReduce, kBytes, 0xabc, k);
    const Decision d = c ? c->decisions[0] : nccl;
    const OnlineEntry& e = t->entry(onlineKey(kAllReduce, kBytes));
    const Decision x = e.exploit.count ? e.exploit.decisions[0] : nccl;
    if (d.nChannels > 0) r.asked.insert(d.nChannels);
    const int ran = host.runs(d.nChannels), exploitRan = host.runs(x.nChannels);
    const double lat = truth(ran) * noise(rng);
    r.total_us += lat;
    if (ran != exploitRan) {
      ++r.channelTrials;
      r.lastTrialCall = k;
      r.exploreExtra_us += std::max(0.0, lat - truth(exploitRan));
    }
    l.observe(kAllReduce, kBytes, d.algo, d.proto, ran, lat, d.nChannels);
    r.last = x;
    r.lastRan = exploitRan;
  }
  return r;
}

OnlineLearner searching(const Host& host, int maxChannels = 0, LearnerMode mode = LearnerMode::Search) {
  OnlineConfig config;
  config.mode = mode;
  config.channelsCapOnly = host.capOnly;
  config.maxChannels = maxChannels;
  return OnlineLearner(config, [](int, int) { return Candidates{}; }, [](int, int) { return Candidates{}; });
}

// Falls steeply with channels, then flattens; a per-channel cost makes a knee near 28.
double knee(int c) { return 20 + 400.0 / c + 0.5 * c; }

double bestOf(const std::function<double(int)>& truth, int most) {
  double best = INFINITY;
  for (int c = 1; c <= most; ++c) best = std::min(best, truth(c));
  return best;
}

TEST(ChannelSearch, FindsTheKneeWithinAHandfulOfTrials) {
  const Host host{4, 64, 64, false};
  OnlineLearner l = searching(host, 64);
  const SearchRun r = searchKey(l, host, 40000, 3, knee);
  EXPECT_GT(r.last.nChannels, host.own) << "NCCL's 4 channels are far from the knee";
  EXPECT_LE(knee(r.lastRan), 1.01 * bestOf(knee, 64)) << "the final table runs " << r.lastRan << " channels";
  EXPECT_LE(r.asked.size(), 6u) << "steps of two from 4, then once between the two best";
  for (const Verdict& v : l.verdicts()) EXPECT_GT(v.candidate.nChannels, 0) << "only channel arms were candidates";
  EXPECT_LT(r.exploreExtra_us / r.total_us, 0.01);
}

// The ranked search (a learned arm model in the job) searches channels the same way where its
// candidates have their answers (here it has none: one (algo, proto) allowed).
TEST(ChannelSearch, TheRankedSearchFindsTheKneeToo) {
  const Host host{4, 64, 64, false};
  OnlineLearner l = searching(host, 64, LearnerMode::RankedSearch);
  const SearchRun r = searchKey(l, host, 40000, 3, knee);
  EXPECT_LE(knee(r.lastRan), 1.01 * bestOf(knee, 64)) << "the final table runs " << r.lastRan << " channels";
  EXPECT_LE(r.asked.size(), 6u);
}

TEST(ChannelSearch, WhereNcclsCountIsBestNothingChangesAndTrialsAreFew) {
  const Host host{16, 64, 64, false};
  auto truth = [](int c) { return 50.0 * (1 + 0.3 * std::abs(std::log2(c / 16.0))); };
  OnlineLearner l = searching(host, 64);
  const SearchRun r = searchKey(l, host, 40000, 5, truth);
  EXPECT_EQ(r.last.nChannels, 0) << "NCCL's own count stands";
  EXPECT_EQ(r.lastRan, 16);
  EXPECT_LE(r.asked.size(), 2u) << "one step up, one down";
  EXPECT_LE(r.channelTrials, 40u) << "each step loses beyond noise within a few samples";
  int dropped = 0;
  for (const Verdict& v : l.verdicts()) dropped += v.state == VerdictState::Dropped;
  EXPECT_EQ(dropped, 2);
}

// Where no count differs (the replay's measured rows time a pair the same at any count), the search
// ends undecided after a round per step and costs nothing but those trials.
TEST(ChannelSearch, WhereChannelsChangeNothingTheSearchEndsCheaply) {
  const Host host{8, 64, 64, false};
  OnlineLearner l = searching(host, 64);
  const SearchRun r = searchKey(l, host, 40000, 7, [](int) { return 100.0; });
  EXPECT_EQ(r.lastRan, 8);
  EXPECT_EQ(r.asked.size(), 1u) << "a step up that ties ends it";
  EXPECT_LT(r.lastTrialCall, 10000u) << "the search has ended within a quarter of the job";
  EXPECT_LT(r.exploreExtra_us / r.total_us, 0.002) << r.channelTrials << " trials, each as fast as what runs";
  for (const Verdict& v : l.verdicts()) EXPECT_NE(v.state, VerdictState::Promoted);
}

// NCCL 2.31+: the tuner's count only lowers NCCL's; the search never asks above NCCL's own count.
TEST(ChannelSearch, OnACapOnlyHostNoCountAboveNcclsOwnIsAsked) {
  const Host host{8, 64, 64, true};
  OnlineLearner l = searching(host, 64);
  const SearchRun r = searchKey(l, host, 40000, 11, knee);
  ASSERT_FALSE(r.asked.empty()) << "the search tried fewer channels";
  EXPECT_LE(*r.asked.rbegin(), host.own);
  EXPECT_EQ(r.lastRan, 8) << "fewer channels are slower here";
}

// Before 2.31 the count the plugin does not know the host built (maxChannels 0): a raise goes no
// higher than the most channels seen run in the communicator.
TEST(ChannelSearch, ARaiseGoesNoHigherThanTheHostWasSeenToRun) {
  const Host host{4, 16, 64, false};
  OnlineLearner l = searching(host, 0);
  // Another key of the communicator: NCCL runs 16 channels there.
  for (int i = 0; i < 10; ++i) l.observe(kAllReduce, 256u << 20, Algo::Ring, Proto::Simple, 16, 5000.0, 0);
  const SearchRun r = searchKey(l, host, 40000, 13, knee);
  ASSERT_FALSE(r.asked.empty());
  EXPECT_LE(*r.asked.rbegin(), 16);
  EXPECT_EQ(r.lastRan, 16) << "the most the host runs is the best it can run";
}

// A count the host trims (here to 12) is no arm of its own: its calls count for the 12 that ran, and
// the search takes 12 for the step.
TEST(ChannelSearch, ARequestTheHostTrimsCountsForTheCountThatRan) {
  const Host host{4, 64, 12, false};
  OnlineLearner l = searching(host, 64);
  const SearchRun r = searchKey(l, host, 40000, 17, knee);
  EXPECT_LE(knee(r.lastRan), 1.01 * bestOf(knee, 12)) << "runs " << r.lastRan;
  for (const Verdict& v : l.verdicts()) EXPECT_LE(v.candidate.nChannels, 16);
}

TEST(ChannelSearch, SameObservationsBuildTheSameTables) {
  const Host host{4, 64, 64, false};
  OnlineLearner a = searching(host, 64), b = searching(host, 64);
  const SearchRun ra = searchKey(a, host, 20000, 19, knee), rb = searchKey(b, host, 20000, 19, knee);
  ASSERT_EQ(ra.tables.size(), rb.tables.size());
  for (size_t i = 0; i < ra.tables.size(); ++i) ASSERT_EQ(ra.tables[i], rb.tables[i]) << "table " << i;
  EXPECT_EQ(ra.asked, rb.asked);
}

// Without the channels that ran (observe's plain form), no channel count is ever asked for.
TEST(ChannelSearch, WithoutTheCountThatRanNothingIsSearched) {
  OnlineConfig config;
  config.mode = LearnerMode::Search;
  config.channelsCapOnly = false;
  OnlineLearner l(config, [](int, int) { return Candidates{}; }, [](int, int) { return Candidates{}; });
  const int bucket = SizeBucket::of(kBytes);
  l.setNcclDefault(kAllReduce, bucket, Algo::Ring, Proto::Simple);
  for (int i = 0; i < 200; ++i) l.observe(kAllReduce, kBytes, Algo::Ring, Proto::Simple, 100.0);
  const auto t = l.build(1);
  const OnlineEntry& e = t->entry(onlineKey(kAllReduce, kBytes));
  for (int i = 0; i < e.nArms; ++i)
    for (int j = 0; j < e.arms[i].count; ++j) EXPECT_EQ(e.arms[i].decisions[j].nChannels, 0);
}

// A channel arm a previous job promoted runs in the next from its first boundary, its samples agreeing.
TEST(ChannelSearch, APromotedChannelArmResumesInTheNextJob) {
  const Host host{4, 64, 64, false};
  OnlineLearner first = searching(host, 64);
  searchKey(first, host, 40000, 23, knee);
  OnlineLearner next = searching(host, 64);
  const int bucket = SizeBucket::of(kBytes);
  int resumedChannels = 0;
  for (const Verdict& v : first.verdicts()) {
    next.seed(v.coll, v.bucket, v.candidateArm, v.state == VerdictState::Promoted);
    next.seed(v.coll, v.bucket, v.baselineArm);
    if (v.state == VerdictState::Promoted) resumedChannels = v.candidate.nChannels;
  }
  ASSERT_GT(resumedChannels, 4);
  const SearchRun r = searchKey(next, host, 3000, 29, knee);
  EXPECT_LE(knee(r.lastRan), 1.01 * bestOf(knee, 64));
  (void)bucket;
}

}  // namespace
}  // namespace dynamiccl::learner

namespace dynamiccl::learner {
namespace {

// Two pairs: NCCL runs tree/ll at one channel, which loses to ring/ll there; tree/ll at more channels
// beats both. Latency truth(pair, channels that ran) with 3% noise; NCCL's count for ring/ll is one too.
struct TwoPairRun {
  Decision last;
  int lastRan = 0;
  std::set<int> asked;
};
TwoPairRun searchTwoPairs(OnlineLearner& l, const Host& host, uint64_t calls,
                          const std::function<double(Algo, int)>& truth) {
  const int bucket = SizeBucket::of(kBytes);
  l.setNcclDefault(kAllReduce, bucket, Algo::Tree, Proto::LL);
  float table[kNumAlgos * kNumProtos];
  std::fill(std::begin(table), std::end(table), -1.0f);
  table[static_cast<int>(Algo::Tree) * kNumProtos + static_cast<int>(Proto::LL)] = 10.0f;
  table[static_cast<int>(Algo::Ring) * kNumProtos + static_cast<int>(Proto::LL)] = 11.0f;
  l.setModelledCost(kAllReduce, bucket, table);
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> noise(0, 0.03);
  std::unique_ptr<OnlineTable> t;
  TwoPairRun r;
  const Decision nccl{Algo::Tree, Proto::LL, 0, 0};
  for (uint64_t k = 0; k < calls; ++k) {
    if (k % 500 == 0) t = l.build(k / 500);
    const Candidates* c = t->pick(kAllReduce, kBytes, 0xabc, k);
    const Decision d = c ? c->decisions[0] : nccl;
    const OnlineEntry& e = t->entry(onlineKey(kAllReduce, kBytes));
    const Decision x = e.exploit.count ? e.exploit.decisions[0] : nccl;
    if (d.nChannels > 0 && d.algo == Algo::Tree) r.asked.insert(d.nChannels);
    const int ran = host.runs(d.nChannels);
    l.observe(kAllReduce, kBytes, d.algo, d.proto, ran, truth(d.algo, ran) * noise(rng), d.nChannels);
    r.last = x;
    r.lastRan = host.runs(x.nChannels);
  }
  return r;
}

TEST(ChannelSearch, NcclsOwnPairIsSearchedWhereAnotherWonAtNcclsCount) {
  const Host host{1, 64, 64, false};
  OnlineLearner l = searching(host, 64);
  // Tree/LL: 26 us at one channel, 20.75 at eight; Ring/LL: 24 us at any count.
  auto truth = [](Algo a, int ch) { return a == Algo::Ring ? 24.0 : 20 + 6.0 / ch; };
  const TwoPairRun r = searchTwoPairs(l, host, 80000, truth);
  EXPECT_EQ(r.last.algo, Algo::Tree) << "NCCL's own pair at more channels beats the pair that won at its count";
  EXPECT_GE(r.lastRan, 4);
  EXPECT_LE(truth(r.last.algo, r.lastRan), 1.05 * 20.1) << "within a tie (under 3% noise) of the best";
}

TEST(ChannelSearch, ADoublingPastWhatTheHostBuiltAsksForItsMost) {
  const Host host{8, 48, 48, false};
  OnlineLearner l = searching(host, 48);
  auto falling = [](int c) { return 20 + 800.0 / c; };  // more channels always win
  const SearchRun r = searchKey(l, host, 40000, 3, falling);
  EXPECT_TRUE(r.asked.count(48)) << "32 doubled is past the 48 the host built: ask for 48";
  EXPECT_EQ(r.lastRan, 48);
  for (int c : r.asked) EXPECT_LE(c, 48);
}

}  // namespace
}  // namespace dynamiccl::learner

namespace dynamiccl::learner {
namespace {

// The key as the 256 KiB one of 8x MI355X ended: NCCL's tree/ll, ring/ll promoted at RCCL's 16 channels
// (+35%), ring/ll at 32 measured 2.3% faster than that within noise (4.4% a call, 20 samples each).
struct EndedKey {
  OnlineConfig config;
  ArmStatistics stats{config};
  Verifier verifier{config, stats};
  KeyState k;
  const int tree = slotOf(Algo::Tree, Proto::LL), ring = slotOf(Algo::Ring, Proto::LL), ring32 = kPairSlots;
  EndedKey(double ring32_us, int samples) {
    k.active = true;
    k.ncclDefault = tree;
    k.incumbent = ring;
    k.channelArms[0].pair = static_cast<int8_t>(ring);
    k.channelArms[0].nChannels = 32;
    k.ncclChannels[ring] = 16;
    // A spread of 4.4% a call around each arm's time, the same draws for every arm (their means exact).
    const double z[] = {-1.5, 0.5, -0.5, 1.5, 1.0, -1.0, 0.0, 0.0};
    RatioRing window;
    for (int i = 0; i < samples; ++i) {
      const double spread = std::exp(0.044 * z[i % 8]);
      stats.observe(k, tree, 36.2 * spread, window);
      stats.observe(k, ring, 26.7 * spread, window);
      stats.observe(k, ring32, ring32_us * spread, window);
    }
  }
};

TEST(ChannelSearch, AnEndedSearchRunsTheTiedCountThatMeasuredFasterOnce) {
  EndedKey e(26.1, 20);
  ASSERT_FALSE(e.stats.compare(e.k.arms[e.ring32], e.k.arms[e.ring]).faster) << "tied: within noise";
  EXPECT_TRUE(e.verifier.switchToBest(e.k, {e.tree, e.ring}));
  EXPECT_EQ(e.k.incumbent, e.ring32);
  // Once: noise that later favours 16 channels does not move it back (the normal rule still would, beyond noise).
  e.k.incumbent = e.ring;
  EXPECT_FALSE(e.verifier.switchToBest(e.k, {e.tree, e.ring}));
}

TEST(ChannelSearch, NoTiedMoveWhileTheSearchGoesOnOrOnTooFewSamples) {
  EndedKey searching(26.1, 20);
  searching.k.candidate = slotOf(Algo::Ring, Proto::Simple);  // a candidate still without its answer
  EXPECT_FALSE(searching.verifier.switchToBest(searching.k, {searching.tree, searching.ring}));
  EndedKey few(26.1, 10);  // under a settled arm's samples
  EXPECT_FALSE(few.verifier.switchToBest(few.k, {few.tree, few.ring}));
  EndedKey slower(27.3, 20);  // measured slower: nothing to move to
  EXPECT_FALSE(slower.verifier.switchToBest(slower.k, {slower.tree, slower.ring}));
}

}  // namespace
}  // namespace dynamiccl::learner
