// A learned profile declares the hardware it is for: the measured dataset's machine, never the
// preset a run was trained or simulated with (`dynamiccl train --data`; the lab's simulated demo: lab/tests/simulated_demo_test.cpp).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "command_run.h"

namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(DYNAMICCL_SOURCE_DIR) + "/tests/data/l40s_small.csv";

using dynamiccl::testing::CommandRun;
using dynamiccl::testing::fingerprintOf;

CommandRun dynamiccl(const std::string& args, const fs::path& logPath) {
  return dynamiccl::testing::runLogged(std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl", args, logPath);
}

class LearnedHardware : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dynamiccl-learned-hw-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(LearnedHardware, TrainOnMeasurementsDeclaresTheirMachine) {
  const fs::path out = dir_ / "learned.json";
  const CommandRun r = dynamiccl("train --no-store --epochs 1 --keys 10 --data '" + kFixture + "' -o '" + out.string() +
                              "' --curve '" + (dir_ / "curve.csv").string() + "'",
                          dir_ / "train.log");
  if (r.log.find("no LibTorch") != std::string::npos) GTEST_SKIP() << r.log;
  ASSERT_EQ(r.rc, 0) << r.log;
  const nlohmann::json fp = fingerprintOf(out);
  ASSERT_TRUE(fp.is_object()) << r.log;
  EXPECT_EQ(fp["gpu_cc"], 89) << fp.dump();
  // l40s-pcie-4 is a default calibration machine: its measurements measure the error, none is trained on.
  EXPECT_NE(r.log.find("0 rows trained on"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("its calibration machines measure the error"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("guard margin"), std::string::npos) << r.log;
  // --measured-on names the machine whatever the rows say; --preset declares another cluster outright.
  const CommandRun declared = dynamiccl("train --no-store --epochs 1 --keys 10 --data '" + kFixture + "' --preset h800 -o '" +
                                     out.string() + "' --curve '" + (dir_ / "curve.csv").string() + "'",
                                 dir_ / "train2.log");
  ASSERT_EQ(declared.rc, 0) << declared.log;
  EXPECT_EQ(fingerprintOf(out)["gpu_cc"], 90);
}

}  // namespace
