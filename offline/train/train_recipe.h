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
  std::vector<std::string> measuredFiles;  // interchange CSVs of real measurements
  std::string measuredOn;                  // their platform, whatever their system strings say
  bool skipUnreadableMeasured = false;     // a file that does not load is reported, not an error
  // Held-out machines' measurements join the held-out rows, calibration machines' the confidence;
  // false: only the training machines' are used.
  bool evaluateMeasured = true;
  float realWeight = 4.0f;         // a measured row weighs this many simulated ones
  std::optional<StoreRows> store;  // observations of the SQLite store, none when not read
  float storeWeight = 4.0f;        // factor on the store rows' importance weights
  // The store's rows go before the measured files' (the seed shuffles them in this order, so it
  // shapes the fit); false: after them.
  bool storeRowsFirst = false;
  int keysPerSystem = 300;  // simulated situations per training machine
  int minHeldOutKeys = 50;  // held-out machines get a third of that, at least this many
  TrainOptions options;
  bool heldOutRatios = true;  // the network's simulated latency/best per held-out machine (a grid of simulations each)
  std::optional<ClusterHardware> fingerprint;  // the cluster the profile is for
  bool fingerprintFromMeasured = true;         // none declared: the hardware the measured files come from
  std::string profileName, profileDescription;
  std::string profilePath, curvePath;                   // the profile and the learning curve CSV written
  std::function<void(const TrainReport&)> onRowsReady;  // the rows are assembled, the fit starts
  std::function<void(const EpochStats&)> onEpoch;
};

struct MeasuredFileReport {
  std::string path;
  std::string error;                 // not loaded (with skipUnreadableMeasured)
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

// "a,b,c"
std::string machineList(const std::vector<std::string>& names);

}  // namespace dynamiccl::train
