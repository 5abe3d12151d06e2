#include "offline/sim/environment.h"

#include <cmath>

namespace dynamiccl::sim {

MeasuredEnvironment::MeasuredEnvironment(const measurements::ReplayData& data, std::string group, int nRanks, int nNodes,
                                         uint64_t seed, double sigma)
    : data_(data), group_(std::move(group)), nRanks_(nRanks), nNodes_(nNodes), rng_(seed), sigma_(sigma) {}

std::optional<double> MeasuredEnvironment::latency_us(Collective coll, uint64_t bytes, const Config& c) {
  for (const measurements::ReplayPoint& p : data_.points) {
    if (p.group != group_ || p.shape->nRanks != nRanks_ || p.shape->nNodes != nNodes_ || p.coll != coll ||
        p.bytes != bytes)
      continue;
    double mean = -1;
    const bool isDefault = c.algo == Algo::Default || p.isDefaultConfig(c);
    if (isDefault && p.default_us > 0) mean = p.default_us;
    else if (auto it = p.forced_us.find(p.judgedAs(c)); it != p.forced_us.end()) mean = it->second;
    if (mean <= 0) return std::nullopt;
    std::normal_distribution<double> normal(0.0, sigma_);
    return mean * std::exp(normal(rng_));
  }
  return std::nullopt;
}

std::optional<double> SimulatedEnvironment::latency_us(Collective coll, uint64_t bytes, const Config& c) {
  const double t = sim_.sample_us(coll, bytes, c, noise_);
  if (t < 0) return std::nullopt;
  return t;
}

}  // namespace dynamiccl::sim
