// What the offline tuner measures: one configuration of one collective call shape.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "features/features.h"
#include "policy/policy.h"

namespace dynamiccl::tune {

// One per-collective configuration: the same value the plugin applies (policy::Decision), so a
// tuned configuration becomes a rule without translation. Default algo/proto = NCCL's own choice.
using Config = policy::Decision;
inline Config keepDefault() { return Config{}; }

// The call shape a measurement is for.
struct MeasureKey {
  Collective coll = Collective::AllReduce;
  uint64_t bytes = 0;  // NCCL's nBytes convention (nccl-tests "size")
  int nRanks = 0, nNodes = 0;
};

// Per-job knobs (one value for the whole job, not per collective). 0 = NCCL's default.
struct JobKnobs {
  int nThreads = 0;            // NCCL_NTHREADS
  uint64_t buffSizeBytes = 0;  // NCCL_BUFFSIZE
  auto operator<=>(const JobKnobs&) const = default;
};


}  // namespace dynamiccl::tune
