#include "policy/measurement_plan.h"

#include <algorithm>
#include <cmath>

#include "policy/online_table.h"

namespace dynamiccl::policy {

double initialMeasureRate(double budget, double maxCostShare) {
  return maxCostShare > 0 ? std::clamp(budget / 2 / maxCostShare, 0.0, 1.0) : 1.0;
}

MeasurePlan planMeasurement(const std::vector<KeyMeasure>& keys, double budget, double settledShare,
                            double initialRate) {
  MeasurePlan p;
  double total = 0, cost = 0, gain = 0, searched = 0;
  for (const KeyMeasure& k : keys) {
    if (!(k.time_us > 0)) continue;
    total += k.time_us;
    searched += k.searching ? k.time_us : 0;
    cost += k.time_us * std::max(0.0, k.costShare);
    gain += k.time_us * std::clamp(k.gainShare, 0.0, 1.0);
    p.searching = p.searching || k.searching;
  }
  if (!(total > 0)) {
    p.rate = initialRate;
    p.searching = true;
    return p;
  }
  const double perCall = cost / total;  // the price of profiling an average call, share of its time
  // Every key's calls are measured alike, but only the searched keys learn from it: the measurement
  // may cost half the budget in proportion to their share of the job's time.
  const double settled = std::clamp(settledShare, 0.0, 1.0);
  const double spend = budget / 2 * (searched / total);
  const double affordable = perCall > 0 ? std::clamp(spend / perCall, 0.0, 1.0) : 1.0;
  const double settledAffordable = perCall > 0 ? std::clamp(budget / 2 / perCall, 0.0, 1.0) : 1.0;
  p.gainShare = gain / total;
  p.rate = p.searching ? std::max(affordable, std::min(settled, settledAffordable)) : std::min(settledAffordable, settled);
  p.costShare = p.rate * perCall;
  // Settled: re-tests for drift are worth their price only while what the job gained exceeds it.
  if (!p.searching && p.costShare > 0 && p.gainShare < p.costShare) {
    p.stopped = true;
    p.rate = 0;
    p.costShare = 0;
  }
  return p;
}

bool searchRepays(double callsSoFar, double costShare, int minSamples, double plausibleGain) {
  return plausibleGain * std::max(0.0, callsSoFar) >= 2.0 * minSamples * std::max(0.0, costShare);
}

uint32_t rateThreshold(double rate) {
  if (!(rate > 0)) return 0;
  if (rate >= 1) return kMeasureEveryCall;
  return static_cast<uint32_t>(std::min(rate * 4294967296.0, 4294967294.0));
}

}  // namespace dynamiccl::policy
