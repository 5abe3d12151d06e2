// Recent timings at run time, end to end: a replayed job on the L40S measurements through the real
// plugin (4 forked ranks, tuner + profiler roles) under a congestion episode (ring x3 at 2 and 4 MiB).
// The profile's network reads the window of log(observed / usual latency): calm, it predicts NCCL's
// ring/simple fastest; with ring congested, tree/simple. The leader re-evaluates it with its windows
// at table builds; in-job verification measures what it proposes and runs only what measures
// faster. So the episode changes the table the leader publishes, and what every rank runs, at the
// congested keys; its end changes them back.
//
// Verification (the default trust) rather than DYNAMICCL_TRUST=all: trust all needs online learning,
// whose learner explores every arm itself and keeps the incumbent it took from the prior at a key's
// first build, so a refreshed prior changes only the table's fall-backs and measurement alone
// switches (this job with trust all switches the same with the re-evaluation removed). Verified, the re-evaluated network's congested choice becomes the key's candidate, the only
// way tree/simple is measured during the episode: NCCL's runner-up at these keys is ring/LL,
// congested too, and the in-job model (which reads the windows as well) does not propose again an
// arm it measured six times: its calm proposal of tree/simple was measured and lost long before.
// Without the re-evaluation (setLearnedRefresh) nothing switches and this test fails.
//
// The way back is measured: once tree/simple runs, the windows are calm again, and ring/simple returns
// when its congested samples have aged (half-life 1000 calls of the key) and re-tests find it faster.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "offline/jobreplay/jobreplay.h"
#include "tests/policy_weights_fixture.h"
#include "tests/test_support.h"
#include "learner/learner.h"
#include "learned/learned.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;
using jobreplay::JobKey;
using policy::Decision;

const std::string kEmbedded = std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";
constexpr uint64_t kMiB = 1 << 20;

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool same(const sim::Config& c, Algo a, Proto p) { return c.algo == a && c.proto == p; }

// Predicted log latency (us) = calm(size, config) + congestion(window, config):
//   calm: log(bytes) slope of a bandwidth-bound collective (about the L40S allreduce at 4-32 MiB),
//     tree +0.1, LL +0.85, LL128 +0.6, a channel count other than NCCL's +0.2;
//   congestion: ring configurations pay 3 x max(0, h - 0.1), h the GRU's reading of the window
//     (about the recent mean of tanh(log(observed / usual))), so ring loses to tree once h > 0.13.
// A third hidden unit, tree's own, has output weight 0: it changes no prediction, but the in-job
// model's prior is uncertain along it, so the job measures tree early (calm) and finds it slower.
learned::PolicyWeights congestionAwareWeights() {
  learned::PolicyWeights w;
  w.mlpHidden = {3};
  fixture::zeroGru(w);
  const int h = w.gruHidden;
  // Unit 0: update gate sigmoid(0) = 1/2, candidate tanh(x): h <- (tanh(x) + h) / 2 at each step.
  w.tensors["gru.weight_ih"].data[2 * h + 0] = 1.0f;
  const int in = w.mlpInputs(), cfg = kContextFeatures, gru = kContextFeatures + kConfigFeatures;
  const int tree = static_cast<int>(Algo::Tree), ring = static_cast<int>(Algo::Ring);
  learned::Tensor first = fixture::zeroTensor({3, in});
  constexpr float kLift = 20.0f;  // keeps unit 0 in ReLU's linear part at every size; the output takes it off
  first.data[0] = static_cast<float>(32 * std::log(2.0));  // context 0 = log2(bytes) / 32
  first.data[cfg + tree] = 0.1f;
  first.data[cfg + 7 + static_cast<int>(Proto::LL)] = 0.85f;
  first.data[cfg + 7 + static_cast<int>(Proto::LL128)] = 0.6f;
  first.data[cfg + 11] = 0.2f;  // a channel count of the policy's own
  float* congestion = first.data.data() + in;
  congestion[gru + 0] = 3.0f;
  congestion[cfg + ring] = 10.0f;  // ring: 3h - 0.3; anything else: 3h - 10.3, never positive
  first.data[2 * in + cfg + tree] = 1.0f;
  w.tensors["mlp.0.weight"] = first;
  w.tensors["mlp.0.bias"] = learned::Tensor{{3}, {kLift - 9.23f, -10.3f, 0.0f}};
  w.tensors["mlp.1.weight"] = learned::Tensor{{1, 3}, {1.0f, 1.0f, 0.0f}};
  w.tensors["mlp.1.bias"] = learned::Tensor{{1}, {-kLift}};
  w.targetMean = 0.0f;
  w.targetStd = 1.0f;
  return w;
}

TEST(CongestionEpisode, HitsItsCallsKeysAndConfigurationsOnly) {
  JobKey k;
  k.bytes = 4 * kMiB;
  jobreplay::CongestionEpisode e{.fromCall = 100, .toCall = 200, .factor = 3, .configs = {{Algo::Ring, Proto::Simple, 0, 0}},
                                 .minBytes = 2 * kMiB};
  const sim::Config ring{Algo::Ring, Proto::Simple, 0, 0}, tree{Algo::Tree, Proto::Simple, 0, 0};
  EXPECT_FALSE(e.hits(99, k, ring));
  EXPECT_TRUE(e.hits(100, k, ring));
  EXPECT_TRUE(e.hits(199, k, ring));
  EXPECT_FALSE(e.hits(200, k, ring));
  EXPECT_FALSE(e.hits(150, k, tree));
  k.bytes = kMiB;
  EXPECT_FALSE(e.hits(150, k, ring));
  e.configs.clear();
  k.bytes = 4 * kMiB;
  EXPECT_TRUE(e.hits(150, k, tree));
  EXPECT_DOUBLE_EQ(jobreplay::congestionFactor({e, e}, 150, k, tree), 9.0);
  EXPECT_DOUBLE_EQ(jobreplay::congestionFactor({e}, 250, k, tree), 1.0);
}

TEST(CongestionJob, AnEpisodeChangesWhatTheLeaderPublishesAndItsEndChangesItBack) {
  char tmpl[] = "/tmp/dynamiccl-congestion-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto full = jobreplay::loadMeasuredJob(kEmbedded);
  ASSERT_TRUE(full) << full.error();
  // 1 MiB stays calm (the control); 2 and 4 MiB are congested. At each NCCL runs ring/simple,
  // tree/simple and ring/LL are measured too, and NCCL's model ranks ring/LL second.
  jobreplay::MeasuredJob job = *full;
  job.keys.clear();
  for (const JobKey& k : full->keys)
    if (k.bytes == kMiB || k.bytes == 2 * kMiB || k.bytes == 4 * kMiB) job.keys.push_back(k);
  ASSERT_EQ(job.keys.size(), 3u);
  for (const JobKey& k : job.keys) {
    ASSERT_TRUE(same(k.ncclDefault, Algo::Ring, Proto::Simple)) << k.bytes;
    ASSERT_TRUE(k.find(Algo::Tree, Proto::Simple)) << k.bytes;
    // Calm, NCCL's choice is the fastest; under the episode (ring x3) tree/simple is.
    EXPECT_LT(k.byDefault().mean_us, k.find(Algo::Tree, Proto::Simple)->mean_us) << k.bytes;
    if (k.bytes > kMiB) {
      EXPECT_GT(3 * k.byDefault().mean_us, 1.2 * k.find(Algo::Tree, Proto::Simple)->mean_us) << k.bytes;
    }
  }

  const std::string profile = dir + "/learned.json";
  const model::Topology& t = job.topology;
  std::ofstream(profile) << R"({"format":"dynamiccl-profile","version":1,"name":"congestion-aware","rules":[],)"
                         << R"("fingerprint":{"gpu_cc":)" << t.computeCap << R"(,"nvlink_GBps":0,"nics_per_node":)"
                         << t.nicsPerNode << R"(,"nic_GBps":)" << t.nicBw_GBps << R"(},"policy":)"
                         << learned::policyWeightsToJson(congestionAwareWeights()) << "}";

  constexpr uint64_t kEpochs = 110, kFrom = 40, kTo = 56;  // the episode: epochs [kFrom, kTo)
  jobreplay::JobOptions o;
  o.pluginPath = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  o.epochCalls = 1000;
  o.iterations = kEpochs * o.epochCalls / job.keys.size();
  o.seed = 11;
  o.commId = 0xc0de5;
  o.workDir = dir + "/job";
  o.timeout_s = 300;
  o.paceEvery = 20;  // the learner's timeline is the observations': let the profiler's worker keep up on a busy machine
  // Every call measured: this job is about how recent timings reach the published table, not about what
  // measuring costs (a settled job measures 1% of calls and would see an episode a hundred times slower).
  o.env = {{"DYNAMICCL_PROFILE", profile}, {"DYNAMICCL_TRUST", "verified"}, {"DYNAMICCL_DB", dir + "/store.db"},
           {"DYNAMICCL_BUDGET", "measure=1"}, {"DYNAMICCL_MEASUREMENT_COST", dir + "/free.json"}};
  std::ofstream(dir + "/free.json") << R"J({"source":"free (test)","points":[{"bytes":1,"share":0}]})J";
  o.congestion = {jobreplay::CongestionEpisode{.fromCall = kFrom * o.epochCalls,
                                               .toCall = kTo * o.epochCalls,
                                               .factor = 3,
                                               .configs = {{Algo::Ring, Proto::Simple, 0, 0}, {Algo::Ring, Proto::LL, 0, 0}},
                                               .minBytes = 2 * kMiB}};
  auto r = jobreplay::replayJob(job, o);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->ranks.size(), 4u);
  for (const jobreplay::RankOutcome& rank : r->ranks) {
    ASSERT_TRUE(rank.finished) << rank.failure;
    EXPECT_EQ(rank.decisionHash, r->ranks[0].decisionHash) << "rank " << rank.rank;
    EXPECT_EQ(rank.unmeasuredCalls, 0u);
  }
  EXPECT_TRUE(r->ranksAgree) << "every rank ran the same configuration in every epoch";
  const auto& epochs = r->ranks[0].epochConfigs;
  ASSERT_EQ(epochs.size(), kEpochs);

  auto tables = jobreplay::publishedTables(*r);
  ASSERT_TRUE(tables) << tables.error();
  ASSERT_GE(tables->size(), kEpochs - 1) << "a table for every boundary";
  auto published = [&](uint64_t epoch, const JobKey& key) -> Decision {  // what the table in force at `epoch` runs
    const jobreplay::PublishedTable& p = (*tables)[epoch - 1];
    EXPECT_FALSE(p.frozen) << "epoch " << epoch;
    if (p.frozen) return Decision{};
    const learner::OnlineEntry& e = p.table->entry(learner::onlineKey(int(key.coll), key.bytes));
    return e.exploit.count ? e.exploit.decisions[0] : Decision{Algo::Ring, Proto::Simple, 0, 0};  // empty: NCCL's
  };
  const Decision ringSimple{Algo::Ring, Proto::Simple, 0, 0}, treeSimple{Algo::Tree, Proto::Simple, 0, 0};
  auto algoProto = [](Decision d) { return Decision{d.algo, d.proto, 0, 0}; };

  // What ran (each epoch's majority, the same on every rank) and what the leader published, shown on failure.
  std::string trace;
  for (size_t k = 0; k < job.keys.size(); ++k) {
    const JobKey& key = job.keys[k];
    std::string ran, table;
    for (uint64_t e = 0; e < kEpochs; ++e) {
      ran += same(epochs[e][k], Algo::Tree, Proto::Simple) ? 'T' : 'r';
      table += e == 0 ? '-' : algoProto(published(e, key)) == treeSimple ? 'T' : 'r';
    }
    trace += std::to_string(key.bytes >> 20) + " MiB ran:       " + ran + "\n" + std::to_string(key.bytes >> 20) +
             " MiB published: " + table + "\n";
  }
  SCOPED_TRACE("per epoch (T: tree/simple, r: ring/simple; episode: epochs " + std::to_string(kFrom) + "-" +
               std::to_string(kTo - 1) + ")\n" + trace);

  for (size_t k = 0; k < job.keys.size(); ++k) {
    const JobKey& key = job.keys[k];
    SCOPED_TRACE(std::to_string(key.bytes >> 20) + " MiB");
    // Before the episode: NCCL's choice, which the calm network agrees with, at every key.
    for (uint64_t e = 1; e < kFrom; ++e) {
      EXPECT_TRUE(same(epochs[e][k], Algo::Ring, Proto::Simple)) << "epoch " << e;
      EXPECT_EQ(algoProto(published(e, key)), ringSimple) << "epoch " << e;
    }
    if (key.bytes == kMiB) {  // the calm key never moves
      for (uint64_t e = kFrom; e < kEpochs; ++e) {
        EXPECT_TRUE(same(epochs[e][k], Algo::Ring, Proto::Simple)) << "epoch " << e;
        EXPECT_EQ(algoProto(published(e, key)), ringSimple) << "epoch " << e;
      }
      continue;
    }
    // The job measured tree/simple early (the in-job model's calm proposal) and dropped it long
    // before the episode: from then on only the network re-evaluated with the windows names it.
    auto treeIsAnArm = [&](uint64_t epoch) {
      const auto& table = (*tables)[epoch - 1].table;
      if (!table) return false;
      const learner::OnlineEntry& e = table->entry(learner::onlineKey(int(key.coll), key.bytes));
      for (int i = 0; i < e.nArms; ++i)
        if (algoProto(e.arms[i].decisions[0]) == treeSimple) return true;
      return false;
    };
    bool measuredEarly = false;
    for (uint64_t e = 1; e < 10; ++e) measuredEarly |= treeIsAnArm(e);
    EXPECT_TRUE(measuredEarly) << "the in-job model proposes tree/simple while calm";
    for (uint64_t e = kFrom - 20; e <= kFrom; ++e) EXPECT_FALSE(treeIsAnArm(e)) << "epoch " << e;
    // During it: the leader's table switches to tree/simple within a few epochs and keeps it.
    std::optional<uint64_t> switched;
    for (uint64_t e = kFrom; e < kTo && !switched; ++e)
      if (algoProto(published(e, key)) == treeSimple) switched = e;
    ASSERT_TRUE(switched) << "the episode moves the published table to tree/simple";
    EXPECT_LE(*switched, kFrom + 12);
    for (uint64_t e = *switched + 1; e < kTo; ++e) {
      EXPECT_EQ(algoProto(published(e, key)), treeSimple) << "epoch " << e;
      EXPECT_TRUE(same(epochs[e][k], Algo::Tree, Proto::Simple)) << "epoch " << e;
    }
    // After it: back to ring/simple, and it stays.
    std::optional<uint64_t> back;
    for (uint64_t e = kTo; e < kEpochs && !back; ++e)
      if (algoProto(published(e, key)) == ringSimple) back = e;
    ASSERT_TRUE(back) << "the end of the episode moves it back";
    EXPECT_LE(*back, kTo + 45);
    std::printf("%llu MiB: episode in epochs %llu-%llu; the published table runs tree/simple from epoch %llu, "
                "ring/simple again from epoch %llu\n",
                static_cast<unsigned long long>(key.bytes >> 20), static_cast<unsigned long long>(kFrom),
                static_cast<unsigned long long>(kTo - 1), static_cast<unsigned long long>(*switched),
                static_cast<unsigned long long>(*back));
    for (uint64_t e = *back + 1; e < kEpochs; ++e) {
      EXPECT_EQ(algoProto(published(e, key)), ringSimple) << "epoch " << e;
      EXPECT_TRUE(same(epochs[e][k], Algo::Ring, Proto::Simple)) << "epoch " << e;
    }
  }
  const std::string leaderLog = readAll(o.workDir + "/rank0.log");
  EXPECT_NE(leaderLog.find("re-evaluated its learned rules with recent timings"), std::string::npos) << leaderLog;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace dynamiccl
