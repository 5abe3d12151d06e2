// Online updates through a real etcd on loopback: 8 forked processes are the ranks of one
// communicator presented as 2 nodes of 4, each driving the built plugin (tuner + profiler roles) with
// DYNAMICCL_ETCD. Healthy, killed mid-epoch and started again, stopped and resumed, one or two
// members of three killed, a trickling endpoint, wrong credentials, a foreign record in the prefix,
// and a rank epochs behind the others when etcd is killed, stopped or restarted empty: every rank's
// decisions hash alike (ranks wait while etcd cannot answer), and no rank hangs once it is back (a
// rank past the deadline fails the test).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "plugin/online_contract.h"
#include "learner/online_schedule.h"
#include "tests/etcd_fixture.h"
#include "tests/profiled_call.h"
#include "tests/test_support.h"
#include "trust_opt_in.h"

namespace dynamiccl {
namespace {

using harness::Choice;
using testing::EtcdCluster;

#define SKIP_WITHOUT_ETCD() \
  if (testing::etcdBinary().empty()) GTEST_SKIP() << "no etcd binary (scripts/setup.sh installs etcd-server)"

constexpr int kRanks = 8;
constexpr uint64_t kCommId = 0xe7cd0001;
constexpr uint64_t kSizes[] = {4096, 65536, 1 << 20, 16 << 20};

struct Scenario {
  std::string endpoints;
  std::string authFile;
  uint64_t calls = 12000;
  int epochCalls = 1000;
  int epochTimeout_ms = 20000;
  int etcdTimeout_ms = 2000;
  int inputsTimeout_ms = 20000;
  int64_t pauseAt = -1;  // every rank waits here for the parent's fault (files "paused<rank>", then "go")
  int straggler = -1;           // this rank pauses at stragglerAt instead: epochs behind the others
  int64_t stragglerAt = -1;
  int64_t pauseAtOf(int rank) const { return rank == straggler ? stragglerAt : pauseAt; }
};

struct RankResult {
  int exitCode = -1;
  uint64_t hash = 0;
  uint64_t lateNonStatic = 0;  // last tenth, 16 MiB: not the profile's ring/ll (a version was adopted)
  uint64_t ncclChoices = 0;    // NCCL's own ring/simple with its channel count
  uint64_t longestCall_us = 0; // the longest one decide() (getCollInfo) took past the input check's switch
  uint64_t warnings = 0;       // warning lines the rank logged
};

double trueLatency_us(int proto, uint64_t bytes) {
  const double gbps = proto == 0 ? 4 : proto == 1 ? 9 : 12;
  return (proto == 0 ? 5 : proto == 1 ? 8 : 12) + static_cast<double>(bytes) / (gbps * 1e3);
}

bool waitForFile(const std::string& path, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

[[noreturn]] void runRank(int rank, const Scenario& s, const std::string& dir) {
  const std::string path = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  setenv("DYNAMICCL_PROFILE", (dir + "/profile.json").c_str(), 1);
  setenv("DYNAMICCL_ONLINE", "1", 1);
  setenv("DYNAMICCL_ETCD", s.endpoints.c_str(), 1);
  const std::string client = "timeout_ms=" + std::to_string(s.etcdTimeout_ms) + (s.authFile.empty() ? "" : ",auth_file=" + s.authFile);
  setenv("DYNAMICCL_ETCD_CLIENT", client.c_str(), 1);
  setenv("DYNAMICCL_EPOCH_CALLS", std::to_string(s.epochCalls).c_str(), 1);
  setenv("DYNAMICCL_EPOCH_TIMEOUT_MS", std::to_string(s.epochTimeout_ms).c_str(), 1);
  setenv("DYNAMICCL_INPUTS_CHECK", "1", 1);
  setenv("DYNAMICCL_INPUTS_TIMEOUT_MS", std::to_string(s.inputsTimeout_ms).c_str(), 1);
  setenv("DYNAMICCL_RECORD", "0", 1);
  setenv("NCCL_PROFILER_PLUGIN", path.c_str(), 1);
  auto tuner = harness::TunerLibrary::open(path);
  auto prof = harness::ProfilerLibrary::open(path);
  if (!tuner.ok() || !prof.ok()) _exit(10);
  harness::CommSpec spec;
  spec.commId = kCommId;
  spec.nRanks = kRanks;
  spec.nNodes = 2;
  auto comm = (*tuner)->init(spec);
  if (!comm.ok()) _exit(11);
  int mask = 0;
  void* pctx = nullptr;
  harness::ProfilerCommSpec pspec{kCommId, kRanks, 2, rank};
  if ((*prof)->init(pspec, &mask, &pctx) != ncclSuccess || !pctx) _exit(12);
  std::mt19937_64 rng(1000 + rank);
  std::lognormal_distribution<double> noise(0.0, 0.05);
  const harness::CostTable table = harness::ncclPicks(1, 2);
  RankResult r;
  std::ofstream calls(dir + "/calls" + std::to_string(rank));  // what each call ran: where ranks split, and when
  uint64_t clock_ns = 1'000'000;
  for (uint64_t i = 0; i < s.calls; ++i) {
    // Every rank pauses at the same call, as a collective would hold them together, for the fault.
    if (static_cast<int64_t>(i) == s.pauseAtOf(rank)) {
      std::ofstream(dir + "/paused" + std::to_string(rank)) << "1";
      if (!waitForFile(dir + "/go", 60)) _exit(14);
    }
    const uint64_t bytes = kSizes[i % 4];
    const auto before = std::chrono::steady_clock::now();
    const Choice c = (*comm)->decide(4, bytes, table);
    if (i > plugin::kCheckedFirstCall)  // past the input check's switch (its wait is the check's, not a boundary's)
      r.longestCall_us = std::max<uint64_t>(
          r.longestCall_us,
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - before).count());
    calls << c.algo << '/' << c.proto << '/' << c.nChannels << '\n';
    r.hash = learner::mix64(r.hash ^ (static_cast<uint64_t>(c.algo + 1) << 8 | static_cast<uint64_t>(c.proto + 1)) ^
                           (static_cast<uint64_t>(c.nChannels) << 16));
    if (bytes == kSizes[3] && i >= s.calls * 9 / 10 && !(c.algo == 1 && c.proto == 0)) ++r.lateNonStatic;
    r.ncclChoices += c.algo == 1 && c.proto == 2 && c.nChannels == 0;
    const uint64_t lat_ns = static_cast<uint64_t>(1000 * trueLatency_us(c.proto, bytes) * noise(rng));
    testing::emitProfiledCall(**prof, pctx, i, bytes, c, rank, lat_ns, clock_ns);
  }
  calls.close();
  {
    std::ofstream log(dir + "/log" + std::to_string(rank));
    for (const std::string& line : harness::LogCapture::lines()) log << line << '\n';
  }
  std::ofstream f(dir + "/rank" + std::to_string(rank));
  f << r.hash << ' ' << r.lateNonStatic << ' ' << r.ncclChoices << ' ' << r.longestCall_us << ' '
    << harness::LogCapture::count(NCCL_LOG_WARN) << '\n';
  f.close();
  _exit(f ? 0 : 13);
}

// Where rank r first ran otherwise than rank 0, and both ranks' log lines: what a split test shows.
void printSplit(const std::string& dir, int r) {
  std::ifstream a(dir + "/calls0"), b(dir + "/calls" + std::to_string(r));
  std::string x, y;
  for (uint64_t call = 0; std::getline(a, x) && std::getline(b, y); ++call)
    if (x != y) {
      std::printf("rank %d first ran otherwise than rank 0 at call %llu: %s against %s (algo/proto/channels)\n", r,
                  static_cast<unsigned long long>(call), y.c_str(), x.c_str());
      break;
    }
  for (int k : {0, r}) {
    std::printf("--- rank %d's log\n", k);
    std::ifstream log(dir + "/log" + std::to_string(k));
    for (std::string line; std::getline(log, line);) std::printf("%s\n", line.c_str());
  }
}

// Forks the ranks; `fault` runs once every rank has paused (if the scenario pauses them), then they go on.
std::vector<RankResult> runJob(const Scenario& s, const std::function<void()>& fault = {}, double deadline_s = 120) {
  char tmpl[] = "/tmp/dynamiccl-etcdjob-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/profile.json") << testing::profileJson(R"({"collective":"allreduce","algo":"ring","proto":"ll"})");
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) runRank(r, s, dir);
    pids.push_back(pid);
  }
  if (s.pauseAt >= 0) {
    for (int r = 0; r < kRanks; ++r)
      EXPECT_TRUE(waitForFile(dir + "/paused" + std::to_string(r), 60)) << "rank " << r << " never reached the pause";
    // What a straggler is guaranteed: records published more than one read-ahead poll (1 s, far from its
    // own boundary) before the fault. A fault inside that poll is the window bounded waits leave.
    if (s.straggler >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    if (fault) fault();
    std::ofstream(dir + "/go") << "1";
  }
  const std::vector<int> codes = testing::waitForRanks(pids, deadline_s);
  std::vector<RankResult> results(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    results[r].exitCode = codes[r];
    std::ifstream in(dir + "/rank" + std::to_string(r));
    unsigned long long h = 0, late = 0, nccl = 0, longest = 0, warnings = 0;
    if (in >> h >> late >> nccl >> longest >> warnings)
      results[r].hash = h, results[r].lateNonStatic = late, results[r].ncclChoices = nccl,
      results[r].longestCall_us = longest, results[r].warnings = warnings;
    else if (results[r].exitCode == 0) results[r].exitCode = -2;
  }
  for (int r = 1; r < kRanks; ++r)
    if (results[r].hash != results[0].hash) {
      printSplit(dir, r);  // the first rank that split from rank 0
      break;
    }
  std::filesystem::remove_all(dir);
  return results;
}

// The job with etcd down from once every rank paused until down_ms later: `down` takes it down on
// the test's thread, `back` brings it back on another.
std::vector<RankResult> runJobWithOutage(const Scenario& s, int down_ms, const std::function<void()>& down,
                                         const std::function<void()>& back) {
  std::thread resume;
  auto results = runJob(s, [&] {
    down();
    resume = std::thread([&back, down_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(down_ms));
      back();
    });
  });
  if (resume.joinable()) resume.join();
  return results;
}

// The job with etcd stopped (SIGSTOP) once every rank paused, and resumed stopped_ms later.
std::vector<RankResult> runJobWithEtcdStopped(const Scenario& s, const EtcdCluster& etcd, int stopped_ms) {
  return runJobWithOutage(
      s, stopped_ms, [&] { etcd.signal(SIGSTOP); }, [&] { etcd.signal(SIGCONT); });
}

// The job with etcd's members `killed` (SIGKILL) once every rank paused, each started again with its
// data down_ms later.
std::vector<RankResult> runJobWithEtcdKilled(const Scenario& s, EtcdCluster& etcd, const std::vector<size_t>& killed,
                                             int down_ms) {
  bool back = true;
  auto results = runJobWithOutage(
      s, down_ms, [&] { for (size_t i : killed) etcd.kill9(i); },
      [&] {
        for (size_t i : killed) etcd.startAgainKept(i);
        back = etcd.ready();
      });
  EXPECT_TRUE(back) << "etcd did not answer again after its restart";
  return results;
}

void expectSameDecisions(const std::vector<RankResult>& results) {
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
    EXPECT_EQ(results[r].hash, results[0].hash) << "rank " << r << " decided otherwise than rank 0";
  }
}

// No getCollInfo waited longer than the boundary's bound (the leader's wait for its own publish and
// the boundary's share it: plus the boundary's least read time and one etcd request), nor logged more
// than two warnings.
void expectBoundedOnce(const std::vector<RankResult>& results, int epochTimeout_ms, int etcdTimeout_ms) {
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_LE(results[r].longestCall_us, 1000u * static_cast<uint64_t>(epochTimeout_ms + etcdTimeout_ms + 200))
        << "rank " << r << " waited past the bound";
    EXPECT_LE(results[r].warnings, 2u) << "rank " << r;
  }
}

// A job that meets a fault once every rank paused at `pauseAt`: short timeouts (1 s for a boundary,
// 500 ms for an etcd request), so that a wait past them shows.
Scenario outageScenario(const EtcdCluster& etcd, int64_t pauseAt) {
  Scenario s;
  s.endpoints = etcd.endpoints();
  s.epochTimeout_ms = 1000;
  s.etcdTimeout_ms = 500;
  s.pauseAt = pauseAt;
  return s;
}

// The same with rank 3 pausing at `stragglerAt` instead: epochs behind the others (othersAt: past the
// leader's publication of the boundary before, short of the next, at x500).
Scenario stragglerScenario(const EtcdCluster& etcd, int64_t othersAt, int64_t stragglerAt) {
  Scenario s = outageScenario(etcd, othersAt);
  s.straggler = 3;
  s.stragglerAt = stragglerAt;
  return s;
}

TEST(EtcdJob, TwoNodesOfFourDecideIdenticallyAndLearn) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  Scenario s;
  s.endpoints = etcd.endpoint();
  const auto results = runJob(s);
  expectSameDecisions(results);
  EXPECT_GT(results[0].lateNonStatic, 0u) << "no version was adopted through etcd";
}

TEST(EtcdJob, EtcdKilledMidEpochCostsEveryRankTheBoundOnceAndEveryRankKeepsOneVersion) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  // Before the leader publishes boundary 4000 (halfway, at call 3500). Down 4 s, four timeouts: no rank
  // holds 4000, so every rank waits there one bound (1 s) and keeps the version of 3000 for good.
  // Before, every rank waited in one getCollInfo until etcd was back (4 s; for good if it never was).
  const Scenario s = outageScenario(etcd, 3200);
  const auto results = runJobWithEtcdKilled(s, etcd, {0}, 4000);
  expectSameDecisions(results);
  expectBoundedOnce(results, s.epochTimeout_ms, s.etcdTimeout_ms);
  EXPECT_GT(results[0].lateNonStatic, 0u) << "the versions adopted before the outage did not stay in force";
}

TEST(EtcdJob, EtcdKilledForGoodWithARankAnEpochBehindEndsEveryRankAlikeWithinTheBound) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  // etcd never comes back; rank 3 an epoch behind holds 3000 (read ahead) and meets the same boundary
  // without a record as the others. Before, every rank stayed inside getCollInfo for good.
  const Scenario s = stragglerScenario(etcd, 3200, 2200);
  const auto results = runJob(s, [&] { etcd.kill9(0); }, 60);
  expectSameDecisions(results);
  expectBoundedOnce(results, s.epochTimeout_ms, s.etcdTimeout_ms);
}

TEST(EtcdJob, EtcdStoppedBetweenTheFollowersAndTheLeadersGiveUpSplitsNoRank) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  // The leader publishes boundary 3000 (at call 2500) while etcd is stopped. Before, a follower froze
  // on its own after twice the timeout (2 s) without an answer, and the leader, which first waits a
  // timeout for its own publish, 1 s later: a stop of 2.5 s ended between the two, the leader adopted
  // its table at 3000 and the followers kept theirs.
  expectSameDecisions(runJobWithEtcdStopped(outageScenario(etcd, 2400), etcd, 2500));
}

TEST(EtcdJob, EtcdStoppedEightSecondsWithARankAnEpochBehindSplitsNoRank) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  Scenario s = stragglerScenario(etcd, 2400, 1400);
  s.epochTimeout_ms = 3000;
  expectSameDecisions(runJobWithEtcdStopped(s, etcd, 8000));
}

TEST(EtcdJob, EtcdStoppedThirtySecondsWithARankAnEpochBehindSplitsNoRank) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  // Thirty timeouts: every rank waits (the straggler holds what the others adopted), then goes on alike.
  expectSameDecisions(runJobWithEtcdStopped(stragglerScenario(etcd, 2400, 1400), etcd, 30000));
}

TEST(EtcdJob, TwoOfThreeMembersKilledCostEveryRankTheBoundOnceAndKeepOneVersion) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.ready());
  // No quorum for 3 s: the one member left answers no read; every rank waits one bound at 3000, then
  // keeps the version of 2000, alike.
  const Scenario s = outageScenario(etcd, 2400);
  const auto results = runJobWithEtcdKilled(s, etcd, {0, 1}, 3000);
  expectSameDecisions(results);
  expectBoundedOnce(results, s.epochTimeout_ms, s.etcdTimeout_ms);
}

TEST(EtcdJob, EtcdStoppedAndResumedOnlyDelays) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  Scenario s;
  s.endpoints = etcd.endpoint();
  s.pauseAt = 3600;  // around the leader's publication of boundary 4000: the followers still read
  const auto results = runJobWithEtcdStopped(s, etcd, 1500);
  expectSameDecisions(results);
  EXPECT_GT(results[0].lateNonStatic, 0u) << "versions stopped being adopted after the resume";
}

TEST(EtcdJob, AThreeMemberClusterLosingOneMemberKeepsProgressing) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.ready());
  Scenario s;
  s.endpoints = etcd.endpoints();
  s.pauseAt = 3200;
  const auto results = runJob(s, [&] { etcd.kill9(0); });  // the first endpoint every rank uses
  expectSameDecisions(results);
  EXPECT_GT(results[0].lateNonStatic, 0u) << "no version was adopted after the member died";
}

TEST(EtcdJob, ATricklingEndpointKeepsNcclsChoiceOnEveryRankWithoutHanging) {
  // Accepts and answers one byte per second: each request ends at its bound, the input check
  // cannot publish, and every rank keeps NCCL's choices.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 64), 0);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const pid_t server = fork();
  if (server == 0) {
    for (;;) {
      const int c = accept(fd, nullptr, nullptr);
      if (c < 0) _exit(0);
      if (fork() == 0) {
        for (const char* p = "HTTP/1.1 200 OK\r\n"; *p; ++p) {
          if (send(c, p, 1, MSG_NOSIGNAL) != 1) break;
          sleep(1);
        }
        _exit(0);
      }
      close(c);
    }
  }
  close(fd);
  Scenario s;
  s.endpoints = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  s.calls = 2000;
  const auto results = runJob(s);
  kill(-server, SIGKILL);
  kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
  expectSameDecisions(results);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(results[r].ncclChoices, s.calls) << "rank " << r;
}

TEST(EtcdJob, HundredSilentEndpointsKeepNcclsChoiceOnEveryRankWithinTheTimeout) {
  // Each store operation ends within DYNAMICCL_ETCD_CLIENT's timeout_ms, all endpoints together (100 tries
  // of 200 ms each would hold every rank's init for 40 s). A silent store cannot be told from one too slow
  // for its bound (a thousand ranks' joins at once): the check waits for it to its own timeout, no longer,
  // and every rank keeps NCCL's choices.
  testing::SilentEndpoints silent(100);
  ASSERT_EQ(silent.size(), 100u);
  Scenario s;
  s.endpoints = silent.endpoints();
  s.etcdTimeout_ms = 200;
  s.inputsTimeout_ms = 4000;
  s.calls = 2000;
  const auto results = runJob(s, {}, 20);
  expectSameDecisions(results);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(results[r].ncclChoices, s.calls) << "rank " << r;
}

TEST(EtcdJob, WrongCredentialsKeepNcclsChoiceOnEveryRank) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  ASSERT_EQ(etcd.ctl("user add root:rootpw"), 0);
  ASSERT_EQ(etcd.ctl("auth enable"), 0);
  testing::TempFile cred("root:not-the-password\n", "");
  chmod(cred.path().c_str(), 0600);
  Scenario s;
  s.endpoints = etcd.endpoint();
  s.authFile = cred.path();
  s.calls = 2000;
  const auto results = runJob(s);
  expectSameDecisions(results);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(results[r].ncclChoices, s.calls) << "rank " << r;
}

TEST(EtcdJob, AForeignRecordInThePrefixFreezesEveryRankAlike) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  char key[64];
  std::snprintf(key, sizeof key, "dynamiccl/%016llx/b2000", static_cast<unsigned long long>(kCommId));
  ASSERT_EQ(etcd.ctl(std::string("put ") + key + " 'not a table'"), 0);  // where the leader's version goes
  ASSERT_EQ(etcd.ctl(std::string("put 'dynamiccl/%%not-a-key' junk")), 0);
  Scenario s;
  s.endpoints = etcd.endpoint();
  const auto results = runJob(s);
  expectSameDecisions(results);  // every rank read the same bytes at boundary 2000: frozen alike
  EXPECT_NE(etcd.ctlOutput(std::string("get ") + key).find("not a table"), std::string::npos)
      << "the foreign record was replaced: records are write-once";
}

// A rank epochs behind the others (host-side skew is ordinary: NCCL calls are asynchronous) when the
// store fails. Every rank reads records ahead of its own position as they appear, so the straggler
// holds what the others adopted and meets the failure at the same boundary as they do.

void expectAlikeWhenEtcdIsKilledWithAStraggler(int64_t othersAt, int64_t stragglerAt) {
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  expectSameDecisions(runJobWithEtcdKilled(stragglerScenario(etcd, othersAt, stragglerAt), etcd, {0}, 3000));
}

TEST(EtcdJob, EtcdKilledWithARankAnEpochBehindHoldsEveryRankAlike) {
  SKIP_WITHOUT_ETCD();
  // Rank 3 had not reached 3000's half-epoch when etcd died: it holds 3000 and waits with the others.
  expectAlikeWhenEtcdIsKilledWithAStraggler(3200, 2200);
}

TEST(EtcdJob, EtcdKilledWithARankSeveralEpochsBehindHoldsEveryRankAlike) {
  SKIP_WITHOUT_ETCD();
  expectAlikeWhenEtcdIsKilledWithAStraggler(5200, 1200);
}

TEST(EtcdJob, EtcdStoppedPastTwiceTheTimeoutWithARankAnEpochBehindSplitsNoRank) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  // Stopped 4 s, four timeouts: every rank waits at 4000 (the straggler holds 3000) and goes on alike.
  expectSameDecisions(runJobWithEtcdStopped(stragglerScenario(etcd, 3200, 2200), etcd, 4000));
}

// etcd restarted with an empty data directory once every rank paused: every rank decides alike and
// versions go on being adopted after it.
void expectAlikeAndLearningAfterAnEmptyRestart(EtcdCluster& etcd, const Scenario& s) {
  bool restarted = false;
  const auto results = runJob(s, [&] { restarted = etcd.restartEmpty(); });
  ASSERT_TRUE(restarted);
  expectSameDecisions(results);
  EXPECT_GT(results[0].lateNonStatic, 0u) << "no version was adopted after the store came back";
}

TEST(EtcdJob, EtcdRestartedEmptyWithARankSeveralEpochsBehindKeepsEveryRankAlikeAndLearning) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  // Rank 3 at 1200 holds 2000-5000; before, it found the store empty at 2000 and wrote FROZEN there
  // while the others had run the leader's versions.
  expectAlikeAndLearningAfterAnEmptyRestart(etcd, stragglerScenario(etcd, 5200, 1200));
}

TEST(EtcdJob, EtcdRestartedEmptyReceivesTheRecordsAStragglerNeverReadFromTheRanksHoldingThem) {
  SKIP_WITHOUT_ETCD();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  // Epochs of 100 calls; rank 3 at 150 reads ahead 16 boundaries (to 1700): 1800-2100 only the others
  // hold. They find the emptied store lacks what they read and re-publish it, write-once, before the
  // straggler's FROZEN claim (a whole timeout after the store answers) could fire.
  Scenario s = stragglerScenario(etcd, 2120, 150);
  s.epochCalls = 100;
  s.calls = 8000;  // learning (the first epoch measures nothing) has its epochs after the restart too
  s.epochTimeout_ms = 5000;
  expectAlikeAndLearningAfterAnEmptyRestart(etcd, s);
}

// The whole fault matrix: every fault the store meets (stopped 1, 4.5, 8 and 30 s; one and two of
// three members killed; restarted empty), each with every rank at the same call, with rank 3 one epoch
// behind, and several. Every rank decides alike on every call.
enum class Fault { Stopped1s, Stopped4500ms, Stopped8s, Stopped30s, OneOfThreeKilled, TwoOfThreeKilled, RestartedEmpty };
enum class Straggler { None, OneEpoch, SeveralEpochs };

struct MatrixCase {
  Fault fault;
  Straggler straggler;
};

std::string caseName(const ::testing::TestParamInfo<MatrixCase>& info) {
  static const char* faults[] = {"Stopped1s", "Stopped4500ms", "Stopped8s", "Stopped30s",
                                 "OneOfThreeKilled", "TwoOfThreeKilled", "RestartedEmpty"};
  static const char* stragglers[] = {"AllAtOneCall", "ARankAnEpochBehind", "ARankSeveralEpochsBehind"};
  return std::string(faults[static_cast<int>(info.param.fault)]) + "_" + stragglers[static_cast<int>(info.param.straggler)];
}

class EtcdFaultMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(EtcdFaultMatrix, EveryRankDecidesAlikeOnEveryCall) {
  SKIP_WITHOUT_ETCD();
  const MatrixCase m = GetParam();
  const bool threeMembers = m.fault == Fault::OneOfThreeKilled || m.fault == Fault::TwoOfThreeKilled;
  EtcdCluster etcd(threeMembers ? 3 : 1);
  ASSERT_TRUE(etcd.ready());
  const Scenario s = m.straggler == Straggler::None       ? outageScenario(etcd, 2400)
                     : m.straggler == Straggler::OneEpoch ? stragglerScenario(etcd, 3200, 2200)
                                                          : stragglerScenario(etcd, 5200, 1200);
  std::vector<RankResult> results;
  switch (m.fault) {
    case Fault::Stopped1s: results = runJobWithEtcdStopped(s, etcd, 1000); break;
    case Fault::Stopped4500ms: results = runJobWithEtcdStopped(s, etcd, 4500); break;
    case Fault::Stopped8s: results = runJobWithEtcdStopped(s, etcd, 8000); break;
    case Fault::Stopped30s: results = runJobWithEtcdStopped(s, etcd, 30000); break;
    case Fault::OneOfThreeKilled: results = runJobWithEtcdKilled(s, etcd, {0}, 3000); break;
    case Fault::TwoOfThreeKilled: results = runJobWithEtcdKilled(s, etcd, {0, 1}, 3000); break;
    case Fault::RestartedEmpty: {
      bool restarted = false;
      results = runJob(s, [&] { restarted = etcd.restartEmpty(); });
      ASSERT_TRUE(restarted);
      break;
    }
  }
  expectSameDecisions(results);
}

std::vector<MatrixCase> everyCase() {
  std::vector<MatrixCase> out;
  for (int f = 0; f <= static_cast<int>(Fault::RestartedEmpty); ++f)
    for (int k = 0; k <= static_cast<int>(Straggler::SeveralEpochs); ++k)
      out.push_back({static_cast<Fault>(f), static_cast<Straggler>(k)});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Etcd, EtcdFaultMatrix, ::testing::ValuesIn(everyCase()), caseName);

}  // namespace
}  // namespace dynamiccl
