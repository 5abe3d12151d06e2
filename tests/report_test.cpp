// `dynamiccl report` on the stores jobs really wrote: the demo's store, whose figures must agree with
// the demo's own (its summary.json: exploring, measuring, net, per-key configuration and verdict),
// and a store two replayed communicators wrote, with a profile one of whose rules answers no call.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "offline/jobreplay/jobreplay.h"
#include "offline/report/report.h"
#include "tests/command_run.h"
#include "tests/test_support.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;
const std::string kDynamiccl = std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl";
const std::string kEmbedded = std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";

nlohmann::json readJson(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

report::ReportPlan planFor(std::vector<std::string> stores, std::vector<std::string> profiles = {}) {
  report::ReportPlan plan;
  plan.stores = std::move(stores);
  plan.profiles = std::move(profiles);
  return plan;
}

size_t widestLine(const std::string& text) {
  std::istringstream in(text);
  size_t w = 0;
  for (std::string l; std::getline(in, l);) w = std::max(w, l.size());
  return w;
}

// One `dynamiccl demo --quick` for the suite, and the report of its store.
class ReportOnDemo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("dynamiccl-report-test-" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    demo_ = new testing::CommandRun(
        testing::runLogged(kDynamiccl, "demo --quick --no-plots --out '" + (*dir_ / "demo").string() + "'", *dir_ / "demo.log"));
    const std::string args = "report --db '" + (*dir_ / "demo/job/store.db").string() + "' --profile '" +
                             (*dir_ / "demo/tuned.json").string() + "' --out '" + (*dir_ / "plots").string() + "'";
    text_ = new testing::CommandRun(testing::runLogged(kDynamiccl, args + " --no-plots", *dir_ / "report.txt"));
    json_ = new testing::CommandRun(testing::runLogged(kDynamiccl, args + " --json --no-plots 2>/dev/null", *dir_ / "report.json"));
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(*dir_);
    delete dir_, delete demo_, delete text_, delete json_;
  }
  static inline fs::path* dir_ = nullptr;
  static inline testing::CommandRun *demo_ = nullptr, *text_ = nullptr, *json_ = nullptr;
};

TEST_F(ReportOnDemo, ListsEachJobsCommunicatorWithinTheTerminalsWidth) {
  ASSERT_EQ(demo_->rc, 0) << demo_->log;
  ASSERT_EQ(text_->rc, 0) << text_->log;
  EXPECT_LE(widestLine(text_->log), 120u) << text_->log;
  // The demo runs two jobs on one store: each its own run and communicator.
  EXPECT_NE(text_->log.find("communicator 1 of 2: 4 ranks"), std::string::npos) << text_->log;
  EXPECT_NE(text_->log.find("communicator 2 of 2: 4 ranks"), std::string::npos) << text_->log;
  EXPECT_NE(text_->log.find("not recorded in the store:"), std::string::npos) << text_->log;
  ASSERT_EQ(json_->rc, 0) << json_->log;
  const nlohmann::json r = nlohmann::json::parse(json_->log);
  ASSERT_EQ(r["communicators"].size(), 2u) << json_->log;
  EXPECT_NE(r["communicators"][0]["run"], r["communicators"][1]["run"]);
}

TEST_F(ReportOnDemo, FiguresAgreeWithTheDemosOwnLines) {
  ASSERT_EQ(demo_->rc, 0) << demo_->log;
  ASSERT_EQ(json_->rc, 0) << json_->log;
  const nlohmann::json s = readJson(*dir_ / "demo/summary.json");
  const nlohmann::json r = nlohmann::json::parse(json_->log);
  const nlohmann::json& c = r["communicators"][0];  // the first job: the one that learns
  const nlohmann::json& job = s["job"];
  // The store holds the leader's measured calls: every one the demo says it profiled.
  EXPECT_EQ(c["calls"].get<int64_t>(), job["per_rank"][0]["profiled_calls"].get<int64_t>()) << json_->log;
  // Measuring: the same calls at the same published price.
  EXPECT_NEAR(c["measure_us"].get<double>(), job["measure_us"].get<double>(), 0.03 * job["measure_us"].get<double>());
  // Exploring: the leader measures its trials; their cost is the demo's "exploration:" line's.
  const double demoExplore_us = job["explore_share"].get<double>() * job["total_us"].get<double>();
  EXPECT_GT(demoExplore_us, 0);
  EXPECT_NEAR(c["explore_us"].get<double>(), demoExplore_us, 0.05 * demoExplore_us) << json_->log;
  const int64_t demoExploreCalls = job["explore_calls"].get<int64_t>();
  EXPECT_LE(c["explore_calls"].get<int64_t>(), demoExploreCalls);
  EXPECT_GE(c["explore_calls"].get<int64_t>(), demoExploreCalls * 85 / 100);
  // Net of measuring and exploring: the demo's ratio as time lost against NCCL's default. The report
  // misses the savings on unmeasured calls (not recorded), small beside what learning cost in this job.
  const double net = s["jobs"][0]["net_vs_default"].get<double>();
  const double jobTime_us = job["total_us"].get<double>() + job["measure_us"].get<double>();
  const double demoNet_us = jobTime_us / net - jobTime_us;  // negative: the job lost time
  EXPECT_LT(demoNet_us, 0);
  EXPECT_NEAR(c["net_us"].get<double>(), demoNet_us, 0.05 * std::abs(demoNet_us)) << json_->log;
  // Per key: NCCL's configuration, what the job ended with, and the verdict the demo's table shows.
  ASSERT_EQ(c["keys"].size(), s["keys"].size()) << json_->log;
  for (const nlohmann::json& k : s["keys"]) {
    const auto it = std::find_if(c["keys"].begin(), c["keys"].end(),
                                 [&](const nlohmann::json& rk) { return rk["min_bytes"] == k["bytes"]; });
    ASSERT_NE(it, c["keys"].end()) << k.dump();
    EXPECT_EQ((*it)["ran"]["label"], k["final_config"]) << k.dump() << "\n" << it->dump();
    std::string def = k["default_config"];
    if (!def.empty() && def.back() == '*') def.pop_back();
    EXPECT_EQ((*it)["nccl"]["label"], def) << k.dump();
    if (k["verdict"] != "-") {
      ASSERT_FALSE((*it)["verdict"].is_null()) << k.dump();
      EXPECT_EQ((*it)["verdict"]["candidate"]["label"].get<std::string>() + " " +
                    (*it)["verdict"]["state"].get<std::string>(),
                k["verdict"])
          << k.dump();
    }
    // A promoted configuration that ran saved time; a key left at NCCL's saved none.
    if (k["final_config"] != def) EXPECT_GT((*it)["saved_us"].get<double>(), 0) << it->dump();
    else EXPECT_EQ((*it)["saved_us"].get<double>(), 0) << it->dump();
  }
  // Every measured call reached the tuner and NCCL ran what it chose (no graphs, no overrides).
  EXPECT_EQ(c["reach"]["honoured"], c["reach"]["chosen"]);
  EXPECT_EQ(c["reach"]["chosen"].get<int64_t>() + c["reach"]["kept_nccl"].get<int64_t>(), c["calls"].get<int64_t>());
  // The simulator's rules answer the demo's keys; none was loaded in vain.
  EXPECT_GT(r["rules_loaded"].get<int>(), 0);
}

TEST_F(ReportOnDemo, WritesItsPlotsWhereMatplotlibIsThere) {
  ASSERT_EQ(demo_->rc, 0) << demo_->log;
  const std::string args = "report --db '" + (*dir_ / "demo/job/store.db").string() + "' --out '" +
                           (*dir_ / "plots").string() + "'";
  const testing::CommandRun run = testing::runLogged(kDynamiccl, args, *dir_ / "plots.log");
  ASSERT_EQ(run.rc, 0) << run.log;
  EXPECT_TRUE(fs::exists(*dir_ / "plots/time_saved.csv"));
  EXPECT_TRUE(fs::exists(*dir_ / "plots/decision_map.csv"));
  if (std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(fs::exists(*dir_ / "plots/time_saved.png")) << run.log;
    EXPECT_TRUE(fs::exists(*dir_ / "plots/decision_map.png")) << run.log;
  }
}

// Two communicators of different shapes (the embedded data's 4- and 2-GPU machines) replayed into one
// store, each verifying a profile with one more rule, for a size no call has.
class ReportOnReplayedJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dynamiccl-report-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // The embedded data's machine of `ranks` GPUs replayed through the plugin, verifying `profile`, into `db`.
  void replay(int ranks, const std::string& profile, const std::string& db) {
    auto job = jobreplay::loadMeasuredJob(kEmbedded, {ranks, 0, ""});
    ASSERT_TRUE(job) << job.error();
    jobreplay::JobOptions o;
    o.pluginPath = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
    o.iterations = 200;
    o.epochCalls = 500;
    o.seed = 3;
    o.workDir = dir_ + "/job" + std::to_string(ranks);
    o.env = {{"DYNAMICCL_PROFILE", profile}, {"DYNAMICCL_TRUST", "verified"}, {"DYNAMICCL_DB", db},
             {"DYNAMICCL_RECORD", "1"}};
    auto r = jobreplay::replayJob(*job, o);
    ASSERT_TRUE(r) << r.error();
    ASSERT_TRUE(r->allFinished && r->ranksAgree);
  }
  std::string profile() {
    const std::string path = dir_ + "/profile.json";
    // 256K ring/simple: a real gain on the 4-GPU machine; 1 TiB: no call is that large.
    std::ofstream(path) << R"({"format":"dynamiccl-profile","version":2,"name":"t","rules":[)"
                        << R"({"collective":"allreduce","bytes":[262144,262144],"algo":"ring","proto":"simple",)"
                        << R"("evidence":{"provenance":"simulated"}},)"
                        << R"({"collective":"allreduce","bytes":[1099511627776,2199023255552],"algo":"tree",)"
                        << R"("proto":"ll","evidence":{"provenance":"simulated"}}]})";
    return path;
  }
  std::string dir_;
};

TEST_F(ReportOnReplayedJobs, ListsEveryCommunicatorAndTheRuleThatMatchedNoCall) {
  const std::string profile = this->profile();
  const std::string db = dir_ + "/store.db";
  for (const int ranks : {4, 2}) {
    replay(ranks, profile, db);
    if (HasFatalFailure()) return;
  }
  auto report = report::buildReport(planFor({db}, {profile}));
  ASSERT_TRUE(report) << report.error();
  const std::string text = report::formatReport(*report);
  ASSERT_EQ(report->comms.size(), 2u) << text;
  EXPECT_EQ(report->comms[0].nRanks, 4) << text;
  EXPECT_EQ(report->comms[1].nRanks, 2) << text;
  for (const report::CommReport& c : report->comms) {
    EXPECT_GT(c.calls, 0) << text;
    EXPECT_FALSE(c.keys.empty()) << text;
    int64_t calls = 0;
    for (const report::KeyReport& k : c.keys) calls += k.calls;
    EXPECT_EQ(calls, c.calls);
  }
  EXPECT_NE(text.find("communicator 1 of 2: 4 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("communicator 2 of 2: 2 ranks"), std::string::npos) << text;
  EXPECT_LE(widestLine(text), 120u) << text;
  // The 1 TiB rule answered nothing; the 256K rule answered calls of both communicators.
  EXPECT_EQ(report->rulesLoaded, 2u);
  ASSERT_EQ(report->neverApplied.size(), 1u) << text;
  EXPECT_EQ(report->neverApplied[0].origin, "rules[1]") << text;
  EXPECT_NE(report->neverApplied[0].text.find("tree/ll"), std::string::npos) << text;
  EXPECT_NE(text.find("1 applied to no measured call"), std::string::npos) << text;
  // Without the profile (the store does not name it) the rules are not checked, and the report says so.
  auto unnamed = report::buildReport(planFor({db}));
  ASSERT_TRUE(unnamed);
  EXPECT_EQ(unnamed->comms.size(), 2u);
  EXPECT_TRUE(unnamed->neverApplied.empty());
  EXPECT_NE(report::formatReport(*unnamed).find("not checked"), std::string::npos);
}

// Two nodes' stores read together, or merged first (`dynamiccl db merge`): the same communicators, the same calls.
TEST_F(ReportOnReplayedJobs, SeveralNodesStoresReadAsOneOrMerged) {
  const std::string profile = this->profile(), a = dir_ + "/node0.db", b = dir_ + "/node1.db", merged = dir_ + "/all.db";
  replay(4, profile, a);
  if (HasFatalFailure()) return;
  replay(2, profile, b);
  if (HasFatalFailure()) return;
  const testing::CommandRun m = testing::runLogged(kDynamiccl, "db merge '" + merged + "' '" + a + "' '" + b + "'",
                                                   dir_ + "/merge.log");
  ASSERT_EQ(m.rc, 0) << m.log;
  auto apart = report::buildReport(planFor({a, b}, {profile}));
  ASSERT_TRUE(apart) << apart.error();
  auto together = report::buildReport(planFor({merged}, {profile}));
  ASSERT_TRUE(together) << together.error();
  const std::string text = report::formatReport(*apart);
  ASSERT_EQ(apart->comms.size(), 2u) << text;
  ASSERT_EQ(together->comms.size(), 2u) << report::formatReport(*together);
  EXPECT_EQ(apart->comms[0].store, a);
  EXPECT_EQ(apart->comms[1].store, b);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(apart->comms[i].nRanks, together->comms[i].nRanks);
    EXPECT_EQ(apart->comms[i].calls, together->comms[i].calls);
    EXPECT_EQ(apart->comms[i].keys.size(), together->comms[i].keys.size());
    EXPECT_DOUBLE_EQ(apart->comms[i].net_us(), together->comms[i].net_us());
  }
  EXPECT_EQ(apart->neverApplied.size(), 1u) << text;
  // Through the command: --db repeated.
  const testing::CommandRun cmd =
      testing::runLogged(kDynamiccl, "report --no-plots --db '" + a + "' --db '" + b + "'", dir_ + "/report.log");
  ASSERT_EQ(cmd.rc, 0) << cmd.log;
  EXPECT_NE(cmd.log.find("communicator 2 of 2: 2 ranks"), std::string::npos) << cmd.log;
  EXPECT_LE(widestLine(cmd.log), 120u) << cmd.log;
}

TEST(Report, AStoreThatIsNotThereIsAnError) {
  auto r = report::buildReport(planFor({"/nonexistent/store.db"}));
  EXPECT_FALSE(r);
}

}  // namespace
}  // namespace dynamiccl
