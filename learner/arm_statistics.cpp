#include "learner/arm_statistics.h"

#include <algorithm>
#include <cmath>

namespace dynamiccl::learner {

ArmStatistics::ArmStatistics(const OnlineConfig& config)
    : config_(config),
      decayPerCall_(std::pow(0.5, 1.0 / std::max(1.0, config.halfLifeCalls))),
      usualDecayPerCall_(std::pow(0.5, 1.0 / std::max(1.0, config.usualHalfLifeCalls))) {}

void ArmStatistics::decay(KeyState& k, ArmStats& a) const {
  if (a.lastCall == k.calls) return;
  const double f = std::pow(decayPerCall_, static_cast<double>(k.calls - a.lastCall));
  a.w *= f;
  a.s *= f;
  a.ss *= f;
  a.lastCall = k.calls;
}

bool ArmStatistics::observe(KeyState& k, int slot, double latency_us, RatioRing& window) const {
  k.active = true;
  ++k.calls;
  ArmStats& a = k.arms[slot];
  decay(k, a);
  const double x = std::log(latency_us);
  // The recent-timings window compares with the arm's usual latency, once it has one.
  double& uw = k.usualW[slot];
  double& um = k.usualLog[slot];
  const bool pushed = a.n >= static_cast<uint64_t>(config_.minSamples);
  if (pushed) window.push(latency_us, std::exp(um));
  uw = uw * usualDecayPerCall_ + 1;
  um += (x - um) / uw;
  a.w += 1;
  a.s += x;
  a.ss += x * x;
  ++a.n;
  return pushed;
}

void ArmStatistics::seed(KeyState& k, int slot, const ArmSummary& arm, bool promoted) const {
  ArmStats& a = k.arms[slot];
  if (promoted) k.seededPromoted |= uint32_t{1} << slot;
  const double w = std::min(static_cast<double>(arm.n), config_.seedWeightCap);
  a.w = w;
  a.s = w * arm.meanLog;
  a.ss = w * (arm.varLog + arm.meanLog * arm.meanLog);
  a.n = arm.n;
  a.seededN = arm.n;
  a.lastCall = k.calls;
}

double ArmStatistics::varOfMean(const ArmStats& a) const {
  const double m = a.s / a.w, var = std::max(a.ss / a.w - m * m, config_.noiseFloor * config_.noiseFloor);
  return var / std::max(a.w, 1.0);
}

bool ArmStatistics::trusted(const KeyState& k, int slot) const {
  return slot >= 0 && k.arms[slot].n >= static_cast<uint64_t>(config_.minSamples) && k.arms[slot].w > 0.5;
}

bool ArmStatistics::mayRun(const KeyState& k, int slot) const {
  return slot >= 0 && ((k.seededPromoted >> slot & 1) ||
                       k.arms[slot].n - k.arms[slot].seededN >= static_cast<uint64_t>(config_.minSamples));
}

bool ArmStatistics::settled(const KeyState& k, int slot) const {
  // Offered minSamples trials and timed in none: NCCL runs something else for it (CollNet where it
  // has none, ...): no more trials of it are worth their cost.
  return slot >= 0 && (k.arms[slot].n >= static_cast<uint64_t>(config_.settleSamples) ||
                       k.offered[slot] >= 2.0 * config_.settleSamples ||
                       (k.arms[slot].n == 0 && k.offered[slot] >= config_.minSamples));
}

Judgement ArmStatistics::compare(const ArmStats& a, const ArmStats& b) const {
  return compare(a, b, config_.rule.minGain);
}

Judgement ArmStatistics::compare(const ArmStats& a, const ArmStats& b, double minGain) const {
  const double df = static_cast<double>(std::max<uint64_t>(2, std::min(a.n, b.n)) - 1);
  DecisionRule rule = config_.rule;
  rule.minGain = minGain;
  return judge(a.s / a.w - b.s / b.w, std::sqrt(varOfMean(a) + varOfMean(b)), df, rule);
}

ArmSummary ArmStatistics::summary(const KeyState& k, int slot) const {
  ArmSummary s;
  if (slot < 0) return s;
  const ArmStats& a = k.arms[slot];
  s.algo = algoOf(k.pairOf(slot));
  s.proto = protoOf(k.pairOf(slot));
  s.nChannels = k.channelsOf(slot);
  s.n = a.n;
  if (a.w > 0) {
    s.meanLog = a.s / a.w;
    s.varLog = std::max(0.0, a.ss / a.w - s.meanLog * s.meanLog);
  }
  return s;
}

}  // namespace dynamiccl::learner
