// Optional workload context the application passes through DYNAMICCL_WORKLOAD="intensity=..,batch=..":
// model intensity (compute per communicated byte, C/D) and local batch size.
#pragma once

#include <compare>
#include <optional>
#include <string_view>

#include "features/expected.h"

namespace dynamiccl {

struct WorkloadContext {
  std::optional<double> intensity;  // > 0
  std::optional<int> batch;         // > 0
  bool empty() const { return !intensity && !batch; }
  auto operator<=>(const WorkloadContext&) const = default;  // ordered: rules are cached per workload
};

// "intensity=12.5,batch=32" (either key optional, ';' or ',' separated); unknown keys are errors.
Expected<WorkloadContext> parseWorkloadContext(std::string_view text);

}  // namespace dynamiccl
