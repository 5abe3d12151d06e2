// DYNAMICCL_TOPO: the operator's word on the hardware, which beats every probe.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "features/key_values.h"
#include "features/topology_fingerprint.h"

namespace dynamiccl {

Expected<TopoOverrides> parseTopoOverrides(std::string_view text) {
  auto items = parseKeyValues(text, {"gpu_cc", "nvlink_GBps", "nics_per_node", "nic_GBps", "ranks_per_node"});
  if (!items) return makeError(items.error());
  TopoOverrides o;
  // Upper bounds keep the casts defined and the values physical (no link or NIC near 1e6 GB/s).
  for (const KeyValue& kv : *items) {
    if (kv.key == "nvlink_GBps" || kv.key == "nic_GBps") {
      const bool nvlink = kv.key == "nvlink_GBps";
      auto x = realField(kv, 0, 1e6, /*loExcluded=*/!nvlink);  // NVLink 0: PCIe only
      if (!x) return makeError(x.error());
      (nvlink ? o.nvlinkBw_GBps : o.nicSpeed_GBps) = *x;
    } else {
      auto n = integerField(kv, 1, 1'000'000);
      if (!n) return makeError(n.error());
      (kv.key == "gpu_cc" ? o.computeCap : kv.key == "nics_per_node" ? o.nics : o.ranksPerNode) = static_cast<int>(*n);
    }
  }
  return o;
}

std::string topoOverridesText(const TopoOverrides& o) {
  std::string out;
  auto put = [&](const char* key, const auto& v) {
    if (!v) return;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s=%.17g", out.empty() ? "" : ",", key, static_cast<double>(*v));
    out += buf;
  };
  put("gpu_cc", o.computeCap);
  put("nvlink_GBps", o.nvlinkBw_GBps);
  put("nics_per_node", o.nics);
  put("nic_GBps", o.nicSpeed_GBps);
  put("ranks_per_node", o.ranksPerNode);
  return out;
}

Expected<TopoOverrides> environmentTopoOverrides() {
  const char* v = std::getenv(kTopoVariable);
  if (!v || !*v) return TopoOverrides{};
  auto o = parseTopoOverrides(v);
  if (!o) return makeError(std::string(kTopoVariable).append(" ignored: ").append(o.error()));
  return o;
}

}  // namespace dynamiccl
