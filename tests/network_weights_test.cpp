// Policy weights: bad ones are rejected (and cost the plugin nothing but one warning); good ones
// make the plugin's init generate rules with Eigen that the hot path then looks up.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "policy/policy.h"
#include "learned/learned.h"
#include "tests/policy_weights_fixture.h"
#include "test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::LogCapture;
using harness::ScopedEnv;
using testing::TempFile;

// Valid weights of the default dimensions with small seeded values.
learned::PolicyWeights randomWeights(uint64_t seed) { return fixture::randomPolicyWeights(seed); }

std::string profileWithPolicy(const std::string& policyJson) {
  return R"({"format":"dynamiccl-profile","version":1,"name":"learned","rules":[],"policy":)" + policyJson + "}";
}

TEST(PolicyWeights, RoundTripsThroughJson) {
  const learned::PolicyWeights w = randomWeights(1);
  auto back = learned::parsePolicyWeights(learned::policyWeightsToJson(w));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->tensors.size(), w.tensors.size());
  EXPECT_EQ(back->tensors.at("mlp.1.weight").data, w.tensors.at("mlp.1.weight").data);
}

TEST(PolicyWeights, RejectsWrongShapesNanMissingAndForeignEncodings) {
  auto mutate = [](auto edit) {
    nlohmann::json j = nlohmann::json::parse(learned::policyWeightsToJson(randomWeights(2)));
    edit(j);
    return learned::parsePolicyWeights(j.dump());
  };
  auto wrongShape = mutate([](auto& j) { j["tensors"]["mlp.0.weight"]["shape"][1] = 37; });
  ASSERT_FALSE(wrongShape.ok());
  EXPECT_NE(wrongShape.error().find("shape"), std::string::npos) << wrongShape.error();
  auto nan = mutate([](auto& j) { j["tensors"]["gru.bias_ih"]["data"][0] = "NaN"; });
  EXPECT_FALSE(nan.ok());
  auto inf = mutate([](auto& j) { j["tensors"]["gru.bias_ih"]["data"][0] = 1e300; });  // inf as float
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.error().find("NaN or infinite"), std::string::npos) << inf.error();
  EXPECT_FALSE(mutate([](auto& j) { j["tensors"].erase("mlp.2.bias"); }).ok());
  EXPECT_FALSE(mutate([](auto& j) { j["tensors"]["mlp.2.bias"]["data"].push_back(1.0); }).ok());
  EXPECT_FALSE(mutate([](auto& j) { j["context_features"] = 17; }).ok());
  EXPECT_FALSE(mutate([](auto& j) { j["version"] = 2; }).ok());
  EXPECT_FALSE(mutate([](auto& j) { j["target_std"] = 0; }).ok());
  EXPECT_FALSE(learned::parsePolicyWeights("[1,2]").ok());
  // The rule table keeps the section as read; the network's reader refuses it (and the plugin the profile).
  auto kept = policy::parseProfileJson(profileWithPolicy("{\"format\":\"x\"}"));
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_FALSE(learned::readNetwork(*kept).ok());
  EXPECT_FALSE(policy::parseProfileJson(profileWithPolicy("[1,2]")).ok());  // not an object: refused unread
}

// Base64 float32 (what train and export write) reads back to the same bits as JSON numbers, and the
// numbers written before it still read.
TEST(PolicyWeights, Base64WeightsReadBackToTheSameBitsAsNumbers) {
  learned::PolicyWeights w = randomWeights(11);
  w.lastLayerCovariance.assign(static_cast<size_t>(w.embeddingSize() + 1) * (w.embeddingSize() + 1), 0.0f);
  for (int i = 0; i <= w.embeddingSize(); ++i) w.lastLayerCovariance[i * (w.embeddingSize() + 2)] = 0.1f + i * 1e-7f;
  w.tensors["gru.bias_ih"].data[0] = -0.0f;
  w.tensors["gru.bias_ih"].data[1] = 1e-40f;  // a subnormal
  const std::string base64 = learned::policyWeightsToJson(w, learned::WeightEncoding::Base64);
  const std::string numbers = learned::policyWeightsToJson(w, learned::WeightEncoding::Numbers);
  EXPECT_TRUE(nlohmann::json::parse(base64)["tensors"]["mlp.0.weight"]["data"].is_string());
  EXPECT_LT(base64.size() * 2, numbers.size());
  auto a = learned::parsePolicyWeights(base64), b = learned::parsePolicyWeights(numbers);
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(a->lastLayerCovariance, w.lastLayerCovariance);
  for (const auto& [name, t] : w.tensors) {
    ASSERT_EQ(a->tensors.at(name).data.size(), t.data.size()) << name;
    EXPECT_EQ(std::memcmp(a->tensors.at(name).data.data(), t.data.data(), t.data.size() * sizeof(float)), 0) << name;
    EXPECT_EQ(std::memcmp(b->tensors.at(name).data.data(), t.data.data(), t.data.size() * sizeof(float)), 0) << name;
  }
  // A learned profile as export writes it holds base64 and reads back to the same network.
  auto net = learned::PolicyNetwork::create(w);
  ASSERT_TRUE(net.ok());
  policy::Profile profile;
  learned::setNetwork(profile, (*net)->weights());
  const std::string text = policy::profileToJson(profile);
  EXPECT_TRUE(nlohmann::json::parse(text)["policy"]["tensors"]["gru.weight_hh"]["data"].is_string());
  auto back = policy::parseProfileJson(text);
  ASSERT_TRUE(back.ok()) << back.error();
  auto read = learned::readNetwork(*back);
  ASSERT_TRUE(read.ok() && *read) << (read ? "no network" : read.error());
  EXPECT_EQ((*read)->weights().tensors.at("mlp.1.weight").data, w.tensors.at("mlp.1.weight").data);
}

TEST(PolicyWeights, RefusesAStringThatIsNotBase64OfFloats) {
  const nlohmann::json good = nlohmann::json::parse(learned::policyWeightsToJson(randomWeights(12), learned::WeightEncoding::Base64));
  const std::string bias = good["tensors"]["mlp.2.bias"]["data"];  // one float: 4 bytes, "xxxxxw=="
  for (const std::string& data : {std::string(""), bias.substr(0, 4), bias + "AAAA", "!!!!" + bias.substr(4),
                                  bias.substr(0, 6) + "A=", std::string("AAA="), std::string("AA==AAAA")}) {
    nlohmann::json j = good;
    j["tensors"]["mlp.2.bias"]["data"] = data;
    auto w = learned::parsePolicyWeights(j.dump());
    EXPECT_FALSE(w.ok()) << data;
  }
  nlohmann::json j = good;
  j["tensors"]["mlp.2.bias"]["data"] = "AACAfw==";  // +inf
  auto inf = learned::parsePolicyWeights(j.dump());
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.error().find("NaN or infinite"), std::string::npos) << inf.error();
}

TEST(PolicyRules, EveryKeyGetsFeasibleCandidatesBestFirst) {
  learned::PolicyWeights unguarded = randomWeights(3);
  unguarded.guardMargin = std::nullopt;  // three candidates for every key (the guard is policy_guard_test's)
  auto net = learned::PolicyNetwork::create(unguarded);
  ASSERT_TRUE(net.ok());
  TopologyFingerprint fp;
  fp.nRanks = 16;
  fp.nNodes = 2;
  fp.ranksPerNode = 8;
  fp.computeCap = 90;
  const std::vector<policy::Rule> rules = learned::policyRules(**net, fp, {});
  EXPECT_EQ(rules.size(), size_t{kNumCollectives} * (learned::kPolicyMaxBucket - learned::kPolicyMinBucket + 1) * 3);
  for (const policy::Rule& r : rules) {
    EXPECT_TRUE(policy::validateDecision(r.decision).ok());
    if (*r.collective != Collective::AllReduce) {
      EXPECT_NE(r.decision.algo, Algo::Tree);
    }
    EXPECT_NE(r.decision.algo, Algo::Pat);  // 8 ranks per node: no PAT
  }
  // The first candidate of a key is the network's argmin among its configurations.
  const uint64_t probe = learned::policyProbeBytes(20);
  const auto configs = learned::policyConfigurations(Collective::AllReduce, fp);
  std::vector<float> rows(configs.size() * (*net)->inputs()), scores(configs.size()), hidden((*net)->gruHidden());
  for (size_t i = 0; i < configs.size(); ++i) {
    float* row = rows.data() + i * (*net)->inputs();
    encodeContext(fp, Collective::AllReduce, probe, {}, std::span<float, kContextFeatures>(row, kContextFeatures));
    encodeConfig(configs[i].algo, configs[i].proto, configs[i].nChannels,
                 std::span<float, kConfigFeatures>(row + kContextFeatures, kConfigFeatures));
  }
  float window[kTimingWindowLength] = {};
  (*net)->encodeWindow(window, hidden.data());
  (*net)->predictLogLatency_us(rows.data(), static_cast<int>(configs.size()), hidden.data(), scores.data());
  const size_t best = std::min_element(scores.begin(), scores.end()) - scores.begin();
  policy::Profile generated;
  generated.rules = rules;
  const policy::DecisionTable table = policy::DecisionTable::compile(generated, CommShape{.nRanks = 16, .nNodes = 2});
  EXPECT_EQ(table.lookup(4, probe, 1, 0).decisions[0], configs[best]);
}

TEST(PolicyRules, TimingWindowChangesTheInputOfTheNetwork) {
  auto net = learned::PolicyNetwork::create(randomWeights(4));
  ASSERT_TRUE(net.ok());
  float calm[kTimingWindowLength] = {}, congested[kTimingWindowLength];
  std::fill(congested, congested + kTimingWindowLength, 0.7f);
  std::vector<float> a((*net)->gruHidden()), b((*net)->gruHidden());
  (*net)->encodeWindow(calm, a.data());
  (*net)->encodeWindow(congested, b.data());
  EXPECT_NE(a, b);
}

TEST(PluginWithPolicy, InitBuildsRulesFromTheNetwork) {
  TempFile file(profileWithPolicy(learned::policyWeightsToJson(randomWeights(5))));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", "1");
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{});
  ASSERT_TRUE(comm.ok()) << comm.error();
  int changed = 0;
  for (int coll = 0; coll < 5; ++coll)
    for (size_t n = 64; n < (size_t{1} << 32); n *= 8) {
      harness::CostTable table = harness::allAvailable();
      int nChannels = 0;
      ASSERT_EQ((*comm)->getCollInfo(coll, n, 1, 0, table, &nChannels), ncclSuccess);
      changed += !(table == harness::allAvailable());
    }
  EXPECT_GT(changed, 0);  // the network's rules decided
}

TEST(PluginWithPolicy, BadWeightsLogOneLineAndKeepNcclDefault) {
  nlohmann::json j = nlohmann::json::parse(learned::policyWeightsToJson(randomWeights(6)));
  j["tensors"]["mlp.1.weight"]["shape"] = {3, 3};
  TempFile file(profileWithPolicy(j.dump()));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", nullptr);
  LogCapture::clear();
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  for (int i = 0; i < 3; ++i) {
    auto comm = lib->init(harness::CommSpec{});
    ASSERT_TRUE(comm.ok()) << comm.error();
    const harness::CostTable table = harness::allAvailable();
    for (int coll = 0; coll < 5; ++coll)
      for (size_t n = 1; n < (size_t{1} << 34); n *= 9) {
        harness::CostTable copy = table;
        int nChannels = 0;
        ASSERT_EQ((*comm)->getCollInfo(coll, n, 1, 0, copy, &nChannels), ncclSuccess);
        ASSERT_TRUE(copy == table);
        ASSERT_EQ(nChannels, 0);
      }
  }
  size_t mentions = 0;
  for (const std::string& l : LogCapture::lines()) mentions += l.find("policy") != std::string::npos;
  EXPECT_EQ(mentions, 1u);
}

// The plugin given this learned profile: NCCL's choices at every point and the log lines of it.
std::vector<std::string> unusableProfileKeepsNcclsChoices(const std::string& policyJson) {
  TempFile file(profileWithPolicy(policyJson));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", nullptr);
  LogCapture::clear();
  auto lib = testing::openPlugin();
  EXPECT_TRUE(lib);
  if (!lib) return {};
  for (int i = 0; i < 2; ++i) {
    auto comm = lib->init(harness::CommSpec{.commId = 0x77u + i});
    EXPECT_TRUE(comm.ok()) << (comm.ok() ? "" : comm.error());
    if (!comm.ok()) return {};
    for (int coll = 0; coll < 5; ++coll)
      for (size_t n = 1; n < (size_t{1} << 34); n *= 9) {
        harness::CostTable copy = harness::allAvailable();
        int nChannels = 0;
        EXPECT_EQ((*comm)->getCollInfo(coll, n, 1, 0, copy, &nChannels), ncclSuccess);
        EXPECT_TRUE(copy == harness::allAvailable());
        EXPECT_EQ(nChannels, 0);
      }
  }
  std::vector<std::string> notUsed;
  for (const std::string& l : LogCapture::lines())
    if (l.find("profile not used") != std::string::npos) notUsed.push_back(l);
  return notUsed;
}

TEST(PluginWithPolicy, HugeButFiniteWeightsSayTheProfileIsNotUsedInOneLine) {
  learned::PolicyWeights w = randomWeights(8);
  for (auto& [name, t] : w.tensors) std::fill(t.data.begin(), t.data.end(), 3e38f);
  const auto lines = unusableProfileKeepsNcclsChoices(learned::policyWeightsToJson(w));
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_NE(lines[0].find("values out of range"), std::string::npos) << lines[0];

  learned::PolicyWeights target = randomWeights(8);
  target.targetMean = 3e38f;
  const auto targetLines = unusableProfileKeepsNcclsChoices(learned::policyWeightsToJson(target));
  ASSERT_EQ(targetLines.size(), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_NE(targetLines[0].find("values out of range"), std::string::npos) << targetLines[0];
}

TEST(PluginWithPolicy, AHugeCovarianceSaysTheProfileIsNotUsedInOneLine) {
  learned::PolicyWeights w = randomWeights(9);
  const size_t n = static_cast<size_t>(w.embeddingSize()) + 1;
  w.lastLayerCovariance.assign(n * n, 0.0f);
  for (size_t i = 0; i < n; ++i) w.lastLayerCovariance[i * n + i] = 3e38f;
  const auto lines = unusableProfileKeepsNcclsChoices(learned::policyWeightsToJson(w));
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_NE(lines[0].find("covariance unusable"), std::string::npos) << lines[0];
}

// Each value within bounds, but a deep wide network multiplies them past float's range.
TEST(PolicyWeights, ValuesInRangeThatOverflowTogetherAreRefused) {
  learned::PolicyWeights w = fixture::randomPolicyWeights(10, {1024, 1024, 1024, 1024, 1024, 1024});
  for (auto& [name, t] : w.tensors) std::fill(t.data.begin(), t.data.end(), 9000.0f);
  auto net = learned::PolicyNetwork::create(w);
  ASSERT_FALSE(net.ok());
  EXPECT_NE(net.error().find("values out of range"), std::string::npos) << net.error();
  EXPECT_TRUE(learned::PolicyNetwork::create(fixture::randomPolicyWeights(10, {64, 64})).ok());
}

}  // namespace
}  // namespace dynamiccl
