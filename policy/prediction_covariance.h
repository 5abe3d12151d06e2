// The learned network's per-key confidence: the standard deviation of its predicted log-latency
// difference between two configurations at one key, from the last layer's calibrated covariance
// (PolicyWeights::lastLayerCovariance). Off the hot path (rule generation). Every CPU runs the same
// instructions in the same order (4-lane SSE vectors, no multiply-add contraction): every rank must
// get the same bits.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "policy/network_weights.h"

namespace dynamiccl::policy {

class PredictionCovariance {
 public:
  // None when the weights carry no covariance.
  static std::optional<PredictionCovariance> of(const PolicyWeights& w);

  int width() const { return width_; }                    // the embedding's
  int projectionSize() const { return padded_; }          // floats per projection
  // The embedding's coordinates in the covariance's factor (projectionSize() floats): differences of
  // two projections measure the spread of the difference of their predictions.
  void project(std::span<const float> embedding, float* out) const;
  // Standard deviation (log us) of prediction(a) - prediction(b), from their projections.
  double differenceSd_log(const float* a, const float* b) const;

 private:
  int width_ = 0, padded_ = 0;
  double targetStd_ = 1;
  std::vector<float> factor_;  // lower-triangular L (rows padded to padded_) with L L^T = the weights' block
};

}  // namespace dynamiccl::policy
