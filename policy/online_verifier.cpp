// The verifier: A/B of a key's candidate against NCCL's choice and what runs, the guard, and the
// verdicts that travel to the next job.
#include "policy/online_learner.h"

#include <algorithm>
#include <cmath>

#include "policy/online_learner_arms.h"

namespace dynamiccl::policy {
using namespace learner;

std::string_view verdictStateName(VerdictState s) {
  switch (s) {
    case VerdictState::Promoted: return "promoted";
    case VerdictState::Dropped: return "dropped";
    case VerdictState::Testing: break;
  }
  return "testing";
}

Judgement OnlineLearner::compare(const ArmStats& a, const ArmStats& b) const {
  return compare(a, b, config_.rule.minGain);
}

Judgement OnlineLearner::compare(const ArmStats& a, const ArmStats& b, double minGain) const {
  const double df = static_cast<double>(std::max<uint64_t>(2, std::min(a.n, b.n)) - 1);
  DecisionRule rule = config_.rule;
  rule.minGain = minGain;
  return judge(a.s / a.w - b.s / b.w, std::sqrt(varOfMean(a) + varOfMean(b)), df, rule);
}

bool OnlineLearner::decided(const KeyState& k, int slot, int runs) const {
  if (slot < 0) return true;
  if (k.modelled && !(k.modelled_us[slot] >= 0)) return true;  // NCCL's table forbids it here: nothing to measure
  const ArmStats& a = k.arms[slot];
  if (runs < 0 || runs == slot || a.w <= 0.1 || k.arms[runs].w <= 0.1) return false;
  const ArmStats& r = k.arms[runs];
  if (a.s / a.w - r.s / r.w > std::log(config_.maxModelledRatio)) return true;  // far behind after a sample or two
  if (a.n < static_cast<uint64_t>(config_.minSamples) || r.n < static_cast<uint64_t>(config_.minSamples)) return false;
  const Judgement j = compare(a, r);
  return j.faster || j.noGain;
}

bool OnlineLearner::trusted(const KeyState& k, int slot) const {
  return slot >= 0 && k.arms[slot].n >= static_cast<uint64_t>(config_.minSamples) && k.arms[slot].w > 0.5;
}

bool OnlineLearner::mayRun(const KeyState& k, int slot) const {
  return slot >= 0 && ((k.seededPromoted >> slot & 1) ||
                       k.arms[slot].n - k.arms[slot].seededN >= static_cast<uint64_t>(config_.minSamples));
}

bool OnlineLearner::settled(const KeyState& k, int slot) const {
  // Offered minSamples trials and timed in none: NCCL runs something else for it (CollNet where it
  // has none, ...): no more trials of it are worth their cost.
  return slot >= 0 && (k.arms[slot].n >= static_cast<uint64_t>(config_.settleSamples) ||
                       k.offered[slot] >= 2.0 * config_.settleSamples ||
                       (k.arms[slot].n == 0 && k.offered[slot] >= config_.minSamples));
}

void OnlineLearner::switchToBest(KeyState& k, const std::vector<int>& slots) {
  int best = -1;
  for (int s : slots)
    if (trusted(k, s) && (s == k.incumbent || mayRun(k, s)) && (best < 0 || meanOf(k.arms[s]) < meanOf(k.arms[best])))
      best = s;
  if (best < 0 || best == k.incumbent || !trusted(k, k.incumbent) ||
      !compare(k.arms[best], k.arms[k.incumbent]).faster)
    return;
  k.incumbent = best;
  ++counters_.switches;
  // An arm online learning switched to gets its verdict like a candidate, so the job's gain is exported.
  if (!(k.tested >> best & 1)) {
    k.tested |= uint32_t{1} << best;
    k.testedDecision[best] = decisionAt(best);
  }
}

void OnlineLearner::guard(KeyState& k, int priorSlot) {
  // Never keep a choice that measures worse than NCCL's own beyond noise; and a promotion this job
  // made stands only while its calls show it faster than NCCL's own beyond noise (the bound its
  // verdict carries): one made on early calls that later calls erode returns to what ran before.
  const int def = k.ncclDefault;
  if (def < 0 || def == k.incumbent || !trusted(k, def) || !trusted(k, k.incumbent)) return;
  if (compare(k.arms[k.incumbent], k.arms[def]).slower) {
    k.incumbent = def;
    ++counters_.guardTrips;
  } else if (k.incumbent != priorSlot && !compare(k.arms[k.incumbent], k.arms[def], 0.0).faster) {
    k.incumbent = priorSlot;
    ++counters_.guardTrips;
  }
}

void OnlineLearner::seed(int coll, int bucket, const ArmSummary& arm, bool promoted) {
  if (coll < 0 || coll >= kNumCollectives || bucket < 0 || bucket >= SizeBucket::kCount) return;
  if (arm.algo == Algo::Default || arm.proto == Proto::Default || arm.n == 0) return;
  if (!std::isfinite(arm.meanLog) || !std::isfinite(arm.varLog) || arm.varLog < 0) return;
  KeyState& k = keys_[coll * SizeBucket::kCount + bucket];
  ArmStats& a = k.arms[slotOf(arm.algo, arm.proto)];
  if (promoted) k.seededPromoted |= uint32_t{1} << slotOf(arm.algo, arm.proto);
  const double w = std::min(static_cast<double>(arm.n), config_.seedWeightCap);
  a.w = w;
  a.s = w * arm.meanLog;
  a.ss = w * (arm.varLog + arm.meanLog * arm.meanLog);
  a.n = arm.n;
  a.seededN = arm.n;
  a.lastCall = k.calls;
}

ArmSummary OnlineLearner::summary(const KeyState& k, int slot) const {
  ArmSummary s;
  if (slot < 0) return s;
  const ArmStats& a = k.arms[slot];
  s.algo = algoOf(slot);
  s.proto = protoOf(slot);
  s.n = a.n;
  if (a.w > 0) {
    s.meanLog = a.s / a.w;
    s.varLog = std::max(0.0, a.ss / a.w - s.meanLog * s.meanLog);
  }
  return s;
}

std::vector<Verdict> OnlineLearner::verdicts() const {
  std::vector<Verdict> out;
  for (uint32_t key = 0; key < kOnlineKeys; ++key) {
    const KeyState& k = keys_[key];
    if (!k.active || !k.tested) continue;
    const int base = k.ncclDefault >= 0 ? k.ncclDefault : k.incumbent;
    for (int slot = 0; slot < kArmSlots; ++slot) {
      if (!(k.tested >> slot & 1) || base < 0 || base == slot) continue;
      Verdict v;
      v.coll = static_cast<int>(key / SizeBucket::kCount);
      v.bucket = static_cast<int>(key % SizeBucket::kCount);
      v.candidate = k.testedDecision[slot];
      v.candidateArm = summary(k, slot);
      v.baselineArm = summary(k, base);
      const ArmStats &c = k.arms[slot], &b = k.arms[base];
      if (c.w > 0 && b.w > 0) {
        // The gain and its bounds are the decision rule's (what promoted it, and what keeps it).
        const Judgement j = compare(c, b);
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

}  // namespace dynamiccl::policy
