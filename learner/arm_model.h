// What the learner asks of a model of arms (learned/ implements it) and of the profile.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "features/features.h"
#include "policy/policy.h"

namespace dynamiccl::learner {
using namespace dynamiccl::policy;  // the rule table's vocabulary: Decision, Candidates, DecisionTable

// Static candidates of a key: the profile's answer at the bucket's smallest size (the prior).
using PriorFn = std::function<Candidates(int coll, int bucket)>;
// A key's unverified candidate rule (same form); count 0: none.
using CandidateFn = std::function<Candidates(int coll, int bucket)>;
// The learned network's rules evaluated again with the recent timings (run at a build, off the hot
// path, on the leader only): they replace the rules it gave at init, as candidates (verification)
// or as the prior (DYNAMICCL_TRUST=all).
using LearnedRefresh = std::function<DecisionTable(const TimingWindows& windows)>;

// What this job measured of one arm of a key (discounted weight, mean log-latency in log us).
struct MeasuredArm {
  int coll = 0, bucket = 0;
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  double weight = 0;
  double meanLog = 0;
};

// A model's belief about an arm's log-latency (log us): mean and standard deviation.
struct ArmBelief {
  double meanLog = 0;
  double sdLog = 0;
};

// The learned policy inside the job (learned/learned_arm_model.h): refit from what the job measured
// at each table build, then asked which arm of a key it believes in. The measurement still decides.
class ArmModel {
 public:
  virtual ~ArmModel() = default;
  virtual void refit(const std::vector<MeasuredArm>& measured, const TimingWindows& windows) = 0;
  // nullopt: the model does not score this arm (CollNet, ...) or this key.
  virtual std::optional<ArmBelief> belief(int coll, int bucket, Algo algo, Proto proto) const = 0;
  // Belief in arm a's log-latency minus arm b's at the key (shared uncertainty cancels).
  virtual std::optional<ArmBelief> difference(int coll, int bucket, Algo a, Proto pa, Algo b, Proto pb) const = 0;
};

}  // namespace dynamiccl::learner
