// export --from-store on a store with odd verdict rows: each odd row is refused with its reason,
// every good one is written, and what is written passes validate (the plugin's own reader).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "offline/verdicts/verdicts.h"
#include "policy/policy.h"
#include "store/store.h"
#include "test_support.h"

namespace dynamiccl {
namespace {

namespace fs = std::filesystem;
const std::string kDynamiccl = std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl";

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/dynamiccl_verdicts_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

const char* kFingerprint = R"({"gpu_cc":90,"nvlink_GBps":450.0,"nics_per_node":8,"nic_GBps":50.0})";

// A promoted verdict that makes a valid rule; tests spoil one field at a time.
store::VerdictRow goodVerdict(uint64_t minBytes) {
  store::VerdictRow v;
  v.fingerprint = kFingerprint;
  v.nccl_version = "2.28.9";
  v.n_ranks = 8;
  v.n_nodes = 1;
  v.collective = "allreduce";
  v.min_bytes = minBytes;
  v.max_bytes = 2 * minBytes - 1;
  v.algo = "TREE";
  v.proto = "LL";
  v.base_algo = "RING";
  v.base_proto = "SIMPLE";
  v.n = 40;
  v.base_n = 900;
  v.mean_log_us = 2.0;
  v.var_log_us = 0.01;
  v.base_mean_log_us = 2.1;
  v.base_var_log_us = 0.01;
  v.gain = 0.1;
  v.gain_low = 0.05;
  v.gain_high = 0.15;
  v.state = "promoted";
  v.ts_ns = 1'700'000'000'000'000'000;
  return v;
}

void execSql(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

// Two good verdicts (1 MiB and 4 MiB buckets) and one odd row per kind, each in its own bucket.
std::string storeWithOddRows(const TempDir& dir) {
  const std::string db = (dir.path / "store.db").string();
  auto store = store::Store::open({.path = db});
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error());
  if (!store.ok()) return db;
  std::vector<store::VerdictRow> rows = {goodVerdict(1 << 20), goodVerdict(1 << 22)};
  store::VerdictRow zeroRanks = goodVerdict(1 << 10);
  zeroRanks.n_ranks = 0;
  store::VerdictRow negativeNodes = goodVerdict(1 << 11);
  negativeNodes.n_nodes = -2;
  store::VerdictRow inverted = goodVerdict(1 << 12);
  inverted.max_bytes = inverted.min_bytes - 1;
  store::VerdictRow moreNodesThanRanks = goodVerdict(1 << 13);
  moreNodesThanRanks.n_nodes = 16;
  store::VerdictRow unknownAlgo = goodVerdict(1 << 14);
  unknownAlgo.algo = "WORMHOLE";
  store::VerdictRow garbageVersion = goodVerdict(1 << 19);
  garbageVersion.nccl_version = "banana";
  store::VerdictRow noWin = goodVerdict(1 << 21);
  noWin.gain = 0.02;
  noWin.gain_low = -0.01;
  rows.insert(rows.end(), {zeroRanks, negativeNodes, inverted, moreNodesThanRanks, unknownAlgo, garbageVersion, noWin});
  EXPECT_TRUE((*store)->addVerdicts(rows).ok());
  store->reset();
  // Values no build writes, as a hand edit or another tool leaves them.
  const std::string copy =
      "INSERT INTO verdicts(fingerprint, nccl_version, n_ranks, n_nodes, collective, min_bytes, max_bytes, algo, proto, "
      "n_channels, chunk, base_algo, base_proto, n, mean_log_us, var_log_us, base_n, base_mean_log_us, base_var_log_us, "
      "gain, gain_low, gain_high, state, ts_ns) SELECT fingerprint, nccl_version, %RANKS%, n_nodes, collective, %MIN%, "
      "%MAX%, algo, proto, n_channels, chunk, base_algo, base_proto, n, mean_log_us, var_log_us, base_n, "
      "base_mean_log_us, base_var_log_us, gain, gain_low, gain_high, state, ts_ns FROM verdicts WHERE min_bytes = 1048576;";
  auto variant = [&](const std::string& ranks, const std::string& lo, const std::string& hi) {
    std::string sql = copy;
    sql.replace(sql.find("%RANKS%"), 7, ranks);
    sql.replace(sql.find("%MIN%"), 5, lo);
    sql.replace(sql.find("%MAX%"), 5, hi);
    return sql;
  };
  execSql(db, variant("'eight'", "32768", "65535"));  // text in a number column
  execSql(db, variant("n_ranks", "-65536", "-32769"));  // a negative byte range
  execSql(db, variant("n_ranks", "131072", "'lots'"));  // text in max_bytes
  return db;
}

TEST(VerdictsExport, EachOddRowIsRefusedWithItsReasonAndEveryGoodOneIsKept) {
  TempDir dir;
  const std::string path = storeWithOddRows(dir);
  auto db = store::Store::open({.path = path, .read_only = true});
  ASSERT_TRUE(db.ok()) << db.error();
  auto verified = verdicts::profileFromStore(**db, "verified");
  ASSERT_TRUE(verified.ok()) << verified.error();

  ASSERT_EQ(verified->profile.rules.size(), 2u);
  EXPECT_EQ(verified->profile.rules[0].minBytes, uint64_t{1} << 20);
  EXPECT_EQ(verified->profile.rules[1].minBytes, uint64_t{1} << 22);
  std::map<uint64_t, std::string> reasons;  // by the odd row's first byte count as stored
  for (const auto& r : verified->refused) {
    reasons[r.row.min_bytes] = r.reason;
    ASSERT_LT(r.index, verified->verdicts.size());
    EXPECT_EQ(verified->verdicts[r.index].min_bytes, r.row.min_bytes);
  }
  ASSERT_EQ(verified->refused.size(), 10u);
  EXPECT_NE(reasons[1 << 19].find("nccl_version"), std::string::npos) << reasons[1 << 19];
  EXPECT_NE(reasons[1 << 21].find("no gain beyond its interval"), std::string::npos) << reasons[1 << 21];
  EXPECT_NE(reasons[1 << 10].find("ranks must be >= 1"), std::string::npos) << reasons[1 << 10];
  EXPECT_NE(reasons[1 << 11].find("nodes must be >= 1"), std::string::npos) << reasons[1 << 11];
  EXPECT_NE(reasons[1 << 12].find("inverted"), std::string::npos) << reasons[1 << 12];
  EXPECT_NE(reasons[1 << 13].find("more nodes"), std::string::npos) << reasons[1 << 13];
  EXPECT_NE(reasons[1 << 14].find("unknown algo"), std::string::npos) << reasons[1 << 14];
  EXPECT_NE(reasons[32768].find("n_ranks holds text"), std::string::npos) << reasons[32768];
  EXPECT_NE(reasons[static_cast<uint64_t>(int64_t{-65536})].find("min_bytes is negative"), std::string::npos)
      << reasons[static_cast<uint64_t>(int64_t{-65536})];
  EXPECT_NE(reasons[131072].find("max_bytes holds text"), std::string::npos) << reasons[131072];

  auto back = policy::parseProfileJson(policy::profileToJson(verified->profile));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->rules.size(), 2u);
}

// A job that verified a candidate forcing the algorithm alone stores its protocol as "default": the
// rule it exports says the same (NCCL's protocol within Tree), and the plugin's reader accepts it.
TEST(VerdictsExport, AVerdictOnTheAlgorithmAloneExportsARuleLeavingTheProtocolToNccl) {
  TempDir dir;
  const std::string path = (dir.path / "store.db").string();
  {
    auto store = store::Store::open({.path = path});
    ASSERT_TRUE(store.ok()) << store.error();
    store::VerdictRow v = goodVerdict(1 << 20);
    v.proto = "default";
    ASSERT_TRUE((*store)->addVerdicts({v}).ok());
  }
  auto db = store::Store::open({.path = path, .read_only = true});
  ASSERT_TRUE(db.ok()) << db.error();
  auto verified = verdicts::profileFromStore(**db, "verified");
  ASSERT_TRUE(verified.ok()) << verified.error();
  ASSERT_EQ(verified->profile.rules.size(), 1u) << (verified->refused.empty() ? "" : verified->refused[0].reason);
  EXPECT_TRUE(verified->profile.rules[0].decision.leavesProtoToNccl());
  auto back = policy::parseProfileJson(policy::profileToJson(verified->profile));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->rules[0].decision, (policy::Decision{Algo::Tree, Proto::Default, 0, 0}));
}

TEST(VerdictsExport, TheCommandNamesEachRefusedRowAndWritesWhatValidateAccepts) {
  TempDir dir;
  const std::string db = storeWithOddRows(dir);
  const std::string out = (dir.path / "verified.json").string();
  const auto exported = testing::runShell("env -u DYNAMICCL_DB " + kDynamiccl + " export --from-store '" + db +
                                          "' -o '" + out + "' 2>&1");
  ASSERT_EQ(exported.rc, 0) << exported.output;
  size_t refusedLines = 0;
  for (size_t at = exported.output.find("refused ("); at != std::string::npos;
       at = exported.output.find("refused (", at + 1))
    ++refusedLines;
  EXPECT_EQ(refusedLines, 10u) << exported.output;
  EXPECT_NE(exported.output.find("wrote " + out + " (2 rules"), std::string::npos) << exported.output;

  const auto validated = testing::runShell(kDynamiccl + " validate '" + out + "' 2>&1");
  EXPECT_EQ(validated.rc, 0) << validated.output;
  EXPECT_NE(validated.output.find("ok: verified-in-job, 2 rules"), std::string::npos) << validated.output;
}

}  // namespace
}  // namespace dynamiccl
