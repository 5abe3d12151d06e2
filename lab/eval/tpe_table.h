// A TPE-tuned table as the learned policy's yardstick (`dynamiccl-lab policy-eval`).
#pragma once

#include "features/features.h"
#include "offline/train/train.h"
#include "policy/policy.h"

namespace dynamiccl::eval {

// TPE + Hyperband on the machine's calibrated simulator (simulated timings), all five collectives at
// the policy's grid of sizes, smoothed and compiled like a profile the plugin would load.
Expected<policy::DecisionTable> tpeTable(const train::SimSystem& sys, int budget);

}  // namespace dynamiccl::eval
