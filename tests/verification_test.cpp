// In-job verification through the real library: 8 forked ranks run a job with a profile of
// simulated (unverified) rules and the profiler role. NCCL's choice runs until a candidate wins
// beyond noise; a loser is dropped; every rank decides alike; the verdicts reach the store; the next
// job resumes from them; `export --from-store` gives a profile whose rules apply as verified.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "offline/verdicts/verdicts.h"
#include "learner/online_schedule.h"
#include "store/store.h"
#include "tests/profiled_call.h"
#include "tests/stored_verdicts.h"
#include "tests/test_support.h"

namespace dynamiccl {
namespace {

using harness::Choice;

constexpr int kRanks = 8;
constexpr int kTree = 0, kRing = 1, kLL = 0, kLL128 = 1, kSimple = 2;
constexpr uint64_t kSmall = 4096, kTie = 65536, kMid = 1 << 20, kLarge = 16 << 20;
constexpr uint64_t kSizes[] = {kSmall, kTie, kMid, kLarge};
constexpr int kEpochCalls = 200;

// The cluster's truth. NCCL's default, ring/simple, is beaten by tree/ll at 4 KiB (the profile's
// candidate there: promote), tied by ring/ll128 at 64 KiB (inconclusive: keep NCCL's), and beats
// ring/ll at 1 MiB by 2.5x (drop).
double trueLatency_us(int algo, int proto, uint64_t bytes) {
  const double base = 10 + static_cast<double>(bytes) / 5e3;
  if (algo == kRing && proto == kSimple) return base;
  if (bytes == kSmall && algo == kTree && proto == kLL) return 0.8 * base;
  if (bytes == kTie && algo == kRing && proto == kLL128) return 0.995 * base;
  if (bytes == kMid && algo == kRing && proto == kLL) return 2.5 * base;
  return 1.3 * base;
}

// Simulated evidence, measured on the very hardware of this test: unverified all the same.
constexpr const char* kHardware = R"({"gpu_cc":89,"nvlink_GBps":0,"nics_per_node":1,"nic_GBps":25})";
std::string simulatedRule(uint64_t bytes, const char* algo, const char* proto) {
  return std::string(R"({"collective":"allreduce","bytes":[)") + std::to_string(bytes) + "," + std::to_string(bytes) +
         R"(],"algo":")" + algo + R"(","proto":")" + proto + R"(","evidence":{"provenance":"simulated","fingerprint":)" +
         kHardware + "}}";
}
std::string simulatedProfile() {
  return R"({"format":"dynamiccl-profile","version":2,"name":"simulated","rules":[)" +
         simulatedRule(kSmall, "tree", "ll") + "," + simulatedRule(kTie, "ring", "ll128") + "," +
         simulatedRule(kMid, "ring", "ll") + "]}";
}

void setHardwareEnv() {
  setenv("DYNAMICCL_TOPO", "gpu_cc=89,nvlink_GBps=0,nics_per_node=1,nic_GBps=25", 1);
}

// What one rank saw, per size: how often each (algo, proto) ran overall, in the first epoch, in
// epochs 2-3 and in the last tenth; the time spent, and the excess of calls that ran something other
// than the epoch's majority for their size (exploration).
struct SizeStats {
  std::map<int, uint64_t> firstEpoch, early, late;  // slot algo*3+proto -> calls
};
struct RankResult {
  int exitCode = -1;
  uint64_t hash = 0;
  double total_us = 0, explore_us = 0;
  std::array<SizeStats, 4> sizes;
};

struct Job {
  std::string profile, db, coordDir;
  uint64_t callsPerRank = 24000;
  uint64_t commId = 0xc0ffee;
};

[[noreturn]] void runRank(int rank, const Job& job, const std::string& out) {
  setHardwareEnv();
  setenv("DYNAMICCL_PROFILE", job.profile.c_str(), 1);
  setenv("DYNAMICCL_TRUST", "verified", 1);
  setenv("DYNAMICCL_DB", job.db.c_str(), 1);  // one store for every rank, as on one host
  setenv("DYNAMICCL_COORD_DIR", job.coordDir.c_str(), 1);
  setenv("DYNAMICCL_EPOCH_CALLS", std::to_string(kEpochCalls).c_str(), 1);
  unsetenv("DYNAMICCL_ONLINE");
  unsetenv("DYNAMICCL_VERIFY");  // the default: on wherever the profiler role is ours
  const std::string path = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  setenv("NCCL_PROFILER_PLUGIN", path.c_str(), 1);
  auto tuner = harness::TunerLibrary::open(path);
  auto prof = harness::ProfilerLibrary::open(path);
  if (!tuner.ok() || !prof.ok()) _exit(10);
  harness::CommSpec spec;
  spec.commId = job.commId;
  spec.nRanks = kRanks;
  auto comm = (*tuner)->init(spec);
  if (!comm.ok()) _exit(11);
  int mask = 0;
  void* pctx = nullptr;
  if ((*prof)->init(harness::ProfilerCommSpec{job.commId, kRanks, 1, rank}, &mask, &pctx) != ncclSuccess || !pctx)
    _exit(12);

  std::mt19937_64 shared(7);             // the collective's time: the same on every rank
  std::mt19937_64 own(1000 + rank);      // and each rank's own jitter
  std::lognormal_distribution<double> noise(0.0, 0.03), jitter(0.0, 0.005);
  const harness::CostTable table = harness::ncclPicks(kRing, kSimple);
  RankResult r;
  std::array<std::map<int, uint64_t>, 4> epochCounts;
  std::array<std::vector<int>, 4> epochSlots;
  auto closeEpoch = [&] {
    for (int s = 0; s < 4; ++s) {
      int majority = -1;
      uint64_t most = 0;
      for (auto [slot, n] : epochCounts[s])
        if (n > most) most = n, majority = slot;
      for (int slot : epochSlots[s])
        if (slot != majority)
          r.explore_us += std::max(0.0, trueLatency_us(slot / 3, slot % 3, kSizes[s]) -
                                            trueLatency_us(majority / 3, majority % 3, kSizes[s]));
      epochCounts[s].clear();
      epochSlots[s].clear();
    }
  };
  uint64_t clock_ns = 1'000'000;
  for (uint64_t i = 0; i < job.callsPerRank; ++i) {
    if (i % kEpochCalls == 0 && i) closeEpoch();
    const int s = static_cast<int>(i % 4);
    const uint64_t bytes = kSizes[s];
    const Choice c = (*comm)->decide(4, bytes, table);
    const int slot = c.algo * 3 + c.proto;
    r.hash = learner::mix64(r.hash ^ (static_cast<uint64_t>(slot + 1) << 8) ^ (static_cast<uint64_t>(c.nChannels) << 16));
    if (i < kEpochCalls) ++r.sizes[s].firstEpoch[slot];
    else if (i < 3 * kEpochCalls) ++r.sizes[s].early[slot];
    if (i >= job.callsPerRank * 9 / 10) ++r.sizes[s].late[slot];
    ++epochCounts[s][slot];
    epochSlots[s].push_back(slot);
    const double lat_us = trueLatency_us(c.algo, c.proto, bytes) * noise(shared) * jitter(own);
    r.total_us += lat_us;
    testing::emitProfiledCall(**prof, pctx, i, bytes, c, rank, static_cast<uint64_t>(lat_us * 1000), clock_ns);
    // A real job's collectives take microseconds to milliseconds; this loop takes nanoseconds. Pace it
    // so the profiler's worker keeps up on a loaded machine, as it does in a job.
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  closeEpoch();
  (*prof)->finalize(pctx);
  comm.value().reset();  // the tuner's finalize: the leader stores its verdicts here
  FILE* f = std::fopen(out.c_str(), "w");
  if (!f) _exit(13);
  std::fprintf(f, "%llu %.3f %.3f\n", static_cast<unsigned long long>(r.hash), r.total_us, r.explore_us);
  for (const SizeStats& st : r.sizes)
    for (const auto* m : {&st.firstEpoch, &st.early, &st.late}) {
      std::fprintf(f, "%zu", m->size());
      for (auto [slot, n] : *m) std::fprintf(f, " %d %llu", slot, static_cast<unsigned long long>(n));
      std::fprintf(f, "\n");
    }
  std::fclose(f);
  if (const char* keep = std::getenv("VERIFICATION_TEST_LOGS")) {  // debugging aid: each rank's log lines
    std::ofstream log(std::string(keep) + "/job" + std::to_string(job.commId) + "-rank" + std::to_string(rank) + ".log");
    for (const std::string& l : harness::LogCapture::lines()) log << l << "\n";
  }
  _exit(0);
}

std::vector<RankResult> runJob(const Job& job, double deadline_s) {
  const std::string dir = std::filesystem::path(job.db).parent_path().string();
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) runRank(r, job, dir + "/rank" + std::to_string(r));
    pids.push_back(pid);
  }
  std::vector<RankResult> results(kRanks);
  const std::vector<int> codes = testing::waitForRanks(pids, deadline_s);
  for (int r = 0; r < kRanks; ++r) {
    results[r].exitCode = codes[r];
    std::ifstream in(dir + "/rank" + std::to_string(r));
    unsigned long long h = 0;
    if (!(in >> h >> results[r].total_us >> results[r].explore_us)) {
      results[r].exitCode = results[r].exitCode == 0 ? -2 : results[r].exitCode;
      continue;
    }
    results[r].hash = h;
    for (SizeStats& st : results[r].sizes)
      for (auto* m : {&st.firstEpoch, &st.early, &st.late}) {
        size_t n = 0;
        in >> n;
        for (size_t i = 0; i < n; ++i) {
          int slot = 0;
          unsigned long long c = 0;
          in >> slot >> c;
          (*m)[slot] = c;
        }
      }
  }
  return results;
}

double share(const std::map<int, uint64_t>& m, int slot) {
  uint64_t all = 0;
  for (auto [s, n] : m) all += n;
  return all ? static_cast<double>(m.count(slot) ? m.at(slot) : 0) / static_cast<double>(all) : 0;
}

class Verification : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dynamiccl-verify-XXXXXX";
    dir_ = mkdtemp(tmpl);
    job_.profile = dir_ + "/simulated.json";
    std::ofstream(job_.profile) << simulatedProfile();
    job_.db = dir_ + "/store.db";
    job_.coordDir = dir_ + "/coord";
    std::filesystem::create_directory(job_.coordDir);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);  // a failure keeps the store and the coordination records
  }

  std::vector<store::VerdictRow> verdicts() { return testing::keptVerdicts(job_.db); }

  std::string dir_;
  Job job_;
};

const int kDefault = kRing * 3 + kSimple, kWinner = kTree * 3 + kLL, kTied = kRing * 3 + kLL128,
          kLoser = kRing * 3 + kLL;

TEST_F(Verification, PromotesTheWinnerDropsTheLoserAndEveryRankAgrees) {
  const auto results = runJob(job_, 120);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(results[r].exitCode, 0) << "rank " << r;
    EXPECT_EQ(results[r].hash, results[0].hash) << "rank " << r << " decided otherwise than rank 0";
  }
  const RankResult& r = results[0];
  // Unverified rules do not run before verification tests them: the first epoch is NCCL's.
  for (int s = 0; s < 4; ++s) EXPECT_EQ(share(r.sizes[s].firstEpoch, kDefault), 1.0) << "size " << kSizes[s];
  EXPECT_GT(share(r.sizes[0].late, kWinner), 0.9);   // promoted
  EXPECT_GT(share(r.sizes[1].late, kDefault), 0.9);  // a tie keeps NCCL's choice
  EXPECT_LT(share(r.sizes[2].late, kLoser), 0.02);   // dropped: only re-tested now and then
  // No candidate: NCCL's, but for the arms NCCL prices beyond 3x its choice, tried last and dropped after a sample or two.
  EXPECT_GE(share(r.sizes[3].late, kDefault), 0.99) << [&] {
    std::string ran;
    for (auto [slot, n] : r.sizes[3].late) ran += " " + std::to_string(slot) + ":" + std::to_string(n);
    return "late calls per arm (algo*3+proto):" + ran;
  }();
  EXPECT_LE(r.explore_us / r.total_us, 0.01) << "exploration cost " << r.explore_us << " of " << r.total_us << " us";

  const auto rows = verdicts();
  // The profile's candidate at each size (every other arm tried after it has a verdict of its own).
  const std::map<uint64_t, std::string> candidateAt = {{kSmall, "TREE/LL"}, {kMid, "RING/LL"}, {kTie, "RING/LL128"}};
  std::map<uint64_t, store::VerdictRow> bySize;
  for (const auto& v : rows)
    if (candidateAt.count(v.min_bytes) && candidateAt.at(v.min_bytes) == v.algo + "/" + v.proto) bySize[v.min_bytes] = v;
  ASSERT_TRUE(bySize.count(kSmall) && bySize.count(kMid)) << rows.size() << " verdicts";
  EXPECT_EQ(bySize[kSmall].state, "promoted") << verdicts::describeVerdict(bySize[kSmall]);
  EXPECT_NEAR(bySize[kSmall].gain, 0.25, 0.05);  // 1 / 0.8 - 1
  EXPECT_GT(bySize[kSmall].gain_low, 0.0);
  EXPECT_EQ(bySize[kSmall].base_algo, "RING");
  EXPECT_EQ(bySize[kMid].state, "dropped");
  EXPECT_LT(bySize[kMid].gain, -0.5);
  if (bySize.count(kTie)) {
    EXPECT_NE(bySize[kTie].state, "promoted");
  }
  EXPECT_FALSE(bySize[kSmall].fingerprint.empty());

  // The next job on this hardware resumes: the winner runs from the first boundary on.
  job_.commId = 0xc0ffef;
  job_.callsPerRank = 4 * kEpochCalls;
  const auto next = runJob(job_, 60);
  ASSERT_EQ(next[0].exitCode, 0);
  EXPECT_GT(share(next[0].sizes[0].early, kWinner), 0.9);
  EXPECT_LT(share(next[0].sizes[2].early, kLoser), 0.05);

  // The store as a profile: one verified rule, applied by default without any profiler.
  store::StoreOptions o;
  o.path = job_.db;
  auto db = store::Store::open(o);
  ASSERT_TRUE(db.ok());
  auto verified = verdicts::profileFromStore(**db, "verified");
  ASSERT_TRUE(verified.ok()) << verified.error();
  ASSERT_EQ(verified->profile.rules.size(), 1u);
  const policy::Rule& rule = verified->profile.rules[0];
  EXPECT_EQ(rule.decision.algo, Algo::Tree);
  ASSERT_TRUE(rule.evidence);
  EXPECT_EQ(rule.evidence->provenance, policy::Provenance::MeasuredInJob);
  testing::TempFile file(policy::profileToJson(verified->profile));
  setHardwareEnv();
  harness::ScopedEnv p("DYNAMICCL_PROFILE", file.path().c_str()), t("DYNAMICCL_TRUST", "verified"),
      prof("NCCL_PROFILER_PLUGIN", nullptr);
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{.commId = 9, .nRanks = kRanks, .nNodes = 1});
  ASSERT_TRUE(comm.ok());
  const harness::CostTable table = harness::ncclPicks(kRing, kSimple);
  EXPECT_EQ((*comm)->decide(4, kSmall, table), (Choice{kTree, kLL, 0}));
  EXPECT_EQ((*comm)->decide(4, kMid, table), (Choice{kRing, kSimple, 0}));
}

TEST_F(Verification, OffWhenAskedOrWithoutTheProfilerRole) {
  setHardwareEnv();
  harness::ScopedEnv p("DYNAMICCL_PROFILE", job_.profile.c_str()), t("DYNAMICCL_TRUST", "verified"),
      db("DYNAMICCL_DB", job_.db.c_str()), coord("DYNAMICCL_COORD_DIR", job_.coordDir.c_str());
  for (const char* verify : std::initializer_list<const char*>{"0", nullptr}) {
    harness::ScopedEnv v("DYNAMICCL_VERIFY", verify);
    harness::ScopedEnv prof("NCCL_PROFILER_PLUGIN", verify ? "libnccl-tuner-dynamiccl.so" : nullptr);
    harness::LogCapture::clear();
    auto lib = testing::openPlugin();
    ASSERT_TRUE(lib);
    auto comm = lib->init(harness::CommSpec{.commId = 77, .nRanks = kRanks, .nNodes = 1});
    ASSERT_TRUE(comm.ok());
    // Thousands of calls and no boundary wait: nothing but NCCL's choice, decided at once.
    const auto t0 = std::chrono::steady_clock::now();
    const harness::CostTable table = harness::ncclPicks(kRing, kSimple);
    for (int i = 0; i < 5000; ++i)
      ASSERT_EQ((*comm)->decide(4, kSizes[i % 4], table), (Choice{kRing, kSimple, 0})) << "call " << i;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
    size_t on = 0;
    for (const std::string& l : harness::LogCapture::lines()) on += l.find("in-job verification of") != std::string::npos;
    EXPECT_EQ(on, 0u) << "DYNAMICCL_VERIFY=" << (verify ? verify : "(unset)");
  }
}

}  // namespace
}  // namespace dynamiccl

namespace dynamiccl {
namespace {

TEST_F(Verification, AProfilerRoleNcclNeverStartedCostsAHiccupNotAHang) {
  // NCCL_PROFILER_PLUGIN names this library but NCCL did not start the role (no profiler init in
  // this process): no rank can lead, so the first boundary freezes after 200 ms, not 60 s.
  setHardwareEnv();
  harness::ScopedEnv p("DYNAMICCL_PROFILE", job_.profile.c_str()), t("DYNAMICCL_TRUST", "verified"),
      db("DYNAMICCL_DB", job_.db.c_str()), coord("DYNAMICCL_COORD_DIR", job_.coordDir.c_str()),
      epoch("DYNAMICCL_EPOCH_CALLS", "100"), prof("NCCL_PROFILER_PLUGIN", "libnccl-tuner-dynamiccl.so");
  harness::LogCapture::clear();
  auto lib = testing::openPlugin();
  ASSERT_TRUE(lib);
  auto comm = lib->init(harness::CommSpec{.commId = 78, .nRanks = kRanks, .nNodes = 1});
  ASSERT_TRUE(comm.ok());
  const auto t0 = std::chrono::steady_clock::now();
  const harness::CostTable table = harness::ncclPicks(kRing, kSimple);
  for (int i = 0; i < 5000; ++i)
    ASSERT_EQ((*comm)->decide(4, kSizes[i % 4], table), (Choice{kRing, kSimple, 0})) << "call " << i;
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took_s, 5.0);
  EXPECT_GE(took_s, 0.15);  // it did wait at the first boundary: verification was on
  size_t froze = 0;
  for (const std::string& l : harness::LogCapture::lines()) froze += l.find("froze at boundary 100") != std::string::npos;
  EXPECT_EQ(froze, 1u);
}

// NCCL's own choice on a cost table NCCL filled with IGNORE (-1) around three slots, in online mode
// through the real library, as each release loads it: the verdict's baseline is the slot NCCL runs
// (ring/ll), never an IGNORE slot that 2.31's rule would pick were -1 a candidate, and the faster
// filled candidate is promoted against it.
[[noreturn]] void runIgnoreTableRank(int release, const std::string& dir) {
  setHardwareEnv();
  setenv("DYNAMICCL_PROFILE", (dir + "/simulated.json").c_str(), 1);
  setenv("DYNAMICCL_TRUST", "verified", 1);
  setenv("DYNAMICCL_DB", (dir + "/store.db").c_str(), 1);
  setenv("DYNAMICCL_COORD_DIR", (dir + "/coord").c_str(), 1);
  setenv("DYNAMICCL_EPOCH_CALLS", "100", 1);
  setenv("DYNAMICCL_NCCL_VERSION", std::to_string(release).c_str(), 1);
  const std::string path = harness::builtPluginPath(DYNAMICCL_PLUGIN_DIR);
  setenv("NCCL_PROFILER_PLUGIN", path.c_str(), 1);
  auto tuner = harness::TunerLibrary::open(path, harness::asRelease(release));
  auto prof = harness::ProfilerLibrary::open(path);
  if (!tuner.ok() || !prof.ok()) _exit(10);
  const uint64_t commId = 0x16a0 + static_cast<uint64_t>(release);
  auto comm = (*tuner)->init(harness::CommSpec{.commId = commId, .nRanks = 2, .nNodes = 1});
  if (!comm.ok()) _exit(11);
  int mask = 0;
  void* pctx = nullptr;
  if ((*prof)->init(harness::ProfilerCommSpec{commId, 2, 1, 0}, &mask, &pctx) != ncclSuccess || !pctx) _exit(12);
  harness::CostTable table = harness::allIgnored();
  table[kTree][kLL] = 30.0f, table[kRing][kLL] = 10.0f, table[kRing][kSimple] = 20.0f;  // NCCL runs ring/ll
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> noise(0.0, 0.02);
  uint64_t clock_ns = 1'000'000;
  for (uint64_t i = 0; i < 4000; ++i) {
    const Choice c = (*comm)->decide(4, kSmall, table);
    if (c.algo < 0 || table[c.algo][c.proto] < 0) _exit(14);  // NCCL can never run an IGNORE slot
    const double lat_us = (c.algo == kTree ? 80.0 : c.proto == kLL ? 100.0 : 130.0) * noise(rng);
    testing::emitProfiledCall(**prof, pctx, i, kSmall, c, 0, static_cast<uint64_t>(lat_us * 1000), clock_ns);
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  (*prof)->finalize(pctx);
  comm.value().reset();
  _exit(0);
}

TEST_F(Verification, NcclsChoiceOnAnIgnoreTableIsTheBaselineUnderEveryRelease) {
  std::ofstream(job_.profile) << R"({"format":"dynamiccl-profile","version":2,"name":"simulated","rules":[)" +
                                     simulatedRule(kSmall, "tree", "ll") + "]}";
  for (int release : {22809, 23007, 23102, 23206}) {
    const pid_t pid = fork();
    if (pid == 0) runIgnoreTableRank(release, dir_);
    ASSERT_EQ(testing::waitForRanks({pid}, 120)[0], 0) << "NCCL " << release;
    const auto rows = verdicts();
    const store::VerdictRow* row = nullptr;  // the profile's candidate; the job tries ring/simple too
    for (const store::VerdictRow& r : rows)
      if (r.nccl_version.rfind(std::to_string(release / 10000) + "." + std::to_string(release / 100 % 100) + ".", 0) == 0) {
        EXPECT_EQ(r.base_algo + "/" + r.base_proto, "RING/LL") << "NCCL " << release << ": " << r.algo << "/" << r.proto;
        if (r.algo == "TREE") row = &r;
      }
    ASSERT_NE(row, nullptr) << "no verdict for NCCL " << release << " among " << rows.size();
    EXPECT_EQ(row->base_algo + "/" + row->base_proto, "RING/LL") << "NCCL " << release;
    EXPECT_EQ(row->algo + "/" + row->proto, "TREE/LL") << "NCCL " << release;
    EXPECT_EQ(row->state, "promoted") << "NCCL " << release << ": " << verdicts::describeVerdict(*row);
  }
}

}  // namespace
}  // namespace dynamiccl
