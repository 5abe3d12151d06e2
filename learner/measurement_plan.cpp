// The measurement plan: what to profile. How much of the next version is measured, over every key
// (planMeasurement), and the learner's part in it: each key's trials, their share and their cost.
#include "learner/measurement_plan.h"

#include <algorithm>
#include <cmath>

#include "learner/online_table.h"

namespace dynamiccl::learner {

double initialMeasureRate(double budget, double maxCostShare) {
  return maxCostShare > 0 ? std::clamp(budget / 2 / maxCostShare, 0.0, 1.0) : 1.0;
}

MeasurementPlan planMeasurement(const std::vector<KeyMeasurement>& keys, double budget, double settledShare,
                            double initialRate) {
  MeasurementPlan p;
  p.keyRates.assign(keys.size(), 0.0);
  double total = 0, cost = 0, gain = 0, explore = 0;
  for (const KeyMeasurement& k : keys) {
    if (!(k.time_us > 0)) continue;
    ++p.keys;
    p.searchingKeys += k.searching;
    total += k.time_us;
    cost += k.time_us * std::max(0.0, k.costShare);
    gain += k.time_us * std::clamp(k.gainShare, 0.0, 1.0);
    explore += k.time_us * std::max(0.0, k.exploreShare);
    p.searching = p.searching || k.searching;
  }
  if (!(total > 0)) {
    p.rate = initialRate;
    p.searching = true;
    std::fill(p.keyRates.begin(), p.keyRates.end(), initialRate);
    return p;
  }
  const double perCall = cost / total;  // the price of profiling an average call, share of its time
  const double settled = std::clamp(settledShare, 0.0, 1.0);
  // Settled keys share the drift re-tests' rate, which may cost half the budget at most.
  const double floor = std::min(settled, perCall > 0 ? std::clamp(budget / 2 / perCall, 0.0, 1.0) : 1.0);
  p.gainShare = gain / total;
  p.exploreShare = explore / total;
  p.time_us = total;
  // Settled everywhere: re-tests for drift are worth their price only while what the job gained exceeds it.
  p.stopped = !p.searching && floor * perCall > 0 && p.gainShare < floor * perCall;
  double calls = 0, measured = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const KeyMeasurement& k = keys[i];
    double rate = p.stopped ? 0 : floor;
    // A key still searching measures what its trials need (twice their share while what runs needs
    // samples beside each trial's, else their share), its measurement costing at most half the budget of
    // its own time.
    if (k.searching) {
      const double affordable = k.costShare > 0 ? std::clamp(budget / 2 / k.costShare, 0.0, 1.0) : 1.0;
      const double need = (k.beside ? 2 : 1) * std::clamp(k.trialShare, 0.0, 0.5);
      rate = std::min(std::max(affordable, floor), std::max(need, floor));
    }
    p.keyRates[i] = rate;
    if (!(k.time_us > 0)) continue;
    p.costShare += k.time_us * rate * std::max(0.0, k.costShare) / total;
    calls += k.calls;
    measured += k.calls * rate;
  }
  p.rate = calls > 0 ? measured / calls : (p.stopped ? 0 : floor);
  p.defaultRate = p.stopped ? 0 : floor;
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

}  // namespace dynamiccl::learner
