// Tuning from real repeats: the decision rule (one-sided confidence bound on chosen/default below
// 1 - minGain) on synthetic repeats with known truth, the replay backend keeping every repeat, and
// in-sample / leave-one-size-out cross-validation on the real L40S sweeps.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include "offline/sim/sim.h"
#include "offline/tune/tune.h"
#include "tests/shipped_data.h"

namespace dynamiccl::tune {
namespace {

const Config kCand{Algo::Ring, Proto::LL, 0, 0};

// n repeats whose log-mean is exactly log(m) and whose spread is sigma (normal quantiles): known truth.
std::vector<double> repeats(double m, int n, double sigma) {
  std::vector<double> s;
  for (int i = 0; i < n; ++i) s.push_back(m * std::exp(sigma * normalQuantile((i + 0.5) / n)));
  return s;
}

KeyResult key(uint64_t bytes, double default_us, int nDefault, double cand_us, int nCand, double sigma) {
  KeyResult k;
  k.key = MeasureKey{Collective::AllReduce, bytes, 8, 1};
  k.fullIterations = 1;
  k.evaluated.push_back({keepDefault(), repeats(default_us, nDefault, sigma), "nccl-default"});
  k.evaluated.push_back({kCand, repeats(cand_us, nCand, sigma), "NCCL_PROTO=LL"});
  return k;
}

DecisionRule rule(double minGain, int pool = 0) {
  DecisionRule r;
  r.minGain = minGain;
  r.poolNeighbours = pool;
  return r;
}

TEST(Quantiles, MatchTables) {
  EXPECT_NEAR(normalQuantile(0.975), 1.959964, 1e-5);
  EXPECT_NEAR(studentTQuantile(0.95, 10), 1.8125, 2e-3);
  EXPECT_NEAR(studentTQuantile(0.95, 3), 2.3534, 5e-3);
  EXPECT_NEAR(studentTQuantile(0.95, 2), 2.9200, 1e-3);
  EXPECT_NEAR(studentTQuantile(0.95, 2.7), 2.9200, 1e-3);  // rounded down below 3 df: conservative
  EXPECT_NEAR(studentTQuantile(0.95, 1), 6.3138, 1e-3);
  EXPECT_NEAR(chiSquareQuantile(0.95, 4), 9.4877, 0.05);
}

TEST(DecisionRule, KeepsAConsistentFourPercentGainWithEnoughRepeats) {
  const std::vector<KeyResult> keys = {key(1 << 20, 100.0, 30, 96.0, 30, 0.03)};
  const PointEvidence e = assessCandidate(keys, 0, 1, rule(0.01));
  EXPECT_EQ(e.finding, Finding::Faster);
  EXPECT_NEAR(e.ratio, 0.96, 1e-9);
  EXPECT_LT(e.ratioUpper, 0.99);
  EXPECT_GT(e.ratioUpper, 0.96);
  EXPECT_LT(e.ratioLower, 0.96);
  EXPECT_EQ(e.noiseSource, "repeats");
  EXPECT_GT(e.winProbability, 0.99);
}

TEST(DecisionRule, RefusesItWithTooFewRepeatsAndSaysHowManyWouldDecide) {
  std::vector<KeyResult> keys = {key(1 << 20, 100.0, 3, 96.0, 3, 0.03)};
  const PointEvidence e = assessCandidate(keys, 0, 1, rule(0.01));
  EXPECT_EQ(e.finding, Finding::Undecided);
  EXPECT_GT(e.ratioUpper, 0.99);
  EXPECT_GT(e.repeatsToDecide, 3);
  EXPECT_LE(e.repeatsToDecide, 30);
  EXPECT_TRUE(toProfile(smoothDecisions(keys, SmoothingOptions{}), "t", 8, 1).rules.empty());
  // The power estimate is enough: that many repeats of each arm decide it.
  keys = {key(1 << 20, 100.0, e.repeatsToDecide, 96.0, e.repeatsToDecide, 0.03)};
  EXPECT_EQ(assessCandidate(keys, 0, 1, rule(0.01)).finding, Finding::Faster);
}

TEST(DecisionRule, MinGainApplies) {
  const std::vector<KeyResult> keys = {key(1 << 20, 100.0, 30, 96.0, 30, 0.03)};
  EXPECT_EQ(assessCandidate(keys, 0, 1, rule(0.02)).finding, Finding::Faster);
  EXPECT_EQ(assessCandidate(keys, 0, 1, rule(0.035)).finding, Finding::Undecided);  // 0.96 < 0.965, bound is not
  EXPECT_EQ(assessCandidate(keys, 0, 1, rule(0.05)).finding, Finding::NotFaster);   // 0.96 is no 5% gain
  SmoothingOptions o;
  o.minGain = 0.02;
  EXPECT_EQ(toProfile(smoothDecisions(keys, o), "t", 8, 1).rules.size(), 1u);
  o.minGain = 0.05;
  EXPECT_TRUE(toProfile(smoothDecisions(keys, o), "t", 8, 1).rules.empty());
}

TEST(DecisionRule, NeighbouringSizesPoolConsistentEvidence) {
  // Six sizes, 4% faster everywhere, 3 repeats each: no size decides alone, together they do.
  std::vector<KeyResult> keys;
  for (int i = 0; i < 6; ++i) keys.push_back(key(uint64_t{1} << (10 + i), 100.0, 3, 96.0, 3, 0.02));
  EXPECT_NE(assessCandidate(keys, 2, 1, rule(0.01, 0)).finding, Finding::Faster);
  const PointEvidence pooled = assessCandidate(keys, 2, 1, rule(0.01, 2));
  EXPECT_EQ(pooled.finding, Finding::Faster);
  EXPECT_EQ(pooled.pooledSizes, 5);
  // A neighbour that disagrees (20% slower) is not pooled with: the evidence shrinks to agreeing sizes.
  keys[3] = key(uint64_t{1} << 13, 100.0, 3, 120.0, 3, 0.02);
  const PointEvidence split = assessCandidate(keys, 2, 1, rule(0.01, 2));
  EXPECT_LT(split.pooledSizes, 5);
  EXPECT_NE(assessCandidate(keys, 3, 1, rule(0.01, 2)).finding, Finding::Faster);
}

TEST(DecisionRule, SingleSamplesTakeNoiseFromNeighboursOrSayItIsUnknown) {
  // One sample per arm everywhere: nothing estimates noise, nothing is decided.
  std::vector<KeyResult> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(key(uint64_t{1} << (10 + i), 100.0, 1, 80.0, 1, 0.02));
  const PointEvidence none = assessCandidate(keys, 1, 1, rule(0.01, 2));
  EXPECT_EQ(none.finding, Finding::NoiseUnknown);
  EXPECT_EQ(none.noiseSource, "none");
  EXPECT_GE(none.repeatsToDecide, 2);
  EXPECT_TRUE(toProfile(smoothDecisions(keys, SmoothingOptions{}), "t", 8, 1).rules.empty());
  // The default repeated at a neighbouring size: a 20% gain on single candidate samples is decided.
  keys[0] = key(1 << 10, 100.0, 5, 80.0, 1, 0.02);
  const PointEvidence e = assessCandidate(keys, 1, 1, rule(0.01, 2));
  EXPECT_EQ(e.noiseSource, "repeats of other configurations");
  EXPECT_EQ(e.finding, Finding::Faster);
}

// A size's own three repeats say its noise: one glitched run of the same arm at a neighbouring size (a
// 170 us run among 95 us ones) must not mask a 5% gain every repeat here shows.
TEST(DecisionRule, AGlitchAtANeighbouringSizeDoesNotMaskAClearGain) {
  std::vector<KeyResult> keys;
  for (int i = 0; i < 5; ++i) keys.push_back(key(uint64_t{1} << (20 + i), 100.0, 6, 95.0, 3, 0.003));
  keys[1].evaluated[1].samples_us = {95.0, 95.3, 170.0};
  keys[3].evaluated[1].samples_us = {101.0, 100.5, 112.0};
  const PointEvidence e = assessCandidate(keys, 2, 1, rule(0.01, 2));
  EXPECT_EQ(e.noiseSource, "repeats");
  EXPECT_LT(e.noise, 0.01);
  EXPECT_EQ(e.finding, Finding::Faster) << describe(e);
  // Two repeats here: the noise comes from the neighbours, whose glitch the median of their spreads ignores.
  keys[2].evaluated[1].samples_us = {94.8, 95.2};
  const PointEvidence two = assessCandidate(keys, 2, 1, rule(0.01, 2));
  EXPECT_LT(two.noise, 0.05) << describe(two);
}

TEST(DecisionRule, UndecidedSizesAreMeasuredUntilDecided) {
  // Truth: the candidate is 6% faster; 2% lognormal noise. Three repeats do not decide; the
  // follow-up measures what the power estimate asks for, and then the rule keeps it.
  SyntheticBackendOptions so;
  so.truth_us = [](const Config& c, const MeasureKey&) { return c.keepsAlgoProto() ? 100.0 : 94.0; };
  so.sigma = 0.02;
  so.seed = 3;
  auto backend = makeSyntheticBackend(so);
  TuneResult r;
  r.collectives.push_back({Collective::AllReduce, {}});
  KeyResult k;
  k.key = MeasureKey{Collective::AllReduce, 1 << 20, 8, 1};
  k.fullIterations = 1;
  k.evaluated.push_back({keepDefault(), backend->measure(keepDefault(), k.key, 2).value()});
  k.evaluated.push_back({kCand, backend->measure(kCand, k.key, 2).value()});
  r.collectives[0].keys.push_back(k);
  const DecisionRule strict = rule(0.02, 0);
  ASSERT_NE(assessCandidate(r.collectives[0].keys, 0, 1, strict).finding, Finding::Faster);
  EXPECT_EQ(measureUndecided(*backend, r, strict, 500), 1);
  const KeyResult& after = r.collectives[0].keys[0];
  EXPECT_GT(after.keep().count(), 2);
  EXPECT_GT(after.evaluated[1].count(), 2);
  EXPECT_EQ(assessCandidate(r.collectives[0].keys, 0, 1, strict).finding, Finding::Faster);
}

std::string l40s() { return dynamiccl::testing::shippedL40sCsv(); }

TEST(ReplayRepeats, EveryRepeatIsASampleAndHalfForcedRowsStayTheirOwnArm) {
  auto b = makeReplayBackend({l40s(), "L40S", 2, 1, "", std::nullopt});
  ASSERT_TRUE(b.ok()) << b.error();
  ASSERT_TRUE((*b)->recorded());
  auto arms = (*b)->recordedArms(MeasureKey{Collective::AllReduce, 4096, 2, 1});
  ASSERT_TRUE(arms.ok()) << arms.error();
  EXPECT_EQ((*arms)[0].arm, "nccl-default");
  EXPECT_EQ((*arms)[0].count(), 3);  // three default runs, not their mean
  std::set<std::string> labels;
  for (size_t i = 1; i < arms->size(); ++i) {
    labels.insert((*arms)[i].arm);
    EXPECT_FALSE((*arms)[i].config.keepsAlgoProto());
  }
  EXPECT_TRUE(labels.count("NCCL_ALGO=RING"));
  EXPECT_TRUE(labels.count("NCCL_PROTO=LL"));
}

// A temporary interchange CSV.
struct TempCsv {
  std::filesystem::path path;
  explicit TempCsv(const std::string& body) {
    path = std::filesystem::temp_directory_path() / ("dynamiccl_replay_" + std::to_string(::getpid()) + ".csv");
    std::ofstream(path) << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n"
                        << body;
  }
  ~TempCsv() { std::filesystem::remove(path); }
};

TEST(ReplayRepeats, SizesWithoutADefaultRowAreUndecidableNotComparedWithAModelsGuess) {
  const std::string sys = "L40S-48GB x2 PCIe";
  std::string body;
  for (const char* proto : {"LL", "LL128", "SIMPLE"})  // every protocol forced, NCCL's own choice never measured
    for (int r = 0; r < 2; ++r) body += sys + ",allreduce,2,1,1048576,default," + proto + ",,,100,0,x\n";
  body += sys + ",allreduce,2,1,134217728,default,LL,,,9000,0,x\n";
  body += "Mystery GPU x2,allreduce,2,1,1048576,default,default,,,90,0,x\n";
  const TempCsv csv(body);
  auto b = makeReplayBackend({csv.path.string(), "", 2, 1, "", std::nullopt});
  ASSERT_TRUE(b.ok()) << b.error();
  TuneRequest req;
  auto r = tune(**b, req);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r->collectives.empty() || r->collectives[0].keys.empty());  // no key has a measured default
  ASSERT_EQ(r->undecidable.size(), 2u);
  for (const std::string& u : r->undecidable)
    EXPECT_NE(u.find("no default row (NCCL's own choice was not measured"), std::string::npos) << u;
  // The row of an unknown platform is read with the stand-in's model, said, and can be declared.
  bool named = false;
  for (const std::string& n : r->dataNotes) named = named || n.find("no platform describes 'Mystery GPU x2'") != std::string::npos;
  EXPECT_TRUE(named);
  auto declared = makeReplayBackend({csv.path.string(), "Mystery", 2, 1, "l40s-pcie-4", std::nullopt});
  ASSERT_TRUE(declared.ok()) << declared.error();
  EXPECT_EQ((*declared)->measurableSizes(Collective::AllReduce), std::vector<uint64_t>{1048576});
}

// Where NCCL's model guesses that NCCL runs exactly the forced arm that beats the measured default,
// the arm stays a candidate: only measurements say what NCCL ran.
TEST(ReplayRepeats, AForcedArmTheModelTakesForTheDefaultKeepsItsGain) {
  const std::string sys = "L40S-48GB x2 PCIe";
  const uint64_t bytes = 1 << 20;
  auto defaults = [&] {
    std::string b;
    for (double t : {100.0, 101.0, 99.0, 100.5}) b += sys + ",allreduce,2,1," + std::to_string(bytes) + ",default,default,,,"
                                                    + std::to_string(t) + ",0,x\n";
    return b;
  }();
  sim::Config guess;
  {
    const TempCsv probe(defaults);
    auto rows = measurements::loadMeasurements(probe.path.string());
    ASSERT_TRUE(rows.ok()) << rows.error();
    auto data = measurements::buildReplayData(rows->rows);
    ASSERT_TRUE(data.ok()) << data.error();
    ASSERT_EQ(data->points.size(), 1u);
    guess = data->points[0].ncclDefault;
    ASSERT_NE(guess.algo, Algo::Default);
  }
  std::string body = defaults;
  for (double t : {80.0, 80.5, 79.5, 80.2})
    body += sys + ",allreduce,2,1," + std::to_string(bytes) + "," + std::string(algoName(guess.algo)) + "," +
            std::string(protoName(guess.proto)) + ",,," + std::to_string(t) + ",0,x\n";
  const TempCsv csv(body);
  auto b = makeReplayBackend({csv.path.string(), "", 2, 1, "", std::nullopt});
  ASSERT_TRUE(b.ok()) << b.error();
  auto r = tune(**b, TuneRequest{});
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->collectives.size(), 1u);
  ASSERT_EQ(r->collectives[0].keys.size(), 1u);
  SmoothingOptions so;
  auto smoothed = smoothAll(*r, so);
  ASSERT_EQ(smoothed.evidencePerCollective.size(), 1u);
  ASSERT_EQ(smoothed.evidencePerCollective[0].size(), 1u);
  const PointEvidence& e = smoothed.evidencePerCollective[0][0];
  EXPECT_EQ(e.finding, Finding::Faster) << describe(e);
  EXPECT_EQ(e.config.algo, guess.algo);
  EXPECT_EQ(e.config.proto, guess.proto);
  ASSERT_EQ(smoothed.intervals.size(), 1u);
  EXPECT_EQ(smoothed.intervals[0].config.algo, guess.algo);
}

// Every communicator shape of a dataset is its own backend: nothing is left for another run.
TEST(ReplayRepeats, EveryShapeOfADatasetIsTuned) {
  auto all = makeReplayBackends({l40s(), "L40S", 0, 0, "", std::nullopt});
  ASSERT_TRUE(all.ok()) << all.error();
  std::set<int> ranks;
  for (const auto& b : *all) ranks.insert(b->nRanks());
  EXPECT_EQ(ranks, (std::set<int>{2, 4}));
  auto two = makeReplayBackends({l40s(), "L40S", 2, 0, "", std::nullopt});
  ASSERT_TRUE(two.ok()) << two.error();
  ASSERT_EQ(two->size(), 1u);
  EXPECT_EQ((*two)[0]->nRanks(), 2);
}

// Where the runs cannot tell the forced twin of NCCL's choice from the default rows (settled: the same
// configuration), its runs are more runs of NCCL's default, not a candidate. On the L40S 4-GPU rows at
// 8 B, NCCL_PROTO=LL and NCCL_ALGO=RING both ran ring/ll (17.31, 17.29 us, the forced arms' session)
// beside three default runs (17.73-19.38 us): five runs of the default, against which tree/ll's single
// 17.36 us run establishes nothing.
TEST(ReplayRepeats, TheForcedTwinOfNcclsChoiceIsMoreRunsOfTheDefault) {
  auto b = makeReplayBackend({l40s(), "L40S", 4, 1, "", std::nullopt});
  ASSERT_TRUE(b.ok()) << b.error();
  const MeasureKey k{Collective::AllReduce, 8, 4, 1};
  auto arms = (*b)->recordedArms(k);
  ASSERT_TRUE(arms.ok()) << arms.error();
  ASSERT_FALSE(arms->empty());
  EXPECT_EQ(arms->front().count(), 5);
  for (size_t i = 1; i < arms->size(); ++i)
    EXPECT_FALSE((*arms)[i].config.algo == Algo::Ring && (*arms)[i].config.proto == Proto::LL) << (*arms)[i].arm;
  ASSERT_TRUE((*b)->ncclDefaultRuns(k).has_value());
  TuneRequest req;
  req.collectives = {Collective::AllReduce};
  req.sizes = {8};
  auto r = tune(**b, req);
  ASSERT_TRUE(r.ok()) << r.error();
  for (const PointEvidence& e : bestCandidates(r->collectives[0].keys, DecisionRule{}))
    EXPECT_NE(e.finding, Finding::Faster) << describe(e);
}


// A sweep of channel counts (as shared/data/mi355x-rccl-1node): at each size NCCL's default and one
// (algo, proto) forced at 2 and at 16 channels, one row each, a median of 3 runs with its spread.
std::string channelSweep() {
  const std::string sys = "L40S-48GB x2 PCIe";
  const std::string forced = "forced by env NCCL_ALGO=RING NCCL_PROTO=LL NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=";
  std::string body;
  for (uint64_t bytes : {uint64_t{1} << 16, uint64_t{1} << 17, uint64_t{1} << 18}) {
    const std::string head = sys + ",allreduce,2,1," + std::to_string(bytes) + ",";
    body += head + "default,default,,,100,0,\"default; median of 3 runs, 3-run spread 1.0%\"\n";
    body += head + "RING,LL,2,,150,0,\"" + forced + "2; median of 3 runs, 3-run spread 1.5%\"\n";
    body += head + "RING,LL,16,,70,0,\"" + forced + "16; median of 3 runs, 3-run spread 0.8%\"\n";
  }
  return body;
}

TEST(ChannelArms, TwoChannelCountsOfOnePairAreTwoArmsAndTheRuleCarriesTheCount) {
  const TempCsv csv(channelSweep());
  auto b = makeReplayBackend({csv.path.string(), "", 2, 1, "", std::nullopt});
  ASSERT_TRUE(b.ok()) << b.error();
  auto arms = (*b)->recordedArms(MeasureKey{Collective::AllReduce, 1 << 17, 2, 1});
  ASSERT_TRUE(arms.ok()) << arms.error();
  ASSERT_EQ(arms->size(), 3u) << "NCCL's default and two configurations, not one arm with two repeats";
  std::set<int> counts;
  for (size_t i = 1; i < arms->size(); ++i) {
    EXPECT_EQ((*arms)[i].count(), 1);
    EXPECT_GT((*arms)[i].statedDof, 0) << "the runs each row states give its noise";
    counts.insert((*arms)[i].config.nChannels);
  }
  EXPECT_EQ(counts, (std::set<int>{2, 16}));
  bool said = false;
  for (const std::string& n : (*b)->dataNotes()) said = said || n.find("channels: rows force 2 counts (2,16)") != std::string::npos;
  EXPECT_TRUE(said);

  auto r = tune(**b, TuneRequest{});
  ASSERT_TRUE(r.ok()) << r.error();
  const SmoothedResult smoothed = smoothAll(*r, SmoothingOptions{});
  ASSERT_EQ(smoothed.intervals.size(), 1u);
  EXPECT_EQ(smoothed.intervals[0].config, (Config{Algo::Ring, Proto::LL, 16, 0}));
  const policy::Profile profile = toProfile(smoothed.intervals, "channels", 2, 1, r->evidence);
  ASSERT_EQ(profile.rules.size(), 1u);
  EXPECT_EQ(profile.rules[0].decision.nChannels, 16);
  EXPECT_NE(policy::profileToJson(profile).find("\"channels\": 16"), std::string::npos);
}

// Where no row states a channel count, the data say so, and a count is no arm.
TEST(ChannelArms, DataStatingNoChannelCountSaySo) {
  auto b = makeReplayBackend({l40s(), "L40S", 2, 1, "", std::nullopt});
  ASSERT_TRUE(b.ok()) << b.error();
  bool said = false;
  for (const std::string& n : (*b)->dataNotes()) said = said || n.find("channels: not stated") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_FALSE((*b)->available(Config{Algo::Ring, Proto::LL, 16, 0}, MeasureKey{Collective::AllReduce, 4096, 2, 1}));
}

// The replay judges a decision by the rows of its own channel count; one at NCCL's own count, where the
// rows force counts, is not measured there and is not judged by another count's rows.
TEST(ChannelArms, ReplayJudgesAtTheDecisionsChannelCount) {
  const TempCsv csv(channelSweep());
  auto rows = measurements::loadMeasurements(csv.path.string());
  ASSERT_TRUE(rows.ok()) << rows.error();
  auto data = measurements::buildReplayData(rows->rows);
  ASSERT_TRUE(data.ok()) << data.error();
  const auto forced = [](const measurements::ReplayPoint&) { return true; };
  for (int channels : {16, 2}) {
    const sim::ReplaySummary s = sim::replay(
        *data, [&](const measurements::ReplayPoint&, const model::CostTable&) { return sim::Config{Algo::Ring, Proto::LL, channels, 0}; },
        false, forced);
    ASSERT_EQ(s.judged, 3);
    EXPECT_EQ(s.channelsJudged, 3);
    EXPECT_EQ(s.channelOverrides, 0);
    for (const auto& j : s.perPoint) EXPECT_DOUBLE_EQ(j.chosen_us, channels == 16 ? 70 : 150);
    EXPECT_NEAR(s.geomeanVsDefault, channels == 16 ? 0.70 : 1.50, 1e-9);
  }
  const sim::ReplaySummary own = sim::replay(
      *data, [&](const measurements::ReplayPoint&, const model::CostTable&) { return sim::Config{Algo::Ring, Proto::LL, 0, 0}; },
      false, forced);
  EXPECT_EQ(own.judged, 0);
  ASSERT_EQ(own.unjudged.size(), 3u);
  EXPECT_NE(own.unjudged[0].find("at NCCL's own channel count"), std::string::npos) << own.unjudged[0];
}

}  // namespace
}  // namespace dynamiccl::tune
