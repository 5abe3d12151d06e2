// What the learner holds per (collective, size bucket) and per arm, and the arm slot's arithmetic:
// plain data the statistics, the verifier, the search and the budget read and write. Internal to learner.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "abi/abi.h"
#include "learner/online_config.h"
#include "learner/online_table.h"

namespace dynamiccl::learner {

// An arm is a configuration. Slots below kPairSlots are (algo, proto) at the channel count its
// decision leaves to NCCL (or the rule's own); the kChannelSlots after them are the channel search's:
// an (algo, proto) slot at a count the learner asks for (KeyState::channelArms says which).
inline constexpr int kPairSlots = kNumAlgos * kNumProtos;
inline constexpr int kChannelSlots = 10;
inline constexpr int kArmSlots = kPairSlots + kChannelSlots;
static_assert(kArmSlots <= 32, "tested and seededPromoted are bit sets of slots");

constexpr int slotOf(Algo a, Proto p) { return static_cast<int>(a) * kNumProtos + static_cast<int>(p); }
constexpr Algo algoOf(int slot) { return static_cast<Algo>(slot / kNumProtos); }
constexpr Proto protoOf(int slot) { return static_cast<Proto>(slot % kNumProtos); }
inline Decision decisionAt(int slot) { return Decision{algoOf(slot), protoOf(slot), 0, 0}; }
constexpr bool isChannelSlot(int slot) { return slot >= kPairSlots && slot < kArmSlots; }

// A channel slot's configuration: the (algo, proto) slot and the channel count asked for.
struct ChannelArm {
  int8_t pair = -1;      // -1: the slot is free
  int16_t nChannels = 0;
  bool trimmed = false;  // the host ran another count when asked for this one: no arm of its own
  int16_t ranAs = 0;     // trimmed: the count it ran as
};

struct ArmStats {
  double w = 0, s = 0, ss = 0;  // discounted weight, sum and sum of squares of log-latency
  uint64_t n = 0;               // raw count
  uint64_t lastCall = 0;        // key call count at the last decay
  uint64_t seededN = 0;         // of n, a previous job's (seed())
};
inline double meanOf(const ArmStats& a) { return a.s / a.w; }

struct KeyState {
  bool active = false;
  uint64_t calls = 0;
  int incumbent = -1;     // arm slot exploited; -1: the prior
  int ncclDefault = -1;   // arm slot NCCL picks alone; -1 unknown
  int candidate = -1;     // arm slot of the key's unverified candidate; -1 none
  bool tiedMove = false;  // the ended search moved once to a tied channel count that measured faster
  Decision candidateDecision;
  int proposal = -1;      // the arm model's current proposal, kept until measured; -1 none
  uint32_t tested = 0;    // arm slots that were candidates in this job (each gets a verdict)
  uint32_t seededPromoted = 0;  // arm slots a previous job promoted (seed())
  std::array<Decision, kArmSlots> testedDecision{};
  bool modelled = false;  // modelled_us holds NCCL's cost table
  double bestScale = 0;   // lowest measured/modelled time of a trusted arm seen so far (0: none)
  std::array<double, kArmSlots> usualLog{}, usualW{};  // slow average of log-latency per arm
  std::array<float, kPairSlots> modelled_us{};
  const float* ncclTable() const { return modelled ? modelled_us.data() : nullptr; }  // nullptr: unknown
  std::array<ArmStats, kArmSlots> arms{};
  double measureCost = 0;  // what profiling one of its calls costs (share of the call's time)
  uint64_t jobCalls = 0;   // the job's calls of the key, measured or not (setCallsSoFar)
  // Trials offered per arm (expected, from each table's share and the key's calls since), so an arm
  // that never yields a timing still settles; offeredShare: the last table's share of the key's calls.
  std::array<double, kArmSlots> offered{}, offeredShare{};
  uint64_t offeredAt = 0;  // jobCalls when offeredShare was last counted
  std::array<int8_t, kOnlineMaxArms> entrySlot{};  // the arm slot of each exploration arm of its entry
  std::array<ChannelArm, kChannelSlots> channelArms{};
  // The channel count NCCL ran for each (algo, proto) when asked for none (the most seen); 0 unknown.
  std::array<int16_t, kPairSlots> ncclChannels{};
  // The (algo, proto) slot an arm runs; -1 for a free channel slot.
  int pairOf(int slot) const { return isChannelSlot(slot) ? channelArms[slot - kPairSlots].pair : slot; }
  // The channel count an arm asks for; 0: the pair's own (NCCL's, or its rule's).
  int channelsOf(int slot) const { return isChannelSlot(slot) ? channelArms[slot - kPairSlots].nChannels : 0; }
  // NCCL's cost table forbids the arm here (IGNORE): nothing to measure.
  bool forbidden(int slot) const {
    const int p = pairOf(slot);
    return p < 0 || (modelled && !(modelled_us[p] >= 0));
  }
};

// The decision an arm runs when nothing else names it: its (algo, proto) and channel count.
inline Decision decisionAt(const KeyState& k, int slot) {
  Decision d = decisionAt(k.pairOf(slot));
  d.nChannels = k.channelsOf(slot);
  return d;
}

// A key's prior: the static answer, and its arm (the profile's full (algo, proto); NCCL's own when
// no rule; -1 when only partial).
struct PriorArm {
  Candidates rules;
  bool full = false;  // the first rule names a full (algo, proto)
  int slot = -1;
};

// The decision an arm of the key runs: the candidate's own, the prior's rule, else the bare arm.
inline Decision decisionOf(const KeyState& k, const PriorArm& prior, int slot) {
  if (slot == k.candidate) return k.candidateDecision;
  return slot == prior.slot && prior.full ? prior.rules.decisions[0] : decisionAt(k, slot);
}

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

}  // namespace dynamiccl::learner
