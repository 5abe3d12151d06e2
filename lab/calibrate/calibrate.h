// lab/calibrate: the simulator's parameters fitted to a dataset's measurements (normalized.csv) and
// checked against them (`dynamiccl-lab calibrate`); what it writes, the product reads
// (offline/sim/calibration.h). The one header others include.
#pragma once

#include <string>
#include <vector>

#include "offline/sim/sim.h"

namespace dynamiccl::sim {

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

// `dynamiccl-lab calibrate` over a data folder: the dataset folders (with a normalized.csv) in name
// order; `only` non-empty: the one so named.
std::vector<std::string> datasetDirs(const std::string& dataDir, const std::string& only);
// One dataset as `dynamiccl-lab calibrate` runs it: fitted, from the parameters already in calFile
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

}  // namespace dynamiccl::sim
