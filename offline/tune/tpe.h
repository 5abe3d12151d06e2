// Tree-structured Parzen Estimator over the categorical/ordinal search space: observations are
// split at the gamma quantile of loss into "good" and "bad"; each dimension gets a smoothed
// histogram per side (ordinal dimensions leak weight to neighbours); candidates are drawn from
// the good density and the one maximising l(x)/g(x) is proposed.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "offline/tune/search_space.h"

namespace dynamiccl::tune {

struct TpeOptions {
  double gamma = 0.25;          // share of observations that count as good
  int candidates = 48;          // draws from l(x) per proposal
  double priorCount = 1.0;      // uniform pseudo-count per category (keeps every value reachable)
  double ordinalSpread = 0.4;   // share of an ordinal observation given to its two neighbours
  int minObservations = 6;      // below this, proposals come from the prior alone
  double randomFraction = 0.1;  // proposals drawn uniformly, so a wrong model cannot trap the search
};

class TpeSampler {
 public:
  TpeSampler(const SearchSpace& space, TpeOptions options, uint64_t seed);

  // Strong prior (e.g. the winners at the neighbouring size): (point index, weight in observations).
  void setPrior(std::vector<std::pair<int, double>> pointWeights) { prior_ = std::move(pointWeights); }
  // Up to n distinct points, none with exclude[i] true. observations: (point index, loss), lower is better.
  std::vector<int> propose(int n, const std::vector<std::pair<int, double>>& observations, std::vector<bool> exclude);

 private:
  using Density = std::vector<std::vector<double>>;  // [dimension][category], normalised
  Density density(const std::vector<int>& points, double extraWeight, bool withPrior) const;
  int sampleCategory(const std::vector<double>& p);
  int randomUnexcluded(const std::vector<bool>& exclude);

  const SearchSpace& space_;
  TpeOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::pair<int, double>> prior_;
};

}  // namespace dynamiccl::tune
