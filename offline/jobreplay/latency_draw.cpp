// The latency of one call: a pure function of (seed, call, congestion episodes), so every rank draws the same.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "offline/jobreplay/jobreplay.h"
#include "learner/learner.h"

namespace dynamiccl::jobreplay {
namespace {

using learner::mix64;  // splitmix64's finaliser: every output bit depends on every input bit

double unit(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }  // in (0, 1)

}  // namespace

double drawLatency_us(const MeasuredConfig& c, double sigma, uint64_t seed, uint64_t callIndex) {
  const double s = c.sigma > 0 ? c.sigma : sigma;
  const uint64_t h = mix64(mix64(seed) ^ callIndex);
  // Box-Muller from two independent words; exp(s z - s^2 / 2) has mean 1.
  const double z = std::sqrt(-2.0 * std::log(unit(mix64(h ^ 1)))) * std::cos(2 * std::numbers::pi * unit(mix64(h ^ 2)));
  return c.draw_us() * std::exp(s * z - s * s / 2);
}

bool CongestionEpisode::hits(uint64_t callIndex, const JobKey& key, const sim::Config& ran) const {
  if (callIndex < fromCall || callIndex >= toCall || key.bytes < minBytes || key.bytes > maxBytes) return false;
  if (configs.empty()) return true;
  for (const sim::Config& c : configs)
    if (c.algo == ran.algo && c.proto == ran.proto) return true;
  return false;
}

double congestionFactor(const std::vector<CongestionEpisode>& episodes, uint64_t callIndex, const JobKey& key,
                        const sim::Config& ran) {
  double f = 1;
  for (const CongestionEpisode& e : episodes)
    if (e.hits(callIndex, key, ran)) f *= e.factor;
  return f;
}

}  // namespace dynamiccl::jobreplay
