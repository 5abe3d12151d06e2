// What the learner concludes of an arm: its statistics and the verdict that travels to the next job.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "features/features.h"
#include "policy/policy.h"

namespace dynamiccl::learner {
using namespace dynamiccl::policy;  // the rule table's vocabulary: Decision, Candidates, DecisionTable

// How a candidate rule stands against NCCL's default in this job (what the store keeps).
enum class VerdictState : uint8_t { Testing, Promoted, Dropped };
std::string_view verdictStateName(VerdictState s);  // "testing", "promoted", "dropped"

// Log-latency statistics of one arm: what a verdict carries and what seeds the next job.
struct ArmSummary {
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  uint64_t n = 0;        // samples
  double meanLog = 0;    // mean of log(latency_us)
  double varLog = 0;     // variance of log(latency_us)
  int nChannels = 0;     // the channel count the arm asks for; 0: NCCL's own (or its rule's)
};

struct Verdict {
  int coll = 0, bucket = 0;
  Decision candidate;
  ArmSummary candidateArm, baselineArm;  // baseline: NCCL's default (or the static answer when unknown)
  double gain = NAN, gainLow = NAN, gainHigh = NAN;  // speed-up over the baseline minus 1, 95% interval
  VerdictState state = VerdictState::Testing;
};

}  // namespace dynamiccl::learner
