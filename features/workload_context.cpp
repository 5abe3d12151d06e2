// Parsing DYNAMICCL_WORKLOAD.
#include "features/workload_context.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace dynamiccl {

Expected<WorkloadContext> parseWorkloadContext(std::string_view text) {
  WorkloadContext wl;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = text.find_first_of(",;", pos);
    const std::string_view item = text.substr(pos, end == std::string_view::npos ? text.size() - pos : end - pos);
    pos = end == std::string_view::npos ? text.size() + 1 : end + 1;
    if (item.find_first_not_of(' ') == std::string_view::npos) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return makeError("expected key=value, got \"" + std::string(item) + "\"");
    const std::string key(item.substr(0, eq)), value(item.substr(eq + 1));
    char* endp = nullptr;
    const double x = std::strtod(value.c_str(), &endp);
    if (value.empty() || *endp != '\0' || !std::isfinite(x) || x <= 0)
      return makeError(key + " must be a positive number");
    if (key == "intensity") wl.intensity = x;
    else if (key == "batch") {
      if (std::floor(x) != x || x > 1e9) return makeError("batch must be a positive integer");
      wl.batch = static_cast<int>(x);
    } else {
      return makeError("unknown key \"" + key + "\" (intensity, batch)");
    }
  }
  return wl;
}

}  // namespace dynamiccl
