// The learned network as the ranker of what to measure: at each measured key of a dataset, how
// soon an order of configurations reaches the measured best, next to NCCL's cost order and the
// simulator's. All figures are measured (the dataset's medians decide what is best).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "offline/sim/sim.h"
#include "policy/policy.h"
#include "learned/learned.h"

namespace dynamiccl::train {

struct ProposerFigures {
  std::string proposer;
  int keys = 0;          // keys with NCCL's default and at least one forced configuration measured
  int bestIsDefault = 0; // of them, keys where NCCL's default is within 1% of the best: nothing to find
  int top1 = 0, top3 = 0;  // of the others: the best (within 1%) is the first / among the first three proposed
  int trials = 0;        // trials until the best was measured, summed over the others
  int everyArm = 0;      // trials of measuring every alternative, summed over the others
  int others() const { return keys - bestIsDefault; }
};

// Configurations most promising first (what the proposer would measure first); configurations it
// leaves out are tried after, in NCCL's cost order.
using ArmOrder = std::function<std::vector<sim::Config>(const measurements::ReplayPoint&)>;

ProposerFigures evaluateProposer(const std::string& name, const measurements::ReplayData& data, const ArmOrder& order);

ArmOrder ncclCostOrder();
// The calibrated simulator's predicted times for the shape (nullptr: none for it, NCCL's order).
ArmOrder simulatorOrder(std::function<const sim::Simulator*(const measurements::Shape&)> simulatorFor);
// The network's unguarded candidates for the shape's fingerprint, its first choice first.
ArmOrder networkOrder(std::shared_ptr<const learned::PolicyNetwork> net);

// "network     14 keys (3 with a gain): top-1 2/3, top-3 3/3, trials to best 4 (every arm 9)".
std::string describeProposer(const ProposerFigures& f);

}  // namespace dynamiccl::train
