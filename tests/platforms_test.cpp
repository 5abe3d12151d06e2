// Clusters as data: a platform file written here is what the simulator, replay, the dataset mapping,
// training's machines and the `dynamiccl` command (sim, replay, demo, policy-eval) then use; unknown systems are counted and named;
// a malformed file is refused with a message naming the file and the problem.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "offline/platforms/platforms.h"
#include "offline/sim/sim.h"
#include "offline/train/train.h"
#include "policy_weights_fixture.h"

namespace fs = std::filesystem;
using namespace dynamiccl;

namespace {

// A cluster no built-in file knows: 4 GPUs per node, NVLink 300 GB/s, 2 x 200 Gb/s NICs.
constexpr const char* kTestPlatform = R"({
  "format": "dynamiccl-platform",
  "version": 1,
  "name": "test-h9",
  "description": "a made-up cluster for platforms_test",
  "source": "none: test data",
  "systems": ["TestGPU-H9"],
  "calibration": {"dataset": "h100-ib-cluster-xxrjun", "group": "H100"},
  "topology": {"computeCap": 90, "gpusPerNode": 4, "nvlink": true, "nvswitch": true,
               "nvlinkBwPerGpu_GBps": 300.0, "pcieBw_GBps": 50.0, "nicsPerNode": 2, "nicBw_GBps": 25.0,
               "nvlsSupport": false}
})";

constexpr const char* kCsvHeader =
    "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n";

class PlatformsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dynamiccl-platforms-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    platformFile_ = write("test-h9.json", kTestPlatform);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  // Rows of the test platform (8 ranks on 2 nodes, NCCL's default at three sizes) and 3 rows of a
  // system no platform knows.
  std::string writeDataset() const {
    std::string csv = kCsvHeader;
    for (uint64_t bytes : {1024u, 65536u, 1048576u})
      csv += "TestGPU-H9 x4 per node,allreduce,8,2," + std::to_string(bytes) + ",default,default,0,0," +
             std::to_string(10.0 + bytes / 1e4) + ",1.0,test\n";
    for (uint64_t bytes : {1024u, 65536u, 1048576u})
      csv += "Mystery MI300X x8,allreduce,16,2," + std::to_string(bytes) + ",default,default,0,0,20.0,1.0,test\n";
    fs::create_directories(dir_ / "test-dataset");
    return write("test-dataset/normalized.csv", csv);
  }
  // Runs the dynamiccl command; returns its exit status and fills `output` with stdout and stderr.
  int dynamiccl(const std::string& args, std::string& output) const {
    const fs::path log = dir_ / "command.log";
    const std::string cmd = std::string(DYNAMICCL_BINARY_DIR) + "/offline/dynamiccl " + args + " > '" + log.string() +
                            "' 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    output.assign(std::istreambuf_iterator<char>(in), {});
    return rc;
  }
  fs::path dir_;
  std::string platformFile_;
};

TEST(Platforms, TheBuiltInFolderHoldsEveryClusterAndMapsEveryDatasetSystem) {
  auto reg = platforms::Registry::load(platforms::builtinPlatformDir());
  ASSERT_TRUE(reg.ok()) << reg.error();
  for (const char* name : {"dgx-a100", "dgx-b200", "dgx-h100-sharp", "dgx-h100", "dgx-h200", "gb200-nvl72", "gb300-nvl72",
                           "gcp-a3mega", "gh200-slingshot", "h800", "l40s-pcie-2", "l40s-pcie-4"}) {
    const platforms::Platform* p = reg->find(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->topology.name, name);
    EXPECT_FALSE(p->source.empty()) << name << ": say which public spec the numbers come from";
    if (p->calibration) {
      EXPECT_TRUE(sim::calibrationFor(*p).ok()) << name << ": " << sim::calibrationFor(*p).error();
    }
  }
  // The system strings of shared/data, and what the mapping in C++ made of them.
  const std::pair<const char*, const char*> systems[] = {
      {"GH200 x4 per node (Alps/CSCS Clariden) HPE Slingshot-11 4x200Gb/s per node", "gh200-slingshot"},
      {"GCP A3 Mega: H100-80GB x8 per node NVSwitch; 8x200Gb/s GPUDirect-TCPXO NICs per node (assumed from machine type)",
       "gcp-a3mega"},
      {"H100-SXM5-80GB x8 per node HGX (cnode3 cluster; IB, NIC details not stated)", "dgx-h100"},
      {"L40S-48GB x2 PCIe (no NVLink; topo NODE) 1 node (Stanford FarmShare oat-0x)", "l40s-pcie-4"},
      {"A100-SXM4-40GB x8 (Modal cloud; NVSwitch HGX assumed) 1 node", "dgx-a100"},
      {"GB200 NVL72 rack (4 GPU/tray; single MNNVL NVLink domain) (XLA profile)", "gb200-nvl72"},
      {"sm_103 (GB300/B300-class) NVL72 rack (single MNNVL NVLink domain) (XLA profile)", "gb300-nvl72"},
      {"B200 8-GPU HGX NVSwitch node (XLA profile)", "dgx-b200"},
      {"H100 (sm_90) 8-GPU NVSwitch node (XLA profile; exact SKU not stated)", "dgx-h100"},
      {"H800 x8 per node", "h800"},
      {"DGX H200 x8 per node, 8x400Gb/s", "dgx-h200"},
  };
  for (const auto& [system, name] : systems) {
    const platforms::Platform* p = reg->forSystem(system);
    ASSERT_NE(p, nullptr) << system;
    EXPECT_EQ(p->name, name) << system;
  }
  EXPECT_EQ(reg->forSystem("AMD MI300X x8 per node"), nullptr);
}

TEST_F(PlatformsTest, ANewFileReachesTheSimulatorAndTheDatasetMapping) {
  EXPECT_FALSE(sim::preset("test-h9").ok());
  ASSERT_TRUE(platforms::addPlatformFiles({platformFile_}).ok());
  auto t = sim::preset("test-h9", 2);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->nRanks(), 8);
  EXPECT_EQ(t->nvlinkBwPerGpu_GBps, 300.0);
  EXPECT_EQ(t->nicsPerNode, 2);
  const sim::Simulator simulator(t.value());
  EXPECT_GT(simulator.time_us(Collective::AllReduce, 1 << 20, sim::Config{Algo::Ring, Proto::Simple, 8, 0}), 0);
  // Its NVLink:NIC ratio is what the file says: 300 / (2 x 25 / 4) = 24.
  EXPECT_DOUBLE_EQ(t->nvlinkToNicRatio(), 24.0);

  auto mapped = measurements::topologyForSystem("TestGPU-H9 x4 per node", 8, 2);
  ASSERT_TRUE(mapped.ok()) << mapped.error();
  EXPECT_EQ(mapped->name, "test-h9");
  EXPECT_EQ(mapped->gpusPerNode, 4);

  auto unknown = measurements::topologyForSystem("Mystery MI300X x8", 16, 2);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("Mystery MI300X x8"), std::string::npos) << unknown.error();

  auto rows = measurements::loadMeasurements(writeDataset());
  ASSERT_TRUE(rows.ok()) << rows.error();
  auto data = measurements::buildReplayData(rows->rows);
  ASSERT_TRUE(data.ok()) << data.error();
  ASSERT_EQ(data->shapes.size(), 2u);
  EXPECT_EQ(data->shapes.front()->topology.name, "test-h9");
  EXPECT_TRUE(data->shapes.front()->standIn.empty());
  // Measured data needs no platform file: the unknown system is read with the stand-in's model, said once.
  EXPECT_EQ(data->shapes.back()->standIn, measurements::kStandInPlatform);
  EXPECT_EQ(data->points.size(), 6u);
  EXPECT_TRUE(data->skipped.empty());
  ASSERT_EQ(data->notes.size(), 1u);
  EXPECT_NE(data->notes[0].find("no platform describes 'Mystery MI300X x8'"), std::string::npos) << data->notes[0];

  // The file's calibration is the simulator's.
  auto reg = platforms::registry();
  ASSERT_TRUE(reg.ok()) << reg.error();
  auto cal = sim::calibrationFor(*(*reg)->find("test-h9"));
  ASSERT_TRUE(cal.ok()) << cal.error();
  EXPECT_EQ(cal->dataset, "h100-ib-cluster-xxrjun");
  EXPECT_TRUE(cal->group.starts_with("H100"));
}

TEST_F(PlatformsTest, AMalformedFileIsRefusedWithAClearMessage) {
  const std::pair<std::string, std::string> bad[] = {
      {"not-json.json", "{\"format\": "},
      {"unknown-key.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "x", "topology": {}, "colour": 1})"},
      {"no-topology.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "x"})"},
      {"bad-topology.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "x", "topology": {"gpusPerNode": 0}})"},
      {"wrong-version.json", R"({"format": "dynamiccl-platform", "version": 2, "name": "x", "topology": {}})"},
      {"path-dataset.json",
       R"({"format": "dynamiccl-platform", "version": 1, "name": "x", "topology": {}, "calibration": {"dataset": "../x", "group": ""}})"},
      {"no-train-nodes.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "x", "topology": {}, "train": {"nodes": []}})"},
      {"train-key.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "x", "topology": {}, "train": {"nodes": [2], "gpus": 8}})"},
  };
  const char* expected[] = {"not a JSON object", "unknown key \"colour\"", "\"topology\" is required",
                            "gpusPerNode must be >= 1", "\"version\" must be 1", "no path",
                            "\"nodes\" must be a non-empty array", "\"train\": unknown key \"gpus\""};
  for (size_t i = 0; i < std::size(bad); ++i) {
    const std::string file = write(bad[i].first, bad[i].second);
    auto p = platforms::loadPlatformFile(file);
    ASSERT_FALSE(p.ok()) << file;
    EXPECT_NE(p.error().find(file), std::string::npos) << p.error();
    EXPECT_NE(p.error().find(expected[i]), std::string::npos) << p.error();
    // The process's registry refuses it whole and keeps what it had.
    EXPECT_FALSE(platforms::addPlatformFiles({file}).ok());
    EXPECT_TRUE(sim::preset("dgx-h100").ok());
  }
  auto folder = platforms::loadPlatformFile(dir_.string());
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().find("not a regular file"), std::string::npos) << folder.error();
  const std::string huge = write("huge.json", std::string(platforms::kMaxPlatformFileBytes + 1, ' '));
  ASSERT_FALSE(platforms::loadPlatformFile(huge).ok());
  EXPECT_NE(platforms::loadPlatformFile(huge).error().find("larger than"), std::string::npos);
  // A second platform claiming a built-in's system pattern would make the mapping ambiguous.
  const std::string clash = write("clash.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "mine",
                                                  "systems": ["H100"], "topology": {}})");
  auto added = platforms::addPlatformFiles({clash});
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.error().find("\"H100\" already belongs to platform dgx-h100"), std::string::npos) << added.error();
  // A file round-trips through its writer.
  auto good = platforms::loadPlatformFile(platformFile_);
  ASSERT_TRUE(good.ok()) << good.error();
  auto again = platforms::platformFromJson(platforms::platformToJson(good.value()));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(platforms::platformToJson(again.value()), platforms::platformToJson(good.value()));
  auto trained = platforms::platformFromJson(
      R"({"format": "dynamiccl-platform", "version": 1, "name": "x", "topology": {}, "train": {"nodes": [2, 8], "order": 3}})");
  ASSERT_TRUE(trained.ok()) << trained.error();
  auto trainedAgain = platforms::platformFromJson(platforms::platformToJson(trained.value()));
  ASSERT_TRUE(trainedAgain.ok() && trainedAgain->train) << platforms::platformToJson(trained.value());
  EXPECT_EQ(trainedAgain->train->nodes, (std::vector<int>{2, 8}));
  EXPECT_EQ(trainedAgain->train->order, 3);
}

TEST_F(PlatformsTest, TheCommandsTakeAPlatformFile) {
  std::string out;
  // sim
  ASSERT_EQ(dynamiccl("sim --platform '" + platformFile_ + "' --preset test-h9 --nodes 2 --bytes 1048576", out), 0) << out;
  EXPECT_NE(out.find("test-h9, 2 node(s), 8 ranks"), std::string::npos) << out;
  ASSERT_NE(dynamiccl("sim --preset test-h9", out), 0) << out;  // without the file it is unknown
  EXPECT_NE(out.find("unknown preset 'test-h9'"), std::string::npos) << out;

  // replay: the platform's rows are judged, the unknown system's are counted and named
  const std::string csv = writeDataset();
  const std::string profile =
      write("empty-profile.json", R"({"format": "dynamiccl-profile", "version": 1, "name": "empty", "rules": []})");
  ASSERT_EQ(dynamiccl("replay --platform '" + platformFile_ + "' --data '" + csv + "' --profile '" + profile + "'", out), 0)
      << out;
  EXPECT_NE(out.find("points 6, judged 6"), std::string::npos) << out;
  EXPECT_NE(out.find("no platform describes 'Mystery MI300X x8'"), std::string::npos) << out;

  // a malformed file stops the command with one line naming it
  const std::string broken = write("broken.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "x"})");
  ASSERT_NE(dynamiccl("sim --platform '" + broken + "' --preset dgx-h100", out), 0) << out;
  EXPECT_NE(out.find(broken + ": \"topology\" is required"), std::string::npos) << out;
}


// A cluster trained on: its file marks it with "train", at two node counts.
constexpr const char* kTrainedPlatform = R"({
  "format": "dynamiccl-platform",
  "version": 1,
  "name": "test-t9",
  "description": "a made-up cluster trained on, for platforms_test",
  "source": "none: test data",
  "systems": ["TestGPU-T9"],
  "calibration": {"dataset": "h100-ib-cluster-xxrjun", "group": "H100"},
  "train": {"nodes": [2, 4]},
  "topology": {"computeCap": 90, "gpusPerNode": 8, "nvlink": true, "nvswitch": true,
               "nvlinkBwPerGpu_GBps": 450.0, "pcieBw_GBps": 50.0, "nicsPerNode": 4, "nicBw_GBps": 50.0}
})";

TEST_F(PlatformsTest, AFileMarkedForTrainingIsTrainedOn) {
  const std::string file = write("test-t9.json", kTrainedPlatform);
  EXPECT_TRUE(train::presetsMatching({"test-t9"}, true).empty());
  ASSERT_TRUE(platforms::addPlatformFiles({file}).ok());
  // Its machines join the training list after the built-in ones (it names no order).
  const auto all = train::presetTopologies();
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[all.size() - 2].name, "test-t9x2");
  EXPECT_EQ(all.back().name, "test-t9x4");
  EXPECT_EQ(all.back().nRanks(), 32);
  const auto matching = train::presetsMatching({"test-t9"}, true);
  ASSERT_EQ(matching.size(), 2u);
  auto sys = train::SimSystem::make(matching.front());
  ASSERT_TRUE(sys.ok()) << sys.error();
  EXPECT_EQ(train::simPresetOf(sys->topology()), "test-t9");
  EXPECT_TRUE(sys->calibration().starts_with("h100-ib-cluster-xxrjun")) << sys->calibration();
  for (const auto& t : train::presetsMatching({"h800"}, false)) EXPECT_NE(t.name, "h800x4");  // the built-ins stay

  // The lab evaluates on it by name, given the file (lab/tests/lab_cli_test.cpp).
}

}  // namespace

// The calibration hold-outs are data: a platform whose "train" says "calibrate" is one, built in or added.
TEST_F(PlatformsTest, AFileMarkedCalibrateIsACalibrationHoldOut) {
  EXPECT_EQ(train::defaultCalibrationPrefixes(), (std::vector<std::string>{"gh200-slingshot", "l40s-pcie-4"}));
  const std::string bad = write("calibrate-number.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "x",
                                                           "topology": {}, "train": {"nodes": [2], "calibrate": 1}})");
  auto refused = platforms::loadPlatformFile(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("\"calibrate\" must be true or false"), std::string::npos) << refused.error();
  const std::string file = write("calibrate.json", R"({"format": "dynamiccl-platform", "version": 1, "name": "held-h9",
                                                     "topology": {}, "train": {"nodes": [2], "calibrate": true}})");
  auto p = platforms::loadPlatformFile(file);
  ASSERT_TRUE(p.ok()) << p.error();
  auto again = platforms::platformFromJson(platforms::platformToJson(p.value()));
  ASSERT_TRUE(again.ok() && again->train) << platforms::platformToJson(p.value());
  EXPECT_TRUE(again->train->calibrate);
  ASSERT_TRUE(platforms::addPlatformFiles({file}).ok());
  EXPECT_EQ(train::defaultCalibrationPrefixes(),
            (std::vector<std::string>{"gh200-slingshot", "l40s-pcie-4", "held-h9"}));
}
