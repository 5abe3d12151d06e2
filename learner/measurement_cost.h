// What profiling one call costs the job: a share of that call's latency, by NCCL release and message
// size. NCCL 2.31 made its KernelCh events costly (kernel-phase writes and a system fence), so the
// price decides how much a job may measure. Published figures by default, each source named in
// docs/MEASUREMENT_COST.md; a calibration measured on the user's cluster replaces them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"

namespace dynamiccl::learner {

struct MeasurementCostPoint {
  uint64_t bytes = 0;
  double share = 0;  // profiled time / unprofiled time - 1, at this size
};

class MeasurementCost {
 public:
  // The published figures for an NCCL release (major * 10000 + minor * 100 + patch; 0: unknown, priced
  // as the dearest release known).
  static MeasurementCost published(int ncclVersionCode);
  // A calibration file (JSON: {"source": "...", "nccl_version": "2.31.2", "points": [{"bytes": B, "share": S}, ...]}).
  static Expected<MeasurementCost> fromJson(std::string_view text);
  // From a profiler-off and a profiler-on run of the same sizes: per size, on/off - 1 (never below 0).
  static Expected<MeasurementCost> fromRuns(const std::vector<std::pair<uint64_t, double>>& off_us,
                                            const std::vector<std::pair<uint64_t, double>>& on_us, std::string source);
  std::string toJson() const;

  // The share at any size: log-linear between points; below the first point the first share (the
  // fixed cost of the fence dominates small calls); beyond the last, that share shrinks as 1/bytes (a
  // fixed cost amortised over a longer call).
  double share(uint64_t bytes) const;
  const std::string& source() const { return source_; }
  const std::vector<MeasurementCostPoint>& points() const { return points_; }

 private:
  std::string source_;
  std::string ncclVersion_;
  std::vector<MeasurementCostPoint> points_;  // ascending bytes, at least one
};

}  // namespace dynamiccl::learner
