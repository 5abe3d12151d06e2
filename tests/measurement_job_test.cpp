// Measuring costs the job, counted: a job replayed through the real .so on the datasets with forced
// configurations, every call that NCCL profiled charged at the release's price. Only the leader
// profiles, only the calls its search needs; the settled job profiles at most 1%; net of measuring
// and exploring, no key ends slower than NCCL's default beyond noise; and profiling every call, as
// the plugin once did, shows its loss under NCCL 2.31's price.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "offline/jobreplay/jobreplay.h"
#include "tests/shipped_data.h"
#include "tests/test_support.h"
#include "learner/learner.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;

constexpr int kRelease231 = 23102, kRelease229 = 22907;
// The decision rule's bar (policy::DecisionRule::minGain): a difference below it is no difference.
constexpr double kNoise = 0.01;

struct Dataset {
  const char* name;
  std::string csv;
};

std::vector<Dataset> datasets() {
  const std::string shared = std::string(DYNAMICCL_SHARED_DIR) + "/data/";
  return {{"l40s", testing::shippedL40sCsv()},
          {"h100-nvswitch", shared + "h100-nvswitch-wayne/normalized.csv"},
          {"h100-8gpu-nvls", shared + "h100-8gpu-together/normalized.csv"}};
}

class MeasuredJob : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dynamiccl-measure-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!HasFailure() && !keep_) fs::remove_all(dir_);
  }

  // The user's defaults with the search of every arm NCCL allows on (DYNAMICCL_VERIFY=1): the most
  // measuring a job does. Two processes: the leader and one rank that decides nothing.
  jobreplay::JobResult run(const jobreplay::MeasuredJob& job, int release, const std::string& tag,
                           std::vector<std::pair<std::string, std::string>> env = {}, uint64_t iterations = 40000) {
    jobreplay::JobOptions o;
    o.pluginPath = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
    o.iterations = iterations;
    o.epochCalls = 1000;
    o.seed = 11;
    o.workDir = dir_ + "/" + tag;
    o.timeout_s = 300;
    o.processes = 2;
    o.measurementCost = std::make_shared<learner::MeasurementCost>(learner::MeasurementCost::published(release));
    o.env = {{"DYNAMICCL_VERIFY", "1"}, {"DYNAMICCL_DB", dir_ + "/" + tag + ".db"}};
    o.env.insert(o.env.end(), env.begin(), env.end());
    auto r = jobreplay::replayJob(job, o);
    EXPECT_TRUE(r) << r.error();
    return r ? *r : jobreplay::JobResult{};
  }

  static double overall(const jobreplay::JobResult& r) {
    double job = 0, nccl = 0;
    for (const auto& k : r.keys) job += k.job_us, nccl += k.jobDefault_us;
    return job / nccl;
  }

  std::string dir_;
  bool keep_ = false;
};

TEST_F(MeasuredJob, OnlyTheLeaderProfilesAndNetOfMeasuringNoKeyEndsSlowerThanNccl) {
  for (const Dataset& d : datasets()) {
    if (!fs::exists(d.csv)) {  // a clone without ../shared: the embedded L40S set still runs
      std::printf("[ skipped  ] %s: %s absent\n", d.name, d.csv.c_str());
      continue;
    }
    auto job = jobreplay::loadMeasuredJob(d.csv);
    ASSERT_TRUE(job) << d.name << ": " << job.error();
    for (int release : {kRelease231, kRelease229}) {
      SCOPED_TRACE(std::string(d.name) + " priced as NCCL " + std::to_string(release));
      const jobreplay::JobResult r = run(*job, release, std::string(d.name) + std::to_string(release));
      ASSERT_TRUE(r.allFinished);
      ASSERT_TRUE(r.ranksAgree);
      const jobreplay::RankOutcome& leader = r.ranks[0];
      EXPECT_GT(leader.profiledCalls, 0u);
      EXPECT_EQ(r.ranks[1].profiledCalls, 0u) << "a rank that decides nothing profiled";
      for (const jobreplay::KeyOutcome& k : r.keys)
        EXPECT_LE(k.netVsDefault(), 1 + kNoise)
            << sizeText(k.bytes) << ": " << k.job_us << " us against NCCL's " << k.jobDefault_us << " us, measuring "
            << k.measure_us << " us (" << k.profiled << " of " << k.calls << " calls profiled)";
      EXPECT_LE(overall(r), 1 + kNoise / 2);
      int moved = 0;
      for (const jobreplay::KeyOutcome& k : r.keys) moved += !(k.finalConfig.algo == k.ncclDefault.algo && k.finalConfig.proto == k.ncclDefault.proto);
      std::printf("[ figures  ] %d of %zu keys end off NCCL's choice; leader log %s/rank0.log\n", moved, r.keys.size(), r.workDir.c_str());
      if (getenv("DYNAMICCL_KEEP_TEST_DIRS")) keep_ = true;
      const double settled = leader.settledProfiledShare(10, r.epochCalls);
      // Settled (or stopped), the leader profiles DYNAMICCL_BUDGET measure= (1%) of calls at most; the
      // share drawn over 10 epochs of 1000 calls has a binomial spread of 0.1%.
      EXPECT_LE(settled, 0.0125);
      std::printf("[ figures  ] %s, NCCL %d price: net %.4fx NCCL's default overall, measuring %.3f%% of collective "
                  "time, %.2f%% of calls profiled (last 10 epochs %.2f%%)\n",
                  d.name, release, overall(r), 100 * leader.measureShare(), 100 * leader.profiledShare(), 100 * settled);
    }
  }
}

TEST_F(MeasuredJob, ProfilingEveryCallUnderNccl231ShowsItsLoss) {
  auto job = jobreplay::loadMeasuredJob(testing::shippedL40sCsv());
  ASSERT_TRUE(job) << job.error();
  // As the plugin did before: every rank profiles every call for the whole job.
  const jobreplay::JobResult always = run(*job, kRelease231, "always", {{"DYNAMICCL_BUDGET", "record=1"}}, 1000);
  ASSERT_TRUE(always.allFinished);
  EXPECT_EQ(always.ranks[0].profiledCalls, always.ranks[0].calls);
  EXPECT_EQ(always.ranks[1].profiledCalls, always.ranks[1].calls);
  // The model charges what it should: every call at least 2.31's lowest published share.
  EXPECT_GT(always.ranks[0].measureShare(), 0.043);
  EXPECT_GT(overall(always), 1.03);
  const jobreplay::JobResult gated = run(*job, kRelease231, "gated", {}, 1000);
  ASSERT_TRUE(gated.allFinished);
  EXPECT_LT(gated.ranks[0].measureShare(), always.ranks[0].measureShare() / 4);
  EXPECT_LT(overall(gated), overall(always));
}

}  // namespace
}  // namespace dynamiccl
