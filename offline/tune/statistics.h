// Robust statistics of repeated timings: medians and trimmed means resist stragglers and
// congestion episodes that would drag a plain mean.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "offline/tune/config.h"
#include "policy/policy.h"

namespace dynamiccl::tune {

double median(std::vector<double> v);

// The decision rule's quantiles and log-time statistics live with the rule (policy/decision_rule.h).
using policy::chiSquareQuantile;
using policy::logSumSquares;
using policy::meanLog;
using policy::normalQuantile;
using policy::standardNormalCdf;
using policy::studentTQuantile;

// All samples of one configuration at one key.
struct ConfigStats {
  ConfigStats() = default;
  ConfigStats(Config c, std::vector<double> samples, std::string armLabel = {})
      : config(c), samples_us(std::move(samples)), arm(std::move(armLabel)) {}
  Config config;
  std::vector<double> samples_us;
  std::string arm;  // what a dataset row forced to get it ("NCCL_ALGO=RING"); empty for a search
  // Where each sample is itself a summary of runs whose spread the data state (a median of 3, its
  // spread): those runs' sum of squares of log time and degrees of freedom; 0: none stated.
  double statedSumSquares = 0, statedDof = 0;
  double median_us() const { return median(samples_us); }
  int count() const { return static_cast<int>(samples_us.size()); }
};


}  // namespace dynamiccl::tune
