// The main job end to end: `dynamiccl demo --quick` writes every output, its profiles load back,
// and the tuned table is never slower than NCCL's default (the guard's promise).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "policy/policy.h"

namespace fs = std::filesystem;
using dynamiccl::policy::ProfileFormat;
using dynamiccl::policy::loadProfileFile;

namespace {

// Runs the demo once for all tests of this file (it takes most of a minute).
class DemoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = new fs::path(fs::temp_directory_path() / ("dynamiccl-demo-test-" + std::to_string(::getpid())));
    fs::remove_all(*out_);
    const std::string cmd = std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl demo --quick --out '" +
                            out_->string() + "' > '" + out_->string() + ".log' 2>&1";
    rc_ = std::system(cmd.c_str());
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(*out_), fs::remove(out_->string() + ".log");
    delete out_;
  }
  static std::string log() {
    std::ifstream in(out_->string() + ".log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static nlohmann::json summary() {
    std::ifstream in(*out_ / "summary.json");
    return nlohmann::json::parse(in);
  }
  static inline fs::path* out_ = nullptr;
  static inline int rc_ = -1;
};

TEST_F(DemoTest, WritesEveryOutput) {
  ASSERT_EQ(rc_, 0) << log();
  for (const char* f : {"sim-params.json", "nccl_default.csv", "tuned.json", "tuned-nvidia.conf", "tune-report.json",
                        "replay_points.csv", "decision_map.csv", "summary.json"})
    EXPECT_TRUE(fs::exists(*out_ / f)) << f << "\n" << log();
  // Plots need Debian's python3 with matplotlib; where it is there they must be written.
  if (std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(fs::exists(*out_ / "busbw.png")) << log();
    EXPECT_TRUE(fs::exists(*out_ / "decision_map.png")) << log();
  }
}

TEST_F(DemoTest, ProfilesValidate) {
  ASSERT_EQ(rc_, 0) << log();
  auto tuned = loadProfileFile((*out_ / "tuned.json").string());
  ASSERT_TRUE(tuned) << tuned.error();
  auto csv = loadProfileFile((*out_ / "tuned-nvidia.conf").string(), ProfileFormat::NvidiaCsv);
  ASSERT_TRUE(csv) << csv.error();
  EXPECT_EQ(csv->rules.size(), tuned->rules.size());
  bool learnedReplayed = false;
  const nlohmann::json s = summary();  // kept alive: range-for over a temporary's member would dangle
  for (const auto& p : s["profiles"]) learnedReplayed |= p["profile"] == "learned";
  // Without LibTorch the demo skips training; with it, learned.json carries the network.
  EXPECT_EQ(learnedReplayed, fs::exists(*out_ / "learned.json"));
  if (learnedReplayed) {
    auto learned = loadProfileFile((*out_ / "learned.json").string());
    ASSERT_TRUE(learned) << learned.error();
    EXPECT_TRUE(learned->network != nullptr);
  }
}

TEST_F(DemoTest, TunedNeverSlowerThanNcclDefault) {
  ASSERT_EQ(rc_, 0) << log();
  const nlohmann::json s = summary();
  bool sawTuned = false;
  for (const auto& p : s["profiles"]) {
    if (p["profile"] != "tuned") continue;
    sawTuned = true;
    ASSERT_EQ(p["collectives"].size(), 3u);
    for (const auto& c : p["collectives"]) {
      EXPECT_GT(c["points"].get<int>(), 0) << c.dump();
      EXPECT_LE(c["geomean_vs_default"].get<double>(), 1.0) << c.dump();
      EXPECT_GE(c["geomean_vs_best"].get<double>(), 1.0 - 1e-9) << c.dump();
    }
  }
  EXPECT_TRUE(sawTuned);
  EXPECT_GT(s["tuner"]["spent_iterations"].get<int64_t>(), 0);
  EXPECT_LT(s["tuner"]["spent_iterations"].get<int64_t>(), s["tuner"]["grid_iterations"].get<int64_t>());
}

}  // namespace
