// Calibration: per-dataset simulator parameters fitted to shared/data/*/normalized.csv, their
// stored form (offline/platforms/calibration/<dataset>.json) and the fidelity figures (MAPE, agreement).
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

// One row's prediction (for plots and tests).
struct RowPrediction {
  measurements::Measurement row;
  Config config;  // what the row ran, resolved through NCCL's model
  double predicted_us = 0;
};

struct CalibrateOptions {
  bool fit = true;             // false: use stored parameters only
  int iterations = 700;        // Nelder-Mead iterations per restart
  int restarts = 3;
  bool progress = true;        // a progress line on stderr
  // Warm start: each group's fit begins at these parameters (the committed fit), so a re-fit
  // refines rather than starts over. nullptr: SimParams defaults.
  const DatasetCalibration* start = nullptr;
  // Also choose, per group with rows across nodes, the NIC bandwidth NCCL's graph search saw
  // (which sets NCCL's protocol switch points), among a few fractions of the wire rate.
  bool fitNicView = true;
};

// Fits (or, with fit=false, loads from `stored`) and evaluates one dataset folder's normalized.csv.
Expected<DatasetCalibration> calibrateDataset(const std::string& datasetDir, const CalibrateOptions& options,
                                              const DatasetCalibration* stored = nullptr,
                                              std::vector<RowPrediction>* predictions = nullptr);

// `dynamiccl calibrate` over a data folder: the dataset folders (with a normalized.csv) in name
// order; `only` non-empty: the one so named.
std::vector<std::string> datasetDirs(const std::string& dataDir, const std::string& only);
// One dataset as `dynamiccl calibrate` runs it: fitted, from the parameters already in calFile
// unless fresh; or with check the parameters in calFile evaluated.
struct DatasetCalibrationPlan {
  std::string dir;      // the dataset folder
  std::string calFile;  // its calibration JSON
  bool check = false, fresh = false;
  int iterations = 700, restarts = 3;
  bool predictions = false;  // also every row's prediction
};
struct DatasetCalibrationRun {
  DatasetCalibration calibration;
  std::vector<RowPrediction> predictions;
};
Expected<DatasetCalibrationRun> calibrateDatasetDir(const DatasetCalibrationPlan& plan);

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
