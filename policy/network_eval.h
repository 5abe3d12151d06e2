// Evaluating the learned policy with Eigen (no LibTorch in the plugin). Called off the hot path:
// at init and when the online learner asks for a new DecisionTable.
#pragma once

#include <memory>

#include "features/features.h"
#include "policy/network_weights.h"

namespace dynamiccl::policy {

class PolicyNetwork {
 public:
  static Expected<std::shared_ptr<const PolicyNetwork>> create(PolicyWeights weights);
  ~PolicyNetwork();

  int gruHidden() const { return weights_.gruHidden; }
  int inputs() const { return weights_.contextFeatures + weights_.configFeatures; }  // per row, before the GRU state
  const PolicyWeights& weights() const { return weights_; }

  // Final GRU state after reading the window (oldest first); hidden has gruHidden() floats.
  void encodeWindow(const float* window, float* hidden) const;
  // Predicted log latency (us) for n rows of [context | config] (row-major, inputs() wide), all
  // with the same GRU state.
  void predictLogLatency_us(const float* rows, int n, const float* hidden, float* out) const;

 private:
  explicit PolicyNetwork(PolicyWeights w);
  PolicyWeights weights_;
  struct Layers;
  std::unique_ptr<Layers> layers_;
};

}  // namespace dynamiccl::policy
