// Rank consistency of learned rules: a multi-node communicator's rules come from the profile's
// declared hardware (or DYNAMICCL_TOPO), never from a probe of the host, which may differ between
// nodes; without either there are no learned rules and one line says why. Single-node
// communicators may still use the probe (every rank reads the same host).
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "learned/learned.h"
#include "tests/policy_weights_fixture.h"
#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl::policy {
using namespace dynamiccl::learned;
// Readable failures: "ring/ll ch0" instead of bytes.
void PrintTo(const Decision& d, std::ostream* os) {
  *os << algoName(d.algo) << "/" << protoName(d.proto) << " ch" << d.nChannels;
}
}  // namespace dynamiccl::policy

namespace dynamiccl {
namespace {

using harness::LogCapture;
using harness::ScopedEnv;
using testing::TempFile;

constexpr int kTree = 0, kRing = 1, kLL = 0, kSimple = 2;

// A network whose choice depends on the NIC bandwidth per node (context feature 12, log2(GB/s)/10):
// Tree wins from about 180 GB/s per node up (8 x 50 GB/s), Ring below (4 x 25 GB/s). Protocols and
// channel counts tie, so the first configuration of each algorithm (LL, NCCL's channels) is chosen.
//   hidden u = relu(10 x + 2.5 ring - 8 + batchWeight b), hidden w = ring; score = 10 + u - 2 w
// where b is the workload's batch feature (log2(batch)/10).
learned::PolicyWeights nicBandwidthWeights(float batchWeight = 0.0f) {
  learned::PolicyWeights w;
  w.mlpHidden = {2};
  w.guardMargin = std::nullopt;
  const int in = w.mlpInputs();
  const auto zeros = fixture::zeroTensor;
  fixture::zeroGru(w);
  learned::Tensor first = zeros({2, in});
  const int ring = kContextFeatures + kRing;  // the configuration's algo one-hot follows the context
  first.data[12] = 10.0f;
  first.data[16] = batchWeight;
  first.data[ring] = 2.5f;
  first.data[in + ring] = 1.0f;
  w.tensors["mlp.0.weight"] = first;
  w.tensors["mlp.0.bias"] = learned::Tensor{{2}, {-8.0f, 0.0f}};
  w.tensors["mlp.1.weight"] = learned::Tensor{{1, 2}, {1.0f, -2.0f}};
  w.tensors["mlp.1.bias"] = learned::Tensor{{1}, {10.0f}};
  w.targetMean = 0.0f;
  w.targetStd = 1.0f;
  return w;
}

constexpr const char* kDeclared = R"({"gpu_cc":90,"nvlink_GBps":450,"nics_per_node":8,"nic_GBps":50})";

// A learned profile with one rule of its own (Ring/Simple for AllGather) and, if given, a fingerprint.
std::string learnedProfileJson(const char* fingerprint, float batchWeight = 0.0f) {
  std::string text = R"({"format":"dynamiccl-profile","version":1,"name":"learned",)";
  if (fingerprint) text += std::string(R"("fingerprint":)") + fingerprint + ",";
  return text + R"("rules":[{"collective":"allgather","algo":"ring","proto":"simple"}],"policy":)" +
         learned::policyWeightsToJson(nicBandwidthWeights(batchWeight)) + "}";
}

policy::Profile learnedProfile(const char* fingerprint, float batchWeight = 0.0f) {
  auto p = policy::parseProfileJson(learnedProfileJson(fingerprint, batchWeight));
  EXPECT_TRUE(p.ok()) << p.error();
  return p.ok() ? std::move(p.value()) : policy::Profile{};
}

// Two hosts of one job as their probes see them: a healthy node, and one with half its NICs down,
// the rest renegotiated to a lower speed, and no NVML.
HostSources healthyHost() {
  HostSources h;
  h.nics = SysfsNics{8, 50.0, "infiniband"};
  h.nvml = NvmlInfo{8, 90, 18, 450.0};
  return h;
}
HostSources degradedHost() {
  HostSources h;
  h.nics = SysfsNics{4, 25.0, "infiniband"};
  return h;
}

const CommShape kTwoNodes{.commId = 7, .nRanks = 16, .nNodes = 2, .minRanksPerNode = 8, .maxRanksPerNode = 8};
const CommShape kOneNode{.commId = 8, .nRanks = 8, .nNodes = 1, .minRanksPerNode = 8, .maxRanksPerNode = 8};

// Every candidate of every (collective, size bucket) with its guard, one string per key.
std::vector<std::string> decisionsOf(const policy::DecisionTable& t) {
  std::vector<std::string> out;
  for (int c = 0; c < kNumCollectives; ++c)
    for (int b = learned::kPolicyMinBucket; b <= learned::kPolicyMaxBucket; ++b) {
      const policy::Candidates& k = t.lookup(c, learned::policyProbeBytes(b), 1, 0);
      std::string line = std::to_string(c) + "/" + std::to_string(b) + ":";
      for (int i = 0; i < k.count; ++i) {
        char item[64];
        std::snprintf(item, sizeof item, " %d.%d.%d.%x", static_cast<int>(k.decisions[i].algo),
                      static_cast<int>(k.decisions[i].proto), k.decisions[i].nChannels, k.admits[i]);
        line += item;
      }
      out.push_back(line);
    }
  return out;
}

policy::Decision firstAllReduceChoice(const policy::DecisionTable& t) {
  const policy::Candidates& k = t.lookup(static_cast<int>(Collective::AllReduce), 1 << 20, 1, 0);
  return k.count ? k.decisions[0] : policy::Decision{};
}

const policy::Decision kTreeLL{Algo::Tree, Proto::LL, 0, 0};
const policy::Decision kRingLL{Algo::Ring, Proto::LL, 0, 0};

TEST(LearnedFingerprint, TheTestNetworkFollowsNicBandwidth) {
  // The premise of the tests below: the two probes lead to different rules when they are used.
  const policy::Profile p = learnedProfile(nullptr);
  const HostSources healthy = healthyHost(), degraded = degradedHost();
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(p, kOneNode, {&healthy, {}, policy::Trust::All}).table), kTreeLL);
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(p, kOneNode, {&degraded, {}, policy::Trust::All}).table), kRingLL);
}

TEST(LearnedFingerprint, MultiNodeRulesAreTheSameWhateverTheHostProbes) {
  const policy::Profile p = learnedProfile(kDeclared);
  const HostSources healthy = healthyHost(), degraded = degradedHost(), nothing;
  const policy::PolicyTable a = learned::compileWithPolicy(p, kTwoNodes, {&healthy, {}, policy::Trust::All});
  const policy::PolicyTable b = learned::compileWithPolicy(p, kTwoNodes, {&degraded, {}, policy::Trust::All});
  const policy::PolicyTable c = learned::compileWithPolicy(p, kTwoNodes, {&nothing, {}, policy::Trust::All});
  EXPECT_TRUE(a.learnedRulesOff.empty()) << a.learnedRulesOff;
  EXPECT_GT(a.table.ruleCount(), p.rules.size());  // the network's rules are there
  EXPECT_EQ(decisionsOf(a.table), decisionsOf(b.table));
  EXPECT_EQ(decisionsOf(a.table), decisionsOf(c.table));
  EXPECT_EQ(firstAllReduceChoice(b.table), kTreeLL);  // the declared 8 x 50 GB/s, not the probed 4 x 25
  // The degraded probe is reported (once, by the plugin), but changes nothing.
  EXPECT_TRUE(a.probeDisagrees.empty()) << a.probeDisagrees;
  EXPECT_NE(b.probeDisagrees.find("nics_per_node 4 vs 8"), std::string::npos) << b.probeDisagrees;
  EXPECT_NE(b.probeDisagrees.find("nic_GBps 25 vs 50"), std::string::npos) << b.probeDisagrees;
  EXPECT_TRUE(c.probeDisagrees.empty()) << c.probeDisagrees;
}

TEST(LearnedFingerprint, MultiNodeWithoutDeclaredHardwareHasOnlyTheProfilesRules) {
  const policy::Profile p = learnedProfile(nullptr);
  const HostSources healthy = healthyHost();
  const policy::PolicyTable t = learned::compileWithPolicy(p, kTwoNodes, {&healthy, {}, policy::Trust::All});
  EXPECT_EQ(t.table.ruleCount(), p.rules.size());
  EXPECT_EQ(t.table.lookup(static_cast<int>(Collective::AllReduce), 1 << 20, 1, 0).count, 0);
  EXPECT_EQ(t.table.lookup(static_cast<int>(Collective::AllGather), 1 << 20, 1, 0).decisions[0],
            (policy::Decision{Algo::Ring, Proto::Simple, 0, 0}));
  EXPECT_NE(t.learnedRulesOff.find("\"fingerprint\""), std::string::npos) << t.learnedRulesOff;
  EXPECT_NE(t.learnedRulesOff.find("DYNAMICCL_TOPO="), std::string::npos) << t.learnedRulesOff;
}

TEST(LearnedFingerprint, SingleNodeUsesTheProbeUnlessTheProfileDeclaresTheHardware) {
  const HostSources healthy = healthyHost(), degraded = degradedHost();
  const policy::Profile undeclared = learnedProfile(nullptr);
  const policy::PolicyTable probed = learned::compileWithPolicy(undeclared, kOneNode, {&degraded, {}, policy::Trust::All});
  EXPECT_TRUE(probed.learnedRulesOff.empty());
  EXPECT_EQ(firstAllReduceChoice(probed.table), kRingLL);  // this host's 4 x 25 GB/s
  const policy::Profile declared = learnedProfile(kDeclared);
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(declared, kOneNode, {&degraded, {}, policy::Trust::All}).table), kTreeLL);
  EXPECT_EQ(decisionsOf(learned::compileWithPolicy(declared, kOneNode, {&degraded, {}, policy::Trust::All}).table),
            decisionsOf(learned::compileWithPolicy(declared, kOneNode, {&healthy, {}, policy::Trust::All}).table));
}

TEST(LearnedFingerprint, TopoEnvironmentStandsInForTheDeclarationOnlyWhenComplete) {
  const policy::Profile p = learnedProfile(nullptr);
  HostSources partial = healthyHost();
  partial.overrides.computeCap = 90;
  partial.overrides.nics = 8;
  const policy::PolicyTable off = learned::compileWithPolicy(p, kTwoNodes, {&partial, {}, policy::Trust::All});
  EXPECT_EQ(off.table.ruleCount(), p.rules.size());
  EXPECT_NE(off.learnedRulesOff.find("DYNAMICCL_TOPO lacks nvlink_GBps, nic_GBps"), std::string::npos)
      << off.learnedRulesOff;

  // All four, as a job script sets them on every rank: used, and the probe is not.
  HostSources degraded = degradedHost(), healthy = healthyHost();
  for (HostSources* h : {&degraded, &healthy}) {
    h->overrides.computeCap = 90;
    h->overrides.nvlinkBw_GBps = 0.0;  // 0 = no NVLink is a value, not "unset"
    h->overrides.nics = 8;
    h->overrides.nicSpeed_GBps = 50.0;
  }
  const policy::PolicyTable a = learned::compileWithPolicy(p, kTwoNodes, {&degraded, {}, policy::Trust::All});
  EXPECT_TRUE(a.learnedRulesOff.empty()) << a.learnedRulesOff;
  EXPECT_EQ(firstAllReduceChoice(a.table), kTreeLL);
  EXPECT_EQ(decisionsOf(a.table), decisionsOf(learned::compileWithPolicy(p, kTwoNodes, {&healthy, {}, policy::Trust::All}).table));

  // They also beat the profile's declaration (the operator's word for this job).
  const policy::Profile declared = learnedProfile(kDeclared);
  HostSources slower = healthyHost();
  slower.overrides.nics = 4;
  slower.overrides.nicSpeed_GBps = 25.0;
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(declared, kTwoNodes, {&slower, {}, policy::Trust::All}).table), kRingLL);
}

TEST(LearnedFingerprint, CachedRulesAreKeyedOnEveryInput) {
  // Rules are cached per network and inputs; a hit must return what generating them again would, so
  // communicators of one shape with other facts or another workload get rules of their own.
  const policy::Profile p = learnedProfile(kDeclared, /*batchWeight=*/-10.0f);
  const HostSources nothing;
  WorkloadContext batch8;
  batch8.batch = 8;  // u drops by 3: Ring wins at 8 x 50 GB/s too
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(p, kTwoNodes, {&nothing, {}, policy::Trust::All}).table), kTreeLL);
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(p, kTwoNodes, {&nothing, batch8, policy::Trust::All}).table), kRingLL);
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(p, kTwoNodes, {&nothing, {}, policy::Trust::All}).table), kTreeLL);
  const policy::Profile undeclared = learnedProfile(nullptr, -10.0f);
  const HostSources healthy = healthyHost(), degraded = degradedHost();
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(undeclared, kOneNode, {&healthy, {}, policy::Trust::All}).table), kTreeLL);
  EXPECT_EQ(firstAllReduceChoice(learned::compileWithPolicy(undeclared, kOneNode, {&degraded, {}, policy::Trust::All}).table), kRingLL);
}

TEST(LearnedFingerprint, PluginSaysOnceWhyMultiNodeCommunicatorsGetNoLearnedRules) {
  TempFile file(learnedProfileJson(nullptr));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", "1");
  LogCapture::clear();
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  for (int i = 0; i < 3; ++i) {  // hundreds of communicators in a real job: still one line
    auto comm = lib->init(harness::CommSpec{.commId = 100u + i, .nRanks = 16, .nNodes = 2});
    ASSERT_TRUE(comm.ok()) << comm.error();
    EXPECT_EQ((*comm)->decide(4, size_t{1} << 20, harness::ncclPicks(kRing, kSimple)), (harness::Choice{kRing, kSimple, 0}));
  }
  EXPECT_EQ(testing::logLinesMentioning("learned rules off for multi-node communicators"), 1u)
      << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u) << ::testing::PrintToString(LogCapture::lines());

  // A single-node communicator of the same process still gets the network's rules (from this host's
  // probe, whatever it says: Tree/LL or Ring/LL, never NCCL's Ring/Simple).
  auto single = lib->init(harness::CommSpec{.commId = 200, .nRanks = 8, .nNodes = 1});
  ASSERT_TRUE(single.ok()) << single.error();
  const harness::Choice c = (*single)->decide(4, size_t{1} << 20, harness::ncclPicks(kRing, kSimple));
  EXPECT_EQ(c.proto, kLL);
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u);
}

TEST(LearnedFingerprint, PluginUsesTheDeclaredHardwareForMultiNodeCommunicators) {
  TempFile file(learnedProfileJson(kDeclared));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", "1");
  LogCapture::clear();
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{.commId = 300, .nRanks = 16, .nNodes = 2});
  ASSERT_TRUE(comm.ok()) << comm.error();
  EXPECT_EQ((*comm)->decide(4, size_t{1} << 20, harness::ncclPicks(kRing, kSimple)), (harness::Choice{kTree, kLL, 0}));
  EXPECT_EQ(testing::logLinesMentioning("learned rules off"), 0u) << ::testing::PrintToString(LogCapture::lines());
}

// An AMD cluster declares its architecture instead of a compute capability (AMD has none): the JSON
// round-trips, an NVIDIA host's rule check sees another GPU, and nonsense is refused.
TEST(ClusterHardwareJson, AnAmdFingerprintNamesItsArchitectureAndNoComputeCapability) {
  auto amd = policy::parseClusterHardwareJson(
      R"({"gpu_arch":"gfx942","nvlink_GBps":448,"nics_per_node":8,"nic_GBps":50,"source":"dynamiccl probe"})");
  ASSERT_TRUE(amd.ok()) << amd.error();
  EXPECT_EQ(amd->gpuArch, "gfx942");
  EXPECT_EQ(amd->computeCap, 0);
  const std::string text = policy::clusterHardwareToJson(*amd);
  EXPECT_EQ(text.find("gpu_cc"), std::string::npos) << text;
  auto back = policy::parseClusterHardwareJson(text);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, *amd);
  EXPECT_FALSE(policy::parseClusterHardwareJson(R"({"nvlink_GBps":448,"nics_per_node":8,"nic_GBps":50})").ok())
      << "neither gpu_cc nor gpu_arch";
  EXPECT_FALSE(policy::parseClusterHardwareJson(R"({"gpu_arch":"h100","nvlink_GBps":448,"nics_per_node":8,"nic_GBps":50})").ok());
  EXPECT_FALSE(policy::parseClusterHardwareJson(R"({"gpu_arch":7,"nvlink_GBps":448,"nics_per_node":8,"nic_GBps":50})").ok());
  auto nvidia = policy::parseClusterHardwareJson(R"({"gpu_cc":90,"nvlink_GBps":400,"nics_per_node":8,"nic_GBps":50})");
  ASSERT_TRUE(nvidia.ok());
  EXPECT_EQ(policy::clusterHardwareToJson(*nvidia).find("gpu_arch"), std::string::npos);
}

}  // namespace
}  // namespace dynamiccl
