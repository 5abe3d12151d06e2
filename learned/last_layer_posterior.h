// A Bayesian last layer: Gaussian posterior over a linear model y = theta . [phi, 1] on fixed
// features phi (the network's embedding). The prior is the trained output layer; observations are
// means of log-latency with a weight (how many calls they summarize). Off the hot path.
#pragma once

#include <memory>
#include <span>

namespace dynamiccl::learned {

class LastLayerPosterior {
 public:
  // priorMean: features + 1 values (weights, then bias). priorCovariance: (features + 1)^2 row-major,
  // or empty for isotropic priorVariance; priorVariance is added to the diagonal either way.
  // noiseVariance: of one observation of weight 1.
  LastLayerPosterior(std::span<const float> priorMean, std::span<const float> priorCovariance, double priorVariance,
                     double noiseVariance);
  ~LastLayerPosterior();
  LastLayerPosterior(LastLayerPosterior&&) noexcept;
  LastLayerPosterior& operator=(LastLayerPosterior&&) noexcept;

  int features() const;
  // Back to the prior, then add observations and solve() before predicting again.
  void reset();
  void add(std::span<const float> phi, double mean, double weight);
  // Solves for the posterior; false when the system is singular (the prior then stands).
  bool solve();

  double mean(std::span<const float> phi) const;
  double variance(std::span<const float> phi) const;
  // Mean and variance of prediction(a) - prediction(b): shared uncertainty cancels.
  double differenceMean(std::span<const float> a, std::span<const float> b) const;
  double differenceVariance(std::span<const float> a, std::span<const float> b) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace dynamiccl::learned
