// Ranks agree on their inputs: 8 forked processes are the ranks of one communicator, each driving the
// built plugin (tuner and, where NCCL would load it, profiler), and one rank's environment differs
// as a real cluster's does (a failed mount, a degraded node, a variable not exported to it). Every
// rank must then make the same decision on every call, NCCL's own, and say once which rank differs.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "plugin/online_contract.h"
#include "learner/online_schedule.h"
#include "learner/online_table.h"
#include "tests/profiled_call.h"
#include "tests/test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::Choice;

constexpr int kRanks = 8;
constexpr int kOdd = 5;  // the rank whose environment differs
constexpr uint64_t kCalls = 3000;
constexpr uint64_t kSecondCalls = plugin::kCheckedFirstCall + 100;  // the second communicator's
constexpr uint64_t kEpochCalls = 500;  // DYNAMICCL_EPOCH_CALLS
// The profile's rule runs every call of the first epoch after the check's switch (online learning
// may move sizes off it later): at least half of those calls, where the ranks agreed.
constexpr uint64_t kRuleApplied = (kEpochCalls - plugin::kCheckedFirstCall) / 2;
constexpr uint64_t kSizes[] = {4096, 65536, 1 << 20, 16 << 20};

struct Case {
  // Applied in the odd rank only, after the environment every rank shares.
  std::function<void()> oddEnv = [] {};
  // Applied in every rank (odd says which) after the shared environment, before oddEnv.
  std::function<void(const std::string& dir, bool odd)> eachRank = [](const std::string&, bool) {};
  bool oddHasProfilerRole = true;
  bool oddAbsent = false;  // the odd rank never starts (a rank without this plugin)
  int timeout_ms = 30000;
  bool secondCommunicator = false;  // every rank then inits another one (another commId) and decides on it
  bool finalizeBeforeExit = false;  // each rank destroys its communicator before it exits, as NCCL's do
  // Runs before any rank starts, with the job's directory (records planted in dir/coord, an earlier job).
  std::function<void(const std::string& dir)> before = [](const std::string&) {};
};

constexpr uint64_t kCommId = 0x5eed1234;

struct RankResult {
  int exitCode = -1;
  uint64_t hash = 0;
  uint64_t ncclChoices = 0;  // calls that ran NCCL's own choice with NCCL's channel count
  uint64_t differLines = 0;  // lines saying the ranks' inputs differ (the first communicator)
  std::string line;          // the first of them
  std::string secondLine;    // the second communicator's, if any
  uint64_t secondNcclChoices = 0;
  uint64_t treeLL128 = 0;          // calls that ran tree/ll128 (no rule, nor NCCL, chooses it here)
  uint64_t foreignLines = 0;       // lines saying an epoch record is not this job's
  uint64_t ruleFirstEpoch = 0;     // calls from the check's switch to the first boundary that ran the rule
};


[[noreturn]] void runRank(int rank, const Case& c, const std::string& dir, const std::string& out) {
  const std::string path = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  setenv("DYNAMICCL_PROFILE", (dir + "/profile.json").c_str(), 1);
  setenv("DYNAMICCL_COORD_DIR", (dir + "/coord").c_str(), 1);
  setenv("DYNAMICCL_INPUTS_CHECK", "1", 1);
  setenv("DYNAMICCL_INPUTS_TIMEOUT_MS", std::to_string(c.timeout_ms).c_str(), 1);
  setenv("DYNAMICCL_ONLINE", "1", 1);
  setenv("DYNAMICCL_EPOCH_CALLS", std::to_string(kEpochCalls).c_str(), 1);
  setenv("DYNAMICCL_EPOCH_TIMEOUT_MS", "20000", 1);
  setenv("DYNAMICCL_TOPO", "nics_per_node=8", 1);
  setenv("DYNAMICCL_RECORD", "0", 1);
  setenv("NCCL_PROFILER_PLUGIN", path.c_str(), 1);
  const bool odd = rank == kOdd;
  c.eachRank(dir, odd);
  if (odd) c.oddEnv();
  const bool profilerRole = !odd || c.oddHasProfilerRole;
  if (!profilerRole) unsetenv("NCCL_PROFILER_PLUGIN");
  auto tuner = harness::TunerLibrary::open(path);
  if (!tuner.ok()) _exit(10);
  std::shared_ptr<harness::ProfilerLibrary> prof;
  if (profilerRole) {
    auto p = harness::ProfilerLibrary::open(path);
    if (!p.ok()) _exit(10);
    prof = p.value();
  }
  harness::CommSpec spec;
  spec.commId = kCommId;
  spec.nRanks = kRanks;
  auto comm = (*tuner)->init(spec);
  if (!comm.ok()) _exit(11);
  int mask = 0;
  void* pctx = nullptr;
  if (prof) {
    harness::ProfilerCommSpec pspec{spec.commId, kRanks, 1, rank};
    if (prof->init(pspec, &mask, &pctx) != ncclSuccess || !pctx) _exit(12);
  }
  // NCCL's own choice on this table is ring/simple; the profile says ring/ll.
  const harness::CostTable table = harness::ncclPicks(1, 2);
  std::mt19937_64 rng(77 + rank);
  std::lognormal_distribution<double> noise(0.0, 0.05);
  RankResult r;
  uint64_t clock_ns = 1'000'000;
  for (uint64_t i = 0; i < kCalls; ++i) {
    const uint64_t bytes = kSizes[i % 4];
    const Choice ch = (*comm)->decide(4, bytes, table);
    r.hash = learner::mix64(r.hash ^ (static_cast<uint64_t>(ch.algo + 1) << 8 | static_cast<uint64_t>(ch.proto + 1)) ^
                           (static_cast<uint64_t>(ch.nChannels) << 16));
    r.ncclChoices += ch.algo == 1 && ch.proto == 2 && ch.nChannels == 0;
    r.treeLL128 += ch.algo == 0 && ch.proto == 1;
    r.ruleFirstEpoch += i >= plugin::kCheckedFirstCall && i < kEpochCalls && ch.algo == 1 && ch.proto == 0;
    if (!prof) continue;
    const uint64_t lat_ns = static_cast<uint64_t>((10 + bytes / (ch.proto == 2 ? 12e3 : 4e3)) * 1000 * noise(rng));
    testing::emitProfiledCall(*prof, pctx, i, bytes, ch, rank, lat_ns, clock_ns);
  }
  if (c.secondCommunicator) {
    harness::CommSpec second = spec;
    second.commId = spec.commId + 1;
    auto comm2 = (*tuner)->init(second);
    if (!comm2.ok()) _exit(11);
    // Past the switch, where the check (off the init path) has ended and said why.
    for (uint64_t i = 0; i < kSecondCalls; ++i) {
      const Choice ch = (*comm2)->decide(4, kSizes[i % 4], table);
      r.secondNcclChoices += ch.algo == 1 && ch.proto == 2 && ch.nChannels == 0;
    }
  }
  if (c.finalizeBeforeExit) comm.value().reset();
  for (const std::string& l : harness::LogCapture::lines()) {
    r.foreignLines += l.find("is not sealed under this job's key") != std::string::npos;
    if (l.find("not known to be alike") == std::string::npos) continue;
    if (l.find("5eed1234") != std::string::npos) {
      if (r.differLines++ == 0) r.line = l;
    } else {
      r.secondLine = l;
    }
  }
  std::ofstream f(out);
  f << r.hash << ' ' << r.ncclChoices << ' ' << r.differLines << ' ' << r.secondNcclChoices << ' ' << r.treeLL128 << ' '
    << r.foreignLines << ' ' << r.ruleFirstEpoch << '\n'
    << r.line << '\n' << r.secondLine << '\n';
  f.close();
  _exit(f ? 0 : 13);
}

struct JobRun {
  std::vector<RankResult> ranks;
  pid_t oddPid = 0;
};

// The ranks of one communicator in `dir` (its profile and coord directory made already).
JobRun runRanks(const Case& c, const std::string& dir) {
  JobRun run;
  std::vector<pid_t> pids;
  std::vector<int> started;
  for (int r = 0; r < kRanks; ++r) {
    if (r == kOdd && c.oddAbsent) continue;
    const pid_t pid = fork();
    if (pid == 0) runRank(r, c, dir, dir + "/rank" + std::to_string(r));
    if (r == kOdd) run.oddPid = pid;
    pids.push_back(pid);
    started.push_back(r);
  }
  const std::vector<int> codes = testing::waitForRanks(pids, 120);
  for (size_t i = 0; i < started.size(); ++i) {
    RankResult res;
    res.exitCode = codes[i];
    std::ifstream in(dir + "/rank" + std::to_string(started[i]));
    unsigned long long h = 0, nccl = 0, lines = 0, second = 0, tree = 0, foreign = 0, rule = 0;
    if (in >> h >> nccl >> lines >> second >> tree >> foreign >> rule) {
      res.ruleFirstEpoch = rule;
      res.hash = h;
      res.ncclChoices = nccl;
      res.differLines = lines;
      res.secondNcclChoices = second;
      res.treeLL128 = tree;
      res.foreignLines = foreign;
      std::getline(in, res.line);
      std::getline(in, res.line);
      std::getline(in, res.secondLine);
    }
    run.ranks.push_back(res);
  }
  return run;
}

JobRun runCommunicator(const Case& c) {
  char tmpl[] = "/tmp/dynamiccl-inputs-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/profile.json") << testing::profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll"})");
  std::filesystem::create_directory(dir + "/coord");
  c.before(dir);
  JobRun run = runRanks(c, dir);
  std::filesystem::remove_all(dir);
  return run;
}

// Every rank ran NCCL's own choice on every call and said once why, with `field` (and the odd rank).
void expectNcclEverywhere(const JobRun& run, const std::string& field, bool namesOddRank = true) {
  ASSERT_FALSE(run.ranks.empty());
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const RankResult& x = run.ranks[r];
    EXPECT_EQ(x.exitCode, 0) << "rank " << r;
    EXPECT_EQ(x.hash, run.ranks[0].hash) << "rank " << r << " decided otherwise than the first";
    EXPECT_EQ(x.ncclChoices, kCalls) << "rank " << r << " changed NCCL's choice";
    EXPECT_EQ(x.differLines, 1u) << "rank " << r;
    EXPECT_NE(x.line.find(field), std::string::npos) << x.line;
    if (run.oddPid && namesOddRank) {
      EXPECT_NE(x.line.find("(pid " + std::to_string(run.oddPid) + ", record "), std::string::npos) << x.line;
    }
  }
}

// Every rank agreed and ran the profile's rule, alike.
void expectTheProfileEverywhere(const JobRun& run) {
  ASSERT_FALSE(run.ranks.empty());
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    EXPECT_EQ(run.ranks[r].exitCode, 0) << "rank " << r;
    EXPECT_EQ(run.ranks[r].hash, run.ranks[0].hash) << "rank " << r;
    EXPECT_EQ(run.ranks[r].differLines, 0u) << run.ranks[r].line;
    EXPECT_GE(run.ranks[r].ncclChoices, plugin::kCheckedFirstCall);
    EXPECT_GE(run.ranks[r].ruleFirstEpoch, kRuleApplied) << "the profile's rule did not apply";
  }
}

// Where a record of the communicator lives in a coordination directory (coord/dir_store.cpp).
std::string recordPath(const std::string& dir, uint64_t boundary, uint64_t commId = kCommId) {
  char comm[32];
  std::snprintf(comm, sizeof comm, "%016llx", static_cast<unsigned long long>(commId));
  std::filesystem::create_directories(dir + "/coord/" + comm);
  return dir + "/coord/" + comm + "/b" + std::to_string(boundary);
}
constexpr uint64_t kVerdictBoundary = 1ull << 62;  // coord::kInputsAgreementKey

TEST(InputAgreement, AVerdictPlantedBeforeTheRanksStartIsAdoptedByNone) {
  // "agree" written under the communicator's key in advance, and one rank's trust differs: adopted,
  // 7 ranks would run the profile's rule and the odd one NCCL's choice.
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_TRUST", "verified", 1); };
  c.before = [](const std::string& dir) {
    std::ofstream(recordPath(dir, kVerdictBoundary)) << "DYNAMICCL-INPUTS-VERDICT-1\nagree\n";
  };
  expectNcclEverywhere(runCommunicator(c), "not adopted", false);
}

TEST(InputAgreement, AVerdictAnEarlierCommunicatorWithTheSameIdLeftIsAdoptedByNone) {
  // An earlier communicator with this id and these inputs agreed (its records are sealed, under the
  // key these inputs give); now one rank's trust differs.
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_TRUST", "verified", 1); };
  c.before = [](const std::string& dir) {
    const JobRun earlier = runRanks(Case{}, dir);
    for (const RankResult& r : earlier.ranks) EXPECT_GE(r.ruleFirstEpoch, kRuleApplied) << "the earlier job did not agree";
    ASSERT_TRUE(std::filesystem::exists(recordPath(dir, kVerdictBoundary)));
  };
  expectNcclEverywhere(runCommunicator(c), "not adopted", false);
}

// An earlier communicator with this id and these inputs left its input records but no verdict (its
// ranks died before one was written): keeps only its `which`-th input record (by name), counted in
// the set of input records and sealed under the key these inputs give, with nothing else of that
// communicator's (coord/dir_store.cpp's sets: s-inputs/all/<member>, s-inputs/g-<group>/<member>).
void leaveOnlyAnEarlierInputRecord(const std::string& dir, size_t which) {
  namespace fs = std::filesystem;
  const JobRun earlier = runRanks(Case{}, dir);
  for (const RankResult& r : earlier.ranks) EXPECT_GE(r.ruleFirstEpoch, kRuleApplied) << "the earlier job did not agree";
  const fs::path comm = fs::path(recordPath(dir, kVerdictBoundary)).parent_path();
  ASSERT_TRUE(fs::exists(comm / "s-inputs" / "all"));
  std::vector<std::string> members;
  for (const auto& e : fs::directory_iterator(comm / "s-inputs" / "all")) members.push_back(e.path().filename());
  std::sort(members.begin(), members.end());
  ASSERT_GT(members.size(), which);
  const std::string kept = members[which];
  for (const auto& e : fs::directory_iterator(comm))
    if (e.path().filename() != "s-inputs") fs::remove_all(e.path());
  for (const auto& g : fs::directory_iterator(comm / "s-inputs"))
    for (const auto& m : fs::directory_iterator(g.path()))
      if (m.path().filename() != kept) fs::remove_all(m.path());
}

TEST(InputAgreement, AnInputRecordAnEarlierCommunicatorLeftWithoutAVerdictTurnsTuningOffOnEveryRank) {
  // The earlier record is counted with this job's: the 7 prompt ranks make the count 8 and one of them
  // proposes "agree"; the odd rank starts 2 s late, joins as the 9th and never confirms, so no "agree"
  // is written. Before the confirmation round the 7 prompt ranks agreed and ran the profile's rule,
  // while the late rank refused that verdict and ran NCCL's choice.
  Case c;
  c.oddEnv = [] { std::this_thread::sleep_for(std::chrono::seconds(2)); };
  c.before = [](const std::string& dir) { leaveOnlyAnEarlierInputRecord(dir, kRanks - 1); };
  expectNcclEverywhere(runCommunicator(c), "more than 8 input records", false);
}

TEST(InputAgreement, AnEarlierInputRecordAndALateRankWhoseTrustDiffersTurnTuningOffOnEveryRank) {
  Case c;
  c.oddEnv = [] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    setenv("DYNAMICCL_TRUST", "verified", 1);
  };
  c.before = [](const std::string& dir) { leaveOnlyAnEarlierInputRecord(dir, 2); };
  expectNcclEverywhere(runCommunicator(c), "more than 8 input records", false);
}

// The job's token files in dir: "token" and "other-token" (mode 600, two different secrets) and
// "fifo", a FIFO named by mistake.
void makeTokenFiles(const std::string& dir) {
  for (const char* name : {"token", "other-token"}) {
    std::ofstream(dir + "/" + name) << name << "-0123456789abcdef0123456789abcdef\n";
    chmod((dir + "/" + name).c_str(), 0600);
  }
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
}

void useToken(const std::string& dir, const char* name) {
  setenv("DYNAMICCL_COORD_TOKEN_FILE", (dir + "/" + name).c_str(), 1);
}

TEST(InputAgreement, RanksHoldingTheSameTokenDecideAsBefore) {
  Case c;
  c.before = makeTokenFiles;
  c.eachRank = [](const std::string& dir, bool) { useToken(dir, "token"); };
  expectTheProfileEverywhere(runCommunicator(c));
}

TEST(InputAgreement, ARankHoldingAnotherTokenTurnsTuningOffOnEveryRank) {
  // Before, the token file was not read: all 8 ranks agreed and ran the profile's rule.
  Case c;
  c.before = makeTokenFiles;
  c.eachRank = [](const std::string& dir, bool odd) { useToken(dir, odd ? "other-token" : "token"); };
  expectNcclEverywhere(runCommunicator(c), "DYNAMICCL_COORD_TOKEN_FILE holds another token", false);
}

TEST(InputAgreement, ATokenFileThatIsAFifoOnOneRankTurnsTuningOffOnEveryRankWithoutBlocking) {
  Case c;
  c.before = makeTokenFiles;
  c.eachRank = [](const std::string& dir, bool odd) { useToken(dir, odd ? "fifo" : "token"); };
  expectNcclEverywhere(runCommunicator(c), "DYNAMICCL_COORD_TOKEN_FILE is \"unusable\" there, \"read\" on 7 rank(s)");
}

TEST(InputAgreement, ATableSealedUnderAKeyTheStoreAloneGivesOpensForNoRankHoldingAToken) {
  // Without the input check, the epoch key is the communicator id's and the token's: a table sealed
  // under the id's alone (what anyone who can read the store could compute; here an earlier job's,
  // run without a token) is, with a token, read by every rank as not this job's. Before, the token
  // was not read and every rank ran that table.
  const auto checkOff = [](const std::string&, bool) { setenv("DYNAMICCL_INPUTS_CHECK", "0", 1); };
  Case c;
  c.before = [&](const std::string& dir) {
    makeTokenFiles(dir);
    Case earlier;
    earlier.eachRank = checkOff;
    runRanks(earlier, dir);
    ASSERT_TRUE(std::filesystem::exists(recordPath(dir, 500)));
  };
  c.eachRank = [&](const std::string& dir, bool odd) {
    checkOff(dir, odd);
    useToken(dir, "token");
  };
  const JobRun run = runCommunicator(c);
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    EXPECT_EQ(run.ranks[r].exitCode, 0) << "rank " << r;
    EXPECT_EQ(run.ranks[r].hash, run.ranks[0].hash) << "rank " << r << " decided otherwise than the first";
    EXPECT_EQ(run.ranks[r].foreignLines, 1u) << "rank " << r << " opened a table sealed without the token";
  }
}

TEST(InputAgreement, AForgedEpochTableIsAdoptedByNoRank) {
  // A well-formed table planted where the leader's first version goes, choosing tree/ll128 everywhere:
  // adopted, every rank would run it from call 500 on.
  Case c;
  c.before = [](const std::string& dir) {
    learner::OnlineTable forged;
    forged.setVersion(1);
    for (uint64_t bytes : kSizes) {
      learner::OnlineEntry& e = forged.entry(learner::onlineKey(4, bytes));
      e.exploit.count = 1;
      e.exploit.decisions[0] = policy::Decision{Algo::Tree, Proto::LL128, 0, 0};
    }
    std::ofstream(recordPath(dir, 500)) << forged.serialize();
  };
  const JobRun run = runCommunicator(c);
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    EXPECT_EQ(run.ranks[r].exitCode, 0) << "rank " << r;
    EXPECT_EQ(run.ranks[r].hash, run.ranks[0].hash) << "rank " << r << " decided otherwise than the first";
    EXPECT_EQ(run.ranks[r].treeLL128, 0u) << "rank " << r << " ran the forged table";
    EXPECT_EQ(run.ranks[r].foreignLines, 1u) << "rank " << r << " did not say the record was not this job's";
  }
}

// What the store holds that no rank of the job wrote is said once per communicator, not once per
// process (a second communicator meeting it was silent) nor once per poll (258 lines in a 3,000-call job).
TEST(InputAgreement, AForgedTableIsSaidOncePerCommunicator) {
  char tmpl[] = "/tmp/dynamiccl-inputs-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  learner::OnlineTable forged;
  forged.setVersion(1);
  forged.entry(learner::onlineKey(4, 4096)).exploit.count = 1;
  const uint64_t ids[] = {0xf0e1, 0xf0e2};
  for (uint64_t id : ids) std::ofstream(recordPath(dir, kEpochCalls, id)) << forged.serialize();
  testing::TempFile profile(testing::profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll"})"));
  const std::string plugin = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  harness::ScopedEnv p("DYNAMICCL_PROFILE", profile.path().c_str()), coord("DYNAMICCL_COORD_DIR", (dir + "/coord").c_str()),
      online("DYNAMICCL_ONLINE", "1"), epoch("DYNAMICCL_EPOCH_CALLS", std::to_string(kEpochCalls).c_str()),
      record("DYNAMICCL_RECORD", "0"), profiler("NCCL_PROFILER_PLUGIN", plugin.c_str());
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (uint64_t id : ids) {
    harness::CommSpec spec;
    spec.commId = id;
    auto comm = lib->init(spec);
    ASSERT_TRUE(comm.ok());
    for (uint64_t i = 0; i < 3 * kEpochCalls; ++i) (*comm)->decide(4, kSizes[i % 4], table);
  }
  EXPECT_EQ(testing::logLinesMentioning("is not sealed under this job's key"), 2u);
  std::filesystem::remove_all(dir);
}

TEST(InputAgreement, IdenticalInputsDecideAsBefore) {
  expectTheProfileEverywhere(runCommunicator(Case{}));
}

// A profile over 1 MiB is parsed off each rank's init path and applies from call 1000: the rank that
// started 300 ms late (its parse ends after the others passed that count) switches at the same call.
TEST(InputAgreement, ABigProfileSwitchesAtTheSameCallOnARankThatStartedLate) {
  Case c;
  c.before = [](const std::string& dir) {
    std::string rules = R"({"collective":"allreduce","algo":"ring","proto":"ll"})";
    for (int i = 0; rules.size() < (1u << 20) + 4096; ++i)
      rules += R"(,{"collective":"allgather","bytes":[)" + std::to_string(i * 100 + 1) + "," +
               std::to_string(i * 100 + 50) + R"(],"algo":"tree","proto":"ll128","channels":2})";
    std::ofstream(dir + "/profile.json") << testing::profileJson(rules);
  };
  c.oddEnv = [] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); };
  c.finalizeBeforeExit = true;
  const JobRun run = runCommunicator(c);
  ASSERT_EQ(run.ranks.size(), static_cast<size_t>(kRanks));
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    EXPECT_EQ(run.ranks[r].exitCode, 0) << "rank " << r;
    EXPECT_EQ(run.ranks[r].hash, run.ranks[0].hash) << "rank " << r << " decided otherwise than the first";
    EXPECT_EQ(run.ranks[r].differLines, 0u) << run.ranks[r].line;
    EXPECT_GE(run.ranks[r].ncclChoices, 1000u) << "rank " << r << ": the profile applied before its first call";
    EXPECT_LT(run.ranks[r].ncclChoices, kCalls - 500) << "rank " << r << ": the profile's rule did not apply";
  }
}

TEST(InputAgreement, ProfileMissingOnOneRank) {
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_PROFILE", "/nonexistent/mount/profile.json", 1); };
  expectNcclEverywhere(runCommunicator(c), "profile is \"unreadable");
}

TEST(InputAgreement, OneNodeSeesFourNicsWhereTheOthersSeeEight) {
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_TOPO", "nics_per_node=4", 1); };
  expectNcclEverywhere(runCommunicator(c), "topology is");
}

TEST(InputAgreement, TrustDiffersOnOneRank) {
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_TRUST", "verified", 1); };
  expectNcclEverywhere(runCommunicator(c), "DYNAMICCL_TRUST is \"verified\" there, \"all\" on 7 rank(s)");
}

TEST(InputAgreement, VerifyDiffersOnOneRank) {
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_VERIFY", "0", 1); };
  expectNcclEverywhere(runCommunicator(c), "DYNAMICCL_VERIFY is \"0\" there");
}

TEST(InputAgreement, EnableDiffersOnOneRank) {
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_ENABLE", "0", 1); };
  expectNcclEverywhere(runCommunicator(c), "DYNAMICCL_ENABLE is \"0\" there");
}

TEST(InputAgreement, EpochLengthDiffersOnOneRank) {
  Case c;
  c.oddEnv = [] { setenv("DYNAMICCL_EPOCH_CALLS", "700", 1); };
  expectNcclEverywhere(runCommunicator(c), "DYNAMICCL_EPOCH_CALLS is \"700\" there, \"500\"");
}

TEST(InputAgreement, ProfilerRoleMissingOnOneRank) {
  Case c;
  c.oddHasProfilerRole = false;
  expectNcclEverywhere(runCommunicator(c), "NCCL_PROFILER_PLUGIN is \"not this library\" there");
}

TEST(InputAgreement, ARankThatNeverPublishesTurnsTuningOffEverywhereAfterTheBoundedWait) {
  Case c;
  c.oddAbsent = true;
  c.timeout_ms = 3000;
  c.secondCommunicator = true;
  const JobRun run = runCommunicator(c);
  EXPECT_EQ(run.ranks.size(), static_cast<size_t>(kRanks - 1));
  expectNcclEverywhere(run, "of 8 ranks published their inputs within 3000 ms");
  // The next communicator misses the same rank: it waits 1 s, not the full timeout, and ends alike.
  for (const RankResult& r : run.ranks) {
    EXPECT_EQ(r.secondNcclChoices, kSecondCalls);
    EXPECT_NE(r.secondLine.find("of 8 ranks published their inputs within 1000 ms"), std::string::npos) << r.secondLine;
  }
}

// NCCL's init never waits for the other ranks: the check runs off its path, and the wait (here for
// ranks that never come) is at the switch call, after which every rank keeps NCCL's choices. Before,
// init itself waited out the whole timeout.
TEST(InputAgreement, InitReturnsWithoutWaitingForTheOtherRanks) {
  char tmpl[] = "/tmp/dynamiccl-inputs-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  testing::TempFile profile(testing::profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll"})"));
  harness::ScopedEnv p("DYNAMICCL_PROFILE", profile.path().c_str()), coord("DYNAMICCL_COORD_DIR", dir.c_str()),
      check("DYNAMICCL_INPUTS_CHECK", "1"), timeout("DYNAMICCL_INPUTS_TIMEOUT_MS", "4000"),
      record("DYNAMICCL_RECORD", "0");
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  harness::CommSpec spec;
  spec.commId = 0x1a7e1a7e;
  spec.nRanks = kRanks;  // the other 7 never init
  const auto t0 = std::chrono::steady_clock::now();
  auto comm = lib->init(spec);
  const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(comm.ok());
  EXPECT_LT(init_s, 2.0) << "init waited for the input check";
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (uint64_t i = 0; i <= plugin::kCheckedFirstCall; ++i)
    ASSERT_EQ((*comm)->decide(4, 4096, table), (Choice{1, 2, 0})) << "call " << i;
  const double switch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(switch_s, 3.5) << "the switch call did not wait for the check";
  size_t said = 0;
  for (const std::string& l : harness::LogCapture::lines())
    said += l.find("not known to be alike") != std::string::npos && l.find("published their inputs") != std::string::npos;
  EXPECT_EQ(said, 1u);
  comm.value().reset();
  std::filesystem::remove_all(dir);
}

// A store that refuses this process's inputs (here an etcd endpoint nobody listens on): the first
// communicator's check concludes within a second (its retries), and the next ones within the
// process's memo of that failure conclude at once, each with one line, every call NCCL's choice.
// Before, each communicator paid the whole retry, and a silent store each one's request timeouts.
TEST(InputAgreement, AStoreThatFailedThisProcessIsNotWaitedOnAgainByItsNextCommunicators) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);  // nobody listens there: every connection is refused at once
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  testing::TempFile profile(testing::profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll"})"));
  harness::ScopedEnv p("DYNAMICCL_PROFILE", profile.path().c_str()), etcd("DYNAMICCL_ETCD", endpoint.c_str()),
      client("DYNAMICCL_ETCD_CLIENT", "timeout_ms=300"), check("DYNAMICCL_INPUTS_CHECK", "1"),
      timeout("DYNAMICCL_INPUTS_TIMEOUT_MS", "10000"), record("DYNAMICCL_RECORD", "0");
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  const harness::CostTable table = harness::ncclPicks(1, 2);
  std::vector<double> took_s;
  for (uint64_t id : {0x5707e001ull, 0x5707e002ull, 0x5707e003ull, 0x5707e004ull}) {
    harness::CommSpec spec;
    spec.commId = id;
    spec.nRanks = kRanks;
    spec.nNodes = 2;
    const auto t0 = std::chrono::steady_clock::now();
    auto comm = lib->init(spec);
    ASSERT_TRUE(comm.ok());
    for (uint64_t i = 0; i <= plugin::kCheckedFirstCall + 10; ++i)
      ASSERT_EQ((*comm)->decide(4, 4096, table), (Choice{1, 2, 0})) << "communicator " << id << ", call " << i;
    took_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  EXPECT_LT(took_s[0], 1.5) << "the first communicator waited past its retries";
  for (size_t i = 1; i < took_s.size(); ++i) EXPECT_LT(took_s[i], 0.2) << "communicator " << i << " asked the store again";
  size_t refused = 0, memo = 0;
  for (const std::string& l : harness::LogCapture::lines()) {
    refused += l.find("refused this rank's inputs") != std::string::npos;
    memo += l.find("not asked again") != std::string::npos;
  }
  EXPECT_EQ(refused, 1u);
  EXPECT_EQ(memo, 3u);
}

// One process holding every rank of a communicator (one thread per GPU): the ranks' inits run
// concurrently, each claims its own slot, and they agree.
TEST(InputAgreement, RanksOfOneProcessInitConcurrentlyAndAgree) {
  char tmpl[] = "/tmp/dynamiccl-inputs-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  testing::TempFile profile(testing::profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll"})"));
  harness::ScopedEnv p("DYNAMICCL_PROFILE", profile.path().c_str()), coord("DYNAMICCL_COORD_DIR", dir.c_str()),
      check("DYNAMICCL_INPUTS_CHECK", "1"), record("DYNAMICCL_RECORD", "0");
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  harness::LogCapture::clear();
  std::vector<std::unique_ptr<harness::TunerComm>> comms(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      harness::CommSpec spec;
      spec.commId = 0x7e57ab1e;
      spec.nRanks = kRanks;
      auto c = lib->init(spec);
      if (c.ok()) comms[r] = std::move(c.value());
    });
  for (auto& t : threads) t.join();
  const harness::CostTable table = harness::ncclPicks(1, 2);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(comms[r]) << "rank " << r;
    // The check runs off the init path, in the check pool, all 8 at once: NCCL's choices until its switch.
    for (uint64_t i = 0; i < plugin::kCheckedFirstCall; ++i)
      ASSERT_EQ(comms[r]->decide(4, 4096, table), (Choice{1, 2, 0})) << "rank " << r << ", call " << i;
    EXPECT_EQ(comms[r]->decide(4, 4096, table), (Choice{1, 0, 0})) << "rank " << r << ": the profile's ring/ll";
  }
  for (const std::string& l : harness::LogCapture::lines())
    EXPECT_EQ(l.find("not known to be alike"), std::string::npos) << l;
  comms.clear();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dynamiccl
