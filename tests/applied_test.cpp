// Applied or not: observations joined with the decision for the same call give, per communicator shape
// and key, the share of calls where NCCL ran the plugin's choice and the likely cause where it did not.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "offline/applied/applied.h"
#include "store/store.h"
#include "test_support.h"

namespace dynamiccl {
namespace {

using applied::Cause;
using store::DecisionRow;
using store::ObservationRow;

struct TempDb {
  std::string dir, path;
  TempDb() {
    char tmpl[] = "/tmp/dynamiccl_applied_test_XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/store.db";
  }
  ~TempDb() { std::filesystem::remove_all(dir); }
};

// Builds runs of plugin and log rows through the store's own writer.
class StoreBuilder {
 public:
  explicit StoreBuilder(const std::string& path) {
    store::StoreOptions o;
    o.path = path;
    auto db = store::Store::open(o);
    EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error());
    db_ = std::move(db.value());
    writer_ = std::move(store::Writer::create(*db_).value());
  }
  int64_t comm(const std::string& source, const std::string& env, int nRanks, int nNodes,
               const std::string& ncclVersion = "2.31.2") {
    store::RunInfo run;
    run.source = source;
    run.env_json = env;
    run.nccl_version = ncclVersion;
    store::CommInfo c;
    c.run_id = db_->addRun(run).value();
    c.comm_id = 0xabc;
    c.n_ranks = nRanks;
    c.n_nodes = nNodes;
    return db_->addCommunicator(c).value();
  }
  // One call: what ran, and (chosenAlgo non-empty) what the plugin decided for it.
  void call(int64_t comm, const std::string& coll, uint64_t bytes, Algo ran, Proto ranProto, int ranChannels,
            const char* chosenSource = nullptr, Algo chosen = Algo::Default, Proto chosenProto = Proto::Default,
            int chosenChannels = -1, const char* join = "joined", bool sym = false) {
    ObservationRow o;
    o.comm_row = comm;
    o.seq = seq_++;
    o.collective = coll;
    o.bytes = bytes;
    o.algo = ran;
    o.proto = ranProto;
    o.n_channels = ranChannels;
    o.gpu_us = 10;
    o.ts_ns = 1;
    o.profiler_version = 7;
    o.is_sym_coll = sym ? 1 : 0;
    o.user_tag = 0;
    o.decision_join = join;
    batch_.observations.push_back(o);
    if (!chosenSource) return;
    DecisionRow d;
    d.comm_row = comm;
    d.seq = o.seq;
    d.collective = coll;
    d.bytes = bytes;
    d.algo = chosen;
    d.proto = chosenProto;
    d.n_channels = chosenChannels;
    d.source = chosenSource;
    d.ts_ns = 1;
    batch_.decisions.push_back(d);
  }
  void commit() {
    ASSERT_TRUE(writer_->write(batch_).committed);
    batch_.clear();
  }
  store::Store& db() { return *db_; }

 private:
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<store::Writer> writer_;
  store::Batch batch_;
  int64_t seq_ = 0;
};

// 8 ranks on 1 node: 4 KiB allreduce chosen RING/LL/4ch for 10 calls, 8 honoured, one run on TREE
// (no NCCL_ALGO: a per-call selection), one on 2 channels (the cap). 16 ranks on 2 nodes under
// NCCL_ALGO=tree: every choice overridden. Plus calls the plugin left to NCCL, never-consulted
// alltoall, graph replays, a symmetric kernel, and an ingested log that must not count.
void fill(StoreBuilder& b) {
  const int64_t small = b.comm("plugin", "{}", 8, 1);
  for (int i = 0; i < 8; ++i)
    b.call(small, "allreduce", 4096, Algo::Ring, Proto::LL, 4, "table", Algo::Ring, Proto::LL, 4);
  b.call(small, "allreduce", 4096, Algo::Tree, Proto::LL, 4, "table", Algo::Ring, Proto::LL, 4);
  b.call(small, "allreduce", 4096, Algo::Ring, Proto::LL, 2, "table", Algo::Ring, Proto::LL, 4);
  b.call(small, "allreduce", 65536, Algo::Ring, Proto::Simple, 8, "default");
  b.call(small, "allreduce", 65536, Algo::Ring, Proto::Simple, 8, "default");
  for (int i = 0; i < 3; ++i) b.call(small, "alltoall", 1 << 20, Algo::Default, Proto::Default, -1, nullptr, {}, {}, -1, "");
  b.call(small, "allreduce", 1 << 20, Algo::Ring, Proto::Simple, 8, nullptr, {}, {}, -1, "not_asked");
  b.call(small, "allreduce", 1 << 20, Algo::Ring, Proto::Simple, 8, nullptr, {}, {}, -1, "not_asked");
  b.call(small, "allreduce", 1 << 20, Algo::Ring, Proto::Simple, 8, nullptr, {}, {}, -1, "no_tuner");
  b.call(small, "allgather", 8192, Algo::Default, Proto::Default, 4, "table", Algo::Ring, Proto::Simple, -1, "joined",
         /*sym=*/true);
  // Channels only (the rule kept NCCL's algorithm and protocol): honoured when the count matches.
  b.call(small, "allgather", 8192, Algo::Ring, Proto::Simple, 6, "online", Algo::Default, Proto::Default, 6);

  const int64_t big = b.comm("plugin", R"({"NCCL_ALGO":"tree"})", 16, 2);
  for (int i = 0; i < 4; ++i)
    b.call(big, "allreduce", 4096, Algo::Tree, Proto::LL, 4, "table", Algo::Ring, Proto::LL, 4);

  const int64_t log = b.comm("nccl-tests.log", "{}", 8, 1);
  b.call(log, "allreduce", 4096, Algo::Tree, Proto::LL, 4, "nccl", Algo::Ring, Proto::LL, 4);
  b.commit();
}

const applied::KeyShare* find(const applied::Report& r, int nRanks, const std::string& coll, uint64_t bytes) {
  for (const auto& k : r.keys)
    if (k.n_ranks == nRanks && k.collective == coll && k.bucket == SizeBucket::of(bytes)) return &k;
  return nullptr;
}

int64_t causeCount(const applied::KeyShare& k, Cause c) {
  auto it = k.causes.find(c);
  auto un = k.unattributed.find(c);
  return (it == k.causes.end() ? 0 : it->second) + (un == k.unattributed.end() ? 0 : un->second);
}

// Fewer channels than chosen is NCCL's cap only where the run's NCCL caps (2.31+); before, the
// tuner's count replaced NCCL's, and an unknown version says neither.
TEST(Applied, ChannelCapOnlyUnderReleasesThatCap) {
  TempDb tmp;
  StoreBuilder b(tmp.path);
  for (const auto& [version, nRanks] : std::vector<std::pair<std::string, int>>{
           {"2.28.9", 2}, {"2.30.7", 3}, {"", 4}, {"2.31.2", 5}, {"2.32.6", 6}}) {
    const int64_t c = b.comm("plugin", "{}", nRanks, 1, version);
    b.call(c, "allreduce", 4096, Algo::Ring, Proto::LL, 2, "table", Algo::Ring, Proto::LL, 4);
  }
  b.commit();
  auto report = applied::appliedReport(b.db());
  ASSERT_TRUE(report.ok()) << report.error();
  for (int nRanks : {2, 3, 4, 5, 6}) {
    const auto* k = find(*report, nRanks, "allreduce", 4096);
    ASSERT_NE(k, nullptr);
    const bool caps = nRanks >= 5;
    EXPECT_EQ(causeCount(*k, Cause::ChannelCap), caps ? 1 : 0) << nRanks;
    EXPECT_EQ(causeCount(*k, Cause::FewerChannels), caps ? 0 : 1) << nRanks;
  }
}

TEST(Applied, SharesAndCausesPerShapeAndKey) {
  TempDb tmp;
  StoreBuilder b(tmp.path);
  fill(b);
  auto report = applied::appliedReport(b.db());
  ASSERT_TRUE(report.ok()) << report.error();

  const auto* smallAr = find(*report, 8, "allreduce", 4096);
  ASSERT_NE(smallAr, nullptr);
  EXPECT_EQ(smallAr->calls, 10);
  EXPECT_EQ(smallAr->chosen, 10);
  EXPECT_EQ(smallAr->honoured, 8);
  EXPECT_DOUBLE_EQ(smallAr->share(), 0.8);
  EXPECT_EQ(causeCount(*smallAr, Cause::CallOverride), 1);
  EXPECT_EQ(causeCount(*smallAr, Cause::ChannelCap), 1);
  EXPECT_EQ(smallAr->causes.size(), 2u);

  const auto* bigAr = find(*report, 16, "allreduce", 4096);
  ASSERT_NE(bigAr, nullptr);
  EXPECT_EQ(bigAr->n_nodes, 2);
  EXPECT_EQ(bigAr->calls, 4);  // the ingested log's row is not a plugin run: not counted
  EXPECT_EQ(bigAr->honoured, 0);
  EXPECT_DOUBLE_EQ(bigAr->share(), 0.0);
  EXPECT_EQ(causeCount(*bigAr, Cause::EnvOverride), 4);

  const auto* kept = find(*report, 8, "allreduce", 65536);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->keptNccl, 2);
  EXPECT_EQ(kept->chosen, 0);
  EXPECT_TRUE(std::isnan(kept->share()));

  const auto* a2a = find(*report, 8, "alltoall", 1 << 20);
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(causeCount(*a2a, Cause::NeverConsulted), 3);
  EXPECT_EQ(a2a->chosen, 0);

  const auto* replay = find(*report, 8, "allreduce", 1 << 20);
  ASSERT_NE(replay, nullptr);
  EXPECT_EQ(causeCount(*replay, Cause::GraphReplay), 2);
  EXPECT_EQ(causeCount(*replay, Cause::NoTuner), 1);
  EXPECT_EQ(replay->reached(), 0.0) << "calls the tuner was never asked about reached it";

  const auto* ag = find(*report, 8, "allgather", 8192);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->chosen, 2);
  EXPECT_EQ(ag->honoured, 1);
  EXPECT_EQ(causeCount(*ag, Cause::SymmetricKernel), 1);

  EXPECT_EQ(report->total.calls, 10 + 2 + 3 + 3 + 2 + 4);
  EXPECT_EQ(report->total.chosen, 16);
  EXPECT_EQ(report->total.honoured, 9);
  EXPECT_DOUBLE_EQ(report->total.reached(), 18.0 / 24) << "the 6 calls never consulted did not reach the tuner";
}

TEST(Applied, CommandPrintsTheShares) {
  TempDb tmp;
  {
    StoreBuilder b(tmp.path);
    fill(b);
  }
  const std::string cmd = std::string("env -u DYNAMICCL_DB ") + DYNAMICCL_BINARY_DIR + "/offline/dynamiccl db applied --db '" +
                          tmp.path + "' 2>&1";
  const testing::ShellResult r = testing::runShell(cmd);
  const std::string& out = r.output;
  ASSERT_EQ(r.rc, 0) << out;
  EXPECT_NE(out.find("80.0%"), std::string::npos) << out;
  EXPECT_NE(out.find("NCCL_ALGO/NCCL_PROTO set in the run's environment: 4"), std::string::npos) << out;
  EXPECT_NE(out.find("channel cap (fewer channels than chosen: NCCL 2.31+ only lowers its own count): 1"), std::string::npos) << out;
  EXPECT_NE(out.find("16r/2n"), std::string::npos) << out;
  EXPECT_NE(out.find("measured: 24 calls, 75.0% of them reached the tuner, 16 with a plugin choice, 9 honoured (56.2%)"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace dynamiccl
