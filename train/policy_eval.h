// Judging a policy network on simulated machines through the plugin's own path (Eigen rules ->
// DecisionTable -> first feasible candidate): latency ratio to the best configuration.
#pragma once

#include <vector>

#include "policy/network_eval.h"
#include "train/sim_adapter.h"

namespace dynamiccl::train {

struct RatioSummary {
  int keys = 0;
  double policyGeoMean = 0, ncclGeoMean = 0;  // geometric mean of latency / best latency
  double policyWorst = 0, ncclWorst = 0;
  double policyBeatsNccl = 0;                 // fraction of keys where the policy is faster by > 1%
  double rebuild_us = 0;                      // rules + DecisionTable for this machine
};

// Every tunable collective at sizes 16 B .. 4 GiB; congestion > 0 also fills the timing windows
// with what NCCL's default measured under it, as the plugin would have observed.
RatioSummary ratioToBest(const policy::PolicyNetwork& net, const SimSystem& sys, double congestion);

}  // namespace dynamiccl::train
