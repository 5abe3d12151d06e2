// Real measurements in training: rows from an interchange CSV carry the fingerprint of the machine
// they were measured on, whole machines can be held out, a profile trained on them is for that
// hardware, and the confidence margin comes from the measured error of predicted gains.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "offline/train/confidence.h"
#include "offline/train/measured_data.h"
#include "offline/train/policy_eval.h"
#include "policy_weights_fixture.h"
#include "store/store.h"
#include "learned/learned.h"

namespace dynamiccl {
namespace {

const std::string kFixture = std::string(DYNAMICCL_SOURCE_DIR) + "/tests/data/l40s_small.csv";

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("dynamiccl-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(MeasuredSamples, EveryMeasuredArmWithItsMachinesFingerprint) {
  auto data = train::loadReplayData(kFixture);
  ASSERT_TRUE(data.ok()) << data.error();
  ASSERT_EQ(data->shapes.size(), 1u);
  EXPECT_EQ(data->shapes[0]->topology.name, "l40s-pcie-4");
  const auto rows = train::measuredSamples(*data, 4.0f);
  // Per point: NCCL's pick plus every forced arm that resolved to a distinct (algo, proto).
  ASSERT_GE(rows.size(), 8u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.weight, 4.0f);
    EXPECT_TRUE(std::isfinite(r.logLatency_us));
  }
  // The context is the L40S machine's, not a preset's: encode it again and compare.
  const TopologyFingerprint fp = train::fingerprintOf(data->shapes[0]->topology);
  EXPECT_EQ(fp.computeCap, 89);
  float context[kContextFeatures];
  encodeContext(fp, data->points[0].coll, data->points[0].bytes, {}, std::span<float, kContextFeatures>(context, kContextFeatures));
  for (int i = 0; i < kContextFeatures; ++i) EXPECT_EQ(rows[0].inputs[i], context[i]) << i;
  // Holding out the machine leaves nothing.
  EXPECT_TRUE(train::measuredSamples(*data, 1.0f, [](const measurements::Shape& s) {
                return !train::machineMatches(s.topology.name, {"l40s"});
              }).empty());
}

TEST(MeasuredHardware, IsTheDatasetsMachineNotAPreset) {
  auto data = train::loadReplayData(kFixture);
  ASSERT_TRUE(data.ok()) << data.error();
  auto hw = train::measuredHardware(*data);
  ASSERT_TRUE(hw.ok()) << hw.error();
  EXPECT_EQ(hw->computeCap, 89);
  EXPECT_EQ(hw->nvlinkBwPerGpu_GBps, 0.0);
  EXPECT_EQ(hw->nicsPerNode, 2);
  EXPECT_NE(hw->source.find("l40s"), std::string::npos) << hw->source;
  // --measured-on: the platform named wins over the rows' system strings.
  auto h800 = train::loadReplayData(kFixture, "h800");
  ASSERT_TRUE(h800.ok()) << h800.error();
  EXPECT_EQ(train::measuredHardware(*h800)->computeCap, 90);
}

TEST(MeasuredHardware, SeveralMachinesHaveNoSingleFingerprint) {
  const std::string path = tempPath("two-machines.csv");
  {
    std::ifstream in(kFixture);
    std::ofstream out(path);
    out << in.rdbuf();
    out << "DGX H100 fixture,allreduce,8,1,65536,default,default,,,30.0,,test fixture\n";
  }
  auto data = train::loadReplayData(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(data.ok()) << data.error();
  EXPECT_FALSE(train::measuredHardware(*data).ok());
}

TEST(StoreSamples, RowsOfAPlatformGetItsFingerprintUnknownOnesAreSkipped) {
  const std::string path = tempPath("store.db");
  {
    auto db = store::Store::open(store::StoreOptions{.path = path});
    ASSERT_TRUE(db.ok()) << db.error();
    auto writer = store::Writer::create(**db);
    ASSERT_TRUE(writer.ok()) << writer.error();
    store::Batch batch;
    for (const char* system : {"L40S-48GB x2 PCIe node", "a machine nobody knows"}) {
      store::RunInfo info;
      info.system = system;
      info.source = "test";
      auto run = (*db)->addRun(info);
      ASSERT_TRUE(run.ok()) << run.error();
      auto comm = (*db)->addCommunicator(store::CommInfo{.run_id = *run, .n_ranks = 2, .n_nodes = 1});
      ASSERT_TRUE(comm.ok()) << comm.error();
      store::ObservationRow r;
      r.comm_row = *comm;
      r.collective = "allreduce";
      r.bytes = 1 << 20;
      r.algo = Algo::Ring;
      r.proto = Proto::Simple;
      r.gpu_us = 100.0;
      batch.observations.push_back(r);
    }
    ASSERT_TRUE((*writer)->write(batch).committed);
  }
  auto rows = train::storeSamples(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ(rows->read, 2u);
  EXPECT_EQ(rows->unknownHardware, 1u);
  ASSERT_EQ(rows->samples.size(), 1u);
  auto topo = measurements::topologyForSystem("L40S-48GB x2 PCIe node", 2, 1);
  ASSERT_TRUE(topo.ok()) << topo.error();
  TopologyFingerprint fp = train::fingerprintOf(*topo);
  fp.nRanks = 2;
  fp.nNodes = 1;
  fp.ranksPerNode = 2;
  float context[kContextFeatures];
  encodeContext(fp, Collective::AllReduce, 1 << 20, {}, std::span<float, kContextFeatures>(context, kContextFeatures));
  for (int i = 0; i < kContextFeatures; ++i) EXPECT_EQ(rows->samples[0].inputs[i], context[i]) << i;
}

TEST(Confidence, ErrorQuantileAndMargin) {
  std::vector<train::GainPair> pairs = {
      {.predicted = 2.0, .observed = 1.0, .changes = true},  // error log 2
      {.predicted = 1.1, .observed = 1.1, .changes = true},  // error 0
      {.predicted = 1.5, .observed = 0.5, .changes = false}, // NCCL's own choice: not counted
  };
  EXPECT_NEAR(train::gainError(pairs, 0.0), 0.0, 1e-12);
  EXPECT_NEAR(train::gainError(pairs, 0.9), std::log(2.0), 1e-12);
  // A margin m keeps a rule only where predicted gain > 1 / (1 - m) = exp(error).
  EXPECT_NEAR(1.0 / (1.0 - train::marginForError(std::log(2.0))), 2.0, 1e-5);
  EXPECT_EQ(train::marginForError(-1.0), 0.0f);
  EXPECT_LE(train::marginForError(100.0), 0.95f);
  const auto bins = train::calibrationBins(pairs);
  int n = 0;
  for (const auto& b : bins) n += b.n;
  EXPECT_EQ(n, 2);
  EXPECT_NE(train::formatCalibration(bins, "").find("1.05-1.20"), std::string::npos);
}

TEST(Confidence, MeasuredMarginSendsConfidentlyWrongKeysBackToNccl) {
  auto sys = train::SimSystem::make(*train::findPreset("dgx-h100x2"));
  ASSERT_TRUE(sys.ok()) << sys.error();
  learned::PolicyWeights w = fixture::randomPolicyWeights(7);
  auto conf = train::measureConfidence(w, {*sys}, {}, 0.9);
  ASSERT_TRUE(conf.ok()) << conf.error();
  EXPECT_FALSE(conf->gains.empty());
  EXPECT_GT(conf->logError, 0.0);
  // A random network's errors are large: with its margin, a key keeps the unguarded choice or NCCL's,
  // and the worst keys (confidently wrong choices) go back to NCCL.
  w.guardMargin = conf->margin;
  auto guarded = learned::PolicyNetwork::create(w);
  w.guardMargin.reset();
  auto unguarded = learned::PolicyNetwork::create(w);
  ASSERT_TRUE(guarded.ok() && unguarded.ok());
  const train::RatioSummary on = train::ratioToBest(**guarded, *sys, 0.0);
  const train::RatioSummary off = train::ratioToBest(**unguarded, *sys, 0.0);
  EXPECT_GT(off.worstVsNccl, 1.5);
  EXPECT_LT(on.worstVsNccl, off.worstVsNccl);
  EXPECT_LE(on.policyBeatsNccl, off.policyBeatsNccl);
  // Measured pairs come from the replayed CSV's forced arms.
  auto data = train::loadReplayData(kFixture);
  ASSERT_TRUE(data.ok()) << data.error();
  EXPECT_FALSE(train::measuredGains(**unguarded, *data).empty());
}

TEST(Confidence, LastLayerCovarianceShrinksWithTheData) {
  auto sys = train::SimSystem::make(*train::findPreset("dgx-h100x2"));
  ASSERT_TRUE(sys.ok()) << sys.error();
  learned::PolicyWeights w = fixture::randomPolicyWeights(7);
  const std::vector<train::Sample> rows = train::simulatorRollouts({*sys}, {.keysPerSystem = 60});
  ASSERT_GT(rows.size(), 500u);
  std::vector<train::Sample> fourTimes;
  for (int i = 0; i < 4; ++i) fourTimes.insert(fourTimes.end(), rows.begin(), rows.end());
  auto once = train::fitLastLayerCovariance(w, rows, rows.size());
  auto more = train::fitLastLayerCovariance(w, fourTimes, fourTimes.size());
  ASSERT_TRUE(once.ok()) << once.error();
  ASSERT_TRUE(more.ok()) << more.error();
  const size_t d = static_cast<size_t>(w.embeddingSize()) + 1;
  ASSERT_EQ(once->size(), d * d);
  ASSERT_EQ(more->size(), d * d);
  // The same rows four times: the same residual variance over four times the evidence, so on the
  // machine the rows come from the predicted gains' standard deviations shrink, by at most half (the
  // part the unit prior holds does not).
  auto sdAtKeys = [&](const std::vector<float>& covariance) {
    learned::PolicyWeights with = w;
    with.lastLayerCovariance = covariance;
    auto net = learned::PolicyNetwork::create(with);
    EXPECT_TRUE(net.ok()) << net.error();
    std::vector<double> sd;
    if (!net.ok()) return sd;
    EXPECT_NE((*net)->covariance(), nullptr);
    for (const train::GainPair& g : train::simulatedGains(**net, *sys, 0.0))
      if (g.changes) sd.push_back(g.sdLog);
    return sd;
  };
  const std::vector<double> sdOnce = sdAtKeys(*once), sdMore = sdAtKeys(*more);
  ASSERT_EQ(sdOnce.size(), sdMore.size());
  ASSERT_GT(sdOnce.size(), 10u);
  for (size_t i = 0; i < sdOnce.size(); ++i) {
    EXPECT_GT(sdOnce[i], 0.0);
    EXPECT_GT(sdMore[i] / sdOnce[i], 0.49) << i;
    EXPECT_LT(sdMore[i] / sdOnce[i], 0.85) << i;
  }
  EXPECT_FALSE(train::fitLastLayerCovariance(w, {}).ok());
}

TEST(Confidence, TheKeysErrorIsScaledToTheHeldOutQuantile) {
  auto trainedOn = train::SimSystem::make(*train::findPreset("dgx-h100x2"));
  auto heldOut = train::SimSystem::make(*train::findPreset("h800x4"));
  ASSERT_TRUE(trainedOn.ok() && heldOut.ok());
  learned::PolicyWeights w = fixture::randomPolicyWeights(7);
  auto cov = train::fitLastLayerCovariance(w, train::simulatorRollouts({*trainedOn}, {.keysPerSystem = 60}));
  ASSERT_TRUE(cov.ok()) << cov.error();
  w.lastLayerCovariance = *cov;
  auto conf = train::measureConfidence(w, {*heldOut}, {}, 0.9);
  ASSERT_TRUE(conf.ok()) << conf.error();
  ASSERT_GT(conf->covarianceScale, 0.0);
  train::applyConfidence(w, *conf);
  EXPECT_EQ(w.guardMargin, std::optional<float>(conf->margin));
  // After scaling, keyErrorSigmas standard deviations cover the error at 90% of the changing keys.
  int changing = 0, covered = 0;
  for (const train::GainPair& g : conf->gains) {
    if (!g.changes || !(g.sdLog > 0)) continue;
    ++changing;
    covered += std::abs(std::log(g.predicted / g.observed)) <= w.keyErrorSigmas * g.sdLog;
  }
  ASSERT_GT(changing, 20);
  EXPECT_NEAR(static_cast<double>(covered) / changing, 0.9, 0.05);
  // The per-key guard keeps a subset of what the margin alone keeps, and policy-eval's table has rows.
  int marginKeeps = 0, bothKeep = 0;
  for (const train::GainPair& g : conf->gains) {
    if (!g.changes) continue;
    marginKeeps += train::guardKeeps(train::GainPair{.predicted = g.predicted, .observed = g.observed, .changes = true},
                                     w.guardMargin, w.keyErrorSigmas);
    bothKeep += train::guardKeeps(g, w.guardMargin, w.keyErrorSigmas);
  }
  EXPECT_LE(bothKeep, marginKeeps);
  const auto bins = train::confidenceBins(conf->gains);
  ASSERT_EQ(bins.size(), 5u);
  int binned = 0;
  for (const auto& b : bins) binned += b.n;
  EXPECT_EQ(binned, changing);
  // Nothing measurable: the covariance is dropped rather than left unscaled.
  train::Confidence none = *conf;
  none.covarianceScale = 0;
  learned::PolicyWeights dropped = w;
  train::applyConfidence(dropped, none);
  EXPECT_TRUE(dropped.lastLayerCovariance.empty());
}

}  // namespace
}  // namespace dynamiccl
