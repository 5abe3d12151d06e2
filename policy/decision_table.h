// The flat table the hot path reads: rules compiled for one communicator's shape.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "features/features.h"
#include "policy/profile.h"

namespace dynamiccl::policy {

// Decisions of the matching rules, in rule order: the plugin takes the first one whose cost-table
// entry NCCL did not mark IGNORE and whose guard admits NCCL's own choice for the call (as NVIDIA's
// CSV tuner falls through to the next rule).
struct Candidates {
  static constexpr int kMax = 4;
  uint8_t count = 0;
  std::array<Decision, kMax> decisions{};
  std::array<GuardMask, kMax> admits = {kAdmitsAny, kAdmitsAny, kAdmitsAny, kAdmitsAny};

  // ncclSlot: ncclChoiceSlot() of NCCL's own (cheapest usable) entry, or kNcclChoiceUnknown.
  bool admitted(int i, int ncclSlot) const { return (admits[i] >> ncclSlot) & 1u; }
  bool guarded(int i) const { return admits[i] != kAdmitsAny; }
};

class DecisionTable {
 public:
  // Keeps only the rules whose nodes/ranks ranges hold this shape; bytes-per-rank intervals become
  // byte intervals. Lookup answers exactly what "first matching rule wins" answers.
  static DecisionTable compile(const Profile& profile, const CommShape& shape);

  // The hot path: no allocation, no lock, no system call; typically two array reads and a compare.
  const Candidates& lookup(int coll, uint64_t nBytes, int numPipeOps, int regBuff) const {
    const int pipeClass = pipeClassOf_[static_cast<unsigned>(numPipeOps) < pipeClassOf_.size() ? numPipeOps : 0];
    const size_t line = (static_cast<size_t>(coll) * numPipeClasses_ + pipeClass) * 2 + (regBuff ? 1 : 0);
    uint32_t i = bucketStart_[line * SizeBucket::kCount + SizeBucket::of(nBytes)];
    while (segments_[i].hi < nBytes) ++i;
    return candidates_[segments_[i].candidates];
  }

  bool empty() const { return ruleCount_ == 0; }
  size_t ruleCount() const { return ruleCount_; }        // rules that apply to this shape
  size_t segmentCount() const { return segments_.size(); }

 private:
  struct Segment {
    uint64_t hi;          // inclusive upper bound of this size interval
    uint32_t candidates;  // index into candidates_; 0 = no rule
  };
  std::array<uint8_t, kMaxPipeOps + 1> pipeClassOf_{};  // numPipeOps -> class (0 = not named by any rule)
  int numPipeClasses_ = 1;
  std::vector<uint32_t> bucketStart_;  // per line, per size bucket: first segment that may hold it
  std::vector<Segment> segments_;
  std::vector<Candidates> candidates_;
  size_t ruleCount_ = 0;
};

}  // namespace dynamiccl::policy
