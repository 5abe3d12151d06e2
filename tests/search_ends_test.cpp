// Every search ends, and the next job collects: jobs replayed through the real .so at the user's
// defaults with the search of every arm NCCL allows on (DYNAMICCL_VERIFY=1, the most measuring a job
// does). Every key settles within the job, the settled leader profiles at most 2% of its calls, a
// table where no arm is faster costs the first job at most 0.2% net, and the next job on the same
// store pays at most 0.05% (nothing to gain) or gains (where the first job found a gain).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "offline/jobreplay/jobreplay.h"
#include "tests/shipped_data.h"
#include "tests/test_support.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;

double net(const jobreplay::JobResult& r) {
  double job = 0, nccl = 0;
  for (const jobreplay::KeyOutcome& k : r.keys) job += k.job_us, nccl += k.jobDefault_us;
  return nccl > 0 ? job / nccl : 0;
}

// The share of the leader's calls profiled over its epochs from `from` on.
double profiledFrom(const jobreplay::JobResult& r, size_t from) {
  const std::vector<uint64_t>& e = r.ranks[0].epochProfiled;
  uint64_t p = 0;
  for (size_t i = from; i < e.size(); ++i) p += e[i];
  return e.size() > from ? static_cast<double>(p) / static_cast<double>((e.size() - from) * r.epochCalls) : 1;
}

// Every arm the data measured costs what NCCL's default costs, in the data and in NCCL's cost table:
// nothing to gain anywhere, and every arm allowed (the hostile case for a search that must end).
jobreplay::MeasuredJob flattened(jobreplay::MeasuredJob job) {
  for (jobreplay::JobKey& k : job.keys) {
    const double def_us = k.byDefault().mean_us;
    for (jobreplay::MeasuredConfig& m : k.measured) {
      m.mean_us = def_us;
      m.withheld_us = 0;
      for (double& s : m.samples_us) s = def_us;
      m.sigma = 0;
    }
    for (auto& row : k.costTable)
      for (float& c : row)
        if (c >= 0) c = 100.0f;
  }
  return job;
}

class SearchEnds : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dynamiccl-search-ends-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Job `index` (1, 2, ...) of a series on one store; `ranks` processes (0: the dataset's).
  jobreplay::JobResult run(const jobreplay::MeasuredJob& job, const std::string& series, int index, uint64_t iterations,
                           int ranks = 2) {
    jobreplay::JobOptions o;
    o.pluginPath = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
    o.iterations = iterations;
    o.epochCalls = 1000;
    o.seed = 20 + static_cast<uint64_t>(index);
    o.workDir = dir_ + "/" + series + std::to_string(index);
    o.timeout_s = 300;
    o.processes = ranks;
    o.env = {{"DYNAMICCL_VERIFY", "1"}, {"DYNAMICCL_DB", dir_ + "/" + series + ".db"}};
    auto r = jobreplay::replayJob(job, o);
    EXPECT_TRUE(r) << r.error();
    if (!r) return {};
    EXPECT_TRUE(r->allFinished);
    EXPECT_TRUE(r->ranksAgree);
    double logSum = 0;
    for (const jobreplay::KeyOutcome& k : r->keys) logSum += std::log(k.vsDefault());
    std::printf("[ figures  ] %s job %d: final epoch %.3fx NCCL's default (geomean), net %.4fx, profiled %.2f%% (second half %.2f%%, last 10 epochs %.2f%%), "
                "%d of %d keys still searching; leader log %s/rank0.log\n",
                series.c_str(), index, std::exp(logSum / std::max<size_t>(1, r->keys.size())), net(*r), 100 * r->ranks[0].profiledShare(),
                100 * profiledFrom(*r, r->ranks[0].epochProfiled.size() / 2),
                100 * r->ranks[0].settledProfiledShare(10, r->epochCalls), r->ranks[0].keysSearching,
                r->ranks[0].keysAtEnd, r->workDir.c_str());
    return *r;
  }

  std::string dir_;
};

// The embedded data and every set of ../shared/data with forced configurations (skipped where absent).
TEST_F(SearchEnds, EveryKeySettlesAndTheNextJobCollects) {
  const std::string shared = std::string(DYNAMICCL_SHARED_DIR) + "/data/";
  const std::pair<const char*, std::string> sets[] = {{"l40s", testing::shippedL40sCsv()},
                                                      {"h100-nvswitch", shared + "h100-nvswitch-wayne/normalized.csv"},
                                                      {"h100-8gpu-nvls", shared + "h100-8gpu-together/normalized.csv"}};
  for (const auto& [name, csv] : sets) {
    if (!fs::exists(csv)) {
      std::printf("[ skipped  ] %s: %s absent\n", name, csv.c_str());
      continue;
    }
    SCOPED_TRACE(name);
    auto job = jobreplay::loadMeasuredJob(csv);
    ASSERT_TRUE(job) << job.error();
    const jobreplay::JobResult first = run(*job, name, 1, 4000);
    ASSERT_FALSE(first.ranks.empty());
    EXPECT_EQ(first.ranks[0].keysSearching, 0) << "a search that never ends";
    EXPECT_GT(first.ranks[0].keysAtEnd, 0);
    EXPECT_LE(first.ranks[0].settledProfiledShare(10, first.epochCalls), 0.02);
    // Whether the first job found a gain: some key ends on another configuration than NCCL's.
    bool gained = false;
    for (const jobreplay::KeyOutcome& k : first.keys) gained = gained || k.vsDefault() < 0.999;
    // Where no arm is faster, learning that costs the first job at most 0.2%.
    if (!gained) {
      EXPECT_LE(net(first), 1.002) << "no gain found";
    }
    const jobreplay::JobResult second = run(*job, name, 2, 4000);
    ASSERT_FALSE(second.ranks.empty());
    EXPECT_EQ(second.ranks[0].keysSearching, 0);
    // The next job keeps what the first established from its first boundary and pays only re-tests.
    EXPECT_LE(net(second), gained ? 1.000 : 1.0005) << (gained ? "a gain found" : "no gain found");
    EXPECT_LE(second.ranks[0].profiledShare(), first.ranks[0].profiledShare());
  }
}

TEST_F(SearchEnds, WhereNoArmIsFasterTheSearchEndsAndCostsLittle) {
  auto measured = jobreplay::loadMeasuredJob(testing::shippedL40sCsv());
  ASSERT_TRUE(measured) << measured.error();
  const jobreplay::MeasuredJob job = flattened(*measured);
  // Four ranks, 20,000 calls: every arm allowed and none faster.
  const uint64_t passes = 20000 / job.keys.size();
  const jobreplay::JobResult first = run(job, "flat", 1, passes, 4);
  ASSERT_FALSE(first.ranks.empty());
  EXPECT_LE(profiledFrom(first, first.ranks[0].epochProfiled.size() / 2), 0.05);
  EXPECT_LE(net(first), 1.002);
  const jobreplay::JobResult second = run(job, "flat", 2, passes, 4);
  ASSERT_FALSE(second.ranks.empty());
  EXPECT_LE(net(second), 1.0005);
}

}  // namespace
}  // namespace dynamiccl
