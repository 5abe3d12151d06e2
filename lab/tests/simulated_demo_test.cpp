// The lab's simulated demo (`dynamiccl-lab demo --quick`): every output written, its profiles load back,
// the tuned table is never slower than NCCL's default (the guard's promise); with --data the learned
// profile declares the dataset's machine; and a platform of one's own runs with the calibration it names.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "policy/policy.h"
#include "learned/learned.h"
#include "tests/command_run.h"

namespace fs = std::filesystem;
using dynamiccl::policy::ProfileFormat;
using dynamiccl::policy::loadProfileFile;

namespace {

const std::string kLab = std::string(DYNAMICCL_BINARY_DIR) + "/lab/dynamiccl-lab";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `dynamiccl-lab demo --quick <flags>` once for all tests of a suite.
class DemoRun : public ::testing::Test {
 protected:
  static void run(const std::string& flags) {
    out_ = new fs::path(fs::temp_directory_path() / ("dynamiccl-lab-demo-test-" + std::to_string(::getpid())));
    fs::remove_all(*out_);
    const std::string cmd = kLab + " demo --quick " + flags + " --out '" + out_->string() + "' > '" + out_->string() +
                            ".log' 2>&1";
    rc_ = std::system(cmd.c_str());
  }
  static void TearDownTestSuite() {
    if (!::testing::UnitTest::GetInstance()->Failed()) fs::remove_all(*out_), fs::remove(out_->string() + ".log");
    delete out_;
  }
  static std::string log() { return slurp(out_->string() + ".log"); }
  static nlohmann::json summary() {
    std::ifstream in(*out_ / "summary.json");
    return nlohmann::json::parse(in);
  }
  static inline fs::path* out_ = nullptr;
  static inline int rc_ = -1;
};

class DemoTest : public DemoRun {
 protected:
  static void SetUpTestSuite() { run(""); }
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
    EXPECT_TRUE(fs::exists(*out_ / "vs_nccl.png")) << log();
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
    auto network = dynamiccl::learned::readNetwork(*learned);
    EXPECT_TRUE(network.ok() && *network != nullptr);
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

// ---- with --data: the learned profile declares the dataset's machine ----

const std::string kFixture = std::string(DYNAMICCL_SOURCE_DIR) + "/tests/data/l40s_small.csv";

using dynamiccl::testing::CommandRun;
using dynamiccl::testing::fingerprintOf;

CommandRun lab(const std::string& args, const fs::path& logPath) { return dynamiccl::testing::runLogged(kLab, args, logPath); }

class LabDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dynamiccl-lab-demo-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

// The simulated demo trains on the simulated cluster; --data then tunes and replays on the dataset.
TEST_F(LabDir, DemoWithDataDeclaresTheDatasetsMachine) {
  const CommandRun r = lab("demo --quick --no-plots --data '" + kFixture + "' --out '" + dir_.string() + "'",
                                 dir_ / "demo.log");
  ASSERT_EQ(r.rc, 0) << r.log;
  if (r.log.find("no LibTorch") != std::string::npos) GTEST_SKIP() << "this build has no LibTorch: the demo trains nothing";
  ASSERT_TRUE(fs::exists(dir_ / "learned.json")) << r.log;
  const nlohmann::json fp = fingerprintOf(dir_ / "learned.json");
  ASSERT_TRUE(fp.is_object()) << r.log;
  // The L40S machine (sm_89, PCIe only, 2 NICs), not the demo's default preset (h800: 90, NVLink, 8 NICs).
  EXPECT_EQ(fp["gpu_cc"], 89) << fp.dump();
  EXPECT_EQ(fp["nvlink_GBps"], 0) << fp.dump();
  EXPECT_EQ(fp["nics_per_node"], 2) << fp.dump();
}

// A cluster of one's own (a platform file) runs with the calibration its file names.
TEST_F(LabDir, APlatformFileRunsWithTheCalibrationItNames) {
  const fs::path platform = dir_ / "test-h9.json";
  std::ofstream(platform) << R"({"format": "dynamiccl-platform", "version": 1, "name": "test-h9",
    "description": "a made-up cluster for simulated_demo_test", "source": "none: test data", "systems": ["TestGPU-H9"],
    "calibration": {"dataset": "h100-ib-cluster-xxrjun", "group": "H100"},
    "topology": {"computeCap": 90, "gpusPerNode": 4, "nvlink": true, "nvswitch": true, "nvlinkBwPerGpu_GBps": 300.0,
                 "pcieBw_GBps": 50.0, "nicsPerNode": 2, "nicBw_GBps": 25.0, "nvlsSupport": false}})";
  const fs::path out = dir_ / "demo-out";
  const CommandRun r = lab("demo --quick --no-plots --platform '" + platform.string() + "' --preset test-h9 --nodes 2 --out '" +
                               out.string() + "'",
                           dir_ / "demo.log");
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_NE(r.log.find("test-h9: 8 ranks / 2 nodes, NVLink:NIC 24:1; simulator: calibration h100-ib-cluster-xxrjun"),
            std::string::npos)
      << r.log;
  EXPECT_TRUE(fs::exists(out / "summary.json")) << r.log;
}

}  // namespace
