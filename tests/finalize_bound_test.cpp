// The tuner's finalize against a store another process holds write-locked (BEGIN EXCLUSIVE), and
// against an etcd that stopped answering: NCCL's communicator destroy waits on it, so it must return
// within a second, and the job's verdicts must not be lost: they are kept beside the store and the
// next job's init moves them into it; what etcd did not take in time stays in the store.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "store/store.h"
#include "tests/etcd_fixture.h"
#include "tests/profiled_call.h"
#include "tests/stored_verdicts.h"
#include "tests/test_support.h"

namespace dynamiccl {
namespace {

using testing::storedVerdicts;

constexpr int kRanks = 8;
constexpr int kRing = 1, kSimple = 2;
constexpr uint64_t kBytes = 4096;
constexpr int kEpochCalls = 200;

// tree/ll, simulated (unverified) on this very hardware: the job tests it against NCCL's ring/simple.
constexpr const char* kProfile =
    R"({"format":"dynamiccl-profile","version":2,"name":"simulated","rules":[{"collective":"allreduce",)"
    R"("bytes":[4096,4096],"algo":"tree","proto":"ll","evidence":{"provenance":"simulated","fingerprint":)"
    R"({"gpu_cc":89,"nvlink_GBps":0,"nics_per_node":1,"nic_GBps":25}}}]})";

bool waitForFile(const std::string& path, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// One process as rank 0 (the leader) of an 8-rank communicator (the input check off: the other
// ranks do not exist). With calls > 0 it runs them, then announces "finalizing" and waits for
// "locked" before the tuner's finalize, whose duration it writes to "finalize_ms". With etcd
// endpoints, those are the coordination backend (the verdicts travel through them).
[[noreturn]] void runLeader(const std::string& dir, uint64_t commId, uint64_t calls, const std::string& etcd = "") {
  setenv("DYNAMICCL_TOPO", "gpu_cc=89,nvlink_GBps=0,nics_per_node=1,nic_GBps=25", 1);
  setenv("DYNAMICCL_PROFILE", (dir + "/simulated.json").c_str(), 1);
  setenv("DYNAMICCL_TRUST", "verified", 1);
  setenv("DYNAMICCL_DB", (dir + "/store.db").c_str(), 1);
  if (etcd.empty()) setenv("DYNAMICCL_COORD_DIR", (dir + "/coord").c_str(), 1);
  else setenv("DYNAMICCL_ETCD", etcd.c_str(), 1);
  setenv("DYNAMICCL_EPOCH_CALLS", std::to_string(kEpochCalls).c_str(), 1);
  setenv("DYNAMICCL_INPUTS_CHECK", "0", 1);
  testing::LeaderRank leader = testing::startLeaderOrExit(DYNAMICCL_PLUGIN_DIR, commId, kRanks);
  testing::runTreeLlBeatsTheRest(leader, calls, kBytes, harness::ncclPicks(kRing, kSimple));
  leader.plugin.prof->finalize(leader.pctx);
  if (calls > 0) {
    std::ofstream(dir + "/finalizing") << "1";
    if (!waitForFile(dir + "/locked", 60)) _exit(14);
  }
  const auto t0 = std::chrono::steady_clock::now();
  leader.comm.reset();  // the tuner's finalize: the leader stores its verdicts here
  std::ofstream(dir + "/finalize_ms") << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  {  // closed (flushed) before _exit
    std::ofstream log(dir + "/finalize_log");
    for (const std::string& l : harness::LogCapture::lines())
      if (l.find("in-job verification") != std::string::npos) log << l << "\n";
  }
  _exit(0);
}

bool hasTreeLL(const std::vector<store::VerdictRow>& rows) {
  for (const auto& r : rows)
    if (r.min_bytes == kBytes && r.algo == "TREE" && r.proto == "LL" && r.n > 0) return true;
  return false;
}

// How long the leader's tuner finalize took (runLeader wrote it), printed with what held it; -1 unread.
double finalizeMs(const std::string& dir, const char* heldBy) {
  double ms = -1;
  std::ifstream(dir + "/finalize_ms") >> ms;
  std::printf("the tuner's finalize with %s: %.0f ms\n", heldBy, ms);
  return ms;
}

size_t sideFiles(const std::string& dir) { return store::pendingVerdictsFiles(dir + "/store.db").size(); }

TEST(FinalizeBound, AStoreLockedByAnotherProcessHoldsFinalizeUnderASecondAndLosesNoVerdict) {
  char tmpl[] = "/tmp/dynamiccl-finalize-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/simulated.json") << kProfile;
  std::filesystem::create_directory(dir + "/coord");
  const std::string db = dir + "/store.db";
  {
    store::StoreOptions o;
    o.path = db;
    ASSERT_TRUE(store::Store::open(o).ok());  // the store exists (WAL, schema) before the job
  }
  const pid_t job = fork();
  if (job == 0) runLeader(dir, 0xf1a1, 3000);
  ASSERT_TRUE(waitForFile(dir + "/finalizing", 60));
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::ofstream(dir + "/locked") << "1";
  const std::vector<int> codes = testing::waitForRanks({job}, 60);
  sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  ASSERT_EQ(codes[0], 0);
  const double finalize_ms = finalizeMs(dir, "the store locked");
  EXPECT_GE(finalize_ms, 0);
  EXPECT_LT(finalize_ms, 1000) << "the tuner's finalize waited on the locked store";
  EXPECT_TRUE(storedVerdicts(db).empty()) << "the lock did not hold: the test tests nothing";
  EXPECT_EQ(sideFiles(dir), 1u) << "the verdicts were not kept beside the store";

  // The next job's init (the store free again) moves them into the store.
  const pid_t next = fork();
  if (next == 0) runLeader(dir, 0xf1a2, 0);
  ASSERT_EQ(testing::waitForRanks({next}, 60)[0], 0);
  const auto rows = storedVerdicts(db);
  EXPECT_TRUE(hasTreeLL(rows)) << rows.size() << " verdict(s) in the store after the next job's init";
  EXPECT_EQ(sideFiles(dir), 0u) << "the side file stayed after its verdicts were moved";
  std::filesystem::remove_all(dir);
}

// Verdict records in etcd: their keys end in /b<slot> with slots 1, 2, ... below kEpochCalls (epoch
// boundaries are its multiples, the input check's keys above 2^62).
size_t verdictRecords(const testing::EtcdCluster& etcd) {
  const std::string keys = etcd.ctlOutput("get --prefix dynamiccl --keys-only");
  size_t n = 0;
  for (size_t at = 0, end; at < keys.size(); at = end + 1) {
    end = keys.find('\n', at);
    if (end == std::string::npos) end = keys.size();
    const std::string key = keys.substr(at, end - at);
    const size_t b = key.rfind("/b");
    if (b == std::string::npos || b + 2 >= key.size() || key.find_first_not_of("0123456789", b + 2) != std::string::npos)
      continue;
    n += std::stoull(key.substr(b + 2)) < kEpochCalls;
  }
  return n;
}

TEST(FinalizeBound, AStoppedEtcdHoldsFinalizeUnderASecondAndTheVerdictsStayInTheStoreForTheNextJob) {
  if (testing::etcdBinary().empty()) GTEST_SKIP() << "no etcd binary (scripts/setup.sh installs etcd-server)";
  testing::EtcdCluster etcd;
  ASSERT_TRUE(etcd.ready());
  char tmpl[] = "/tmp/dynamiccl-finalize-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/simulated.json") << kProfile;
  const std::string db = dir + "/store.db";
  const pid_t job = fork();
  if (job == 0) runLeader(dir, 0xf1b1, 3000, etcd.endpoints());
  ASSERT_TRUE(waitForFile(dir + "/finalizing", 60));
  etcd.signal(SIGSTOP);  // etcd accepts connections and never answers: every request runs to its timeout
  std::ofstream(dir + "/locked") << "1";
  const std::vector<int> codes = testing::waitForRanks({job}, 60);
  etcd.signal(SIGCONT);
  ASSERT_EQ(codes[0], 0);
  const double finalize_ms = finalizeMs(dir, "etcd stopped");
  EXPECT_GE(finalize_ms, 0);
  // The bound is 1 s; the slack is for a loaded machine, not for one etcd timeout (2 s).
  EXPECT_LT(finalize_ms, 1500) << "the tuner's finalize waited on the stopped etcd";
  std::ifstream logFile(dir + "/finalize_log");
  const std::string log((std::istreambuf_iterator<char>(logFile)), std::istreambuf_iterator<char>());
  std::printf("%s", log.c_str());
  EXPECT_NE(log.find("cut short"), std::string::npos) << "no line said the publish was cut short";
  EXPECT_TRUE(hasTreeLL(storedVerdicts(db))) << "the verdicts etcd did not take are not in the store";
  ASSERT_TRUE(etcd.ready());
  // The request finalize gave up on may still be carried out by etcd once it runs again.
  const size_t before = verdictRecords(etcd);

  // The next job on this node resumes from the store and, testing the same candidate, publishes it.
  const pid_t next = fork();  // "locked" is there: it finalizes at once
  if (next == 0) runLeader(dir, 0xf1b2, 3000, etcd.endpoints());
  ASSERT_EQ(testing::waitForRanks({next}, 60)[0], 0);
  EXPECT_EQ(verdictRecords(etcd), before + 1) << "the next job did not publish the verdicts through etcd";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dynamiccl
