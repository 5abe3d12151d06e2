// The simulator parameters a platform names (its "calibration": a committed dataset's group).
#pragma once

#include <string>

#include "features/features.h"
#include "offline/platforms/platforms.h"
#include "offline/sim/calibration.h"

namespace dynamiccl::sim {

struct PlatformCalibration {
  SimParams params;       // SimParams{} when the platform names no calibration
  std::string dataset;    // "" for the simulator's defaults
  std::string group;      // the calibration group used
  double mape = 0;        // that group's fit error
  bool calibrated() const { return !dataset.empty(); }
};

// The first group of <calibrationDir>/<dataset>.json whose name starts with the platform's group.
// Errors when the file does not load or no group matches.
Expected<PlatformCalibration> calibrationFor(const platforms::Platform& platform,
                                             const std::string& calibrationDir = defaultCalibrationDir());

}  // namespace dynamiccl::sim
