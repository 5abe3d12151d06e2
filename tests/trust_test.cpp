// Trust levels through the real library: by default only rules measured on this communicator's
// hardware change NCCL's choice; simulated, learned, old or foreign-fingerprint rules need
// DYNAMICCL_TRUST=all. NVIDIA CSV rules are the user's own and always apply.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "learned/learned.h"
#include "policy_weights_fixture.h"
#include "test_support.h"

namespace dynamiccl {
namespace {

using harness::LogCapture;
using harness::ScopedEnv;
using testing::TempFile;

// This process's hardware, the same for every rank and host: set before the library probes it.
const bool kThisCluster = [] {
  setenv("DYNAMICCL_TOPO", "gpu_cc=90,nvlink_GBps=450,nics_per_node=8,nic_GBps=50", 1);
  return true;
}();
constexpr const char* kHere = R"({"gpu_cc":90,"nvlink_GBps":450,"nics_per_node":8,"nic_GBps":50})";
constexpr const char* kElsewhere = R"({"gpu_cc":90,"nvlink_GBps":450,"nics_per_node":4,"nic_GBps":25})";

std::string evidence(const char* provenance, const char* fingerprint) {
  return std::string(R"({"provenance":")") + provenance + R"(","fingerprint":)" + fingerprint +
         R"(,"nccl_version":"2.28.9","samples":27,"default_samples":27,"gain":0.2,"gain_ci":[0.1,0.3],)"
         R"("date":"2026-11-20"})";
}

// Ring/LL128 with 7 channels for every collective and size: on harness::allAvailable() NCCL would
// pick Tree/LL with its own channel count, so an applied rule always shows.
std::string profileWithEvidence(const std::string& evidenceJson, int version = 2) {
  std::string rule = R"({"algo":"ring","proto":"ll128","channels":7)";
  if (!evidenceJson.empty()) rule += R"(,"evidence":)" + evidenceJson;
  rule += "}";
  return R"({"format":"dynamiccl-profile","version":)" + std::to_string(version) + R"(,"rules":[)" + rule + "]}";
}

const harness::CommSpec kOneNode{.commId = 1, .nRanks = 8, .nNodes = 1};
const harness::CommSpec kTwoNodes{.commId = 2, .nRanks = 16, .nNodes = 2};
const uint64_t kSizes[] = {1, 4096, 1 << 20, uint64_t{1} << 30};

// Every tunable collective and size on a table where all entries are available: whether the plugin
// left NCCL's table and channel count untouched at every point.
struct Outcome {
  int untouched = 0, changed = 0;
};
Outcome drive(const harness::CommSpec& spec) {
  auto lib = testing::openPlugin();
  EXPECT_TRUE(lib);
  if (!lib) return {};
  auto comm = lib->init(spec);
  EXPECT_TRUE(comm.ok()) << (comm.ok() ? "" : comm.error()) << ::testing::PrintToString(LogCapture::lines());
  if (!comm.ok()) return {};
  Outcome o;
  const harness::CostTable table = harness::allAvailable();
  for (int coll = 0; coll < kNumCollectives; ++coll)
    for (uint64_t n : kSizes) {
      harness::CostTable edited = table;
      int nChannels = 0;
      (*comm)->getCollInfo(coll, n, 1, 0, edited, &nChannels);
      const bool same = edited == table && nChannels == 0;  // the cost table's bytes, compared whole
      (same ? o.untouched : o.changed)++;
    }
  return o;
}

constexpr int kPoints = kNumCollectives * static_cast<int>(std::size(kSizes));

Outcome withProfile(const std::string& text, const char* trust, const harness::CommSpec& spec = kOneNode,
                    const char* suffix = ".json") {
  TempFile file(text, suffix);
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv strict("DYNAMICCL_STRICT", "1");
  ScopedEnv trustEnv("DYNAMICCL_TRUST", trust);
  return drive(spec);
}

TEST(Trust, SimulatedRulesLeaveEveryPointToNcclByDefault) {
  for (const auto& spec : {kOneNode, kTwoNodes}) {
    const Outcome o = withProfile(profileWithEvidence(evidence("simulated", kHere)), nullptr, spec);
    EXPECT_EQ(o.untouched, kPoints);
    EXPECT_EQ(withProfile(profileWithEvidence(evidence("simulated", kHere)), "verified", spec).untouched, kPoints);
  }
}

TEST(Trust, LearnedRulesLeaveEveryPointToNcclByDefault) {
  EXPECT_EQ(withProfile(profileWithEvidence(evidence("learned", kHere)), nullptr).untouched, kPoints);
}

TEST(Trust, TrustAllAppliesSimulatedAndLearnedRules) {
  for (const char* p : {"simulated", "learned"}) {
    EXPECT_EQ(withProfile(profileWithEvidence(evidence(p, kHere)), "all").changed, kPoints) << p;
    EXPECT_EQ(withProfile(profileWithEvidence(evidence(p, kHere)), "all", kTwoNodes).changed, kPoints) << p;
  }
}

// The network's generated rules are learned, so unverified: with its declared fingerprint and no
// guard, its rules change choices only when trusted.
TEST(Trust, LearnedNetworkRulesNeedTrustAll) {
  learned::PolicyWeights w = fixture::randomPolicyWeights(7);
  w.guardMargin = std::nullopt;
  const std::string text = std::string(R"({"format":"dynamiccl-profile","version":2,"fingerprint":)") + kHere +
                           R"(,"rules":[],"policy":)" + learned::policyWeightsToJson(w) + "}";
  for (const auto& spec : {kOneNode, kTwoNodes}) {
    EXPECT_EQ(withProfile(text, nullptr, spec).untouched, kPoints);
    EXPECT_GT(withProfile(text, "all", spec).changed, 0);
  }
}

TEST(Trust, MeasuredRuleOnThisFingerprintAppliesByDefault) {
  for (const char* p : {"measured-offline", "measured-in-job"})
    for (const auto& spec : {kOneNode, kTwoNodes})
      EXPECT_EQ(withProfile(profileWithEvidence(evidence(p, kHere)), nullptr, spec).changed, kPoints) << p;
}

TEST(Trust, MeasuredRuleOnAnotherFingerprintDoesNotApply) {
  for (const auto& spec : {kOneNode, kTwoNodes}) {
    EXPECT_EQ(withProfile(profileWithEvidence(evidence("measured-offline", kElsewhere)), nullptr, spec).untouched,
              kPoints);
    EXPECT_EQ(withProfile(profileWithEvidence(evidence("measured-offline", kElsewhere)), "all", spec).changed, kPoints);
  }
}

TEST(Trust, MalformedEvidenceLoadsTheRuleUnverifiedWithOneLine) {
  const std::string bad = R"({"provenance":"measured-offline","fingerprint":)" + std::string(kHere) +
                          R"(,"samples":-3})";
  LogCapture::clear();
  EXPECT_EQ(withProfile(profileWithEvidence(bad), nullptr).untouched, kPoints);
  EXPECT_EQ(testing::logLinesMentioning("malformed evidence"), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(testing::logLinesMentioning("samples"), 1u);
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(withProfile(profileWithEvidence(bad), "all").changed, kPoints);  // loaded, not refused
}

TEST(Trust, OldSchemaProfileLoadsWithItsRulesUnverified) {
  LogCapture::clear();
  EXPECT_EQ(withProfile(profileWithEvidence("", 1), nullptr).untouched, kPoints);
  EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 0u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(testing::logLinesMentioning("unverified for this communicator"), 1u) << ::testing::PrintToString(LogCapture::lines());
  EXPECT_EQ(withProfile(profileWithEvidence("", 1), "all").changed, kPoints);
}

TEST(Trust, NvidiaCsvRulesAreTheUsersOwnAndApplyByDefault) {
  EXPECT_EQ(withProfile("allreduce,0,18446744073709551615,ring,ll128,7,-1,-1\n", nullptr, kOneNode, ".conf").changed, 1 * 4);
  TempFile csv("allreduce,0,18446744073709551615,ring,ll128,7,-1,-1\n", ".conf");
  ScopedEnv env("DYNAMICCL_PROFILE", nullptr);
  ScopedEnv nvidia("NCCL_TUNER_CONFIG_FILE", csv.path().c_str());
  ScopedEnv trust("DYNAMICCL_TRUST", nullptr);
  EXPECT_EQ(drive(kTwoNodes).changed, 4);
}

TEST(Trust, TrustAllSaysOncePerProcessThatUnverifiedRulesApply) {
  TempFile file(profileWithEvidence(evidence("simulated", kHere)));
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv trust("DYNAMICCL_TRUST", "all");
  LogCapture::clear();
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(lib->init(harness::CommSpec{.commId = 10u + i}).ok());
  EXPECT_EQ(testing::logLinesMentioning("DYNAMICCL_TRUST=all: unverified rules"), 1u) << ::testing::PrintToString(LogCapture::lines());
}

TEST(Trust, UnknownTrustValueKeepsVerifiedWithAWarning) {
  LogCapture::clear();
  EXPECT_EQ(withProfile(profileWithEvidence(evidence("simulated", kHere)), "yes").untouched, kPoints);
  EXPECT_EQ(testing::logLinesMentioning("DYNAMICCL_TRUST=\"yes\" ignored"), 1u) << ::testing::PrintToString(LogCapture::lines());
}

// Measured here, with its own figures: gain and its 95% interval, and the release measured under.
std::string measuredHere(const std::string& gainAndCi, const std::string& ncclVersion = "2.28.9") {
  return R"({"provenance":"measured-offline","fingerprint":)" + std::string(kHere) + R"(,"nccl_version":")" +
         ncclVersion + R"(","samples":27,"default_samples":27,)" + gainAndCi + R"(,"date":"2026-11-20"})";
}

TEST(Trust, AMeasuredRuleWhoseEvidenceShowsNoGainNeverAppliesAndSaysSoOnce) {
  for (const std::string& figures : {std::string(R"("gain":-0.5,"gain_ci":[-0.6,-0.4])"),
                                     std::string(R"("gain":0.05,"gain_ci":[-0.02,0.12])"),
                                     std::string(R"("gain":0.1,"gain_ci":[0.0,0.2])"), std::string(R"("gain":-0.2)")}) {
    LogCapture::clear();
    EXPECT_EQ(withProfile(profileWithEvidence(measuredHere(figures)), nullptr).untouched, kPoints) << figures;
    EXPECT_EQ(testing::logLinesMentioning("no gain beyond its interval"), 1u) << figures << ::testing::PrintToString(LogCapture::lines());
    EXPECT_EQ(withProfile(profileWithEvidence(measuredHere(figures)), "all").untouched, kPoints) << figures;
  }
  // A gain beyond its interval, and evidence without figures, apply as before.
  EXPECT_EQ(withProfile(profileWithEvidence(measuredHere(R"("gain":0.05,"gain_ci":[0.01,0.09])")), nullptr).changed,
            kPoints);
  EXPECT_EQ(withProfile(profileWithEvidence(measuredHere(R"("gain":0.3)")), nullptr).changed, kPoints);
}

TEST(Trust, ARuleMeasuredUnderAnotherReleasesSelectionRulesIsUnverifiedThere) {
  const std::string measured228 = profileWithEvidence(measuredHere(R"("gain":0.2,"gain_ci":[0.1,0.3])", "2.28.9"));
  {
    ScopedEnv release("DYNAMICCL_NCCL_VERSION", "2.31.0");
    LogCapture::clear();
    EXPECT_EQ(withProfile(measured228, nullptr).untouched, kPoints);
    EXPECT_EQ(testing::logLinesMentioning("another NCCL release's selection rules"), 1u) << ::testing::PrintToString(LogCapture::lines());
    EXPECT_EQ(testing::logLinesMentioning("2.28's selection rules, this job runs 2.31's"), 1u);
    EXPECT_EQ(withProfile(measured228, "all").changed, kPoints);
  }
  {
    ScopedEnv release("DYNAMICCL_NCCL_VERSION", "2.28.3");  // another patch, the same selection rules
    EXPECT_EQ(withProfile(measured228, nullptr).changed, kPoints);
  }
  // The candidates in-job verification may re-test: the other release's rule is one, a refuted rule is not.
  auto profile = policy::parseProfileJson(measured228);
  ASSERT_TRUE(profile.ok()) << profile.error();
  HostSources host;
  host.overrides.computeCap = 90;
  host.overrides.nvlinkBw_GBps = 450;
  host.overrides.nics = 8;
  host.overrides.nicSpeed_GBps = 50;
  const CommShape shape{.nRanks = 8, .nNodes = 1};
  const auto under231 = learned::compileWithPolicy(*profile, shape, {&host, {}, policy::Trust::Verified, 23100});
  EXPECT_TRUE(under231.table.empty());
  EXPECT_EQ(under231.unverified.ruleCount(), 1u);
  const auto under228 = learned::compileWithPolicy(*profile, shape, {&host, {}, policy::Trust::Verified, 22809});
  EXPECT_EQ(under228.table.ruleCount(), 1u);
  auto refuted = policy::parseProfileJson(profileWithEvidence(measuredHere(R"("gain":-0.5,"gain_ci":[-0.6,-0.4])")));
  ASSERT_TRUE(refuted.ok()) << refuted.error();
  const auto none = learned::compileWithPolicy(*refuted, shape, {&host, {}, policy::Trust::All, 22809});
  EXPECT_TRUE(none.table.empty());
  EXPECT_TRUE(none.unverified.empty());
  EXPECT_NE(none.refutedRules.find("no gain beyond its interval"), std::string::npos) << none.refutedRules;
}

TEST(Trust, AMalformedNcclVersionInEvidenceIsRefusedWithOneLine) {
  for (const char* garbage : {"banana", "2.28.9-rc1", "99.1", "2..28", ""}) {
    const std::string text = profileWithEvidence(measuredHere(R"("gain":0.2,"gain_ci":[0.1,0.3])", garbage));
    LogCapture::clear();
    const Outcome o = withProfile(text, nullptr);
    if (std::string(garbage).empty()) {  // unknown, not malformed: nothing to check
      EXPECT_EQ(o.changed, kPoints);
      continue;
    }
    EXPECT_EQ(o.untouched, kPoints) << garbage;
    EXPECT_EQ(testing::logLinesMentioning("malformed evidence"), 1u) << garbage << ::testing::PrintToString(LogCapture::lines());
    EXPECT_EQ(testing::logLinesMentioning("nccl_version"), 1u) << garbage;
  }
}

}  // namespace
}  // namespace dynamiccl
