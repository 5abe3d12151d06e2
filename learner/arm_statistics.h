// Per-arm statistics of log-latency: observations with their decay, the previous job's seeds, and
// what the rule makes of two arms (trusted, settled, faster beyond noise). Internal to learner.
#pragma once

#include "learner/key_state.h"
#include "learner/verdict.h"

namespace dynamiccl::learner {

class ArmStatistics {
 public:
  explicit ArmStatistics(const OnlineConfig& config);

  // One timing of `slot` at the key; windows: the recent timings, pushed once the arm has a usual
  // latency (returns whether it was).
  bool observe(KeyState& k, int slot, double latency_us, RatioRing& window) const;
  // A previous job's measurements of one arm in `slot` (at most seedWeightCap calls' weight).
  void seed(KeyState& k, int slot, const ArmSummary& arm, bool promoted) const;
  void decay(KeyState& k, ArmStats& a) const;

  double varOfMean(const ArmStats& a) const;  // of the mean log-latency, with the noise floor
  bool trusted(const KeyState& k, int slot) const;  // measured enough for its mean to count
  bool settled(const KeyState& k, int slot) const;  // its search ended undecided (settleSamples)
  // May replace what runs: measured enough in this job, or promoted by a previous one. A previous job's
  // undecided samples alone never promote (their summary carries no decay: it overstates them).
  bool mayRun(const KeyState& k, int slot) const;
  // The decision rule on arm a against arm b (log-latency means, their standard errors); minGain
  // replaces the rule's where given (0: any gain beyond noise).
  Judgement compare(const ArmStats& a, const ArmStats& b) const;
  Judgement compare(const ArmStats& a, const ArmStats& b, double minGain) const;
  ArmSummary summary(const KeyState& k, int slot) const;

 private:
  const OnlineConfig& config_;
  double decayPerCall_;
  double usualDecayPerCall_;
};

}  // namespace dynamiccl::learner
