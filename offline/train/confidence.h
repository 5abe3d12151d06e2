// The learned policy's confidence: how far its predicted gains over NCCL's own choice are from the
// gains observed on held-out machines. Its measured error becomes the guard margin, so a rule is
// emitted only where the predicted gain exceeds that error; elsewhere NCCL's choice stands.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "offline/sim/sim.h"
#include "offline/train/dataset.h"
#include "offline/train/sim_adapter.h"
#include "policy/policy.h"
#include "learned/learned.h"

namespace dynamiccl::train {

// At one key: NCCL's time / the network's choice's time, as the network predicts it and as
// observed (simulated or measured). > 1: the choice is faster.
struct GainPair {
  double predicted = 1, observed = 1;
  bool changes = false;  // the choice differs from what NCCL runs (a rule would act here)
  double sdLog = 0;      // the network's standard deviation of log(predicted) at the key; 0: no covariance
};

// The network's first choice (no guard) at every key of the evaluation grid; congestion > 0 fills the
// timing windows as ratioToBest does. Keys where NCCL's choice or the chosen one cannot run are left out.
std::vector<GainPair> simulatedGains(const learned::PolicyNetwork& net, const SimSystem& sys, double congestion);
// The same on replayed measurements: the network's best configuration with NCCL's channel count among
// those measured at the point, against NCCL's own measured pick.
std::vector<GainPair> measuredGains(const learned::PolicyNetwork& net, const measurements::ReplayData& data);

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
// The same binned by confidence, z = log(predicted gain) / the key's standard deviation (< 0, 0-1,
// 1-1.645, 1.645-3, > 3); empty without a covariance. lo/hi are z.
std::vector<CalibrationBin> confidenceBins(const std::vector<GainPair>& pairs);
std::string formatCalibration(const std::vector<CalibrationBin>& bins, const std::string& indent,
                              const char* binnedBy = "predicted gain");
// Whether the guard keeps the change at this pair: predicted gain beyond the margin and, with a
// covariance, beyond sigmas of the key's standard deviation.
bool guardKeeps(const GainPair& g, std::optional<float> margin, double sigmas);

}  // namespace dynamiccl::train

namespace dynamiccl::train {

// Machines kept out of training to measure the error on (unless evaluated: then they are held out):
// the platforms whose "train" entry says "calibrate": true, in registry order.
std::vector<std::string> defaultCalibrationPrefixes();

// The Bayesian last layer on the training rows (at most maxRows, evenly spaced): the output layer's
// posterior covariance in standardized units, s2 (Phi^T W Phi + s2 I)^-1 with Phi the embeddings plus
// a 1, W the rows' weights, s2 the trained network's weighted residual variance and a unit prior.
// Unscaled: measureConfidence scales it to the error on held-out machines.
Expected<std::vector<float>> fitLastLayerCovariance(const learned::PolicyWeights& weights,
                                                    const std::vector<Sample>& rows, size_t maxRows = 20000);

struct Confidence {
  double quantile = 0.9;
  double logError = 0;  // the quantile of |log predicted gain - log observed gain|
  float margin = 0;     // the guard margin it gives
  // With a covariance: the factor on its standard deviations such that keyErrorSigmas of them are
  // the same quantile of |log predicted - log observed| / sd; 0: none measurable (covariance dropped).
  double covarianceScale = 0;
  std::vector<GainPair> gains;  // every calibration key (simulated at congestion 0 and 1, then measured)
};
// The network's error on calibration machines (simulated) and calibration measurements; with a
// covariance in the weights, also its per-key scale.
Expected<Confidence> measureConfidence(const learned::PolicyWeights& weights, const std::vector<SimSystem>& systems,
                                       const std::vector<const measurements::ReplayData*>& measured, double quantile);
// Sets the guard margin and scales the covariance (or drops it when no scale was measured); the
// calibration pairs' sdLog are scaled with it.
void applyConfidence(learned::PolicyWeights& weights, Confidence& confidence);

}  // namespace dynamiccl::train
