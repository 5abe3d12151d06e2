// What the learner's files share (online_learner.cpp, online_verifier.cpp, online_search.cpp,
// measurement_plan.cpp): an arm's slot and the rule's bar. Internal to policy.
#pragma once

#include <cmath>

#include "abi/abi.h"
#include "policy/online_learner.h"

namespace dynamiccl::policy::learner {

constexpr int slotOf(Algo a, Proto p) { return static_cast<int>(a) * kNumProtos + static_cast<int>(p); }
constexpr Algo algoOf(int slot) { return static_cast<Algo>(slot / kNumProtos); }
constexpr Proto protoOf(int slot) { return static_cast<Proto>(slot % kNumProtos); }

// Measured so precisely that its interval is narrower than the rule's bar yet not "faster": what it
// could still gain is within the rule's indifference (a few tenths of a percent), not worth measuring on.
inline bool withinTheBar(const Judgement& j, const DecisionRule& rule) {
  return j.upper - j.lower < -std::log(1 - rule.minGain);
}

// Adds d unless present; keeps at most Candidates::kMax.
inline void append(Candidates& c, const Decision& d) {
  for (int i = 0; i < c.count; ++i)
    if (c.decisions[i] == d) return;
  if (c.count < Candidates::kMax) c.decisions[c.count++] = d;
}

// The arm a rule set's first decision runs: the one it names in full, or, where it forces only the
// algorithm, the protocol NCCL's costs pick in that row (modelled_us: NCCL's table; nullptr unknown);
// -1 when it names less or none, or NCCL can run none of that algorithm.
inline int fullSlot(const Candidates& c, const float* modelled_us) {
  if (!c.count || c.decisions[0].keepsAlgoProto()) return -1;
  const Decision& d = c.decisions[0];
  if (!d.leavesProtoToNccl()) return slotOf(d.algo, d.proto);
  if (!modelled_us) return -1;
  // The learner is not told the release: the releases' rules differ only on an exact tie (or an hour).
  const int slot = abi::ncclChoiceWithin(modelled_us, abi::PickRule::Nccl2_28, static_cast<int>(d.algo));
  return slot == abi::kNoPick ? -1 : slot;
}

}  // namespace dynamiccl::policy::learner
