// Calibration: per-dataset simulator parameters (fitted by the lab, lab/calibrate), their stored form
// (offline/platforms/calibration/<dataset>.json) and the fidelity figures (MAPE, agreement).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/measurements/measurements.h"
#include "offline/sim/simulator.h"

namespace dynamiccl::sim {

// One group of a dataset (a system, or a system's environment variant) and its parameters.
struct GroupCalibration {
  std::string group;
  SimParams params;
  int rows = 0;
  double mape = 0;  // mean |predicted - measured| / measured over the group's rows
  // The NIC bandwidth NCCL's graph search saw for this group (Topology::ncclNicBw_GBps), fitted
  // where rows cross nodes; 0 = the wire rate.
  double ncclNicBw_GBps = 0;
};

struct DatasetCalibration {
  std::string dataset;
  std::vector<GroupCalibration> groups;
  int rows = 0;
  double mape = 0;
  std::map<std::string, int> skipped;  // reason -> rows
  // Forced sweeps: points with at least two distinct measured configurations, and how often the
  // simulator's best of them is the measured best (strictly, and within 5% of the best).
  // Strict hits count a pick measured within tieBand (the dataset's repeat noise) of the best as a
  // tie (see scoreAgreement in calibration.cpp).
  int agreementPoints = 0, agreementHits = 0, agreementWithinNoise = 0;
  int agreementExact = 0;  // the simulator's pick is the measured best itself (no tie allowance)
  double tieBand = 0;
  // Noise floor: where a point (collective, shape, bytes, configuration) was measured more than
  // once (repeats, or environment variants of one system), the MAPE of the best single time per
  // point against those rows. No model that predicts one time per point can do better on them.
  double floorMape = -1;  // -1: no point measured twice
  int floorRows = 0;
  double agreement() const { return agreementPoints ? double(agreementHits) / agreementPoints : -1; }
};

// offline/platforms/calibration/<dataset>.json.
std::string calibrationToJson(const DatasetCalibration& c);
Expected<DatasetCalibration> calibrationFromJson(const std::string& text);
Expected<DatasetCalibration> loadCalibrationFile(const std::string& path);
std::string paramsToJson(const SimParams& p);  // one JSON object
Expected<SimParams> paramsFromJson(const std::string& text);

// The committed calibration folder (offline/platforms/calibration under platforms::dataRoot()).
std::string defaultCalibrationDir();

// The parameters for a row's group from a stored calibration (the first group of the dataset
// whose name matches; SimParams{} when none does).
SimParams paramsForGroup(const DatasetCalibration& c, const std::string& group);
// The NIC view NCCL's model takes for that group (GroupCalibration::ncclNicBw_GBps; 0 = wire rate).
double nicViewForGroup(const DatasetCalibration& c, const std::string& group);

}  // namespace dynamiccl::sim
