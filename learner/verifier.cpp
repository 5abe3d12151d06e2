#include "learner/verifier.h"

#include <algorithm>
#include <cmath>

namespace dynamiccl::learner {

std::string_view verdictStateName(VerdictState s) {
  switch (s) {
    case VerdictState::Promoted: return "promoted";
    case VerdictState::Dropped: return "dropped";
    case VerdictState::Testing: break;
  }
  return "testing";
}

bool Verifier::decided(const KeyState& k, int slot, int runs) const {
  if (slot < 0) return true;
  if (k.forbidden(slot)) return true;  // NCCL's table forbids it here: nothing to measure
  const ArmStats& a = k.arms[slot];
  if (runs < 0 || runs == slot || a.w <= 0.1 || k.arms[runs].w <= 0.1) return false;
  const ArmStats& r = k.arms[runs];
  if (a.s / a.w - r.s / r.w > std::log(config_.maxModelledRatio)) return true;  // far behind after a sample or two
  if (a.n < static_cast<uint64_t>(config_.minSamples) || r.n < static_cast<uint64_t>(config_.minSamples)) return false;
  const Judgement j = stats_.compare(a, r);
  return j.faster || j.noGain;
}

bool Verifier::switchToBest(KeyState& k, const std::vector<int>& slots) const {
  int best = -1;
  for (int s : slots)
    if (stats_.trusted(k, s) && (s == k.incumbent || stats_.mayRun(k, s)) &&
        (best < 0 || meanOf(k.arms[s]) < meanOf(k.arms[best])))
      best = s;
  if (best < 0 || !stats_.trusted(k, k.incumbent)) return false;
  if (best == k.incumbent || !stats_.compare(k.arms[best], k.arms[k.incumbent]).faster) {
    best = tiedChannelMove(k);
    if (best < 0) return false;
  }
  k.incumbent = best;
  // An arm online learning switched to gets its verdict like a candidate, so the job's gain is exported.
  if (!(k.tested >> best & 1)) {
    k.tested |= uint32_t{1} << best;
    k.testedDecision[best] = decisionAt(k, best);
  }
  return true;
}

// Once a key's search has ended (its candidate has its answer), between channel counts of the pair that runs which
// no measurement tells apart, the one that measured faster runs: the likelier better of the two, once
// (no flapping on noise), and only one shown faster than NCCL's own beyond noise, as the guard requires
// of every promotion. At a per-call spread of 4.4% (RCCL, 8x MI355X) a 2.3% gain between two counts
// needs about 60 samples an arm to show beyond noise, and a channel step's round is 16.
int Verifier::tiedChannelMove(KeyState& k) const {
  const int def = k.ncclDefault, runs = k.incumbent;
  if (k.tiedMove || def < 0 || runs < 0 || !stats_.trusted(k, def) ||
      k.arms[runs].n < static_cast<uint64_t>(config_.settleSamples))
    return -1;
  // The search has ended (its candidate has its answer), and both counts measured a settled arm's samples.
  if (k.candidate >= 0 && !decided(k, k.candidate, runs) && !stats_.settled(k, k.candidate)) return -1;
  int best = -1;
  for (int s = 0; s < kArmSlots; ++s)  // every count measured, not only those still being explored
    if (s != runs && s != def && k.pairOf(s) == k.pairOf(runs) && (isChannelSlot(s) || isChannelSlot(runs)) &&
        stats_.trusted(k, s) && k.arms[s].n >= static_cast<uint64_t>(config_.settleSamples) &&
        meanOf(k.arms[s]) < meanOf(k.arms[runs]) && (best < 0 || meanOf(k.arms[s]) < meanOf(k.arms[best])))
      best = s;
  if (best < 0) return -1;
  if (stats_.compare(k.arms[runs], k.arms[best]).faster) return -1;  // not tied: what runs is faster
  if (!stats_.compare(k.arms[best], k.arms[def], 0.0).faster) return -1;
  k.tiedMove = true;
  return best;
}

bool Verifier::guard(KeyState& k, int priorSlot) const {
  // Never keep a choice that measures worse than NCCL's own beyond noise; and a promotion this job
  // made stands only while its calls show it faster than NCCL's own beyond noise (the bound its
  // verdict carries): one made on early calls that later calls erode returns to what ran before.
  const int def = k.ncclDefault;
  if (def < 0 || def == k.incumbent || !stats_.trusted(k, def) || !stats_.trusted(k, k.incumbent)) return false;
  if (stats_.compare(k.arms[k.incumbent], k.arms[def]).slower) {
    k.incumbent = def;
    return true;
  }
  if (k.incumbent != priorSlot && !stats_.compare(k.arms[k.incumbent], k.arms[def], 0.0).faster) {
    k.incumbent = priorSlot;
    return true;
  }
  return false;
}

std::vector<Verdict> Verifier::verdicts(const std::vector<KeyState>& keys) const {
  std::vector<Verdict> out;
  for (uint32_t key = 0; key < keys.size(); ++key) {
    const KeyState& k = keys[key];
    if (!k.active || !k.tested) continue;
    const int base = k.ncclDefault >= 0 ? k.ncclDefault : k.incumbent;
    for (int slot = 0; slot < kArmSlots; ++slot) {
      if (!(k.tested >> slot & 1) || base < 0 || base == slot) continue;
      if (isChannelSlot(slot) && k.channelArms[slot - kPairSlots].trimmed) continue;  // no arm of its own
      Verdict v;
      v.coll = static_cast<int>(key / SizeBucket::kCount);
      v.bucket = static_cast<int>(key % SizeBucket::kCount);
      v.candidate = k.testedDecision[slot];
      v.candidateArm = stats_.summary(k, slot);
      v.baselineArm = stats_.summary(k, base);
      const ArmStats &c = k.arms[slot], &b = k.arms[base];
      if (c.w > 0 && b.w > 0) {
        // The gain and its bounds are the decision rule's (what promoted it, and what keeps it).
        const Judgement j = stats_.compare(c, b);
        v.gain = std::exp(v.baselineArm.meanLog - v.candidateArm.meanLog) - 1;
        v.gainLow = std::exp(-j.upper) - 1;
        v.gainHigh = std::exp(-j.lower) - 1;
        const bool settled =
            c.n >= static_cast<uint64_t>(config_.minSamples) && b.n >= static_cast<uint64_t>(config_.minSamples);
        if (k.incumbent == slot) v.state = VerdictState::Promoted;
        else if ((settled && j.noGain) || -std::log1p(v.gain) > std::log(config_.maxModelledRatio)) v.state = VerdictState::Dropped;
      }
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace dynamiccl::learner
