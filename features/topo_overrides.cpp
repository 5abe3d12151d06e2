// DYNAMICCL_TOPO_* environment overrides: the operator's word beats every probe.
#include <cmath>
#include <string>

#include "features/topology_fingerprint.h"

namespace dynamiccl {
namespace {

template <typename T>
void readPositive(const EnvLookup& getenvFn, const char* name, std::optional<T>& out, std::vector<std::string>& ignored,
                  bool zeroAllowed = false) {
  const char* v = getenvFn(name);
  if (!v || !*v) return;
  try {
    size_t used = 0;
    const double x = std::stod(v, &used);
    const bool integral = std::is_integral_v<T> ? std::floor(x) == x : true;
    // Upper bound keeps the cast defined and the value physical (no link or NIC near 1e6 GB/s).
    if (used == std::string(v).size() && std::isfinite(x) && (x > 0 || (zeroAllowed && x == 0)) && x <= 1e6 && integral) {
      out = static_cast<T>(x == 0 ? 0.0 : x);  // "-0" reads as 0
      return;
    }
  } catch (...) {
  }
  ignored.push_back(std::string(name) + "=" + v);
}

}  // namespace

TopoOverrides readTopoOverrides(const EnvLookup& getenvFn) {
  TopoOverrides o;
  readPositive(getenvFn, "DYNAMICCL_TOPO_GPU_CC", o.computeCap, o.ignored);
  readPositive(getenvFn, "DYNAMICCL_TOPO_NVLINK_GBPS", o.nvlinkBw_GBps, o.ignored, /*zeroAllowed=*/true);  // 0: PCIe only
  readPositive(getenvFn, "DYNAMICCL_TOPO_NICS", o.nics, o.ignored);
  readPositive(getenvFn, "DYNAMICCL_TOPO_NIC_GBPS", o.nicSpeed_GBps, o.ignored);
  readPositive(getenvFn, "DYNAMICCL_TOPO_RANKS_PER_NODE", o.ranksPerNode, o.ignored);
  return o;
}

}  // namespace dynamiccl
