// From per-size search results to few size intervals: a dynamic programme over the sizes picks one
// configuration per size minimising regret plus a penalty per switch (so noise cannot make
// neighbouring sizes flip-flop), and the guard (the decision rule, evidence.h) allows a configuration
// only where it beats NCCL's default beyond noise. Intervals that keep the default produce no rule.
#pragma once

#include <cstdint>
#include <vector>

#include "offline/tune/evidence.h"
#include "offline/tune/key_search.h"
#include "offline/tune/tuner.h"

namespace dynamiccl::tune {

// The decision rule (confidence, minGain, pooling) plus the smoothing's switch penalty.
struct SmoothingOptions : DecisionRule {
  double switchPenalty = 0.02;  // log-time regret a change of configuration must repay
};

// Guard on one size alone: the decision rule's finding is Faster.
bool beatsBeyondNoise(const ConfigStats& candidate, const ConfigStats& ncclDefault, const SmoothingOptions& o);

struct TunedInterval {
  Collective coll = Collective::AllReduce;
  uint64_t minBytes = 0, maxBytes = 0;  // inclusive
  Config config;                        // keepDefault(): no rule
  double confidence = 0;                // mean win probability over the sizes it covers (evidence.h)
  double gain = 0;                      // geometric-mean speed-up over NCCL's default minus 1 (the decision's estimate)
  int sizes = 0;
  double gainLow = 0, gainHigh = 0;     // the decision's bounds over those sizes (gainInterval, evidence.h)
  int samples = 0, defaultSamples = 0;  // timings behind it: of the configuration, of NCCL's default
};

// keys: one collective, ascending bytes. Key i covers [bytes_i, bytes_{i+1} - 1]; the last covers
// up to 2 x bytes - 1. Per key, the chosen configuration (keepDefault() where none) is in chosenPerKey.
// evidencePerKey: the chosen candidate's evidence, or where the default stays the most promising one's.
std::vector<TunedInterval> smoothDecisions(const std::vector<KeyResult>& keys, const SmoothingOptions& o,
                                           std::vector<Config>* chosenPerKey = nullptr,
                                           std::vector<PointEvidence>* evidencePerKey = nullptr);

// Every collective of a tuning run smoothed: the intervals of all of them, and per collective the
// configuration chosen for each key.
struct SmoothedResult {
  std::vector<TunedInterval> intervals;
  std::vector<std::vector<Config>> chosenPerCollective;
  std::vector<std::vector<PointEvidence>> evidencePerCollective;
};
SmoothedResult smoothAll(const TuneResult& result, const SmoothingOptions& o);

}  // namespace dynamiccl::tune
