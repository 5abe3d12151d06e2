// The training recipe `dynamiccl train` and the demo share: which machines train, calibrate and are
// held out, the rows (simulator rollouts, measured CSVs, store rows), the fit, the confidence, the
// held-out figures and the learned profile written and loaded back. A plan in, a report out; the
// callers only parse options and print.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/train/confidence.h"
#include "offline/train/dataset.h"
#include "offline/train/fit_options.h"
#include "offline/train/measured_data.h"
#include "offline/train/policy_eval.h"

namespace dynamiccl::train {

struct TrainReport;

struct TrainPlan {
  std::vector<std::string> holdOut;      // machine name prefixes never trained on, evaluated on
  std::vector<std::string> calibrateOn;  // prefixes kept out of training to measure the error of predicted gains on
  bool confidence = true;                // false: no calibration, the network's choice applies everywhere
  double confidenceQuantile = 0.9;
  std::vector<std::string> measuredFiles;  // interchange CSVs of real measurements; one that does not load stops the plan
  std::string measuredOn;                  // their platform, whatever their system strings say
  // A measured row weighs this many simulated ones; the store's rows this factor on their importance weights.
  float realWeight = 4.0f;
  std::optional<StoreRows> store;  // observations of the SQLite store, none when not read
  int keysPerSystem = 300;         // simulated situations per training machine (held-out machines a third, at least 50)
  TrainOptions options;
  std::optional<ClusterHardware> fingerprint;  // the cluster the profile is for; none: the measured files' hardware
  std::string profileName, profileDescription;
  std::string profilePath, curvePath;                   // the profile and the learning curve CSV written
  std::function<void(const TrainReport&)> onRowsReady;  // the rows are assembled, the fit starts
  std::function<void(const EpochStats&)> onEpoch;
};

struct MeasuredFileReport {
  std::string path;
  std::vector<std::string> skipped;  // rows the replay left out, one line per reason
  size_t points = 0, trainedRows = 0, heldOutRows = 0;
  bool calibrates = false;  // its calibration machines measure the error
};

struct HeldOutRatio {
  std::string machine;
  double congestion = 0;
  RatioSummary ratio;
};

// Where a plan stopped: a measured file that does not load, no training machine left after the
// hold-outs, a file that cannot be written, or the training itself (the fit, weights or profile refused).
enum class TrainFailure { None, Input, NoMachines, Output, Training };

struct TrainReport {
  std::vector<std::string> trained, heldOut, calibration;  // machine names
  std::vector<std::string> unusableMachines;               // "<machine>: why", left out
  size_t rolloutRows = 0;
  double congestedFraction = 0;
  std::vector<MeasuredFileReport> measured;
  std::vector<std::string> measuredTrainedOn;  // platforms whose measurements were trained on
  struct StoreCounts {
    size_t read = 0, used = 0, skipped = 0, unknownHardware = 0, symmetric = 0;
  };
  std::optional<StoreCounts> store;
  size_t trainRows = 0, validationRows = 0, heldOutRows = 0;
  std::string covarianceError;           // no last-layer covariance (why); empty when fitted
  std::optional<Confidence> confidence;  // measured and applied
  std::string confidenceError;           // not measured (why)
  float keyErrorSigmas = 0;
  std::vector<HeldOutRatio> heldOutRatios;
  std::optional<ClusterHardware> fingerprint;
  std::string fingerprintError;  // none from the measurements (why)
  std::string profilePath;
  int weightsVersion = 0;
  TrainFailure failure = TrainFailure::None;
  std::string error;
};

// Runs the plan (LibTorch must load: loadTorchModule); report.failure says where it stopped, report.error why.
TrainReport runTrainPlan(const TrainPlan& plan);

// The plan that judges a network on machines it never saw (the demo's, policy-eval's leave one out):
// the `heldOut` machines never trained on nor calibrated on (the default calibration machines but
// those), other machines' `measuredFiles` trained on too, a short fit (8 epochs), the profile and
// its learning curve written in outDir.
TrainPlan heldOutPlan(std::vector<std::string> heldOut, std::vector<std::string> measuredFiles,
                      const std::string& outDir);

// "a,b,c"
std::string machineList(const std::vector<std::string>& names);

}  // namespace dynamiccl::train
