// The cluster's memory of in-job verification travels through the coordination backend: a job on
// "node 1" (its own store file) promotes a winner; the next job, its leader on "node 2" (another,
// empty store file) with the same shared coordination directory, exploits the winner from the first
// boundary on, reading past a record that does not parse. A job with the same empty store but
// another directory starts afresh (the control).
// Forked ranks drive the real library, as tests/verification_test.cpp does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "store/store.h"
#include "tests/profiled_call.h"
#include "tests/test_support.h"

namespace dynamiccl {
namespace {

using harness::Choice;

constexpr int kRanks = 4;
constexpr int kTree = 0, kRing = 1, kLL = 0, kSimple = 2;
constexpr uint64_t kBytes = 4096;
constexpr int kEpochCalls = 200;

// NCCL's default (ring/simple) loses to the profile's unverified candidate (tree/ll) by 20%.
double latency_us(const Choice& c) { return (c.algo == kTree && c.proto == kLL ? 0.8 : 1.0) * 12.0; }

constexpr const char* kProfile =
    R"({"format":"dynamiccl-profile","version":2,"name":"simulated","rules":[{"collective":"allreduce",)"
    R"("bytes":[4096,4096],"algo":"tree","proto":"ll","evidence":{"provenance":"simulated","fingerprint":)"
    R"({"gpu_cc":89,"nvlink_GBps":0,"nics_per_node":1,"nic_GBps":25}}}]})";

struct Job {
  std::string profile, db, coordDir, out;
  uint64_t commId = 0;
  uint64_t calls = 0;
};

// Writes the share of calls in epochs 2-3 that ran tree/ll (rank 0 only).
[[noreturn]] void runRank(int rank, const Job& job) {
  setenv("DYNAMICCL_TOPO", "gpu_cc=89,nvlink_GBps=0,nics_per_node=1,nic_GBps=25", 1);
  setenv("DYNAMICCL_PROFILE", job.profile.c_str(), 1);
  setenv("DYNAMICCL_TRUST", "verified", 1);
  setenv("DYNAMICCL_DB", job.db.c_str(), 1);
  setenv("DYNAMICCL_COORD_DIR", job.coordDir.c_str(), 1);
  setenv("DYNAMICCL_EPOCH_CALLS", std::to_string(kEpochCalls).c_str(), 1);
  testing::ProfiledPlugin lib;
  if (!testing::openProfiledPlugin(DYNAMICCL_PLUGIN_DIR, lib)) _exit(10);
  auto comm = lib.tuner->init(harness::CommSpec{.commId = job.commId, .nRanks = kRanks});
  if (!comm.ok()) _exit(11);
  int mask = 0;
  void* pctx = nullptr;
  if (lib.prof->init(harness::ProfilerCommSpec{job.commId, kRanks, 1, rank}, &mask, &pctx) != ncclSuccess || !pctx)
    _exit(12);
  std::mt19937_64 shared(7);
  std::lognormal_distribution<double> noise(0.0, 0.03);
  const harness::CostTable table = harness::ncclPicks(kRing, kSimple);
  uint64_t clock_ns = 1'000'000, early = 0, earlyWinner = 0;
  for (uint64_t i = 0; i < job.calls; ++i) {
    const Choice c = (*comm)->decide(4, kBytes, table);
    if (i >= kEpochCalls && i < 3 * kEpochCalls) {
      ++early;
      earlyWinner += c.algo == kTree && c.proto == kLL;
    }
    testing::emitProfiledCall(*lib.prof, pctx, i, kBytes, c, rank, static_cast<uint64_t>(latency_us(c) * noise(shared) * 1000),
                              clock_ns);
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::microseconds(500));  // the worker keeps up
  }
  lib.prof->finalize(pctx);
  comm.value().reset();  // the tuner's finalize: the leader stores and publishes its verdicts
  if (rank == 0) std::ofstream(job.out) << (early ? static_cast<double>(earlyWinner) / static_cast<double>(early) : -1);
  _exit(0);
}

// Rank 0's share of tree/ll in epochs 2-3, or -1 when a rank failed.
double runJob(const Job& job) {
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) runRank(r, job);
    pids.push_back(pid);
  }
  for (int code : testing::waitForRanks(pids, 60))
    if (code != 0) return -1;
  double share = -1;
  std::ifstream(job.out) >> share;
  return share;
}

std::string promotedAt(const std::string& db) {
  store::StoreOptions o;
  o.path = db;
  o.read_only = true;
  auto store = store::Store::open(o);
  if (!store.ok()) return "no store";
  auto rows = (*store)->latestVerdicts();
  if (!rows.ok()) return rows.error();
  for (const store::VerdictRow& r : *rows)
    if (r.min_bytes == kBytes && r.algo == "TREE" && r.proto == "LL") return r.state;
  return "no verdict";
}

// The directory of the namespace whose first record is a verdicts record (the epochs' are sealed).
std::filesystem::path verdictNamespaceDir(const std::string& coordDir) {
  for (const auto& d : std::filesystem::directory_iterator(coordDir)) {
    std::ifstream in(d.path() / "b1");
    const std::string head(std::istreambuf_iterator<char>(in), {});
    if (head.find(R"("format":"dynamiccl-verdicts")") != std::string::npos)
      return d.path();
  }
  return {};
}

TEST(VerdictTravel, TheNextJobResumesOnAnotherNodeThroughTheCoordinationBackend) {
  char tmpl[] = "/tmp/dynamiccl-travel-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  Job job{.profile = dir + "/simulated.json", .db = dir + "/node1.db", .coordDir = dir + "/coord",
          .out = dir + "/rank0", .commId = 0xa1, .calls = 20000};
  std::ofstream(job.profile) << kProfile;
  std::filesystem::create_directory(job.coordDir);
  ASSERT_GE(runJob(job), 0.0);
  ASSERT_EQ(promotedAt(job.db), "promoted");

  // Job 1's record sits in slot 1 of the verdicts' ring; it moves to slot 2 and slot 1 gets bytes
  // that do not parse: the next job reads past them (one line) to the record.
  const std::filesystem::path records = verdictNamespaceDir(job.coordDir);
  ASSERT_FALSE(records.empty());
  std::filesystem::rename(records / "b1", records / "b2");
  std::ofstream(records / "b1") << "{\"format\":\"dynamiccl-verdicts\",\"version\":";

  // Another node: its store is empty; only the shared coordination directory carries job 1's verdicts.
  job.db = dir + "/node2.db";
  job.commId = 0xa2;
  job.calls = 3 * kEpochCalls;
  EXPECT_GT(runJob(job), 0.9);
  // Its own verdicts, job 2 of the scope, in the ring's slot 2, where they replace job 1's record they fold.
  std::ifstream second(records / "b2");
  EXPECT_NE(std::string(std::istreambuf_iterator<char>(second), {}).find(R"("sequence":2)"), std::string::npos);

  // The control: the same empty store without job 1's directory tests the candidate again.
  job.db = dir + "/node3.db";
  job.coordDir = dir + "/coord-elsewhere";
  job.commId = 0xa3;
  std::filesystem::create_directory(job.coordDir);
  const double fresh = runJob(job);
  EXPECT_GE(fresh, 0.0);
  EXPECT_LT(fresh, 0.5);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dynamiccl
