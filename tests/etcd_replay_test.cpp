// A replayed job through a real etcd on loopback: the embedded L40S measurements as 8 ranks on 2
// nodes of 4, in-job verification of a profile that names winners and losers, once with the shared
// directory and once with etcd (and the input check on). Both: every rank decides alike, exploration
// stays within budget, candidates are promoted and dropped, and no candidate gets opposite verdicts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "offline/harness/harness.h"
#include "offline/jobreplay/jobreplay.h"
#include "tests/etcd_fixture.h"
#include "tests/stored_verdicts.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;

const std::string kEmbedded = std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";

// The 4-GPU rows presented as 8 ranks on 2 nodes (a synthetic shape: only the counts differ).
std::string twoNodesOfFour(const std::string& dir) {
  std::ifstream in(kEmbedded);
  std::ostringstream csv;
  std::string line;
  std::getline(in, line);
  csv << line << "\n";
  while (std::getline(in, line)) {
    if (line.rfind("L40S-48GB x4", 0) != 0) continue;
    const size_t at = line.find(",allreduce,4,1,");
    if (at == std::string::npos) continue;
    csv << line.substr(0, at) << ",allreduce,8,2," << line.substr(at + 15) << "\n";
  }
  const std::string path = dir + "/two-nodes.csv";
  std::ofstream(path) << csv.str();
  return path;
}

// Simulated (unverified) rules: per key the fastest and the slowest measured configuration, alternating.
std::string candidateProfile(const jobreplay::MeasuredJob& job, const std::string& dir) {
  std::string rules;
  for (size_t i = 0; i < job.keys.size(); ++i) {
    const jobreplay::JobKey& k = job.keys[i];
    if (k.measured.size() < 2) continue;
    const jobreplay::MeasuredConfig* pick = &k.best();
    if (i % 2)
      for (const auto& m : k.measured)
        if (m.mean_us > pick->mean_us) pick = &m;
    if (pick->config.algo == k.ncclDefault.algo && pick->config.proto == k.ncclDefault.proto) continue;
    rules += std::string(rules.empty() ? "" : ",") + R"({"collective":"allreduce","bytes":[)" + std::to_string(k.bytes) +
             "," + std::to_string(k.bytes) + R"(],"algo":")" + std::string(algoName(pick->config.algo)) +
             R"(","proto":")" + std::string(protoName(pick->config.proto)) + R"(","evidence":{"provenance":"simulated"}})";
  }
  const std::string path = dir + "/simulated.json";
  std::ofstream(path) << R"({"format":"dynamiccl-profile","version":2,"name":"simulated","rules":[)" << rules << "]}";
  return path;
}

struct Outcome {
  jobreplay::JobResult result;
  std::map<std::string, std::string> states;  // "<bucket> <candidate>" -> promoted / dropped / testing
};

Outcome runJob(const jobreplay::MeasuredJob& job, const std::string& profile, const std::string& dir,
               const std::vector<std::pair<std::string, std::string>>& extraEnv) {
  jobreplay::JobOptions o;
  o.pluginPath = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  // The decision rule needs ~30 calls of a 2% gain. At 1000 iterations a loaded machine's lagging leader
  // promoted 0-2 of ~40 candidates; at 2000, 3 in each of 5 runs beside 6 busy loops.
  o.iterations = 2000;
  o.epochCalls = 500;
  o.seed = 7;
  o.workDir = dir + "/job";
  o.timeout_s = 180;
  o.env = {{"DYNAMICCL_PROFILE", profile},
           {"DYNAMICCL_TRUST", "verified"},
           {"DYNAMICCL_VERIFY", "1"},
           {"DYNAMICCL_DB", dir + "/store.db"}};
  o.env.insert(o.env.end(), extraEnv.begin(), extraEnv.end());
  auto r = jobreplay::replayJob(job, o);
  EXPECT_TRUE(r) << (r ? "" : r.error());
  Outcome out;
  if (!r) return out;
  out.result = *r;
  for (const store::VerdictRow& v : testing::keptVerdicts(dir + "/store.db"))
    out.states[std::to_string(v.min_bytes) + " " + v.algo + "/" + v.proto] = v.state;
  return out;
}

void expectVerifiedAlike(const Outcome& o, const char* backend) {
  SCOPED_TRACE(backend);
  const jobreplay::JobResult& r = o.result;
  ASSERT_EQ(r.ranks.size(), 8u);
  for (const jobreplay::RankOutcome& rank : r.ranks) {
    ASSERT_TRUE(rank.finished) << "rank " << rank.rank << ": " << rank.failure;
    EXPECT_EQ(rank.decisionHash, r.ranks[0].decisionHash) << "rank " << rank.rank;
  }
  EXPECT_TRUE(r.ranksAgree);
  EXPECT_GT(r.ranks[0].explore_us, 0.0) << "nothing was verified";
  EXPECT_LT(r.ranks[0].exploreShare(), 0.05);
  size_t promoted = 0, dropped = 0;
  for (const auto& [key, state] : o.states) promoted += state == "promoted", dropped += state == "dropped";
  EXPECT_GT(promoted, 0u);
  EXPECT_GT(dropped, 0u);
}

TEST(EtcdReplay, VerificationOnTwoNodesOfFourPromotesAndDropsAsWithTheDirectory) {
  if (testing::etcdBinary().empty()) GTEST_SKIP() << "no etcd binary (scripts/setup.sh installs etcd-server)";
  testing::EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  char tmpl[] = "/tmp/dynamiccl-etcdreplay-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto job = jobreplay::loadMeasuredJob(twoNodesOfFour(dir));
  ASSERT_TRUE(job) << job.error();
  ASSERT_EQ(job->nRanks, 8);
  ASSERT_EQ(job->nNodes, 2);
  const std::string profile = candidateProfile(*job, dir);
  fs::create_directories(dir + "/directory");
  fs::create_directories(dir + "/etcd");
  const Outcome viaDirectory = runJob(*job, profile, dir + "/directory", {{"DYNAMICCL_INPUTS_CHECK", "1"}});
  const Outcome viaEtcd =
      runJob(*job, profile, dir + "/etcd", {{"DYNAMICCL_ETCD", etcd.endpoint()}, {"DYNAMICCL_INPUTS_CHECK", "1"}});
  expectVerifiedAlike(viaDirectory, "directory");
  expectVerifiedAlike(viaEtcd, "etcd");
  for (const auto& [key, state] : viaEtcd.states) {
    const auto other = viaDirectory.states.find(key);
    if (other == viaDirectory.states.end()) continue;
    EXPECT_FALSE((state == "promoted" && other->second == "dropped") || (state == "dropped" && other->second == "promoted"))
        << key << ": " << state << " through etcd, " << other->second << " through the directory";
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace dynamiccl
