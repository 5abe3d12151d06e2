// Evaluating the learned policy with Eigen (no LibTorch in the plugin). Called off the hot path:
// at init and when the online learner asks for a new DecisionTable.
#pragma once

#include <memory>
#include <span>

#include "features/features.h"
#include "learned/network_weights.h"
#include "learned/prediction_covariance.h"

namespace dynamiccl::learned {

// One row of a grid evaluation: which key row and which configuration row make up the input.
struct PairIndex {
  int key = 0;
  int config = 0;
};

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

  int keyInputs() const { return weights_.contextFeatures + weights_.gruHidden; }  // [context | GRU state]
  // Predicted log latency (us) of every pair: keyRows holds nKeys rows of [context | GRU state]
  // (keyInputs() wide), configRows nConfigs rows of configuration features. The first layer is
  // computed per key and per configuration rather than per pair, and all pairs pass the other layers
  // as one batch (rule generation scores thousands of pairs at communicator init). The result is a
  // pure function of the inputs; it equals predictLogLatency_us up to float rounding (the first
  // layer's sum is split by input part).
  void predictPairsLogLatency_us(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                                 std::span<const PairIndex> pairs, float* out) const;

  // The network as a linear model over learned features: standardized output = outputWeights() .
  // embedding + outputBias(), where the embedding is the last hidden layer. A Bayesian last layer
  // (in-job learning, per-key confidence) works on these.
  int embeddingSize() const;
  std::span<const float> outputWeights() const;
  float outputBias() const;
  // Each pair's embedding (embeddingSize() floats per pair), computed as predictPairsLogLatency_us does.
  void embedPairs(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                  std::span<const PairIndex> pairs, float* out) const;
  // Both at once: scores as predictPairsLogLatency_us gives them, and each pair's embedding.
  void predictAndEmbedPairs(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                            std::span<const PairIndex> pairs, float* scores, float* embeddings) const;
  // The per-key confidence; null when the weights carry no last-layer covariance.
  const PredictionCovariance* covariance() const { return covariance_ ? &*covariance_ : nullptr; }

 private:
  explicit PolicyNetwork(PolicyWeights w);
  // Pairs through every layer; writes the scores and/or the output layer's input where not null.
  void forwardPairs(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                    std::span<const PairIndex> pairs, float* scores, float* embeddings) const;
  PolicyWeights weights_;
  std::optional<PredictionCovariance> covariance_;
  struct Layers;
  std::unique_ptr<Layers> layers_;
};

}  // namespace dynamiccl::learned
