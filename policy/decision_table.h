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

  // The hot path: no allocation, no lock, no system call; two array reads, then O(log segments) in a bucket.
  const Candidates& lookup(int coll, uint64_t nBytes, int numPipeOps, int regBuff) const {
    const int pipeClass = pipeClassOf_[static_cast<unsigned>(numPipeOps) < pipeClassOf_.size() ? numPipeOps : 0];
    const size_t line = (static_cast<size_t>(coll) * numPipeClasses_ + pipeClass) * 2 + (regBuff ? 1 : 0);
    // The segment holding nBytes lies in [first, last] of its bucket: usually one; binary search when
    // a profile cuts one bucket into many intervals.
    const int bucket = SizeBucket::of(nBytes);
    const BucketRange r = buckets_[line * SizeBucket::kCount + bucket];
    uint32_t at = r.first, n = r.last - r.first + 1;
    if (r.sub != kNoSubIndex) {  // a bucket cut into many intervals: its sub-range narrows the search first
      const uint64_t k = (nBytes >> (bucket - 1 - kSubBits)) & (kSubRanges - 1);
      at = subFirst_[r.sub + k];
      n = subFirst_[r.sub + k + 1] - at + 1;
    }
    const uint64_t* hi = segmentHi_.data();
    while (n > 1) {  // branch-free halving: sizes vary call to call, a branch would mispredict
      const uint32_t half = n / 2;
      at = hi[at + half - 1] < nBytes ? at + half : at;
      n -= half;
    }
    return candidates_[segmentCandidates_[at]];
  }

  bool empty() const { return ruleCount_ == 0; }
  size_t ruleCount() const { return ruleCount_; }        // rules that apply to this shape

 private:
  std::array<uint8_t, kMaxPipeOps + 1> pipeClassOf_{};  // numPipeOps -> class (0 = not named by any rule)
  int numPipeClasses_ = 1;
  static constexpr uint32_t kNoSubIndex = UINT32_MAX;
  static constexpr int kSubBits = 8, kSubRanges = 1 << kSubBits;
  static constexpr uint32_t kSubIndexFrom = 64;  // segments in a bucket before it gets a sub-index
  struct BucketRange {
    uint32_t first, last;           // segments overlapping the bucket
    uint32_t sub = kNoSubIndex;     // where its kSubRanges + 1 sub-range starts are in subFirst_
  };
  std::vector<BucketRange> buckets_;  // per line, per size bucket
  // Per size bucket of a line, the first and last of its segments (from firstSegment) it overlaps.
  void indexBuckets(size_t line, size_t firstSegment);
  // Buckets with many segments: the first segment reaching each of kSubRanges equal slices of the
  // bucket, then its last segment; a lookup searches one slice (10k rules in a bucket: 14 steps -> 6).
  std::vector<uint32_t> subFirst_;
  // Segments as two dense arrays: the search reads only the bounds (half the cache lines).
  std::vector<uint64_t> segmentHi_;           // inclusive upper bound of each size interval
  std::vector<uint32_t> segmentCandidates_;   // index into candidates_; 0 = no rule
  std::vector<Candidates> candidates_;
  size_t ruleCount_ = 0;
};

}  // namespace dynamiccl::policy
