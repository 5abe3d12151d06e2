// The calibration's fit (lab/calibrate): the noise floor, warm starts, the NIC view NCCL's search saw,
// a group starting from a sibling's fit, and effects the rows cannot see going back to neutral.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lab/calibrate/calibrate.h"
#include "offline/model/model.h"
#include "offline/sim/sim.h"

using namespace dynamiccl;
using namespace dynamiccl::sim;
using namespace dynamiccl::measurements;

TEST(SimCalibrationMath, NoiseFloorAndWarmStart) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dynamiccl_floor_test";
  std::filesystem::create_directories(dir);
  // One point measured three times (10, 11, 12 us) and one measured once.
  std::ofstream(dir / "normalized.csv")
      << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n"
         "L40S-48GB x2 PCIe,allreduce,2,1,1024,default,default,,,10,0,a\n"
         "L40S-48GB x2 PCIe,allreduce,2,1,1024,default,default,,,11,0,b\n"
         "L40S-48GB x2 PCIe,allreduce,2,1,1024,default,default,,,12,0,c\n"
         "L40S-48GB x2 PCIe,allreduce,2,1,4096,default,default,,,14,0,d\n";
  CalibrateOptions o;
  o.fit = false;
  o.progress = false;
  auto cal = calibrateDataset(dir.string(), o);
  ASSERT_TRUE(cal.ok()) << cal.error();
  EXPECT_EQ(cal->floorRows, 3);
  // Best single time is 11: (1/10 + 0 + 1/12) / 3.
  EXPECT_NEAR(cal->floorMape, (0.1 + 1.0 / 12) / 3, 1e-12);
  // A fit warm-started at some parameters never ends worse than they are.
  const double before = cal->mape;
  o.fit = true;
  o.iterations = 60;
  o.restarts = 1;
  o.start = &cal.value();
  auto refit = calibrateDataset(dir.string(), o);
  ASSERT_TRUE(refit.ok());
  EXPECT_LE(refit->mape, before + 1e-12);
  // Parameters these single-node rows cannot inform return to their neutral defaults, whatever
  // the start said (a drifted value would only show where the fit is used beyond its data).
  DatasetCalibration drifted = cal.value();
  drifted.groups.at(0).params.netLlEff = 0.3;
  drifted.groups.at(0).params.farFactor = 3.0;
  drifted.groups.at(0).params.nvlsLat_us = 40.0;
  o.start = &drifted;
  auto reset = calibrateDataset(dir.string(), o);
  ASSERT_TRUE(reset.ok());
  ASSERT_EQ(reset->groups.size(), 1u);
  EXPECT_EQ(reset->groups[0].params.netLlEff, SimParams{}.netLlEff);
  EXPECT_EQ(reset->groups[0].params.farFactor, SimParams{}.farFactor);
  EXPECT_EQ(reset->groups[0].params.nvlsLat_us, SimParams{}.nvlsLat_us);
  std::filesystem::remove_all(dir);
}

namespace {

// A GH200 x4 dataset whose truth is known: each row is NCCL's default (NCCL's model of `release`,
// seeing the NIC at `nicView`) timed by the simulator with `params`. Sizes fromBytes, x factor, up
// to toBytes; `note` ends each row (a variant's "results/<v>/job-..." path, or an NCCL release).
struct KnownRows {
  std::vector<int> nodes;
  SimParams params;
  int release = 0;
  double nicView = 0;
  uint64_t fromBytes = 1024, toBytes = 1u << 28, factor = 4;
  std::string note = "x";
};

void writeKnownRows(std::ostream& csv, const KnownRows& k) {
  for (int nodes : k.nodes) {
    auto t = topologyForSystem("GH200 x4", 4 * nodes, nodes, k.release).value();
    t.ncclNicBw_GBps = k.nicView;
    const auto ref = model::NcclReference::create(t).value();
    const Simulator s(t, k.params);
    for (uint64_t b = k.fromBytes; b <= k.toBytes; b *= k.factor)
      csv << "GH200 x4,allreduce," << 4 * nodes << "," << nodes << "," << b << ",default,default,,,"
          << s.time_us(Collective::AllReduce, b, ref.defaultConfig(Collective::AllReduce, b)) << ",0," << k.note << "\n";
  }
}

// A fresh dataset folder with the interchange header written.
std::ofstream newDataset(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream csv(dir / "normalized.csv");
  csv << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n";
  return csv;
}

// A fit too short to move anything by itself: what it ends at comes from where it starts.
CalibrateOptions startOnlyFit(const DatasetCalibration* start) {
  CalibrateOptions o;
  o.progress = false;
  o.fitNicView = false;
  o.iterations = 1;
  o.restarts = 1;
  o.start = start;
  return o;
}

}  // namespace

TEST(SimCalibrationMath, FitFindsTheNicViewNcclsSearchSaw) {
  // Rows made by NCCL's default on GH200 nodes whose NIC NCCL saw at half its wire rate, timed by
  // the simulator at its defaults: the fit must find that view, since any other moves NCCL's
  // protocol switch points and with them the predicted times.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dynamiccl_nicview_test";
  {
    KnownRows k;
    k.nodes = {2, 4, 8, 16};
    k.nicView = 12.5;
    k.fromBytes = 4096;
    k.toBytes = 64u << 20;
    k.factor = 2;
    std::ofstream csv = newDataset(dir);
    writeKnownRows(csv, k);
  }
  CalibrateOptions o;
  o.progress = false;
  o.iterations = 40;
  o.restarts = 1;
  auto cal = calibrateDataset(dir.string(), o);
  ASSERT_TRUE(cal.ok()) << cal.error();
  ASSERT_EQ(cal->groups.size(), 1u);
  EXPECT_DOUBLE_EQ(cal->groups[0].ncclNicBw_GBps, 12.5);
  EXPECT_LT(cal->mape, 1e-6);
  // The view is stored with the group and read back, and --check uses it.
  auto back = calibrationFromJson(calibrationToJson(cal.value()));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_DOUBLE_EQ(nicViewForGroup(back.value(), "GH200 x4"), 12.5);
  o.fit = false;
  auto checked = calibrateDataset(dir.string(), o, &back.value());
  ASSERT_TRUE(checked.ok());
  EXPECT_LT(checked->mape, 1e-6);
  // Without the view, NCCL's model picks other protocols somewhere and the same parameters miss.
  DatasetCalibration wire = back.value();
  wire.groups[0].ncclNicBw_GBps = 0;
  auto missed = calibrateDataset(dir.string(), o, &wire);
  ASSERT_TRUE(missed.ok());
  EXPECT_GT(missed->mape, 0.01);
  std::filesystem::remove_all(dir);
}

TEST(SimCalibrationMath, AGroupStartsFromASiblingsFitWhenThatFitsItBetter) {
  // Two variants of one system measured identically; the warm start holds good parameters for one
  // and poor ones for the other. With almost no iterations, only the sibling start can rescue it.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dynamiccl_sibling_test";
  SimParams truth;
  truth.launch_us = 20.0;
  truth.interBwEff = 0.4;
  {
    KnownRows k;
    k.nodes = {1, 2, 4};
    k.params = truth;
    std::ofstream csv = newDataset(dir);
    for (const char* variant : {"a", "b"}) {
      k.note = std::string("results/") + variant + "/job-1.txt";
      writeKnownRows(csv, k);
    }
  }
  DatasetCalibration start;
  start.groups = {{"GH200 x4 | a", truth, 0, 0}, {"GH200 x4 | b", SimParams{}, 0, 0}};
  const CalibrateOptions o = startOnlyFit(&start);
  auto cal = calibrateDataset(dir.string(), o);
  ASSERT_TRUE(cal.ok()) << cal.error();
  ASSERT_EQ(cal->groups.size(), 2u);
  EXPECT_LT(cal->groups[0].mape, 1e-6);
  EXPECT_LT(cal->groups[1].mape, 1e-6);  // started from group a's parameters
  std::filesystem::remove_all(dir);
}

TEST(SimCalibrationMath, AnEffectTheRowsCannotSeeGoesBackToNeutral) {
  // Rows timed with no step floor; the warm start carries a 1 us floor, which no row can see (each
  // ring step takes far longer). The fit must not keep it: it would reach every use of the params.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dynamiccl_parsimony_test";
  {
    // NCCL 2.23: no LL128 across these nodes, so large messages run Simple rings.
    KnownRows k;
    k.nodes = {2, 4, 8};
    k.release = 22304;
    k.toBytes = 1ull << 30;
    k.note = "NCCL 2.23.4";
    std::ofstream csv = newDataset(dir);
    writeKnownRows(csv, k);
  }
  SimParams drifted;
  drifted.netStepFloor_us = 1.0;
  DatasetCalibration start;
  start.groups = {{"GH200 x4", drifted, 0, 0}};
  const CalibrateOptions o = startOnlyFit(&start);
  auto cal = calibrateDataset(dir.string(), o);
  ASSERT_TRUE(cal.ok()) << cal.error();
  ASSERT_EQ(cal->groups.size(), 1u);
  EXPECT_EQ(cal->groups[0].params.netStepFloor_us, 0.0);
  EXPECT_LT(cal->mape, 1e-4);
  std::filesystem::remove_all(dir);
}
