#include "offline/tune/tpe.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dynamiccl::tune {

TpeSampler::TpeSampler(const SearchSpace& space, TpeOptions options, uint64_t seed)
    : space_(space), options_(options), rng_(seed) {}

TpeSampler::Density TpeSampler::density(const std::vector<int>& points, double extraWeight, bool withPrior) const {
  Density d(3);
  for (int dim = 0; dim < 3; ++dim) d[dim].assign(space_.dimensionSize(dim), options_.priorCount);
  auto add = [&](int pointIndex, double w) {
    const SpacePoint& p = space_.point(pointIndex);
    const int cats[3] = {p.algoProto, p.channel, p.chunk};
    d[0][cats[0]] += w;  // categorical: no neighbours
    for (int dim = 1; dim < 3; ++dim) {
      const int k = cats[dim], K = static_cast<int>(d[dim].size());
      d[dim][k] += w * (1.0 - options_.ordinalSpread);
      const double side = w * options_.ordinalSpread / 2.0;
      d[dim][k > 0 ? k - 1 : k] += side;
      d[dim][k + 1 < K ? k + 1 : k] += side;
    }
  };
  for (int i : points) add(i, 1.0 + extraWeight);
  if (withPrior)
    for (const auto& [i, w] : prior_) add(i, w);
  for (auto& v : d) {
    double s = 0;
    for (double x : v) s += x;
    for (double& x : v) x /= s;
  }
  return d;
}

int TpeSampler::sampleCategory(const std::vector<double>& p) {
  std::discrete_distribution<int> dist(p.begin(), p.end());
  return dist(rng_);
}

int TpeSampler::randomUnexcluded(const std::vector<bool>& exclude) {
  std::vector<int> open;
  for (int i = 0; i < space_.size(); ++i)
    if (!exclude[i]) open.push_back(i);
  if (open.empty()) return -1;
  return open[std::uniform_int_distribution<size_t>(0, open.size() - 1)(rng_)];
}

std::vector<int> TpeSampler::propose(int n, const std::vector<std::pair<int, double>>& observations,
                                     std::vector<bool> exclude) {
  exclude.resize(space_.size(), false);
  std::vector<int> out;
  const bool model = static_cast<int>(observations.size()) >= options_.minObservations;
  std::vector<int> good, bad;
  if (model) {
    std::vector<std::pair<int, double>> sorted = observations;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const size_t nGood = std::max<size_t>(1, static_cast<size_t>(std::ceil(options_.gamma * sorted.size())));
    for (size_t i = 0; i < sorted.size(); ++i) (i < nGood ? good : bad).push_back(sorted[i].first);
  }
  const Density l = density(good, 0.0, true);
  const Density g = density(bad, 0.0, false);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int k = 0; k < n; ++k) {
    int pick = -1;
    const bool haveGuidance = model || !prior_.empty();
    if (haveGuidance && unit(rng_) >= options_.randomFraction) {
      double bestScore = -std::numeric_limits<double>::infinity();
      for (int c = 0; c < options_.candidates; ++c) {
        const SpacePoint p{sampleCategory(l[0]), sampleCategory(l[1]), sampleCategory(l[2])};
        const int idx = space_.indexOf(p);
        if (idx < 0 || exclude[idx]) continue;
        // Without a model (prior only) the good density alone ranks candidates.
        double score = std::log(l[0][p.algoProto]) + std::log(l[1][p.channel]) + std::log(l[2][p.chunk]);
        if (model) score -= std::log(g[0][p.algoProto]) + std::log(g[1][p.channel]) + std::log(g[2][p.chunk]);
        if (score > bestScore) bestScore = score, pick = idx;
      }
    }
    if (pick < 0) pick = randomUnexcluded(exclude);
    if (pick < 0) break;  // space exhausted
    exclude[pick] = true;
    out.push_back(pick);
  }
  return out;
}

}  // namespace dynamiccl::tune
