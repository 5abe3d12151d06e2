// The learned policy's guard: a network's choice replaces NCCL's own only where the network predicts
// it faster than NCCL's own choice by the margin; elsewhere the next rule, then NCCL, decides.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "policy/policy.h"
#include "learned/learned.h"
#include "tests/policy_weights_fixture.h"
#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::ScopedEnv;
using testing::TempFile;

constexpr int kTree = 0, kRing = 1, kLL = 0, kLL128 = 1, kSimple = 2;

// A network whose prediction depends only on (algo, proto), in log us: Ring/LL128 9.00,
// Ring/Simple 9.02 (within 5% of it), Ring/LL and Tree/LL128 9.50, Tree/Simple 9.52, Tree/LL and
// every other algorithm 10.0 and up. One hidden unit, kept positive, so the output is its input.
learned::PolicyWeights handMadeWeights(std::optional<float> margin) {
  learned::PolicyWeights w;
  w.mlpHidden = {1};
  w.guardMargin = margin;
  const int in = w.mlpInputs();
  const auto zeros = fixture::zeroTensor;
  fixture::zeroGru(w);
  learned::Tensor first = zeros({1, in});
  const int config = kContextFeatures;  // algo one-hot at config + algo, proto one-hot at config + 7 + proto
  first.data[config + kRing] = -0.5f;
  first.data[config + 7 + kLL128] = -0.5f;
  first.data[config + 7 + kSimple] = -0.48f;
  w.tensors["mlp.0.weight"] = first;
  w.tensors["mlp.0.bias"] = learned::Tensor{{1}, {10.0f}};
  w.tensors["mlp.1.weight"] = learned::Tensor{{1, 1}, {1.0f}};
  w.tensors["mlp.1.bias"] = zeros({1});
  w.targetMean = 0.0f;
  w.targetStd = 1.0f;
  return w;
}

// The same predictions with a second hidden unit the output ignores but the covariance does not:
// relu(Ring + AllReduce - 1.5) is 0.5 for Ring configurations of an AllReduce and 0 elsewhere, so
// with variance v on it the network is unsure of Ring against Tree at AllReduce keys only (sd of
// that difference 0.5 sqrt(v) in log), and sure of everything else.
learned::PolicyWeights unsureOfRingAgainstTree(std::optional<float> margin, float v) {
  learned::PolicyWeights w = handMadeWeights(margin);
  w.mlpHidden = {2};
  const int in = w.mlpInputs();
  learned::Tensor first = fixture::zeroTensor({2, in});
  std::copy(w.tensors["mlp.0.weight"].data.begin(), w.tensors["mlp.0.weight"].data.end(), first.data.begin());
  first.data[in + kContextFeatures + kRing] = 1.0f;
  first.data[in + 2 + static_cast<int>(Collective::AllReduce)] = 1.0f;
  w.tensors["mlp.0.weight"] = first;
  w.tensors["mlp.0.bias"] = learned::Tensor{{2}, {10.0f, -1.5f}};
  w.tensors["mlp.1.weight"] = learned::Tensor{{1, 2}, {1.0f, 0.0f}};
  w.lastLayerCovariance = {0, 0, 0, 0, v, 0, 0, 0, 0};  // [unit 1, unit 2, bias]^2
  return w;
}

// Declares the cluster (A100-like, no NVLS): multi-node communicators get learned rules only then.
std::string profileWithPolicy(const learned::PolicyWeights& w) {
  return R"({"format":"dynamiccl-profile","version":1,"name":"guarded","rules":[],)"
         R"("fingerprint":{"gpu_cc":80,"nvlink_GBps":300,"nics_per_node":8,"nic_GBps":25},"policy":)" +
         learned::policyWeightsToJson(w) + "}";
}

using harness::ncclPicks;

TopologyFingerprint twoNodesOfEight() {
  TopologyFingerprint fp;
  fp.nRanks = 16;
  fp.nNodes = 2;
  fp.ranksPerNode = 8;
  fp.computeCap = 80;
  return fp;
}

TEST(PolicyGuard, MarginIsReadWrittenAndChecked) {
  learned::PolicyWeights w = handMadeWeights(0.1f);
  auto back = learned::parsePolicyWeights(learned::policyWeightsToJson(w));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->guardMargin, std::optional<float>(0.1f));

  nlohmann::json j = nlohmann::json::parse(learned::policyWeightsToJson(w));
  j.erase("guard_margin");  // weights written before the guard existed
  back = learned::parsePolicyWeights(j.dump());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_FALSE(back->guardMargin.has_value());  // absent: no guard

  j["guard_margin"] = nullptr;
  back = learned::parsePolicyWeights(j.dump());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_FALSE(back->guardMargin.has_value());
  EXPECT_EQ(nlohmann::json::parse(learned::policyWeightsToJson(*back))["guard_margin"], nullptr);

  for (double bad : {-0.01, 1.0, 3.0}) {
    j["guard_margin"] = bad;
    EXPECT_FALSE(learned::parsePolicyWeights(j.dump()).ok()) << bad;
  }
  j["guard_margin"] = "5%";
  EXPECT_FALSE(learned::parsePolicyWeights(j.dump()).ok());
}

TEST(PolicyGuard, RulesAdmitOnlyTheNcclChoicesTheyBeatByTheMargin) {
  auto net = learned::PolicyNetwork::create(handMadeWeights(0.05f));
  ASSERT_TRUE(net.ok()) << net.error();
  const std::vector<policy::Rule> rules = learned::policyRules(**net, twoNodesOfEight(), {});
  const uint64_t probe = learned::policyProbeBytes(20);
  std::vector<const policy::Rule*> key;
  for (const policy::Rule& r : rules)
    if (r.collective == Collective::AllReduce && r.minBytes <= probe && probe <= r.maxBytes) key.push_back(&r);
  ASSERT_EQ(key.size(), 3u);
  auto slot = [](int a, int p) { return policy::ncclChoiceSlot(Algo(a), Proto(p)); };
  auto admits = [&](const policy::Rule& r, int a, int p) { return (r.admits >> slot(a, p)) & 1u; };
  // Best: Ring/LL128 (9.00). It beats Ring/LL (9.50) and Tree/* by more than 5%, not Ring/Simple
  // (9.02) and not itself; NCCL choices the network never scored (CollNet) are never replaced.
  EXPECT_EQ(key[0]->decision, (policy::Decision{Algo::Ring, Proto::LL128, 0, 0}));
  EXPECT_TRUE(admits(*key[0], kRing, kLL));
  EXPECT_TRUE(admits(*key[0], kTree, kLL));
  EXPECT_TRUE(admits(*key[0], kTree, kSimple));
  EXPECT_FALSE(admits(*key[0], kRing, kSimple));
  EXPECT_FALSE(admits(*key[0], kRing, kLL128));
  EXPECT_FALSE(admits(*key[0], 2, kSimple));  // CollNetDirect
  EXPECT_FALSE((key[0]->admits >> policy::kNcclChoiceUnknown) & 1u);
  // Fall-through candidates score worse, so they admit a subset.
  EXPECT_EQ(key[1]->decision, (policy::Decision{Algo::Ring, Proto::Simple, 0, 0}));
  EXPECT_EQ(key[1]->admits & ~key[0]->admits, 0u);
  EXPECT_FALSE(admits(*key[1], kRing, kSimple));
  EXPECT_TRUE(admits(*key[1], kRing, kLL));

  // A wider margin admits less: at 45% (log 0.55 = -0.60) only Tree/LL (10.0) is beaten, by Ring/LL128
  // and Ring/Simple; Ring/LL (9.50) beats nothing and gets no rule.
  auto wide = learned::PolicyNetwork::create(handMadeWeights(0.45f));
  ASSERT_TRUE(wide.ok());
  const std::vector<policy::Rule> fewer = learned::policyRules(**wide, twoNodesOfEight(), {});
  EXPECT_LT(fewer.size(), rules.size());
  std::vector<const policy::Rule*> wideKey;
  for (const policy::Rule& r : fewer)
    if (r.collective == Collective::AllReduce && r.minBytes <= probe && probe <= r.maxBytes) wideKey.push_back(&r);
  ASSERT_EQ(wideKey.size(), 2u);
  EXPECT_EQ(wideKey[0]->decision, (policy::Decision{Algo::Ring, Proto::LL128, 0, 0}));
  EXPECT_EQ(wideKey[1]->decision, (policy::Decision{Algo::Ring, Proto::Simple, 0, 0}));
  for (const policy::Rule* r : wideKey) EXPECT_EQ(r->admits, policy::GuardMask{1} << slot(kTree, kLL));

  // No guard: every key gets its three candidates, admitted whatever NCCL would have chosen.
  auto open = learned::PolicyNetwork::create(handMadeWeights(std::nullopt));
  ASSERT_TRUE(open.ok());
  const std::vector<policy::Rule> all = learned::policyRules(**open, twoNodesOfEight(), {});
  EXPECT_EQ(all.size(), size_t{kNumCollectives} * (learned::kPolicyMaxBucket - learned::kPolicyMinBucket + 1) * 3);
  for (const policy::Rule& r : all) EXPECT_EQ(r.admits, policy::kAdmitsAny);
}

TEST(PolicyGuard, CovarianceIsReadWrittenAndChecked) {
  learned::PolicyWeights w = unsureOfRingAgainstTree(0.05f, 4.0f);
  auto back = learned::parsePolicyWeights(learned::policyWeightsToJson(w));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->lastLayerCovariance, w.lastLayerCovariance);
  EXPECT_FLOAT_EQ(back->keyErrorSigmas, w.keyErrorSigmas);

  nlohmann::json j = nlohmann::json::parse(learned::policyWeightsToJson(w));
  j.erase("last_layer_covariance");  // weights written before the covariance existed: no per-key confidence
  back = learned::parsePolicyWeights(j.dump());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(back->lastLayerCovariance.empty());
  auto net = learned::PolicyNetwork::create(*back);
  ASSERT_TRUE(net.ok());
  EXPECT_EQ((*net)->covariance(), nullptr);

  const nlohmann::json good = nlohmann::json::parse(learned::policyWeightsToJson(w));
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"last_layer_covariance", nlohmann::json::array({0, 0, 0, 0})},                 // not (2 + 1)^2
      {"last_layer_covariance", nlohmann::json::array({0, 0, 0, 0, -1, 0, 0, 0, 0})},  // a negative variance
      {"last_layer_covariance", nlohmann::json::array({0, 1, 0, 0, 4, 0, 0, 0, 0})},   // not symmetric
      {"last_layer_covariance", nlohmann::json::array({0, 0, 0, 0, 1e300, 0, 0, 0, 0})},  // not a float
      {"last_layer_covariance", "4"},
      {"key_error_sigmas", -1},
      {"key_error_sigmas", 11}};
  for (const auto& [key, value] : bad) {
    nlohmann::json b = good;
    b[key] = value;
    EXPECT_FALSE(learned::parsePolicyWeights(b.dump()).ok()) << key << " = " << value.dump();
  }
}

TEST(PolicyGuard, ARuleNeedsAGainBeyondTheKeysOwnError) {
  auto slot = [](int a, int p) { return policy::ncclChoiceSlot(Algo(a), Proto(p)); };
  const uint64_t probe = learned::policyProbeBytes(20);
  auto firstRule = [&](const learned::PolicyWeights& w, Collective coll) -> std::optional<policy::Rule> {
    auto net = learned::PolicyNetwork::create(w);
    EXPECT_TRUE(net.ok()) << net.error();
    if (!net.ok()) return std::nullopt;
    for (const policy::Rule& r : learned::policyRules(**net, twoNodesOfEight(), {}))
      if (r.collective == coll && r.minBytes <= probe && probe <= r.maxBytes) return r;
    return std::nullopt;
  };
  const auto marginOnly = firstRule(handMadeWeights(0.05f), Collective::AllReduce);
  ASSERT_TRUE(marginOnly);
  ASSERT_TRUE((marginOnly->admits >> slot(kTree, kLL)) & 1u);

  // Sure (tiny variance): the margin alone decides, as without a covariance.
  const auto sure = firstRule(unsureOfRingAgainstTree(0.05f, 1e-8f), Collective::AllReduce);
  ASSERT_TRUE(sure);
  EXPECT_EQ(sure->decision, marginOnly->decision);
  EXPECT_EQ(sure->admits, marginOnly->admits);

  // Unsure of Ring against Tree at AllReduce keys (sd 1.0 in log: Tree/LL's gain of 1.0 is below 1.645
  // of it): Ring/LL128 still replaces Ring/LL, which it is sure of, and no longer any Tree choice.
  const auto unsure = firstRule(unsureOfRingAgainstTree(0.05f, 4.0f), Collective::AllReduce);
  ASSERT_TRUE(unsure);
  EXPECT_EQ(unsure->decision, (policy::Decision{Algo::Ring, Proto::LL128, 0, 0}));
  EXPECT_EQ(unsure->admits, policy::GuardMask{1} << slot(kRing, kLL));
  // ... and the same network is sure elsewhere: another collective's rule admits what the margin does.
  EXPECT_EQ(firstRule(unsureOfRingAgainstTree(0.05f, 4.0f), Collective::AllGather)->admits,
            firstRule(handMadeWeights(0.05f), Collective::AllGather)->admits);
  // Less unsure (sd 0.5): Tree/LL (gain 1.0 > 1.645 x 0.5) is replaced again, Tree/Simple (0.52) is not.
  const auto less = firstRule(unsureOfRingAgainstTree(0.05f, 1.0f), Collective::AllReduce);
  ASSERT_TRUE(less);
  EXPECT_TRUE((less->admits >> slot(kTree, kLL)) & 1u);
  EXPECT_FALSE((less->admits >> slot(kTree, kSimple)) & 1u);

  // A covariance guards without a margin too: Ring/Simple (gain 0.02, sure of it) is replaced then.
  const auto noMargin = firstRule(unsureOfRingAgainstTree(std::nullopt, 4.0f), Collective::AllReduce);
  ASSERT_TRUE(noMargin);
  EXPECT_EQ(noMargin->admits, (policy::GuardMask{1} << slot(kRing, kLL)) | (policy::GuardMask{1} << slot(kRing, kSimple)));
}

TEST(PolicyGuard, TableKeepsGuardsAndDropsOnlyRedundantRepeats) {
  policy::Profile p;
  policy::Rule guarded;
  guarded.decision = policy::Decision{Algo::Ring, Proto::LL128, 0, 0};
  guarded.admits = 0b101;
  policy::Rule same = guarded;
  same.admits = 0b001;  // admits nothing the first does not: redundant
  policy::Rule profileRule = guarded;
  profileRule.admits = policy::kAdmitsAny;  // a profile rule with the same decision still applies elsewhere
  p.rules = {guarded, same, profileRule};
  const policy::DecisionTable t = policy::DecisionTable::compile(p, CommShape{.nRanks = 8, .nNodes = 1});
  const policy::Candidates& c = t.lookup(4, 1 << 20, 1, 0);
  ASSERT_EQ(c.count, 2);
  EXPECT_EQ(c.admits[0], 0b101u);
  EXPECT_EQ(c.admits[1], policy::kAdmitsAny);
  EXPECT_TRUE(c.admitted(0, 2));
  EXPECT_FALSE(c.admitted(0, 1));
  EXPECT_FALSE(c.admitted(0, policy::kNcclChoiceUnknown));
  EXPECT_TRUE(c.admitted(1, policy::kNcclChoiceUnknown));
}

// Through the real library: what NCCL ends up running for an AllReduce of 1 MiB on 2 x 8 ranks.
harness::Choice runsWith(const learned::PolicyWeights& w, const harness::CostTable& table, int maxVersion = 6) {
  TempFile file(profileWithPolicy(w));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", "1");
  auto lib = testing::openPlugin(maxVersion);
  EXPECT_TRUE(lib);
  if (!lib) return {};
  auto comm = lib->init(harness::CommSpec{.nRanks = 16, .nNodes = 2});
  EXPECT_TRUE(comm.ok()) << comm.error();
  if (!comm.ok()) return {};
  return (*comm)->decide(4, size_t{1} << 20, table);
}
harness::Choice runs(const std::optional<float>& margin, const harness::CostTable& table, int maxVersion = 6) {
  return runsWith(handMadeWeights(margin), table, maxVersion);
}

TEST(PolicyGuard, PluginAppliesTheChoiceOnlyWhereItBeatsNcclsOwn) {
  const harness::Choice ringLL128{kRing, kLL128, 0};
  // NCCL would run Tree/LL, predicted 10% slower: the network's Ring/LL128 replaces it.
  EXPECT_EQ(runs(0.05f, ncclPicks(kTree, kLL)), ringLL128);
  // NCCL would run Ring/Simple, predicted within 5%: NCCL's own choice stands.
  EXPECT_EQ(runs(0.05f, ncclPicks(kRing, kSimple)), (harness::Choice{kRing, kSimple, 0}));
  // NCCL would already run the network's choice: nothing to replace.
  EXPECT_EQ(runs(0.05f, ncclPicks(kRing, kLL128)), ringLL128);
  // The best choice unavailable (IGNORE): the next candidate, Ring/Simple, beats Tree/LL by the margin too.
  harness::CostTable noLL128 = ncclPicks(kTree, kLL);
  noLL128[kRing][kLL128] = -1.0f;
  EXPECT_EQ(runs(0.05f, noLL128), (harness::Choice{kRing, kSimple, 0}));
  // NCCL's own choice as NCCL finds it: ties go to the lowest index (Tree/LL before Ring/Simple), and
  // entries from 3.6e9 us up are never chosen (then NCCL's choice is unknown and no guard admits).
  harness::CostTable tie = ncclPicks(kRing, kSimple);
  tie[kTree][kLL] = tie[kRing][kSimple];
  EXPECT_EQ(runs(0.05f, tie), ringLL128);
  harness::CostTable unusable = harness::allIgnored();
  unusable[kTree][kLL] = unusable[kRing][kLL128] = 4e9f;
  EXPECT_EQ(runs(0.05f, unusable), (harness::Choice{}));
  // Without the guard the network decides everywhere, as before the guard existed.
  EXPECT_EQ(runs(std::nullopt, ncclPicks(kRing, kSimple)), ringLL128);
}

TEST(PolicyGuard, PluginKeepsNcclsChoiceWhereTheKeysErrorCoversTheGain) {
  // NCCL would run Tree/LL: Ring/LL128 replaces it where the network is sure of Ring against Tree;
  // where it is not, the fall-through candidate it is sure of (Tree/LL128, same algorithm) does.
  EXPECT_EQ(runsWith(unsureOfRingAgainstTree(0.05f, 1e-8f), ncclPicks(kTree, kLL)), (harness::Choice{kRing, kLL128, 0}));
  EXPECT_EQ(runsWith(unsureOfRingAgainstTree(0.05f, 4.0f), ncclPicks(kTree, kLL)), (harness::Choice{kTree, kLL128, 0}));
  // NCCL would run Tree/LL128: nothing beats it surely by the margin, so it stands.
  EXPECT_EQ(runsWith(unsureOfRingAgainstTree(0.05f, 4.0f), ncclPicks(kTree, kLL128)), (harness::Choice{kTree, kLL128, 0}));
  // NCCL would run Ring/LL, which the network is sure it beats.
  EXPECT_EQ(runsWith(unsureOfRingAgainstTree(0.05f, 4.0f), ncclPicks(kRing, kLL)), (harness::Choice{kRing, kLL128, 0}));
}

TEST(PolicyGuard, V2WithoutACostTableKeepsNcclsChoiceForGuardedRules) {
  // v2 gets no cost table, so NCCL's own choice is unknown and no guard can admit a replacement.
  EXPECT_EQ(runs(0.05f, ncclPicks(kTree, kLL), 2), (harness::Choice{kTree, kLL, 0}));
  EXPECT_EQ(runs(std::nullopt, ncclPicks(kTree, kLL), 2), (harness::Choice{kRing, kLL128, 0}));
}

// The per-key spread is sqrt(d' S d) x the target's scale, S the weights' block of the covariance, for
// an embedding width that is not a multiple of the kernel's vector lanes.
TEST(PolicyGuard, PredictionSpreadIsTheCovariancesQuadraticForm) {
  learned::PolicyWeights w = fixture::randomPolicyWeights(3, {16, 13});
  w.targetStd = 0.7f;
  const int e = w.embeddingSize(), n = e + 1;
  ASSERT_EQ(e, 13);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0.0, 0.2);
  std::vector<double> m(static_cast<size_t>(n) * n), cov(m.size());
  for (double& v : m) v = g(rng);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = i == j ? 1e-3 : 0.0;
      for (int k = 0; k < n; ++k) s += m[i * n + k] * m[j * n + k];
      cov[i * n + j] = s;
    }
  w.lastLayerCovariance.assign(cov.begin(), cov.end());
  const auto c = learned::PredictionCovariance::of(w);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->width(), e);
  std::vector<float> a(e), b(e);
  for (int trial = 0; trial < 20; ++trial) {
    for (int i = 0; i < e; ++i) a[i] = static_cast<float>(g(rng)), b[i] = static_cast<float>(g(rng));
    std::vector<float> pa(e), pb(e);
    c->project(a, pa.data());
    c->project(b, pb.data());
    double q = 0;
    for (int i = 0; i < e; ++i)
      for (int j = 0; j < e; ++j) q += (double(a[i]) - b[i]) * static_cast<float>(cov[i * n + j]) * (double(a[j]) - b[j]);
    EXPECT_NEAR(c->differenceSd_log(pa.data(), pb.data()), 0.7 * std::sqrt(q), 1e-4 * (1 + std::sqrt(q))) << trial;
  }
}

}  // namespace
}  // namespace dynamiccl
