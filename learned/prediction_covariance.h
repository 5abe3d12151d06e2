// The learned network's per-key confidence: the standard deviation of its predicted log-latency
// difference between two configurations at one key, from the last layer's calibrated covariance
// (PolicyWeights::lastLayerCovariance). Off the hot path (rule generation). The projection is a
// dense layer (learned/dense_kernel.h), whose bits do not depend on the CPU: every rank must get the
// same rules.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "learned/network_weights.h"

namespace dynamiccl::learned {

class PredictionCovariance {
 public:
  // None when the weights carry no covariance.
  static std::optional<PredictionCovariance> of(const PolicyWeights& w);

  int width() const { return width_; }  // the embedding's, and each projection's
  // The embeddings' coordinates in the covariance's factor, rows x width() floats in and out:
  // differences of two projections measure the spread of the difference of their predictions.
  void project(std::span<const float> embeddings, float* out) const;
  // Standard deviation (log us) of prediction(a) - prediction(b), from their projections.
  double differenceSd_log(const float* a, const float* b) const;

 private:
  int width_ = 0;
  double targetStd_ = 1;
  std::vector<float> factor_;  // lower-triangular L (row-major) with L L^T = the weights' block
  std::vector<float> zeros_;   // the projection's bias
};

}  // namespace dynamiccl::learned
