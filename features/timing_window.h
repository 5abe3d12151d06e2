// Recent timings per key: a short ring of log(observed / predicted) latency ratios, the congestion
// and drift signal the learned policy's recurrent encoder reads. Fixed size: no allocation after
// construction, one writer (the observation worker).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "features/vocabulary.h"

namespace dynamiccl {

inline constexpr int kTimingWindowLength = 8;

// One key's ring of the most recent log ratios.
class RatioRing {
 public:
  void push(double observed_us, double predicted_us) {
    if (!(observed_us > 0) || !(predicted_us > 0)) return;  // unusable sample: keep the window as is
    values_[next_] = static_cast<float>(std::log(observed_us / predicted_us));
    next_ = (next_ + 1) % kTimingWindowLength;
    if (count_ < kTimingWindowLength) ++count_;
  }
  // Oldest first; missing (not yet seen) entries are 0 = "as predicted" at the front.
  void snapshot(float (&out)[kTimingWindowLength]) const {
    const int missing = kTimingWindowLength - count_;
    for (int i = 0; i < missing; ++i) out[i] = 0.0f;
    for (int i = 0; i < count_; ++i)
      out[missing + i] = values_[(next_ - count_ + i + kTimingWindowLength) % kTimingWindowLength];
  }
  int count() const { return count_; }

 private:
  std::array<float, kTimingWindowLength> values_{};
  int next_ = 0;
  int count_ = 0;
};

// Windows for every (collective, size bucket) key, allocated once.
class TimingWindows {
 public:
  TimingWindows() : rings_(static_cast<size_t>(kNumCollectives) * SizeBucket::kCount) {}
  RatioRing& at(Collective c, uint64_t nBytes) { return rings_[index(c, nBytes)]; }
  const RatioRing& at(Collective c, uint64_t nBytes) const { return rings_[index(c, nBytes)]; }

 private:
  static size_t index(Collective c, uint64_t nBytes) {
    return static_cast<size_t>(c) * SizeBucket::kCount + SizeBucket::of(nBytes);
  }
  std::vector<RatioRing> rings_;
};

}  // namespace dynamiccl
