// Rules profiles of any size for tests and benchmarks, shaped as `dynamiccl profile` writes them:
// every collective, one communicator shape per rank count, byte ranges cut into bins.
#pragma once

#include <string>

#include "policy/policy.h"

namespace dynamiccl::fixture {

// What a shaped profile answers at (collective, bin): the same in every profile, so overlapping
// shapes of two profiles agree.
inline policy::Decision shapedDecision(int collective, int bin) {
  policy::Decision d;
  d.algo = (collective + bin) % 2 ? Algo::Ring : Algo::Tree;
  d.proto = static_cast<Proto>(bin % kNumProtos);
  return d;
}

// kNumCollectives x shapes x bins rules, the shapes pinned to ranks firstRanks, firstRanks + 1, ...
// (one node), bin i covering [i K, i K + 1023]; rule ((c x shapes) + s) x bins + i is collective c,
// shape s, bin i.
inline policy::Profile shapedProfile(const std::string& source, int firstRanks, int shapes, int bins) {
  policy::Profile p;
  p.name = source;
  p.source = source;
  p.rules.reserve(static_cast<size_t>(kNumCollectives) * shapes * bins);
  for (int c = 0; c < kNumCollectives; ++c)
    for (int s = 0; s < shapes; ++s)
      for (int i = 0; i < bins; ++i) {
        policy::Rule r;
        r.collective = static_cast<Collective>(c);
        r.minRanks = r.maxRanks = firstRanks + s;
        r.minNodes = r.maxNodes = 1;
        r.minBytes = uint64_t(i) * 1024;
        r.maxBytes = r.minBytes + 1023;
        r.decision = shapedDecision(c, i);
        r.origin = "rules[" + std::to_string(p.rules.size()) + "]";
        p.rules.push_back(std::move(r));
      }
  return p;
}

}  // namespace dynamiccl::fixture
