// Tuning profiles (the plugin's JSON format, "dynamiccl-profile" v1) derived for a dataset's
// shapes: one that reproduces NCCL's default, one from the simulator's best per size bucket.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "offline/measurements/measurements.h"
#include "offline/sim/simulator.h"

namespace dynamiccl::sim {

struct ProfileRuleSpec {
  Collective coll = Collective::AllReduce;
  uint64_t minBytes = 0, maxBytes = 0;  // inclusive
  int nRanks = 0, nNodes = 0;
  Algo algo = Algo::Default;
  Proto proto = Proto::Default;
  int channels = 0;  // 0 = keep NCCL's
};

// Picks the decision for (shape, coll, bytes); Algo::Default = no rule.
using BucketChooser = std::function<Config(const measurements::Shape&, Collective, uint64_t bytes)>;

// Per shape and collective measured in `data`, one rule per power-of-two bucket [2^k, 2^(k+1)-1]
// decided at 2^k, adjacent equal decisions merged.
std::vector<ProfileRuleSpec> bucketRules(const measurements::ReplayData& data, const BucketChooser& choose);
std::string profileJson(const std::string& name, const std::vector<ProfileRuleSpec>& rules);

// NCCL's default per the model (channels kept).
BucketChooser ncclDefaultChooser();
// The simulator's fastest (algo, proto) among entries NCCL's table allows (channels kept: no
// data can judge a channel override); `paramsFor` gives a shape's calibrated parameters.
BucketChooser simBestChooser(std::function<SimParams(const measurements::Shape&)> paramsFor);

}  // namespace dynamiccl::sim
