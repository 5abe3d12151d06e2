// Inputs that libFuzzer found breaking our readers (docs/HARDENING.md), kept as plain tests, plus a
// replay of every seed in fuzz/corpus/ so the default gcc build exercises what the fuzzers start from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "offline/ingest/ingest.h"
#include "offline/measurements/measurements.h"
#include "policy/profile.h"
#include "policy/policy.h"
#include "learned/learned.h"

namespace {

using dynamiccl::ingest::parseNcclTestsLog;

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Finding 1: "Collective test starting:" with nothing after it threw std::out_of_range (.at(0)).
TEST(FuzzRegression, NcclTestsLogHeaderWithoutCollectiveName) {
  const auto log = parseNcclTestsLog("# Collective test starting:\n# Collective test starting:   \n", "");
  EXPECT_TRUE(log.sections.empty());
}

// Finding 2: a rank number beyond int threw std::out_of_range from std::stoi.
TEST(FuzzRegression, NcclTestsLogHugeRankNumber) {
  const std::string text =
      "#  Rank 99999999999999999999 Group  0 Pid 1 on h1 device  0 [0000:4a:00] NVIDIA L40S\n"
      "           8             2     float     sum      -1    17.29    0.00    0.00       0    17.78    0.00    0.00       0\n";
  const auto log = parseNcclTestsLog(text, "all_reduce_perf.txt");
  ASSERT_EQ(log.sections.size(), 1u);
  EXPECT_GT(log.sections[0].n_ranks, 0);  // saturated, not wrapped negative
  EXPECT_EQ(log.sections[0].n_nodes, 1);
}

// Finding 3: nThread x nGpus and the path's N x G overflowed int (UBSan: signed integer overflow).
TEST(FuzzRegression, NcclTestsLogCountProductsDoNotOverflow) {
  const std::string text =
      "# nThread 99999 nGpus 99999 minBytes 8 maxBytes 8 step: 2(factor)\n"
      "           8             2     float     sum      -1    17.29    0.00    0.00       0    17.78    0.00    0.00       0\n";
  const auto log = parseNcclTestsLog(text, "logs/nccl_N99999_G99999_x.log");
  ASSERT_EQ(log.sections.size(), 1u);
  EXPECT_GT(log.sections[0].n_ranks, 0);
  EXPECT_GT(log.sections[0].n_nodes, 0);
}

// Finding 4: nccl-library=<huge> and -np <huge> on a launcher line threw from std::stoi.
TEST(FuzzRegression, NcclTestsLogHugeVersionAndNp) {
  const auto log = parseNcclTestsLog(
      "# nccl-tests version 2.17.9 nccl-headers=22902 nccl-library=999999999999999999999\n"
      "> mpirun -np 99999999999999999999 -npernode 99999999999999999999 all_reduce_perf\n",
      "");
  EXPECT_TRUE(log.sections.empty());
}

// Finding 5: a header naming "root" again after its first "time" made the time column's offset wrap
// below zero (size_t), and rows were then read far outside their word vector (UBSan/ASan).
TEST(FuzzRegression, NcclTestsLogHeaderWithRootAfterTime) {
  const std::string text =
      "#  size count type redop root time algbw busbw #wrong count type redop root time algbw busbw #wrong\n"
      "           8             2     float     sum      -1    17.29    0.00    0.00       0    17.78    0.00    0.00       0\n";
  const auto log = parseNcclTestsLog(text, "all_reduce_perf.txt");
  ASSERT_EQ(log.sections.size(), 1u);
  ASSERT_EQ(log.sections[0].rows.size(), 1u);
  EXPECT_DOUBLE_EQ(log.sections[0].rows[0].oop_time_us, 17.29);  // the default layout stands
}

// Every seed of every fuzz target goes through its reader without throwing.
// 20k-70k levels overflowed the stack (dump() of the "policy" value recursed); every JSON reader now
// refuses nesting beyond kMaxJsonDepth before parsing, and text over the size cap unread.
TEST(FuzzRegression, DeepNestingIsRefusedByEveryReader) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto profile = dynamiccl::policy::parseProfileJson(
      R"({"format":"dynamiccl-profile","version":1,"rules":[],"policy":)" + deep + "}");
  ASSERT_FALSE(profile.ok());
  EXPECT_NE(profile.error().find("nests deeper than 64"), std::string::npos) << profile.error();
  auto weights = dynamiccl::learned::parsePolicyWeights(R"({"format":"x","tensors":)" + deep + "}");
  ASSERT_FALSE(weights.ok());
  EXPECT_NE(weights.error().find("nests deeper than 64"), std::string::npos) << weights.error();
  // At the bound, strings holding brackets do not count.
  const std::string atLimit = R"({"format":"dynamiccl-profile","version":1,"name":"[[[{{","rules":[{"algo":"ring",)"
                              R"("proto":"ll","note":)" + std::string(61, '[') + std::string(61, ']') + "}]}";
  EXPECT_TRUE(dynamiccl::policy::parseProfileJson(atLimit).ok());
}

TEST(FuzzRegression, OversizedTextIsRefusedUnread) {
  const std::string big(dynamiccl::policy::kMaxProfileBytes + 1, '#');
  auto csv = dynamiccl::policy::parseNvidiaCsv(big);
  ASSERT_FALSE(csv.ok());
  EXPECT_NE(csv.error().find("limit"), std::string::npos) << csv.error();
  auto json = dynamiccl::policy::parseProfileJson(big);
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.error().find("limit"), std::string::npos) << json.error();
}

TEST(FuzzRegression, SeedCorporaReplay) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(DYNAMICCL_SOURCE_DIR) / "fuzz" / "corpus";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  int files = 0;
  for (const auto& target : fs::directory_iterator(root)) {
    const std::string name = target.path().filename().string();
    for (const auto& entry : fs::directory_iterator(target.path())) {
      const std::string text = readFile(entry.path());
      SCOPED_TRACE(entry.path().string());
      ++files;
      if (name == "fuzz_profile_json") {
        EXPECT_NO_THROW((void)dynamiccl::policy::parseProfileJson(text));
      } else if (name == "fuzz_nvidia_csv") {
        EXPECT_TRUE(dynamiccl::policy::parseNvidiaCsv(text).ok());
      } else if (name == "fuzz_nccl_tests_log") {
        const size_t nl = text.find('\n');
        EXPECT_NO_THROW((void)parseNcclTestsLog(text.substr(nl + 1), text.substr(0, nl)));
      } else if (name == "fuzz_interchange_csv") {
        EXPECT_TRUE(dynamiccl::measurements::parseInterchangeCsv(text).ok());
      } else {
        ADD_FAILURE() << "no reader for corpus " << name;
      }
    }
  }
  EXPECT_GE(files, 10);
}

}  // namespace
