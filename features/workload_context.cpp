// Parsing DYNAMICCL_WORKLOAD.
#include "features/workload_context.h"

#include "features/key_values.h"

namespace dynamiccl {

Expected<WorkloadContext> parseWorkloadContext(std::string_view text) {
  auto items = parseKeyValues(text, {"intensity", "batch"});
  if (!items) return makeError(items.error());
  WorkloadContext wl;
  for (const KeyValue& kv : *items) {
    if (kv.key == "intensity") {
      auto x = realField(kv, 0, 1e12, /*loExcluded=*/true);
      if (!x) return makeError(x.error());
      wl.intensity = *x;
    } else {
      auto b = integerField(kv, 1, 1'000'000'000);
      if (!b) return makeError(b.error());
      wl.batch = static_cast<int>(*b);
    }
  }
  return wl;
}

}  // namespace dynamiccl
