// The recipe's plan for held-out machines, the one the demo and policy-eval's leave-one-out share:
// what it holds out and calibrates on, where it writes, and that a measured file it cannot read
// stops it instead of being skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "offline/train/train.h"

namespace dynamiccl {
namespace {

bool has(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

TEST(HeldOutPlan, HoldsOutItsMachinesFromTrainingAndCalibration) {
  const std::vector<std::string> calibration = train::defaultCalibrationPrefixes();
  ASSERT_TRUE(has(calibration, "l40s-pcie-4") && has(calibration, "gh200-slingshot"));
  // A held-out machine named more precisely than a calibration prefix still takes that prefix out.
  const train::TrainPlan plan = train::heldOutPlan({"h800", "l40s-pcie-4x2"}, {"other.csv"}, "/tmp/out");
  EXPECT_EQ(plan.holdOut, (std::vector<std::string>{"h800", "l40s-pcie-4x2"}));
  EXPECT_FALSE(has(plan.calibrateOn, "l40s-pcie-4"));
  EXPECT_TRUE(has(plan.calibrateOn, "gh200-slingshot"));
  EXPECT_EQ(plan.measuredFiles, std::vector<std::string>{"other.csv"});
  EXPECT_EQ(plan.profilePath, "/tmp/out/learned.json");
  EXPECT_EQ(plan.curvePath, "/tmp/out/learning_curve.csv");
  // The recipe's defaults otherwise: the weight of a measured row, the confidence quantile.
  EXPECT_EQ(plan.realWeight, train::TrainPlan{}.realWeight);
  EXPECT_EQ(plan.confidenceQuantile, train::TrainPlan{}.confidenceQuantile);
}

TEST(HeldOutPlan, AMeasuredFileThatDoesNotLoadStopsThePlan) {
  const train::TrainReport r =
      train::runTrainPlan(train::heldOutPlan({"h800"}, {"/nonexistent/normalized.csv"}, "/tmp"));
  EXPECT_EQ(r.failure, train::TrainFailure::Input);
  EXPECT_NE(r.error.find("/nonexistent/normalized.csv"), std::string::npos) << r.error;
}

TEST(ShippedData, TheEmbeddedDatasetIsAmongTheShippedOnes) {
  const std::filesystem::path dir = train::shippedDatasetsDir();
  EXPECT_TRUE(std::filesystem::is_regular_file(train::embeddedDataset())) << train::embeddedDataset();
  EXPECT_EQ(std::filesystem::path(train::embeddedDataset()).parent_path().parent_path(), dir);
}

}  // namespace
}  // namespace dynamiccl
