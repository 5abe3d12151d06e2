// The search by runs on a cluster without a GPU: a synthetic run executor prints nccl-tests-like
// sweeps from a known latency model with run-to-run and per-cycle noise. The search must find the
// best configuration at each size, use fewer runs than the exhaustive grid, and never write a rule
// that is slower than NCCL's default or equal to what NCCL's default runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "offline/tune/tune.h"
#include "tests/shipped_data.h"

namespace dynamiccl::tune {
namespace {

// Ring and Tree with the three protocols: LL wins small sizes, LL128 the middle, Simple the large;
// Tree/LL beats Ring/LL below 16K. Everything else NCCL could try is at least 3x slower.
double model_us(const Config& c, uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  double lat = 0, gbps = 0;
  switch (c.proto) {
    case Proto::LL: lat = 6, gbps = 4; break;
    case Proto::LL128: lat = 14, gbps = 12; break;
    case Proto::Simple: lat = 30, gbps = 20; break;
    default: return 1e9;
  }
  double t = lat + b / (1e3 * gbps);
  if (c.algo == Algo::Tree) t *= bytes < (16 << 10) ? 0.8 : 1.25;
  else if (c.algo != Algo::Ring) t *= 3;
  return t;
}

// NCCL's choice: Ring/LL up to 64K, Ring/Simple above (it never picks LL128 or Tree here).
Config ncclPick(const MeasureKey& k) {
  return Config{Algo::Ring, k.bytes <= (64 << 10) ? Proto::LL : Proto::Simple, 0, 0};
}

double truth_us(const Config& c, const MeasureKey& k) {
  return model_us(c.keepsAlgoProto() ? ncclPick(k) : c, k.bytes);
}

// The simulator as a prior: right in shape, off by a deterministic 0.7x..1.4x per configuration and size.
double prior_us(const Config& c, const MeasureKey& k) {
  const uint64_t h = (uint64_t(int(c.algo) + 3) * 1000003u + uint64_t(int(c.proto) + 2) * 7919u + k.bytes) * 2654435761u;
  return truth_us(c, k) * (0.7 + 0.7 * static_cast<double>((h >> 16) % 1000) / 1000.0);
}

std::unique_ptr<MeasurementBackend> runner() {
  RunnerBackendOptions o;
  o.script = "unused";  // runs come from the executor; the backend answers shape and availability
  o.nRanks = 8;
  return std::move(makeRunnerBackend(o).value());
}

TuneRequest request() {
  TuneRequest r;
  r.sizes = powerOfTwoSizes(1 << 10, 64 << 20);
  r.dimensions.channels = {0};
  r.dimensions.chunks = {0};
  return r;
}

SyntheticRunOptions cluster(uint64_t seed) {
  SyntheticRunOptions s;
  s.truth_us = truth_us;
  s.ncclDefault = ncclPick;
  s.sigma = 0.02;
  s.runSigma = 0.01;
  s.seed = seed;
  return s;
}

TEST(RunOutput, ReadsResultRowsAndNcclsTuningLines) {
  const std::string text =
      "# nccl-tests\n"
      "host:1:1 [0] NCCL INFO AllReduce: 1024 Bytes -> Algo 1 proto 0 time 5.1\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time\n"
      "        1024           256     float     sum      -1    12.50    0.08    0.14      0    12.40    0.08    0.14      0\n"
      "        2048           512     float     sum      -1    13.00    0.16    0.28      0    12.90    0.16    0.28      0\n"
      "        1024           256     float     sum      -1    12.70    0.08    0.14      0    12.60    0.08    0.14      0\n"
      "# Avg bus bandwidth    : 0.2\n";
  const RunOutput out = parseNcclTestsOutput(text);
  ASSERT_EQ(out.times_us.size(), 2u);
  EXPECT_EQ(out.times_us.at(1024), (std::vector<double>{12.5, 12.7}));
  EXPECT_EQ(out.times_us.at(2048), (std::vector<double>{13.0}));
  ASSERT_EQ(out.ncclRan.count(1024), 1u);
  EXPECT_EQ(out.ncclRan.at(1024), (Config{Algo::Ring, Proto::LL, 0, 0}));
}

TEST(RunOutput, TheCommandLineSweepsEverySizeInOneRun) {
  RunnerBackendOptions o;
  o.script = "scripts/measure_nccl_tests.sh";
  const std::string cmd = runCommandLine(o, RunRequest{Collective::AllReduce, 1024, 1 << 20, {Algo::Ring, Proto::LL128, 0, 0}, 20, 8, 1});
  EXPECT_NE(cmd.find("--bytes 1024 --max-bytes 1048576"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--algo ring --proto ll128"), std::string::npos) << cmd;
}

TEST(SearchByRuns, FindsTheBestAtEachSizeWithFewerRunsThanTheGrid) {
  auto backend = runner();
  RunSearchOptions o;
  o.prior = prior_us;
  auto r = searchByRuns(*backend, syntheticRunExecutor(cluster(7)), request(), o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_LT(r->runsUsed, r->gridRuns);
  EXPECT_LT(r->candidatesRun, r->candidates);  // the prior rules out NVLS, CollNet... (3x slower)
  int decided = 0;
  for (const SizeStatus& s : r->sizes) decided += s.decided;
  EXPECT_GE(decided, static_cast<int>(r->sizes.size()) - 2);  // crossovers may stay undecided, said per size

  SmoothingOptions so;
  so.switchPenalty = 0;
  const SmoothedResult sm = smoothAll(r->tune, so);
  const std::vector<KeyResult>& keys = r->tune.collectives[0].keys;
  ASSERT_EQ(keys.size(), request().sizes.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const MeasureKey& k = keys[i].key;
    const Config chosen = sm.chosenPerCollective[0][i];
    double best = truth_us(keepDefault(), k);
    Config bestConfig = ncclPick(k);
    for (Algo a : {Algo::Ring, Algo::Tree})
      for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple})
        if (truth_us({a, p, 0, 0}, k) < best) best = truth_us({a, p, 0, 0}, k), bestConfig = {a, p, 0, 0};
    const double got = truth_us(chosen, k), dflt = truth_us(keepDefault(), k);
    // The measured best (within the noise of a few runs), and a rule only where it is faster.
    EXPECT_LE(got, best * 1.04) << sizeText(k.bytes) << " chose " << decisionLabel(chosen) << ", best "
                                << decisionLabel(bestConfig);
    if (!chosen.keepsAlgoProto()) {
      EXPECT_LT(got, dflt) << sizeText(k.bytes) << " " << decisionLabel(chosen);
      EXPECT_NE(chosen, ncclPick(k)) << "a rule equal to what NCCL runs at " << sizeText(k.bytes);
    }
    if (best < dflt * 0.85) {
      EXPECT_FALSE(chosen.keepsAlgoProto()) << "gain of " << dflt / best << " lost at " << sizeText(k.bytes);
    }
  }
  // The default runs said what NCCL ran at each size.
  for (const KeyResult& k : keys) ASSERT_TRUE(k.ncclRan.has_value());
}

TEST(SearchByRuns, NeverWritesARuleSlowerThanTheDefaultWhenNothingBeatsIt) {
  auto backend = runner();
  SyntheticRunOptions s = cluster(3);
  // NCCL picks the true best everywhere: every rule would be noise.
  s.truth_us = [](const Config& c, const MeasureKey& k) {
    if (!c.keepsAlgoProto()) return model_us(c, k.bytes);
    double best = 1e18;
    for (Algo a : {Algo::Ring, Algo::Tree})
      for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple}) best = std::min(best, model_us({a, p, 0, 0}, k.bytes));
    return best;
  };
  s.ncclDefault = nullptr;  // NCCL's TUNING lines not available: the guard alone must hold
  s.runSigma = 0.03;
  RunSearchOptions o;
  o.prior = prior_us;
  auto r = searchByRuns(*backend, syntheticRunExecutor(s), request(), o);
  ASSERT_TRUE(r.ok()) << r.error();
  const SmoothedResult sm = smoothAll(r->tune, SmoothingOptions{});
  for (const TunedInterval& t : sm.intervals)
    EXPECT_TRUE(t.config.keepsAlgoProto()) << decisionLabel(t.config) << " at " << sizeText(t.minBytes);
}

TEST(SearchByRuns, StopsAtTheBudgetAndSaysWhichSizesAreUndecided) {
  auto backend = runner();
  RunSearchOptions o;
  o.prior = prior_us;
  o.maxRuns = 4;
  auto r = searchByRuns(*backend, syntheticRunExecutor(cluster(11)), request(), o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->runsUsed, 4);
  int undecided = 0;
  for (const SizeStatus& s : r->sizes) {
    undecided += !s.decided;
    EXPECT_FALSE(s.why.empty());
  }
  EXPECT_GT(undecided, 0);
}

TEST(SearchByRuns, RunsAGivenProfilesConfigurationsFirst) {
  auto backend = runner();
  RunSearchOptions o;
  o.preferred = {Config{Algo::Tree, Proto::LL128, 0, 0}};
  o.maxRuns = 3;
  auto r = searchByRuns(*backend, syntheticRunExecutor(cluster(5)), request(), o);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->log.size(), 3u);
  EXPECT_NE(r->log[2].find("tree/ll128"), std::string::npos) << r->log[2];
}

TEST(SearchByRuns, AFailedRunDropsItsCandidateAndTheSearchGoesOn) {
  auto backend = runner();
  const RunExecutor cluster7 = syntheticRunExecutor(cluster(7));
  int failed = 0;
  const RunExecutor flaky = [&](const RunRequest& r) -> Expected<std::string> {
    if (r.config.algo == Algo::Tree && r.config.proto == Proto::LL) return ++failed, makeError("job killed");
    return cluster7(r);
  };
  RunSearchOptions o;
  o.prior = prior_us;
  auto r = searchByRuns(*backend, flaky, request(), o);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(failed, 1);
  const SmoothedResult sm = smoothAll(r->tune, SmoothingOptions{});
  // Without Tree/LL, NCCL's Ring/LL stands at 1K (no rule); Ring/LL128 still wins 128K.
  EXPECT_EQ(sm.chosenPerCollective[0][0], keepDefault());
  EXPECT_EQ(sm.chosenPerCollective[0][7], (Config{Algo::Ring, Proto::LL128, 0, 0}));
  bool logged = false;
  for (const std::string& l : r->log) logged = logged || l.find("tree/ll failed: job killed") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(SearchByRuns, RefusesSizesOneSweepCannotCover) {
  auto backend = runner();
  TuneRequest req = request();
  req.sizes = {1024, 4096};
  EXPECT_FALSE(searchByRuns(*backend, syntheticRunExecutor(cluster(1)), req, RunSearchOptions{}).ok());
}

// Rule emission on measurements: every rule of a replay-tuned profile covers only sizes whose own
// finding is Faster (bound below 1 - min-gain); none replaces the default with a slower measurement.
TEST(RuleEmission, ReplayTunedRulesStandOnlyOnGainsBeyondNoiseAndMinGain) {
  const std::string csv = dynamiccl::testing::shippedL40sCsv();
  for (int ranks : {2, 4})
    for (double minGain : {0.01, 0.05}) {
      auto b = makeReplayBackend({csv, "L40S", ranks, 1, "", std::nullopt});
      ASSERT_TRUE(b.ok()) << b.error();
      auto r = tune(**b, TuneRequest{});
      ASSERT_TRUE(r.ok()) << r.error();
      SmoothingOptions so;
      so.minGain = minGain;
      const SmoothedResult sm = smoothAll(*r, so);
      const auto& keys = r->collectives[0].keys;
      for (size_t i = 0; i < keys.size(); ++i) {
        const Config c = sm.chosenPerCollective[0][i];
        if (c.keepsAlgoProto()) continue;
        const PointEvidence& e = sm.evidencePerCollective[0][i];
        EXPECT_EQ(e.finding, Finding::Faster) << ranks << "r " << keys[i].key.bytes;
        EXPECT_LT(e.ratioUpper, 1 - minGain) << ranks << "r " << keys[i].key.bytes;
        const ConfigStats* s = nullptr;
        for (const ConfigStats& x : keys[i].evaluated)
          if (x.config == c && x.arm == e.arm) s = &x;
        ASSERT_NE(s, nullptr);
        EXPECT_LT(s->median_us(), keys[i].keep().median_us());
      }
    }
}

}  // namespace
}  // namespace dynamiccl::tune
