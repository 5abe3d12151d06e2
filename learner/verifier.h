// The verifier: A/B of a key's candidates against NCCL's choice and what runs. It promotes an arm
// measured faster beyond noise, guards against one that measures worse than NCCL's own, and gives
// each tested arm the verdict that travels to the next job. Internal to learner.
#pragma once

#include <vector>

#include "learner/arm_statistics.h"

namespace dynamiccl::learner {

class Verifier {
 public:
  Verifier(const OnlineConfig& config, const ArmStatistics& stats) : config_(config), stats_(stats) {}

  // Whether an arm tried as a candidate has its answer against `runs`.
  bool decided(const KeyState& k, int slot, int runs) const;
  // The incumbent becomes the best arm measured faster beyond noise; true when it switched.
  bool switchToBest(KeyState& k, const std::vector<int>& slots) const;
  // Never keep a choice that measures worse than NCCL's own; true when it stepped back.
  bool guard(KeyState& k, int priorSlot) const;
  // One per arm that was a candidate at the keys (the latest state of each).
  std::vector<Verdict> verdicts(const std::vector<KeyState>& keys) const;

 private:
  // At an ended search, the tied channel count of the pair that runs that measured fastest (once); -1 none.
  int tiedChannelMove(KeyState& k) const;

  const OnlineConfig& config_;
  const ArmStatistics& stats_;
};

}  // namespace dynamiccl::learner
