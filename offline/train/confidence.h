// The learned policy's confidence: how far its predicted gains over NCCL's own choice are from the
// gains observed on held-out machines. Its measured error becomes the guard margin, so a rule is
// emitted only where the predicted gain exceeds that error; elsewhere NCCL's choice stands.
#pragma once

#include <string>
#include <vector>

#include "offline/sim/sim.h"
#include "offline/train/sim_adapter.h"
#include "policy/policy.h"

namespace dynamiccl::train {

// At one key: NCCL's time / the network's choice's time, as the network predicts it and as
// observed (simulated or measured). > 1: the choice is faster.
struct GainPair {
  double predicted = 1, observed = 1;
  bool changes = false;  // the choice differs from what NCCL runs (a rule would act here)
};

// The network's first choice (no guard) at every key of the evaluation grid; congestion > 0 fills the
// timing windows as ratioToBest does. Keys where NCCL's choice or the chosen one cannot run are left out.
std::vector<GainPair> simulatedGains(const policy::PolicyNetwork& net, const SimSystem& sys, double congestion);
// The same on replayed measurements: the network's best configuration with NCCL's channel count among
// those measured at the point, against NCCL's own measured pick.
std::vector<GainPair> measuredGains(const policy::PolicyNetwork& net, const sim::ReplayData& data);

// The quantile (0..1) of |log predicted - log observed| over pairs where the choice changes NCCL's.
double gainError(const std::vector<GainPair>& pairs, double quantile);
// The guard margin that emits a rule only where log(predicted gain) exceeds the error.
float marginForError(double logError);

struct CalibrationBin {
  double lo = 0, hi = 0;           // predicted gain range
  int n = 0;
  double predicted = 0, observed = 0;  // geometric means
  double worstObserved = 0;        // smallest observed gain (< 1: the choice was slower than NCCL's)
};
// Pairs that change NCCL's choice, binned by predicted gain (< 1, 1-1.05, 1.05-1.2, 1.2-1.5, 1.5-3, > 3).
std::vector<CalibrationBin> calibrationBins(const std::vector<GainPair>& pairs);
std::string formatCalibration(const std::vector<CalibrationBin>& bins, const std::string& indent);

}  // namespace dynamiccl::train

namespace dynamiccl::train {

// Machines kept out of training to measure the error on (unless evaluated: then they are held out).
std::vector<std::string> defaultCalibrationPrefixes();

struct Confidence {
  double quantile = 0.9;
  double logError = 0;  // the quantile of |log predicted gain - log observed gain|
  float margin = 0;     // the guard margin it gives
  std::vector<GainPair> gains;  // every calibration key (simulated at congestion 0 and 1, then measured)
};
// The network's error on calibration machines (simulated) and calibration measurements.
Expected<Confidence> measureConfidence(const policy::PolicyWeights& weights, const std::vector<SimSystem>& systems,
                                       const std::vector<const sim::ReplayData*>& measured, double quantile);

}  // namespace dynamiccl::train
