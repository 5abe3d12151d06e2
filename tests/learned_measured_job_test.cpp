// The learned policy running in the job on the embedded L40S measurements (`dynamiccl demo
// --learned --quick --iterations 4000`: quick training, a job of 4000 passes over the 25 keys): a
// profile whose only rules are the network's (trained with L40S held out), verified in a job
// replayed through the real plugin with every rank a process. Every rank decides
// alike, exploration stays within 1% of collective time, and the final epoch is within 1.01x of the
// measured best at every key (all measured).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "policy/policy.h"

namespace fs = std::filesystem;

namespace {

class LearnedMeasuredJob : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = new fs::path(fs::temp_directory_path() / ("dynamiccl-learned-job-test-" + std::to_string(::getpid())));
    fs::remove_all(*out_);
    const std::string cmd = std::string(DYNAMICCL_BINARY_DIR) +
                            "/offline/dynamiccl demo --learned --quick --iterations 4000 --no-plots --out '" + out_->string() + "' > '" +
                            out_->string() + ".log' 2>&1";
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
  static bool trained() { return log().find("no LibTorch") == std::string::npos; }
  static inline fs::path* out_ = nullptr;
  static inline int rc_ = -1;
};

TEST_F(LearnedMeasuredJob, RanksAgreeExploresWithinOnePercentAndEndsWithinOnePercentOfTheBest) {
  if (rc_ != 0 && !trained()) GTEST_SKIP() << "this build has no LibTorch: nothing to train";
  ASSERT_EQ(rc_, 0) << log();
  auto learned = dynamiccl::policy::loadProfileFile((*out_ / "learned.json").string());
  ASSERT_TRUE(learned) << learned.error();
  EXPECT_TRUE(learned->rules.empty());  // the network's rules only, generated per communicator
  std::ifstream in(*out_ / "learned.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_TRUE(doc.contains("policy"));
  ASSERT_TRUE(doc.contains("fingerprint"));
  EXPECT_NE(doc["meta"]["trained_on"].get<std::string>().find("h800"), std::string::npos);
  EXPECT_EQ(doc["meta"]["held_out"].get<std::string>().find("h800"), std::string::npos);
  const nlohmann::json s = summary();
  EXPECT_EQ(s["mode"], "measured");
  EXPECT_EQ(s["profile"], "learned");
  const int ranks = s["shape"]["nRanks"];
  EXPECT_GE(ranks, 4);
  EXPECT_EQ(s["job"]["per_rank"].size(), static_cast<size_t>(ranks));  // every rank a process
  EXPECT_TRUE(fs::exists(*out_ / "verified.json"));

  // Ranks agree and exploration stays within 1% of collective time.
  EXPECT_TRUE(s["job"]["all_finished"].get<bool>());
  EXPECT_TRUE(s["job"]["ranks_agree"].get<bool>());
  for (const auto& r : s["job"]["per_rank"]) {
    EXPECT_TRUE(r["finished"].get<bool>()) << r.dump();
    EXPECT_EQ(r["hash"], s["job"]["per_rank"][0]["hash"]);
    EXPECT_LE(r["explore_share"].get<double>(), 0.01) << r.dump();
  }

  // The final epoch is within 1.01x of the best the dataset's runs establish at every key.
  ASSERT_FALSE(s["keys"].empty());
  for (const auto& k : s["keys"])
    EXPECT_LE(k["vs_established_best"].get<double>(), 1.01)
        << k["collective"] << " " << k["bytes"] << ": ran " << k["final_config"] << ", best " << k["best_config"]
        << ", NCCL " << k["default_config"];
}

}  // namespace
