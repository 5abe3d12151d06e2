// The online learner on its own: deterministic, finds the best arm, keeps exploration in budget,
// recovers from drift, and its guard falls back to NCCL's default when the prior is worse.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <random>
#include <tuple>

#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::learner {
namespace {

constexpr int kAllReduce = 4;
constexpr uint64_t kBytes = 16 << 20;

Candidates ringLL(int, int) {
  Candidates c;
  c.count = 1;
  c.decisions[0] = {Algo::Ring, Proto::LL, 0, 0};
  return c;
}

// Runs calls of one key; truth(algo, proto, call) gives the mean latency. Returns the exploit choice.
struct LoopResult {
  double total_us = 0, exploreExtra_us = 0;
  Decision last;
};
LoopResult simulate(OnlineLearner& l, uint64_t calls, uint64_t epoch,
             const std::function<double(Algo, Proto, uint64_t)>& truth, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> noise(0, 0.03);
  std::unique_ptr<OnlineTable> t;
  LoopResult r;
  for (uint64_t k = 0; k < calls; ++k) {
    if (k % epoch == 0) t = l.build(k / epoch);
    const Candidates* c = t->pick(kAllReduce, kBytes, 0xabc, k);  // nullptr: nothing learned, the prior
    const Decision d = c ? c->decisions[0] : ringLL(0, 0).decisions[0];
    const OnlineEntry& entry = t->entry(onlineKey(kAllReduce, kBytes));
    const Decision e = entry.exploit.count ? entry.exploit.decisions[0] : ringLL(0, 0).decisions[0];
    const double lat = truth(d.algo, d.proto, k) * noise(rng);
    r.total_us += lat;
    if (!(d == e)) r.exploreExtra_us += lat - truth(e.algo, e.proto, k);
    l.observe(kAllReduce, kBytes, d.algo, d.proto, lat);
    r.last = e;
  }
  return r;
}

double staticTruth(Algo a, Proto p, uint64_t) {
  const double gbps = p == Proto::LL ? 4 : p == Proto::LL128 ? 9 : 12;
  return (a == Algo::Tree ? 1.1 : 1.0) * (10 + kBytes / (gbps * 1e3));
}

TEST(OnlineLearner, FindsTheBestArmWithinTheExplorationBudget) {
  OnlineLearner l({}, ringLL);
  const LoopResult r = simulate(l, 10000, 500, staticTruth);
  EXPECT_EQ(r.last.algo, Algo::Ring);
  EXPECT_EQ(r.last.proto, Proto::Simple);
  EXPECT_LT(r.exploreExtra_us / r.total_us, 0.01);  // a few exploration calls are 3x slower
}

// NCCL's cost table for the key as staticTruth models it (tree/ring x LL/LL128/Simple), IGNORE elsewhere.
std::array<float, kNumAlgos * kNumProtos> modelledTable() {
  std::array<float, kNumAlgos * kNumProtos> t;
  t.fill(-1.0f);
  for (Algo a : {Algo::Tree, Algo::Ring})
    for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple})
      t[static_cast<int>(a) * kNumProtos + static_cast<int>(p)] = static_cast<float>(staticTruth(a, p, 0));
  return t;
}

TEST(OnlineLearner, ModelPriorKeepsExplorationWithinTheBudget) {
  OnlineLearner l({}, ringLL);
  l.setModelledCost(kAllReduce, SizeBucket::of(kBytes), modelledTable().data());
  const LoopResult r = simulate(l, 10000, 500, staticTruth);
  EXPECT_EQ(r.last.algo, Algo::Ring);
  EXPECT_EQ(r.last.proto, Proto::Simple);
  EXPECT_LT(r.exploreExtra_us / r.total_us, 0.01);  // the 1% budget holds when the prior is the model
}

TEST(OnlineLearner, ArmsTheModelPutsFarBehindOrIgnoresAreNotExplored) {
  OnlineLearner l({}, [](int, int) {
    Candidates c;
    c.count = 1;
    c.decisions[0] = {Algo::Ring, Proto::Simple, 0, 0};
    return c;
  });
  auto table = modelledTable();
  table[static_cast<int>(Algo::Tree) * kNumProtos + static_cast<int>(Proto::LL128)] = -1.0f;  // IGNORE
  l.setModelledCost(kAllReduce, SizeBucket::of(kBytes), table.data());
  l.setNcclDefault(kAllReduce, SizeBucket::of(kBytes), Algo::Ring, Proto::Simple);
  // Incumbent ring/simple measured: LL is modelled 3x slower (beyond 2x), tree/LL128 is IGNORE.
  for (int i = 0; i < 20; ++i) l.observe(kAllReduce, kBytes, Algo::Ring, Proto::Simple, staticTruth(Algo::Ring, Proto::Simple, 0));
  const auto t = l.build(1);
  const OnlineEntry& e = t->entry(onlineKey(kAllReduce, kBytes));
  ASSERT_EQ(e.nArms, 2);  // ring/LL128 and tree/simple only
  for (int i = 0; i < e.nArms; ++i) {
    const Decision& d = e.arms[i].decisions[0];
    EXPECT_NE(d.proto, Proto::LL) << "arm " << i;
    EXPECT_FALSE(d.algo == Algo::Tree && d.proto == Proto::LL128) << "arm " << i;
  }
}

TEST(OnlineLearner, SameObservationsBuildTheSameTable) {
  OnlineLearner a({}, ringLL), b({}, ringLL);
  simulate(a, 3000, 500, staticTruth, 5);
  simulate(b, 3000, 500, staticTruth, 5);
  EXPECT_EQ(a.build(99)->serialize(), b.build(99)->serialize());
}

TEST(OnlineLearner, RecoversAfterDrift) {
  OnlineLearner l({}, ringLL);
  // At call 5000, ring/simple becomes 3x slower (a congested ring): tree/simple is best after.
  auto drift = [](Algo a, Proto p, uint64_t k) {
    return staticTruth(a, p, k) * (k >= 5000 && a == Algo::Ring && p == Proto::Simple ? 3.0 : 1.0);
  };
  const LoopResult r = simulate(l, 8000, 250, drift);
  EXPECT_EQ(r.last.algo, Algo::Tree);
  EXPECT_EQ(r.last.proto, Proto::Simple);
}

TEST(OnlineLearner, GuardFallsBackToNcclDefault) {
  OnlineConfig cfg;
  cfg.exploreCallShare = 0;  // no exploration: only exploit and the default's own measurements
  OnlineLearner l(cfg, ringLL);
  l.setNcclDefault(kAllReduce, SizeBucket::of(kBytes), Algo::Ring, Proto::Simple);
  for (int i = 0; i < 50; ++i) {
    l.observe(kAllReduce, kBytes, Algo::Ring, Proto::LL, 4000);
    l.observe(kAllReduce, kBytes, Algo::Ring, Proto::Simple, 1400);
  }
  l.build(1);
  const auto t = l.build(2);
  EXPECT_EQ(t->entry(onlineKey(kAllReduce, kBytes)).exploit.decisions[0].proto, Proto::Simple);
  EXPECT_GE(l.counters().switches + l.counters().guardTrips, 1u);
}

// A promotion made on early calls stands only while the calls since still show it faster than NCCL's own
// beyond noise: where later calls erode the gain (no longer faster, yet not slower beyond the guard's
// margin), the job returns to NCCL's choice and the verdict no longer says promoted, as the export asks.
TEST(OnlineLearner, APromotionTheLaterCallsNoLongerSupportIsWithdrawn) {
  OnlineConfig cfg;
  cfg.exploreCallShare = 0;  // only what the test observes
  OnlineLearner l(cfg, [](int, int) { return Candidates{}; });
  l.setNcclDefault(kAllReduce, SizeBucket::of(kBytes), Algo::Ring, Proto::Simple);
  auto jitter = [](int i) { return 1 + 0.01 * (i % 3 - 1); };
  for (int i = 0; i < 20; ++i) {
    l.observe(kAllReduce, kBytes, Algo::Tree, Proto::Simple, 1300 * jitter(i));
    l.observe(kAllReduce, kBytes, Algo::Ring, Proto::Simple, 1400 * jitter(i));
  }
  auto t = l.build(1);
  EXPECT_EQ(t->entry(onlineKey(kAllReduce, kBytes)).exploit.decisions[0].algo, Algo::Tree);  // promoted
  for (int i = 0; i < 300; ++i) {
    l.observe(kAllReduce, kBytes, Algo::Tree, Proto::Simple, 1420 * jitter(i));
    l.observe(kAllReduce, kBytes, Algo::Ring, Proto::Simple, 1400 * jitter(i));
  }
  t = l.build(2);
  const Decision& runs = t->entry(onlineKey(kAllReduce, kBytes)).exploit.decisions[0];
  EXPECT_EQ(runs.algo, Algo::Ring);
  EXPECT_EQ(runs.proto, Proto::Simple);
  bool sawTree = false;
  for (const Verdict& v : l.verdicts())
    if (v.candidate.algo == Algo::Tree && v.candidate.proto == Proto::Simple) {
      sawTree = true;
      EXPECT_NE(v.state, VerdictState::Promoted);
      EXPECT_LE(v.gainLow, 0.0);
    }
  EXPECT_TRUE(sawTree);
}

TEST(OnlineLearner, ScheduleIsAPureFunctionOfItsInputs) {
  EXPECT_EQ(scheduleDraw(1, 2, 3, 4), scheduleDraw(1, 2, 3, 4));
  EXPECT_NE(scheduleDraw(1, 2, 3, 4), scheduleDraw(2, 2, 3, 4));
  EXPECT_NE(scheduleDraw(1, 2, 3, 4), scheduleDraw(1, 2, 4, 4));
}


// A congestion episode reaches the learned network through the leader's recent-timings window: the
// refreshed rules (here a stand-in network: ring/ll128 when the key ran slower than usual, else
// tree/ll) change the candidate the published table tests, and change back after the episode.
TEST(OnlineLearner, RecentTimingsReachTheLearnedRulesAndAnEpisodeEndsAsItCame) {
  OnlineConfig config;
  config.mode = learner::LearnerMode::Search;
  OnlineLearner l(config, [](int, int) { return Candidates{}; });
  uint64_t refreshes = 0;
  l.setLearnedRefresh([&](const TimingWindows& w) {
    ++refreshes;
    float window[kTimingWindowLength];
    w.at(Collective::AllReduce, kBytes).snapshot(window);
    double mean = 0;
    for (float x : window) mean += x / kTimingWindowLength;
    Profile p;
    Rule r;
    r.collective = Collective::AllReduce;
    r.decision = mean > 0.3 ? Decision{Algo::Ring, Proto::LL128, 0, 0} : Decision{Algo::Tree, Proto::LL, 0, 0};
    p.rules.push_back(r);
    return DecisionTable::compile(p, CommShape{.commId = 1, .nRanks = 8, .nNodes = 1});
  });
  l.setNcclDefault(kAllReduce, SizeBucket::of(kBytes), Algo::Ring, Proto::Simple);
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> noise(0, 0.03);
  auto candidateArm = [&](uint64_t version) {
    auto t = l.build(version);
    const OnlineEntry& e = t->entry(onlineKey(kAllReduce, kBytes));
    EXPECT_EQ(e.exploit.count, 0) << "version " << version << ": NCCL's choice stays the exploit";
    return e.nArms ? e.arms[0].decisions[0] : Decision{};
  };
  std::vector<Decision> arms;
  for (uint64_t epoch = 0; epoch < 30; ++epoch) {
    const bool congested = epoch >= 10 && epoch < 20;
    for (int call = 0; call < 100; ++call)
      l.observe(kAllReduce, kBytes, Algo::Ring, Proto::Simple, (congested ? 300.0 : 100.0) * noise(rng));
    arms.push_back(candidateArm(epoch + 1));
  }
  EXPECT_EQ(arms[8], (Decision{Algo::Tree, Proto::LL, 0, 0}));
  EXPECT_EQ(arms[15], (Decision{Algo::Ring, Proto::LL128, 0, 0})) << "the episode shifts the learned candidate";
  EXPECT_EQ(arms[25], (Decision{Algo::Tree, Proto::LL, 0, 0})) << "and its end shifts it back";
  EXPECT_EQ(l.learnedRefreshes(), refreshes);
  EXPECT_GE(refreshes, 25u);
}


// One key verified over `calls` calls where NCCL runs ring/simple unless told otherwise: the table is
// rebuilt every 500 calls, each call's latency is truth(what ran) with 3% noise.
// `runs`: what NCCL runs for a decision (the same, unless it leaves the protocol to NCCL).
LoopResult verifyKey(OnlineLearner& l, uint64_t calls, uint64_t seed, const std::function<double(const Decision&)>& truth,
                     const std::function<Decision(const Decision&)>& runs = [](const Decision& d) { return d; }) {
  const Decision nccl{Algo::Ring, Proto::Simple, 0, 0};
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> noise(0, 0.03);
  std::unique_ptr<OnlineTable> t;
  LoopResult r;
  for (uint64_t k = 0; k < calls; ++k) {
    if (k % 500 == 0) t = l.build(k / 500);
    const Candidates* c = t->pick(kAllReduce, kBytes, 0xabc, k);
    const Decision d = runs(c ? c->decisions[0] : nccl);
    const OnlineEntry& e = t->entry(onlineKey(kAllReduce, kBytes));
    const Decision x = runs(e.exploit.count ? e.exploit.decisions[0] : nccl);
    const double lat = truth(d) * noise(rng);
    r.total_us += lat;
    if (!(d == x)) r.exploreExtra_us += std::max(0.0, lat - truth(x));
    l.observe(kAllReduce, kBytes, d.algo, d.proto, lat);
    r.last = x;
  }
  return r;
}

// Verifying, a key the profile offers nothing testable for tests NCCL's own runner-up (the model picks
// what to measure); the measurement decides: promoted where it wins, even where the model put it at
// 2.5x NCCL's choice (the model is what the measurement may prove wrong), and beyond 3x (the cap on
// what one trial may cost) once nothing cheaper is left to try; one as slow as priced costs a sample or two.
TEST(OnlineLearner, VerificationTestsNcclsRunnerUpWhereTheProfileSaysNothing) {
  struct Case { float modelled_us; double measured_us; };  // NCCL's choice: 10 modelled, 100 measured
  for (const Case c : {Case{12.0f, 90.0}, Case{25.0f, 90.0}, Case{35.0f, 90.0}, Case{50.0f, 400.0}}) {
    OnlineConfig config;
    config.mode = learner::LearnerMode::Search;
    OnlineLearner l(config, [](int, int) { return Candidates{}; }, [](int, int) { return Candidates{}; });
    const int bucket = SizeBucket::of(kBytes);
    l.setNcclDefault(kAllReduce, bucket, Algo::Ring, Proto::Simple);
    float table[kNumAlgos * kNumProtos];
    std::fill(std::begin(table), std::end(table), -1.0f);  // IGNORE: NCCL would not run them
    table[static_cast<int>(Algo::Ring) * kNumProtos + static_cast<int>(Proto::Simple)] = 10.0f;
    table[static_cast<int>(Algo::Tree) * kNumProtos + static_cast<int>(Proto::Simple)] = c.modelled_us;
    l.setModelledCost(kAllReduce, bucket, table);
    // NCCL runs ring/simple wherever the table does not answer (an empty exploit: the static table).
    const LoopResult r =
        verifyKey(l, 20000, 9, [&](const Decision& y) { return y.algo == Algo::Tree ? c.measured_us : 100.0; });
    auto v = l.verdicts();
    ASSERT_EQ(v.size(), 1u) << "modelled " << c.modelled_us;
    if (c.measured_us < 100) {
      EXPECT_EQ(r.last.algo, Algo::Tree) << "the runner-up measures 10% faster: promoted (modelled " << c.modelled_us << ")";
      EXPECT_EQ(v[0].state, VerdictState::Promoted);
    } else {
      EXPECT_EQ(r.last.algo, Algo::Ring);
      EXPECT_EQ(v[0].state, VerdictState::Dropped);
      EXPECT_LE(v[0].candidateArm.n, 3u) << "far behind after a sample or two";
    }
    EXPECT_LT(r.exploreExtra_us / r.total_us, 0.01);
  }
}

// The key's NCCL: it runs ring/simple alone, and its cost table allows only these entries (IGNORE elsewhere).
void setNcclTable(OnlineLearner& l, std::initializer_list<std::tuple<Algo, Proto, float>> allowed) {
  const int bucket = SizeBucket::of(kBytes);
  l.setNcclDefault(kAllReduce, bucket, Algo::Ring, Proto::Simple);
  float table[kNumAlgos * kNumProtos];
  std::fill(std::begin(table), std::end(table), -1.0f);
  for (const auto& [a, p, cost_us] : allowed) table[static_cast<int>(a) * kNumProtos + static_cast<int>(p)] = cost_us;
  l.setModelledCost(kAllReduce, bucket, table);
}

// Verifying, every configuration NCCL's table allows is tried in NCCL's cost order until the measured
// best is found: the two cheapest by the model lose, the third wins and is promoted, within budget.
// (Testing only the runner-up, the key kept NCCL's choice.)
TEST(OnlineLearner, VerificationSearchesEveryAllowedArmInCostOrder) {
  OnlineConfig config;
  config.mode = learner::LearnerMode::Search;
  OnlineLearner l(config, [](int, int) { return Candidates{}; }, [](int, int) { return Candidates{}; });
  setNcclTable(l, {{Algo::Ring, Proto::Simple, 10.0f},   // NCCL's choice
                   {Algo::Tree, Proto::Simple, 12.0f},   // the runner-up: measures 10% slower
                   {Algo::Ring, Proto::LL, 13.0f},       // measures 5% slower
                   {Algo::Tree, Proto::LL, 14.0f}});     // measures 12% faster: the best
  auto truth = [](const Decision& y) {
    if (y.algo == Algo::Tree) return y.proto == Proto::LL ? 88.0 : 110.0;
    return y.proto == Proto::LL ? 105.0 : 100.0;
  };
  const LoopResult r = verifyKey(l, 40000, 5, truth);
  EXPECT_EQ(r.last.algo, Algo::Tree);
  EXPECT_EQ(r.last.proto, Proto::LL) << "the third arm in NCCL's cost order is the measured best";
  int promoted = 0, dropped = 0;
  for (const Verdict& v : l.verdicts()) promoted += v.state == VerdictState::Promoted, dropped += v.state == VerdictState::Dropped;
  EXPECT_EQ(promoted, 1);
  EXPECT_EQ(dropped, 2);
  EXPECT_LT(r.exploreExtra_us / r.total_us, 0.01);
}

// A candidate that forces the algorithm alone (a dataset's half-forced rows) is the arm NCCL's costs
// pick in that algorithm's row: the learner measures it as that arm and promotes it where it wins.
TEST(OnlineLearner, ACandidateLeavingTheProtocolToNcclIsTheArmNcclsCostsPickInItsRow) {
  OnlineConfig config;
  config.mode = learner::LearnerMode::Search;
  const Decision treeAlone{Algo::Tree, Proto::Default, 0, 0};
  OnlineLearner l(config, [](int, int) { return Candidates{}; }, [&](int, int) {
    Candidates c;
    c.count = 1;
    c.decisions[0] = treeAlone;
    return c;
  });
  setNcclTable(l, {{Algo::Ring, Proto::Simple, 10.0f},   // NCCL's choice
                   {Algo::Tree, Proto::LL, 14.0f},       // NCCL's protocol within Tree
                   {Algo::Tree, Proto::Simple, 16.0f}});
  auto runs = [](const Decision& d) { return d.leavesProtoToNccl() ? Decision{d.algo, Proto::LL, 0, 0} : d; };
  auto truth = [](const Decision& y) {
    if (y.algo == Algo::Tree) return y.proto == Proto::LL ? 88.0 : 120.0;
    return 100.0;
  };
  const LoopResult r = verifyKey(l, 20000, 3, truth, runs);
  EXPECT_EQ(r.last.algo, Algo::Tree);
  EXPECT_EQ(r.last.proto, Proto::LL);
  int promoted = 0;
  for (const Verdict& v : l.verdicts()) {
    if (v.state != VerdictState::Promoted) continue;
    ++promoted;
    EXPECT_EQ(v.candidate, treeAlone) << "what the next job is told is what was measured: tree, NCCL's protocol";
    EXPECT_EQ(v.candidateArm.algo, Algo::Tree);
    EXPECT_EQ(v.candidateArm.proto, Proto::LL);
  }
  EXPECT_EQ(promoted, 1);
}

}  // namespace
}  // namespace dynamiccl::learner
