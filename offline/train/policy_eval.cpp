// Ratio-to-best evaluation of decision tables on one simulated machine.
#include "offline/train/policy_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "policy/policy.h"
#include "learned/learned.h"

namespace dynamiccl::train {

RatioSummary ratioToBest(const policy::DecisionTable& table, const SimSystem& sys, double congestion) {
  RatioSummary s;
  double logPolicy = 0, logNccl = 0, logVsNccl = 0;
  int wins = 0;
  for (int c = 0; c < kNumCollectives; ++c)
    for (int b = kEvalMinBucket; b <= kEvalMaxBucket; ++b) {
      const Collective coll = static_cast<Collective>(c);
      const uint64_t bytes = learned::policyProbeBytes(b);
      double best = INFINITY;
      for (const policy::Decision& d : learned::policyConfigurations(coll, sys.fingerprint()))
        if (auto t = sys.trueLatency_us(coll, bytes, d, congestion)) best = std::min(best, *t);
      const policy::Decision own = sys.ncclDefault(coll, bytes);
      const auto nccl = sys.trueLatency_us(coll, bytes, own, congestion);
      if (!std::isfinite(best) || !nccl) continue;
      best = std::min(best, *nccl);
      // The plugin takes the first candidate NCCL did not mark IGNORE and whose guard admits NCCL's
      // own choice, else NCCL's own choice.
      double chosen = *nccl;
      const int ownSlot = own.keepsAlgoProto() ? policy::kNcclChoiceUnknown : policy::ncclChoiceSlot(own.algo, own.proto);
      const policy::Candidates& cand = table.lookup(c, bytes, 1, 0);
      for (int i = 0; i < cand.count; ++i) {
        if (!cand.admitted(i, ownSlot)) continue;
        if (auto t = sys.trueLatency_us(coll, bytes, cand.decisions[i], congestion)) {
          chosen = *t;
          break;
        }
      }
      const double rp = chosen / best, rn = *nccl / best;
      logPolicy += std::log(rp);
      logNccl += std::log(rn);
      s.policyWorst = std::max(s.policyWorst, rp);
      s.ncclWorst = std::max(s.ncclWorst, rn);
      logVsNccl += std::log(chosen / *nccl);
      s.worstVsNccl = std::max(s.worstVsNccl, chosen / *nccl);
      wins += chosen < 0.99 * *nccl;
      ++s.keys;
    }
  if (s.keys) {
    s.policyGeoMean = std::exp(logPolicy / s.keys);
    s.ncclGeoMean = std::exp(logNccl / s.keys);
    s.policyBeatsNccl = static_cast<double>(wins) / s.keys;
    s.geoVsNccl = std::exp(logVsNccl / s.keys);
  }
  return s;
}

RatioSummary ratioToBest(const learned::PolicyNetwork& net, const SimSystem& sys, double congestion) {
  TimingWindows windows;
  if (congestion > 0)
    for (int c = 0; c < kNumCollectives; ++c)
      for (int b = kEvalMinBucket; b <= kEvalMaxBucket; ++b) {
        const Collective coll = static_cast<Collective>(c);
        const uint64_t bytes = learned::policyProbeBytes(b);
        const policy::Decision d = sys.ncclDefault(coll, bytes);
        if (const auto t = sys.trueLatency_us(coll, bytes, d, congestion))
          for (int i = 0; i < kTimingWindowLength; ++i) windows.at(coll, bytes).push(*t, sys.predicted_us(coll, bytes, d));
      }
  const auto start = std::chrono::steady_clock::now();
  learned::PolicyRuleOptions options;
  options.windows = &windows;
  policy::Profile generated;
  generated.rules = learned::policyRules(net, sys.fingerprint(), options);
  const CommShape shape{.commId = 0, .nRanks = sys.fingerprint().nRanks, .nNodes = sys.fingerprint().nNodes};
  const policy::DecisionTable table = policy::DecisionTable::compile(generated, shape);
  const double rebuild_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  RatioSummary s = ratioToBest(table, sys, congestion);
  s.rebuild_us = rebuild_us;
  return s;
}

}  // namespace dynamiccl::train
