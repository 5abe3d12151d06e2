// Offline tuner: search on a known landscape, Hyperband arithmetic, smoothing, guard,
// export round trips, and the measurement backends (runner with a fake nccl-tests).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <unistd.h>

#include "offline/tune/tune.h"
#include "tests/shipped_data.h"

namespace dynamiccl::tune {
namespace {

// Known landscape: optimum ring/ll128, 8 channels, 256K chunk; smooth in the ordinal dimensions.
double landscape_us(const Config& c, const MeasureKey&) {
  if (c.keepsAlgoProto()) return 150.0;  // NCCL's default: ring/simple with its own channels
  double f = 2.0;
  if (c.algo == Algo::Ring) f = c.proto == Proto::LL128 ? 1.0 : c.proto == Proto::Simple ? 1.12 : 1.3;
  if (c.algo == Algo::Tree) f = c.proto == Proto::LL128 ? 1.15 : 1.4;
  const double ch = std::log2(c.nChannels > 0 ? c.nChannels : 16) - 3.0;
  const double ck = std::log2(double(c.chunkBytes > 0 ? c.chunkBytes : 512 << 10) / (256 << 10));
  return 100.0 * f * (1 + 0.06 * ch * ch) * (1 + 0.04 * ck * ck);
}
bool landscapeAvailable(const Config& c, const MeasureKey&) {
  return c.algo == Algo::Ring || c.algo == Algo::Tree || (c.algo == Algo::Nvls && c.proto == Proto::Simple);
}
const Config kOptimum{Algo::Ring, Proto::LL128, 8, 256 << 10};

std::unique_ptr<MeasurementBackend> syntheticBackend(uint64_t seed, double sigma = 0.03) {
  return makeSyntheticBackend({landscape_us, landscapeAvailable, sigma, seed, 8, 1});
}

// True regret of the incumbent after `budget` iterations (1.0 = optimum).
double regretAt(const KeyResult& r, const MeasurementBackend& b, int64_t budget) {
  Config inc = keepDefault();
  for (const TracePoint& t : r.trace)
    if (t.spentIterations <= budget) inc = t.incumbent;
  return *b.expected_us(inc, r.key) / landscape_us(kOptimum, r.key);
}

TEST(Hyperband, BracketArithmeticMatchesThePaper) {
  // Li et al. 2018, R = 81, eta = 3: (n, r) per bracket s = 4..0.
  const auto b = hyperbandBrackets(81, 3);
  ASSERT_EQ(b.size(), 5u);
  const int n[] = {81, 34, 15, 8, 5}, r[] = {1, 3, 9, 27, 81};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(b[i].s, 4 - i);
    EXPECT_EQ(b[i].rungs.front().configs, n[i]) << "bracket " << i;
    EXPECT_EQ(b[i].rungs.front().iterations, r[i]) << "bracket " << i;
    EXPECT_EQ(b[i].rungs.back().iterations, 81);
  }
  // Successive halving inside s = 4: 81 x 1, 27 x 3, 9 x 9, 3 x 27, 1 x 81.
  const int rungN[] = {81, 27, 9, 3, 1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b[0].rungs[i].configs, rungN[i]);
  EXPECT_EQ(b[0].cost(), 5 * 81);
  EXPECT_EQ(hyperbandMaxS(27, 3), 3);
  EXPECT_EQ(hyperbandMaxS(26, 3), 2);
  EXPECT_EQ(hyperbandBrackets(1, 3).size(), 1u);
}

TEST(Statistics, RobustToOutliers) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
}

TEST(Search, TpeHyperbandFindsTheKnownOptimumWithinBudget) {
  const MeasureKey key{Collective::AllReduce, 1 << 20, 8, 1};
  int found = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto backend = syntheticBackend(seed);
    const SearchSpace space(defaultDimensions(), [&](const Config& c) { return backend->available(c, key); });
    SearchOptions o;
    o.seed = seed;
    o.budgetIterations = (space.size() + 1) * o.maxIterations / 20;  // 5% of the exhaustive grid
    auto r = searchKey(*backend, key, space, o);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_LE(r->spentIterations, o.budgetIterations + 4 * 2 * o.maxIterations);  // + confirmation
    if (*backend->expected_us(r->best().config, key) <= 1.02 * landscape_us(kOptimum, key)) ++found;
  }
  EXPECT_GE(found, 6) << "TPE+Hyperband within 2% of the optimum in too few seeds";
}

TEST(Search, TpeHyperbandBeatsRandomOnAverage) {
  const MeasureKey key{Collective::AllReduce, 1 << 20, 8, 1};
  double tpe = 0, rnd = 0;
  const int seeds = 10;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    for (SearchMethod m : {SearchMethod::TpeHyperband, SearchMethod::Random}) {
      auto backend = syntheticBackend(seed);
      const SearchSpace space(defaultDimensions(), [&](const Config& c) { return backend->available(c, key); });
      SearchOptions o;
      o.method = m;
      o.seed = seed;
      o.patienceBrackets = 100;  // same budget for both: no early convergence
      o.budgetIterations = 600;
      auto r = searchKey(*backend, key, space, o);
      ASSERT_TRUE(r.ok());
      (m == SearchMethod::Random ? rnd : tpe) += std::log(regretAt(*r, *backend, 600));
    }
  }
  EXPECT_LT(tpe / seeds, rnd / seeds) << "geomean regret tpe " << std::exp(tpe / seeds) << " random " << std::exp(rnd / seeds);
  EXPECT_LT(std::exp(tpe / seeds), 1.05);
}

TEST(Search, ConvergesEarlyOnAFlatLandscapeAndWarmStartHelps) {
  const MeasureKey key{Collective::AllReduce, 1 << 20, 8, 1};
  auto flat = makeSyntheticBackend({[](const Config&, const MeasureKey&) { return 100.0; }, nullptr, 0.02, 3, 8, 1});
  const SearchSpace space(defaultDimensions(), [&](const Config& c) { return flat->available(c, key); });
  SearchOptions o;
  auto r = searchKey(*flat, key, space, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->converged);
  EXPECT_LT(r->spentIterations, (space.size() + 1) * o.maxIterations / 10);

  // Sharing across sizes: the neighbour's winner as warm start reaches 2% sooner than a cold start.
  int64_t cold = 0, warm = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    for (bool useWarm : {false, true}) {
      auto b = syntheticBackend(seed);
      const SearchSpace s(defaultDimensions(), [&](const Config& c) { return b->available(c, key); });
      SearchOptions so;
      so.seed = seed;
      auto res = searchKey(*b, key, s, so, useWarm ? std::vector<Config>{kOptimum} : std::vector<Config>{});
      ASSERT_TRUE(res.ok());
      int64_t hit = res->spentIterations;
      for (const TracePoint& t : res->trace)
        if (*b->expected_us(t.incumbent, key) <= 1.02 * landscape_us(kOptimum, key)) {
          hit = t.spentIterations;
          break;
        }
      (useWarm ? warm : cold) += hit;
    }
  }
  EXPECT_LT(warm, cold);
}

// A hand-made key result: default and configs with given medians and a noise level.
KeyResult fakeKey(uint64_t bytes, double default_us, std::vector<std::pair<Config, double>> configs, double noise) {
  KeyResult k;
  k.key = MeasureKey{Collective::AllReduce, bytes, 8, 1};
  k.fullIterations = 9;
  auto samples = [&](double m) {
    std::vector<double> s;
    for (int i = 0; i < 9; ++i) s.push_back(m * (1 + noise * ((i % 3) - 1)));
    return s;
  };
  k.evaluated.push_back({keepDefault(), samples(default_us)});
  for (auto& [c, m] : configs) k.evaluated.push_back({c, samples(m)});
  return k;
}

TEST(Smoothing, RemovesFlipFlopsBetweenNeighbouringSizes) {
  const Config a{Algo::Ring, Proto::LL128, 0, 0}, b{Algo::Tree, Proto::LL128, 0, 0};
  std::vector<KeyResult> keys;
  for (int i = 0; i < 7; ++i) {
    // b edges out a by 0.5% at size 3 only: noise, not a reason for two extra rules.
    const double bTime = i == 3 ? 89.5 : 95.0;
    keys.push_back(fakeKey(uint64_t{1} << (10 + i), 100.0, {{a, 90.0}, {b, bTime}}, 0.01));
  }
  SmoothingOptions raw;
  raw.switchPenalty = 0;
  EXPECT_EQ(smoothDecisions(keys, raw).size(), 3u);  // a, b, a: what a per-size argmin gives
  std::vector<Config> chosen;
  const auto smooth = smoothDecisions(keys, SmoothingOptions{}, &chosen);
  ASSERT_EQ(smooth.size(), 1u);
  EXPECT_EQ(smooth[0].config, a);
  EXPECT_EQ(smooth[0].minBytes, 1024u);
  EXPECT_EQ(smooth[0].maxBytes, (uint64_t{1} << 17) - 1);
  EXPECT_EQ(smooth[0].sizes, 7);
  EXPECT_GT(smooth[0].confidence, 0.9);
  for (const Config& c : chosen) EXPECT_EQ(c, a);

  // A real change of regime (b better by 30% from size 4 on) survives smoothing.
  for (int i = 3; i < 7; ++i)
    keys[i] = fakeKey(uint64_t{1} << (10 + i), 100.0, {{a, 90.0}, {b, i == 3 ? 95.0 : 63.0}}, 0.01);
  const auto two = smoothDecisions(keys, SmoothingOptions{});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].config, b);
  EXPECT_EQ(two[1].minBytes, uint64_t{1} << 14);
}

TEST(Guard, KeepsNcclDefaultWhenNotBeyondNoise) {
  const Config a{Algo::Ring, Proto::LL, 4, 0};
  // 1.5% faster with 5% noise per sample: not beyond noise -> no rule.
  std::vector<KeyResult> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(fakeKey(uint64_t{1} << (12 + i), 100.0, {{a, 98.5}}, 0.05));
  EXPECT_FALSE(beatsBeyondNoise(keys[0].evaluated[1], keys[0].keep(), SmoothingOptions{}));
  const auto iv = smoothDecisions(keys, SmoothingOptions{});
  ASSERT_EQ(iv.size(), 1u);
  EXPECT_TRUE(iv[0].config.keepsAlgoProto());
  EXPECT_TRUE(toProfile(iv, "t", 8, 1).rules.empty());
  // 20% faster: a rule, with high confidence.
  for (int i = 0; i < 4; ++i) keys[i] = fakeKey(uint64_t{1} << (12 + i), 100.0, {{a, 80.0}}, 0.05);
  const auto profile = toProfile(smoothDecisions(keys, SmoothingOptions{}), "t", 8, 1);
  ASSERT_EQ(profile.rules.size(), 1u);
  EXPECT_GT(profile.rules[0].confidence, 0.95);
}

policy::Profile sampleProfile() {
  std::vector<TunedInterval> iv = {
      {Collective::AllReduce, 0, 65535, Config{Algo::Ring, Proto::LL, 0, 0}, 0.9, 0.1, 3},
      {Collective::AllReduce, 65536, (1 << 20) - 1, keepDefault(), 0, 0, 2},
      {Collective::AllGather, 1 << 20, (8 << 20) - 1, Config{Algo::Ring, Proto::Simple, 16, 256 << 10}, 0.75, 0.2, 3}};
  return toProfile(iv, "roundtrip", 16, 2);
}

TEST(Export, FormatsParseBack) {
  const policy::Profile p = sampleProfile();
  ASSERT_EQ(p.rules.size(), 2u);
  auto json = policy::parseProfileJson(policy::profileToJson(p));
  ASSERT_TRUE(json.ok()) << json.error();
  ASSERT_EQ(json->rules.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(json->rules[i].decision, p.rules[i].decision);
    EXPECT_EQ(json->rules[i].minBytes, p.rules[i].minBytes);
    EXPECT_EQ(json->rules[i].maxBytes, p.rules[i].maxBytes);
    EXPECT_EQ(json->rules[i].minRanks, 16);
    EXPECT_NEAR(json->rules[i].confidence, p.rules[i].confidence, 1e-9);
  }
  auto csv = policy::parseNvidiaCsv(policy::profileToNvidiaCsv(p));
  ASSERT_TRUE(csv.ok()) << csv.error();
  ASSERT_EQ(csv->rules.size(), 2u);
  EXPECT_EQ(csv->rules[1].decision.algo, Algo::Ring);
  EXPECT_EQ(csv->rules[1].decision.nChannels, 16);
  EXPECT_EQ(csv->rules[1].maxNodes, 2);

  auto ncclx = profileToNcclxCsv(p);
  ASSERT_TRUE(ncclx.ok()) << ncclx.error();
  auto back = parseNcclxCsv(*ncclx);
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->rules.size(), 2u);
  EXPECT_EQ(back->rules[1].sizeKey, policy::SizeKey::BytesPerRank);
  EXPECT_EQ(back->rules[1].minBytes, (1u << 20) / 16);  // bytes per rank
  EXPECT_EQ(back->rules[1].decision.chunkBytes, 256u << 10);
  EXPECT_EQ(back->rules[0].decision.nChannels, 0);  // -1 = keep NCCL's
  EXPECT_FALSE(parseNcclxCsv("allreduce,1,0,ring,ll,-1,-1,-1,-1,1\n").ok());
  EXPECT_FALSE(parseNcclxCsv("allreduce,0,10,warp,ll,-1,-1,-1,-1,1\n").ok());

  TuneReport report;
  report.profile = p;
  report.jobKnobs.knobs.buffSizeBytes = 8 << 20;
  auto rep = parseReportJson(reportToJson(report));
  ASSERT_TRUE(rep.ok()) << rep.error();
  EXPECT_EQ(rep->profile.rules.size(), 2u);
  EXPECT_EQ(rep->jobKnobs.knobs.buffSizeBytes, 8u << 20);
  EXPECT_NE(envScript(rep->jobKnobs.knobs, "/p.json", "dynamiccl").find("NCCL_BUFFSIZE=8388608"), std::string::npos);
}

TEST(RunnerBackend, ForcesTheConfigurationAndParsesNcclTests) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tune_test_fake_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // Fake all_reduce_perf: one result row per cycle (-N); time 11.5 when forced to ring, else 20.
  std::ofstream(dir / "all_reduce_perf") << R"(#!/bin/bash
cycles=1; bytes=0
while [[ $# -gt 0 ]]; do case $1 in -N) cycles=$2; shift 2;; -b) bytes=$2; shift 2;; *) shift;; esac; done
cp "$DYNAMICCL_PROFILE" "$(dirname "$0")/seen_profile.json"
echo "$NCCL_TUNER_PLUGIN" > "$(dirname "$0")/seen_plugin"
t=20.0; grep -q '"algo":"ring"' "$DYNAMICCL_PROFILE" && t=11.5
echo "# nccl-tests fake"
echo "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
for ((i=0;i<cycles;i++)); do
  echo "     $bytes        262144     float     sum      -1    $t    91.2  159.6    N/A    11.40   92.0  161.0    N/A"
done
echo "# Avg bus bandwidth    : 160.3"
)";
  fs::permissions(dir / "all_reduce_perf", fs::perms::owner_all);
  RunnerBackendOptions o;
  o.script = std::string(DYNAMICCL_SOURCE_DIR) + "/scripts/measure_nccl_tests.sh";
  o.launcher = "none";
  o.ncclTestsDir = dir.string();
  o.pluginPath = "/opt/libnccl-tuner-dynamiccl.so";
  auto b = makeRunnerBackend(o);
  ASSERT_TRUE(b.ok()) << b.error();
  const MeasureKey key{Collective::AllReduce, 1 << 20, 8, 1};
  auto t = (*b)->measure(Config{Algo::Ring, Proto::LL128, 8, 0}, key, 20);
  ASSERT_TRUE(t.ok()) << t.error();
  ASSERT_EQ(t->size(), 5u);  // 5 cycles
  EXPECT_DOUBLE_EQ((*t)[0], 11.5);
  std::ifstream seen(dir / "seen_profile.json");
  std::stringstream text;
  text << seen.rdbuf();
  auto prof = policy::parseProfileJson(text.str());
  ASSERT_TRUE(prof.ok()) << prof.error() << " in " << text.str();
  ASSERT_EQ(prof->rules.size(), 1u);
  EXPECT_EQ(prof->rules[0].decision.proto, Proto::LL128);
  EXPECT_EQ(prof->rules[0].decision.nChannels, 8);
  auto d = (*b)->measure(keepDefault(), key, 3);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->size(), 3u);
  EXPECT_DOUBLE_EQ((*d)[0], 20.0);
  // No binary for the collective: an error value, not a crash.
  EXPECT_FALSE((*b)->measure(keepDefault(), MeasureKey{Collective::Broadcast, 1024, 8, 1}, 3).ok());
  RunnerBackendOptions bad = o;
  bad.launcher = "ssh";
  EXPECT_FALSE(makeRunnerBackend(bad).ok());
  fs::remove_all(dir);
}

TEST(SimulatorBackend, TunesAFewSizesAndNeverLosesToDefault) {
  auto b = makeSimulatorBackend({"dgx-h100", 1, 7, ""});
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_FALSE(makeSimulatorBackend({"no-such-preset", 1, 7, ""}).ok());
  TuneRequest req;
  req.sizes = {1 << 12, 1 << 13, 1 << 20, 1 << 21};
  auto r = tune(**b, req);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->collectives[0].keys.size(), 4u);
  EXPECT_LT(r->spentIterations, r->gridIterations / 5);
  std::vector<Config> chosen;
  const auto iv = smoothDecisions(r->collectives[0].keys, SmoothingOptions{}, &chosen);
  for (size_t i = 0; i < chosen.size(); ++i) {
    const MeasureKey& k = r->collectives[0].keys[i].key;
    EXPECT_LE(*(*b)->expected_us(chosen[i], k), 1.03 * *(*b)->expected_us(keepDefault(), k)) << k.bytes;
  }
}

TEST(SimulatorBackend, For2_31NoChannelCountAboveNcclsOwnIsProposed) {
  const MeasureKey key{Collective::AllReduce, 1 << 14, 8, 1};
  auto b28 = makeSimulatorBackend({"dgx-h100", 1, 7, ""});
  auto b31 = makeSimulatorBackend({"dgx-h100", 1, 7, "", abi::PickRule::Nccl2_31});
  ASSERT_TRUE(b28.ok() && b31.ok());
  auto above = [&](const MeasurementBackend& b, const Config& c, const MeasureKey& k) {
    const std::optional<int> own = b.ncclChannels(c, k);
    EXPECT_TRUE(own.has_value());
    return c.nChannels > 0 && own && c.nChannels > *own;
  };
  auto spaceFor = [&](const MeasurementBackend& b, abi::PickRule rule) {
    return SearchSpace(defaultDimensions(), [&](const Config& c) {
      return b.available(c, key) && channelsProposable(c, rule, b.ncclChannels(c, key));
    });
  };
  const SearchSpace s28 = spaceFor(**b28, abi::PickRule::Nccl2_28), s31 = spaceFor(**b31, abi::PickRule::Nccl2_31);
  int above28 = 0;
  for (int i = 0; i < s28.size(); ++i) above28 += above(**b28, s28.config(i), key);
  EXPECT_GT(above28, 0) << "2.28's space holds counts above NCCL's own: the rule has something to remove";
  EXPECT_LT(s31.size(), s28.size());
  for (int i = 0; i < s31.size(); ++i) EXPECT_FALSE(above(**b31, s31.config(i), key)) << decisionLabel(s31.config(i));

  TuneRequest req;
  req.sizes = {1 << 12, 1 << 14, 1 << 20};
  EXPECT_EQ(targetRule(req, **b31), abi::PickRule::Nccl2_28) << "the simulator reports no version: 2.28";
  req.ncclRule = abi::PickRule::Nccl2_31;
  auto r = tune(**b31, req);
  ASSERT_TRUE(r.ok()) << r.error();
  int evaluated = 0;
  for (const KeyResult& k : r->collectives[0].keys)
    for (const ConfigStats& c : k.evaluated) {
      ++evaluated;
      EXPECT_FALSE(above(**b31, c.config, k.key)) << decisionLabel(c.config) << " at " << k.key.bytes;
    }
  EXPECT_GT(evaluated, 20);
}

TEST(ReplayBackend, OnlyMeasuredConfigurationsAreAvailable) {
  const std::string csv = dynamiccl::testing::shippedL40sCsv();
  auto b = makeReplayBackend({csv, "", 0, 0, "", std::nullopt});
  ASSERT_TRUE(b.ok()) << b.error();
  const auto sizes = (*b)->measurableSizes(Collective::AllReduce);
  ASSERT_FALSE(sizes.empty());
  const MeasureKey key{Collective::AllReduce, sizes[sizes.size() / 2], (*b)->nRanks(), (*b)->nNodes()};
  EXPECT_TRUE((*b)->available(keepDefault(), key));
  EXPECT_FALSE((*b)->available(Config{Algo::Ring, Proto::Simple, 8, 0}, key));  // no channel sweeps
  EXPECT_FALSE((*b)->measure(Config{Algo::Nvls, Proto::Simple, 0, 0}, key, 5).ok());
  TuneRequest req;
  req.sizes = {key.bytes};
  auto r = tune(**b, req);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->collectives[0].keys.size(), 1u);
  EXPECT_GE(r->collectives[0].keys[0].evaluated.size(), 2u);
}

// Evidence: what each backend's timings are, and the rules' evidence through export and load.
TEST(Evidence, BackendsSayWhatTheirTimingsAre) {
  auto sim = makeSimulatorBackend({"dgx-h100", 1, 7, ""});
  ASSERT_TRUE(sim.ok()) << sim.error();
  EXPECT_EQ((*sim)->provenance(), policy::Provenance::Simulated);
  ASSERT_TRUE((*sim)->measuredOn());  // the simulated machine, so a reader sees what was simulated
  EXPECT_EQ((*sim)->measuredOn()->computeCap, 90);
  EXPECT_EQ(makeSyntheticBackend({landscape_us, nullptr, 0.02, 3, 8, 1})->provenance(), policy::Provenance::Simulated);
  RunnerBackendOptions o;
  o.script = "/bin/true";
  o.launcher = "none";
  o.cluster = ClusterHardware{90, 450, 8, 50, "flags", ""};
  o.ncclVersion = "2.28.9";
  auto runner = makeRunnerBackend(o);
  ASSERT_TRUE(runner.ok()) << runner.error();
  const policy::Evidence e = evidenceOf(**runner);
  EXPECT_EQ(e.provenance, policy::Provenance::MeasuredOffline);
  EXPECT_EQ(e.fingerprint, o.cluster);
  EXPECT_EQ(e.ncclVersion, "2.28.9");
  EXPECT_EQ(e.date.size(), 10u);  // YYYY-MM-DD
  const std::string csv = dynamiccl::testing::shippedL40sCsv();
  auto replay = makeReplayBackend({csv, "", 0, 0, "", std::nullopt});
  ASSERT_TRUE(replay.ok()) << replay.error();
  EXPECT_EQ((*replay)->provenance(), policy::Provenance::MeasuredOffline);
  ASSERT_TRUE((*replay)->measuredOn());
  EXPECT_TRUE(policy::validateClusterHardware(*(*replay)->measuredOn()).ok());
}

TEST(Evidence, TunedRulesCarryTheirSamplesAndGain) {
  auto b = syntheticBackend(5);
  TuneRequest req;
  req.sizes = {1 << 20, 1 << 21};
  auto r = tune(*b, req);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->evidence.provenance, policy::Provenance::Simulated);
  const auto [intervals, chosen, evidence] = smoothAll(*r, SmoothingOptions{});
  const TuneReport report = makeReport(*r, intervals, chosen, "t", {});
  ASSERT_FALSE(report.profile.rules.empty());
  for (const policy::Rule& rule : report.profile.rules) {
    ASSERT_TRUE(rule.evidence);
    EXPECT_EQ(rule.evidence->provenance, policy::Provenance::Simulated);
    EXPECT_GT(rule.evidence->samples, 0);
    EXPECT_GT(rule.evidence->defaultSamples, 0);
    EXPECT_GT(rule.evidence->gain, 0.2);  // the landscape's optimum is ~1.5x NCCL's default
    EXPECT_LE(rule.evidence->gainLow, rule.evidence->gain);
    EXPECT_GE(rule.evidence->gainHigh, rule.evidence->gain);
    EXPECT_TRUE(policy::validateEvidence(*rule.evidence).ok());
  }
}

TEST(Evidence, RoundTripsThroughExportAndLoad) {
  TunedInterval t{Collective::AllReduce, 0, 65535, Config{Algo::Ring, Proto::LL, 0, 0}, 0.9, 0.125, 3};
  t.gainLow = 0.0625;
  t.gainHigh = 0.25;
  t.samples = 81;
  t.defaultSamples = 54;
  policy::Evidence measured;
  measured.provenance = policy::Provenance::MeasuredOffline;
  measured.fingerprint = ClusterHardware{90, 450, 8, 50, "sim preset dgx-h100", ""};
  measured.ncclVersion = "2.28.9";
  measured.date = "2026-11-23";
  const policy::Profile p = toProfile({t}, "evidence", 16, 2, measured);
  ASSERT_EQ(p.rules.size(), 1u);
  const std::string path = ::testing::TempDir() + "/evidence-roundtrip.json";
  std::ofstream(path) << policy::profileToJson(p);
  auto back = policy::loadProfileFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_TRUE(back->rules[0].evidence);
  EXPECT_EQ(*back->rules[0].evidence, *p.rules[0].evidence);
  EXPECT_EQ(back->rules[0].evidence->samples, 81);
  EXPECT_EQ(back->rules[0].evidence->defaultSamples, 54);
  EXPECT_DOUBLE_EQ(back->rules[0].evidence->gainLow, 0.0625);
  EXPECT_EQ(back->rules[0].evidence->fingerprint, measured.fingerprint);
}

// The recipe tune, profile and the demo follow: one shape on the simulator, its collectives the
// measured ones when none is asked for, the merged report that shape's own.
TEST(TuneShapes, OneSimulatedShapeIsItsOwnMergedReport) {
  TunePlan plan;
  plan.simulator = {"dgx-h100", 1, 7, ""};
  plan.request.collectives.clear();
  plan.request.sizes = powerOfTwoSizes(1 << 16, 1 << 20);
  plan.request.search.maxIterations = 9;
  plan.request.search.budgetIterations = 200;
  auto tuned = tuneShapes(plan);
  ASSERT_TRUE(tuned) << tuned.error();
  ASSERT_EQ(tuned->shapes.size(), 1u);
  const TunedShape& s = tuned->shapes.front();
  EXPECT_EQ(s.collectives, std::vector<Collective>{Collective::AllReduce});
  EXPECT_EQ(s.result.collectives.front().keys.size(), 5u);
  EXPECT_EQ(s.smoothed.chosenPerCollective.front().size(), 5u);
  EXPECT_EQ(tuned->merged.profile.name, "tuned " + s.backend);
  EXPECT_EQ(tuned->merged.profile.rules.size(), s.report.profile.rules.size());
  EXPECT_FALSE(s.runs.has_value());
}

}  // namespace
}  // namespace dynamiccl::tune
