// The learned network in a job through the real plugin: a profile whose confidence margin leaves no
// rule at init is still verified, the network proposes what the job measures (its last layer refit
// on the job's latencies), every rank decides alike, and nothing it proposes runs unless measured
// faster than NCCL's default. The cluster is the simulator (dgx-h100 x1).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "offline/jobreplay/jobreplay.h"
#include "store/store.h"
#include "tests/policy_weights_fixture.h"
#include "tests/test_support.h"
#include "learned/learned.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LearnedJob, TheNetworkProposesWhatTheJobVerifiesAndOnlyMeasuredWinnersRun) {
  char tmpl[] = "/tmp/dynamiccl-learnedjob-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto topo = sim::loadTopology("dgx-h100", 1);
  ASSERT_TRUE(topo) << topo.error();
  auto nccl = model::NcclReference::create(*topo);
  ASSERT_TRUE(nccl) << nccl.error();
  std::vector<uint64_t> sizes;
  for (uint64_t b = 4096; b <= (8u << 20); b *= 2) sizes.push_back(b);
  auto job = jobreplay::simulatedJob(*topo, sim::SimParams{}, *nccl, {Collective::AllReduce, Collective::AllGather},
                                     sizes, 8, 3);
  ASSERT_TRUE(job) << job.error();
  ASSERT_EQ(job->nRanks, 8);

  // A network of random weights whose margin (x1000 predicted gain) leaves no rule at init.
  learned::PolicyWeights w = fixture::randomPolicyWeights(4);
  w.guardMargin = 0.999f;
  const std::string profile = dir + "/learned.json";
  std::ofstream(profile) << R"({"format":"dynamiccl-profile","version":1,"name":"learned","rules":[],)"
                         << R"("fingerprint":{"gpu_cc":90,"nvlink_GBps":450,"nics_per_node":8,"nic_GBps":50},"policy":)"
                         << learned::policyWeightsToJson(w) << "}";
  jobreplay::JobOptions o;
  o.pluginPath = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  o.iterations = 3000;
  o.epochCalls = 1000;
  o.seed = 5;
  o.workDir = dir + "/job";
  o.timeout_s = 120;
  o.processes = 4;
  o.env = {{"DYNAMICCL_PROFILE", profile}, {"DYNAMICCL_TRUST", "verified"}, {"DYNAMICCL_DB", dir + "/store.db"}};
  auto r = jobreplay::replayJob(*job, o);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->ranks.size(), 4u);
  for (const jobreplay::RankOutcome& rank : r->ranks) ASSERT_TRUE(rank.finished) << rank.failure;
  EXPECT_TRUE(r->ranksAgree) << "every rank adopts the leader's tables";
  EXPECT_LE(r->ranks[0].exploreShare(), 0.01);

  const std::string leaderLog = readAll(o.workDir + "/rank0.log");
  EXPECT_NE(leaderLog.find("in-job verification"), std::string::npos) << "verification starts without init rules";
  EXPECT_NE(leaderLog.find("refit the network's last layer"), std::string::npos) << leaderLog;

  auto db = store::Store::open({.path = dir + "/store.db"});
  ASSERT_TRUE(db) << db.error();
  auto verdicts = db.value()->latestVerdicts();
  ASSERT_TRUE(verdicts) << verdicts.error();
  EXPECT_GE(verdicts->size(), job->keys.size() / 2) << "the network proposed candidates at most keys";
  int promoted = 0;
  for (const store::VerdictRow& v : *verdicts) promoted += v.state == "promoted";
  // Whatever a random network proposes, what runs at the end is never slower than NCCL's beyond noise.
  int faster = 0;
  for (const jobreplay::KeyOutcome& k : r->keys) {
    EXPECT_LE(k.vsDefault(), 1.02) << collectiveName(k.coll) << " " << k.bytes << ": "
                                   << armLabel(k.finalConfig);
    faster += k.vsDefault() < 0.98;
  }
  EXPECT_EQ(faster > 0, promoted > 0);
  ASSERT_GT(promoted, 0) << "a random network still proposes something the simulated cluster runs faster";

  // The next job on the same hardware resumes from the store: what was promoted runs again, with
  // less exploring (the verdicts' samples count as a head start).
  o.workDir = dir + "/job2";
  auto again = jobreplay::replayJob(*job, o);
  ASSERT_TRUE(again) << again.error();
  EXPECT_TRUE(again->ranksAgree);
  int kept = 0;
  for (size_t i = 0; i < r->keys.size(); ++i)
    if (r->keys[i].vsDefault() < 0.98) {
      EXPECT_LT(again->keys[i].vsDefault(), 0.98) << collectiveName(r->keys[i].coll) << " " << r->keys[i].bytes;
      ++kept;
    }
  EXPECT_GT(kept, 0);
  EXPECT_LT(again->ranks[0].exploreCalls, r->ranks[0].exploreCalls);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace dynamiccl
