// One interval from the data to NCCL: what `dynamiccl profile` prints is what it stores and what the
// plugin reads, so its rules change NCCL's choice through the real library, under the default trust,
// exactly where its table says faster; no rule the plugin would refute is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "offline/tune/profile_export.h"
#include "policy/policy.h"
#include "shipped_data.h"
#include "test_support.h"

namespace dynamiccl {
namespace {

using harness::LogCapture;
using harness::ScopedEnv;
using testing::TempFile;

// The L40S machines of the shipped dataset, as every rank would declare them: set before the library
// probes the host, so rules measured there are verified here.
const bool kL40s = [] {
  setenv("DYNAMICCL_TOPO", "gpu_cc=89,nvlink_GBps=0,nics_per_node=2,nic_GBps=12.5", 1);
  return true;
}();
constexpr const char* kL40sFingerprint = R"({"gpu_cc":89,"nvlink_GBps":0,"nics_per_node":2,"nic_GBps":12.5})";

// "256 B", "4K", "256K", "1M": the sizes the table prints (whole powers of a unit).
uint64_t bytesOf(const std::string& text) {
  const uint64_t n = std::stoull(text);
  switch (text.back()) {
    case 'K': return n << 10;
    case 'M': return n << 20;
    case 'G': return n << 30;
    default: return n;
  }
}

// One row of a shape's table as printed.
struct Row {
  int nRanks = 0, nNodes = 0;
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;
  std::string runs;  // "default" or "ring/ll"
  std::string gain;  // "+7.2% [+1.1%, +13.7%]" or "-"
  bool faster = false;
};
struct Printed {
  std::vector<Row> rows;
  int tableLines = 0;                  // rows of any table, parsed or not
  std::vector<std::string> ruleLines;  // "allreduce bytes [256, 511] ring/ll, gain +7.2% [+1.1%, +13.7%] (1 vs 4 runs)"
};

Printed parseTables(const std::string& output) {
  static const std::regex shape(R"((\d+)r/(\d+)n \(measured)");
  static const std::regex row(R"(^  (\w+) +(\d+(?: B|K|M|G)) \| default .*\| (\S+) +[-\d.]+ +[-\d.]+ \| )"
                              R"((-|\S+ \[\S+ \S+\])(?: pooled)? +(faster|not-faster|undecided|noise-unknown)(, .*)? )"
                              R"(\(\d+ vs \d+\)$)");
  Printed p;
  int nRanks = 0, nNodes = 0;
  std::istringstream in(output);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    p.tableLines += line.find(" | default ") != std::string::npos;
    if (std::regex_search(line, m, shape)) nRanks = std::stoi(m[1]), nNodes = std::stoi(m[2]);
    else if (line.rfind("  rule: ", 0) == 0) p.ruleLines.push_back(line.substr(8));
    else if (std::regex_match(line, m, row)) {
      Row r{nRanks, nNodes, *parseCollective(m[1].str()), bytesOf(m[2]), m[3], m[4], false};
      r.faster = m[5] == "faster" && !m[6].matched;  // "faster, default kept (smoothing)" is no rule
      p.rows.push_back(r);
    }
  }
  return p;
}

std::string percent(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", 100 * x);
  return b;
}

std::string storedLine(const policy::Rule& r) {
  const policy::Evidence& e = *r.evidence;
  return std::string(collectiveName(*r.collective)) + " bytes [" + std::to_string(r.minBytes) + ", " +
         std::to_string(r.maxBytes) + "] " + policy::decisionLabel(r.decision) + ", gain " + percent(e.gain) + " [" +
         percent(e.gainLow) + ", " + percent(e.gainHigh) + "] (" + std::to_string(e.samples) + " vs " +
         std::to_string(e.defaultSamples) + " runs)";
}

const policy::Rule* ruleFor(const policy::Profile& p, const Row& row) {
  for (const policy::Rule& r : p.rules)
    if (r.minRanks == row.nRanks && r.minNodes == row.nNodes && r.collective == row.coll && r.minBytes <= row.bytes &&
        row.bytes <= r.maxBytes)
      return &r;
  return nullptr;
}

// NCCL's own pick on the table the test hands the plugin: never the rule's, so an applied rule shows.
harness::Choice ncclOwnPickBesides(const std::string& label) {
  return label == "tree/ll128" ? harness::Choice{static_cast<int>(Algo::Ring), static_cast<int>(Proto::Simple), 0}
                               : harness::Choice{static_cast<int>(Algo::Tree), static_cast<int>(Proto::LL128), 0};
}

std::string labelOf(const harness::Choice& c) {
  return std::string(algoName(static_cast<Algo>(c.algo))) + "/" + std::string(protoName(static_cast<Proto>(c.proto)));
}

void checkProfileCommand(const std::string& options) {
  SCOPED_TRACE("dynamiccl profile " + options);
  const TempFile written("");  // its directory, and the profile the command writes over it
  const std::string& out = written.path();
  const auto r = testing::runShell("env -u DYNAMICCL_DB " + std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl profile '" +
                                   testing::shippedL40sCsv() + "' -o '" + out + "' " + options + " 2>&1");
  ASSERT_EQ(r.rc, 0) << r.output;
  const Printed printed = parseTables(r.output);
  auto profile = policy::loadProfileFile(out);
  ASSERT_TRUE(profile.ok()) << profile.error();
  ASSERT_FALSE(profile->rules.empty()) << r.output;

  // What the table calls faster is what the file holds, figure for figure; nothing else is written.
  int faster = 0;
  for (const Row& row : printed.rows) {
    const policy::Rule* rule = ruleFor(*profile, row);
    EXPECT_EQ(row.faster, rule != nullptr) << sizeText(row.bytes) << " on " << row.nRanks << " ranks\n" << r.output;
    EXPECT_EQ(row.faster, row.runs != "default") << sizeText(row.bytes) << "\n" << r.output;
    faster += row.faster;
    if (!rule) continue;
    EXPECT_EQ(policy::decisionLabel(rule->decision), row.runs);
    const bool alone = rule->minBytes == row.bytes && rule->maxBytes < 2 * row.bytes;
    if (alone) {
      EXPECT_EQ(row.gain, percent(rule->evidence->gain) + " [" + percent(rule->evidence->gainLow) + ", " +
                              percent(rule->evidence->gainHigh) + "]");
    }
  }
  EXPECT_GT(faster, 0) << r.output;
  EXPECT_EQ(printed.rows.size(), static_cast<size_t>(printed.tableLines)) << "rows the test could not read\n" << r.output;
  ASSERT_EQ(printed.ruleLines.size(), profile->rules.size()) << r.output;
  for (size_t i = 0; i < profile->rules.size(); ++i) {
    const policy::Rule& rule = profile->rules[i];
    ASSERT_TRUE(rule.evidence);
    EXPECT_FALSE(policy::refutedByItsEvidence(*rule.evidence)) << storedLine(rule);
    EXPECT_GT(rule.evidence->gainLow, 0) << storedLine(rule);
    EXPECT_NE(std::find(printed.ruleLines.begin(), printed.ruleLines.end(), storedLine(rule)), printed.ruleLines.end())
        << storedLine(rule) << "\n" << r.output;
  }

  // Through the real library under the default trust: NCCL's choice changes at exactly those sizes.
  ScopedEnv env("DYNAMICCL_PROFILE", out.c_str());
  ScopedEnv trust("DYNAMICCL_TRUST", nullptr);
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  uint64_t commId = 1000;
  for (const Row& row : printed.rows) {
    auto comm = lib->init(harness::CommSpec{.commId = ++commId, .nRanks = row.nRanks, .nNodes = row.nNodes});
    ASSERT_TRUE(comm.ok()) << comm.error();
    const harness::Choice own = ncclOwnPickBesides(row.runs);
    const harness::Choice ran =
        (*comm)->decide(static_cast<int>(row.coll), row.bytes, harness::ncclPicks(own.algo, own.proto));
    EXPECT_EQ(ran != own, row.faster) << collectiveName(row.coll) << " " << sizeText(row.bytes) << " on "
                                      << row.nRanks << " ranks: ran " << labelOf(ran) << ", the table says "
                                      << (row.faster ? row.runs : "NCCL's choice");
    if (row.faster) {
      EXPECT_EQ(labelOf(ran), row.runs);
    }
  }
}

TEST(ProfileInterval, TheProfileCommandsRulesChangeNcclsChoiceExactlyWhereItsTableSaysFaster) {
  checkProfileCommand("");
  // A looser rule: more sizes, rules spanning several of them, and sizes the smoothing leaves to NCCL.
  checkProfileCommand("--confidence 0.75 --min-gain 0");
}

// A tuned interval whose own bounds show no gain is no rule: the plugin would refute it, never apply it.
TEST(ProfileInterval, ARuleThePluginWouldRefuteIsNeverWritten) {
  tune::TunedInterval t{Collective::AllReduce, 0, 65535, policy::Decision{Algo::Ring, Proto::LL, 0, 0}, 0.9, 0.05, 1};
  t.samples = 1, t.defaultSamples = 4;
  policy::Evidence measured;
  measured.provenance = policy::Provenance::MeasuredOffline;
  t.gainLow = -0.03, t.gainHigh = 0.19;
  EXPECT_TRUE(tune::toProfile({t}, "p", 2, 1, measured).rules.empty());
  t.gainLow = 0.01;
  EXPECT_EQ(tune::toProfile({t}, "p", 2, 1, measured).rules.size(), 1u);
  measured.provenance = policy::Provenance::Simulated;  // never refuted by its figures: unverified instead
  t.gainLow = -0.03;
  EXPECT_EQ(tune::toProfile({t}, "p", 2, 1, measured).rules.size(), 1u);
}

// A rule measured under another release's selection rules is left out with one WARN line saying so
// (NCCL_DEBUG=WARN shows it), and applies under the release it was measured under.
TEST(ProfileInterval, ARuleMeasuredUnderAnotherReleaseIsLeftOutWithOneWarning) {
  const std::string rule =
      std::string(R"({"collective":"allreduce","algo":"ring","proto":"ll","evidence":{"provenance":"measured-offline",)") +
      R"("fingerprint":)" + kL40sFingerprint +
      R"(,"nccl_version":"2.31.1","samples":5,"default_samples":5,"gain":0.1,"gain_ci":[0.05,0.15]}})";
  TempFile file(R"({"format":"dynamiccl-profile","version":2,"rules":[)" + rule + "]}");
  ScopedEnv env("DYNAMICCL_PROFILE", file.path().c_str());
  ScopedEnv trust("DYNAMICCL_TRUST", nullptr);
  const harness::Choice own{static_cast<int>(Algo::Tree), static_cast<int>(Proto::LL128), 0};
  for (const int release : {22809, 23102}) {
    LogCapture::clear();
    auto lib = harness::TunerLibrary::open(harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR), harness::asRelease(release));
    ASSERT_TRUE(lib.ok()) << lib.error();
    auto comm = (*lib)->init(harness::CommSpec{.commId = 77u + release, .nRanks = 2, .nNodes = 1});
    ASSERT_TRUE(comm.ok()) << comm.error();
    const harness::Choice ran = (*comm)->decide(static_cast<int>(Collective::AllReduce), 4096, harness::ncclPicks(own.algo, own.proto));
    size_t said = 0;
    for (const std::string& l : LogCapture::lines())
      said += l.find("measured under another NCCL release's selection rules") != std::string::npos &&
              l.find("2.31's selection rules, this job runs 2.28's") != std::string::npos;
    if (release == 22809) {
      EXPECT_EQ(ran, own) << labelOf(ran);
      EXPECT_EQ(said, 1u) << ::testing::PrintToString(LogCapture::lines());
      EXPECT_EQ(LogCapture::count(NCCL_LOG_WARN), 1u) << ::testing::PrintToString(LogCapture::lines());
    } else {
      EXPECT_EQ(labelOf(ran), "ring/ll");
      EXPECT_EQ(said, 0u) << ::testing::PrintToString(LogCapture::lines());
    }
  }
}

}  // namespace
}  // namespace dynamiccl
