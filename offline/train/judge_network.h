// The learned policy judged on real measurements (shared/data) with sim::replay: per measured point
// the network's generated table (for that shape's fingerprint) decides from NCCL's cost table, and
// the decision's measured time is compared with the best measured and NCCL's default.
#pragma once

#include "policy/policy.h"
#include "learned/learned.h"
#include "offline/sim/sim.h"

namespace dynamiccl::train {

struct JudgedFigures {
  sim::ReplaySummary policy;  // the network's decisions
  sim::ReplaySummary nccl;    // NCCL's default (the baseline replay judges against)
};

JudgedFigures judgeNetwork(const learned::PolicyNetwork& net, const measurements::ReplayData& data);

}  // namespace dynamiccl::train
