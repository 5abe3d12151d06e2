// Judging decision tables on simulated machines through the plugin's own path (DecisionTable ->
// first candidate NCCL did not mark IGNORE): latency ratio to the best configuration, for the
// learned policy's generated table, a tuned table, and NCCL's default.
#pragma once

#include <vector>

#include "policy/policy.h"
#include "learned/learned.h"
#include "offline/train/sim_adapter.h"

namespace dynamiccl::train {

struct RatioSummary {
  int keys = 0;
  double policyGeoMean = 0, ncclGeoMean = 0;  // geometric mean of latency / best latency
  double policyWorst = 0, ncclWorst = 0;
  double policyBeatsNccl = 0;                 // fraction of keys where the table is faster by > 1%
  double geoVsNccl = 0, worstVsNccl = 0;      // latency of the table's choice / NCCL's default's, per key
  double rebuild_us = 0;                      // rules + DecisionTable for this machine (network only)
};

// The grid every figure uses: 5 collectives x probe sizes of buckets 5..33 (16 B .. 4 GiB).
inline constexpr int kEvalMinBucket = 5, kEvalMaxBucket = 33;

// Any table (a tuned profile compiled for the machine's shape) judged on the grid.
RatioSummary ratioToBest(const policy::DecisionTable& table, const SimSystem& sys, double congestion);

// The network's rules compiled for the machine; congestion > 0 also fills the timing windows with
// what NCCL's default measured under it, as the plugin would have observed.
RatioSummary ratioToBest(const learned::PolicyNetwork& net, const SimSystem& sys, double congestion);

}  // namespace dynamiccl::train
