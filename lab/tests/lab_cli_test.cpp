// The lab's command, dynamiccl-lab, through the shell: its commands are there and not in the product's
// dynamiccl; its CSV writer says when it cannot write; policy-eval replays the data it is given.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "policy/policy.h"
#include "learned/learned.h"
#include "tests/policy_weights_fixture.h"
#include "tests/test_support.h"

namespace {

namespace fs = std::filesystem;
const std::string kLab = std::string(DYNAMICCL_BINARY_DIR) + "/lab/dynamiccl-lab";
const std::string kDynamiccl = std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl";

using Result = dynamiccl::testing::ShellResult;

Result lab(const std::string& args) {
  return dynamiccl::testing::runShell("env -u DYNAMICCL_DB " + kLab + " " + args + " 2>&1");
}

std::string contentOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/dynamiccl_lab_cli_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(LabCli, TheLabsCommandsAreTheLabsAndNotTheProducts) {
  const Result help = lab("--help");
  ASSERT_EQ(help.rc, 0) << help.output;
  const Result product = dynamiccl::testing::runShell(kDynamiccl + " --help 2>&1");
  ASSERT_EQ(product.rc, 0) << product.output;
  for (const char* command : {"calibrate", "crossval", "policy-eval", "online-eval"}) {
    EXPECT_NE(help.output.find(std::string("\n  ") + command), std::string::npos) << command << "\n" << help.output;
    EXPECT_EQ(product.output.find(std::string("\n  ") + command + " "), std::string::npos) << command << "\n" << product.output;
    EXPECT_NE(dynamiccl::testing::runShell(kDynamiccl + " " + command + " 2>&1").rc, 0) << command;
  }
}

TEST(LabCli, CrossvalsCsvWriterSaysWhenItCannotWrite) {
  TempDir dir;
  const std::string data = std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";
  const std::string nowhere = (dir.path / "no" / "such" / "dir.csv").string();
  const Result crossval = lab("crossval --data '" + data + "' --no-plot --quiet --csv '" + nowhere + "'");
  EXPECT_EQ(crossval.rc, 1) << crossval.output;
  EXPECT_NE(crossval.output.find("cannot open " + nowhere), std::string::npos) << crossval.output;
  EXPECT_EQ(crossval.output.find("wrote " + nowhere), std::string::npos) << crossval.output;
}

// policy-eval replays the datasets it is given (--data-dir) or those the project ships; no path outside
// the project is compiled into the tool.
TEST(LabCli, PolicyEvalReplaysTheDataDirItIsGivenOrTheShippedDatasets) {
  TempDir dir;
  const std::string shipped = std::string(DYNAMICCL_SOURCE_DIR) + "/offline/demo/data/l40s-pcie-cs244c/normalized.csv";
  fs::create_directories(dir.path / "data" / "my-cluster");
  fs::copy_file(shipped, dir.path / "data" / "my-cluster" / "normalized.csv");
  const std::string profile = (dir.path / "learned.json").string();
  std::ofstream(profile) << R"({"format":"dynamiccl-profile","version":1,"name":"learned","rules":[],"policy":)"
                         << dynamiccl::learned::policyWeightsToJson(dynamiccl::fixture::randomPolicyWeights(1)) << "}";
  const std::string eval = "policy-eval '" + profile + "' --presets l40s-pcie-4x1 --no-tpe";
  const Result given = lab(eval + " --data-dir '" + (dir.path / "data").string() + "'");
  ASSERT_EQ(given.rc, 0) << given.output;
  EXPECT_NE(given.output.find("\nmy-cluster "), std::string::npos) << given.output;
  EXPECT_EQ(given.output.find("\nl40s-pcie-cs244c "), std::string::npos) << given.output;
  const Result byDefault = lab(eval);
  ASSERT_EQ(byDefault.rc, 0) << byDefault.output;
  EXPECT_NE(byDefault.output.find("\nl40s-pcie-cs244c "), std::string::npos) << byDefault.output;
  const Result none = lab(eval + " --data-dir '" + (dir.path / "nothing").string() + "'");
  EXPECT_EQ(none.rc, 1) << none.output;
  EXPECT_NE(none.output.find((dir.path / "nothing").string()), std::string::npos) << none.output;
  EXPECT_EQ(contentOf(kLab).find("../shared"), std::string::npos) << "a path outside the project is compiled in";
}

// A platform file marked for training is evaluated on by name, given the file; without it no preset matches.
TEST(LabCli, PolicyEvalEvaluatesOnAPlatformFileByName) {
  TempDir dir;
  const std::string file = (dir.path / "test-t9.json").string();
  std::ofstream(file) << R"({"format": "dynamiccl-platform", "version": 1, "name": "test-t9",
    "description": "a made-up cluster trained on, for lab_cli_test", "source": "none: test data",
    "systems": ["TestGPU-T9"], "calibration": {"dataset": "h100-ib-cluster-xxrjun", "group": "H100"},
    "train": {"nodes": [2, 4]},
    "topology": {"computeCap": 90, "gpusPerNode": 8, "nvlink": true, "nvswitch": true, "nvlinkBwPerGpu_GBps": 450.0,
                 "pcieBw_GBps": 50.0, "nicsPerNode": 4, "nicBw_GBps": 50.0}})";
  const std::string profile = (dir.path / "learned.json").string();
  std::ofstream(profile) << R"({"format":"dynamiccl-profile","version":1,"name":"learned","rules":[],"policy":)"
                         << dynamiccl::learned::policyWeightsToJson(dynamiccl::fixture::randomPolicyWeights(1)) << "}";
  const Result given = lab("policy-eval '" + profile + "' --platform '" + file + "' --presets test-t9 --no-tpe --no-replay");
  ASSERT_EQ(given.rc, 0) << given.output;
  EXPECT_NE(given.output.find("test-t9x2"), std::string::npos) << given.output;
  EXPECT_NE(given.output.find("test-t9x4"), std::string::npos) << given.output;
  const Result without = lab("policy-eval '" + profile + "' --presets test-t9 --no-tpe --no-replay");
  EXPECT_NE(without.rc, 0) << without.output;
  EXPECT_NE(without.output.find("no preset matches"), std::string::npos) << without.output;
}

}  // namespace
