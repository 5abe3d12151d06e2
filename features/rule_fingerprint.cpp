// Choosing the learned rules' fingerprint from sources every rank shares.
#include "features/rule_fingerprint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "features/vocabulary.h"

namespace dynamiccl {
namespace {

bool sameRate(double a, double b) { return std::fabs(a - b) <= 0.02 * std::max(std::fabs(a), std::fabs(b)); }

std::string fact(const char* name, double probed, double declared) {
  char text[96];
  std::snprintf(text, sizeof text, "%s %g vs %g", name, probed, declared);
  return text;
}

// "nics_per_node 4 vs 8, ..." for each fact this host's probe knows and the declaration contradicts.
std::string disagreement(const HostSources& host, const ClusterHardware& d) {
  std::vector<std::string> differ;
  if (host.nvml && host.nvml->computeCap > 0 && host.nvml->computeCap != d.computeCap)
    differ.push_back(fact("gpu_cc", host.nvml->computeCap, d.computeCap));
  if (host.nvml && host.nvml->computeCap > 0 && !sameRate(host.nvml->nvlinkBwPerGpu_GBps, d.nvlinkBwPerGpu_GBps))
    differ.push_back(fact("nvlink_GBps", host.nvml->nvlinkBwPerGpu_GBps, d.nvlinkBwPerGpu_GBps));
  if (host.nics.count > 0 && host.nics.count != d.nicsPerNode)
    differ.push_back(fact("nics_per_node", host.nics.count, d.nicsPerNode));
  if (host.nics.count > 0 && !sameRate(host.nics.speed_GBps, d.nicSpeed_GBps))
    differ.push_back(fact("nic_GBps", host.nics.speed_GBps, d.nicSpeed_GBps));
  if (differ.empty()) return "";
  std::string text = "this host's probe differs from the profile's \"fingerprint\" (probed vs declared: ";
  for (size_t i = 0; i < differ.size(); ++i) text += (i ? ", " : "") + differ[i];
  return text + "); learned rules use the declared facts, as every rank does";
}

std::string undeclaredMessage(const TopoOverrides& o) {
  std::string missing;
  auto need = [&](bool have, const char* name) {
    if (!have) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  need(o.computeCap.has_value(), "gpu_cc");
  need(o.nvlinkBw_GBps.has_value(), "nvlink_GBps");
  need(o.nics.has_value(), "nics_per_node");
  need(o.nicSpeed_GBps.has_value(), "nic_GBps");
  const bool someSet = o.computeCap || o.nvlinkBw_GBps || o.nics || o.nicSpeed_GBps;
  return std::string(
             "learned rules off for multi-node communicators: the profile declares no \"fingerprint\" and a probe "
             "of this host may differ from other nodes' (ranks deciding differently hang the job); the profile's "
             "own rules and NCCL decide. Fix: declare the cluster in the profile, \"fingerprint\": {\"gpu_cc\": 90, "
             "\"nvlink_GBps\": 400, \"nics_per_node\": 8, \"nic_GBps\": 50} (dynamiccl export --preset NAME or "
             "--probe-host writes it), or set DYNAMICCL_TOPO=gpu_cc=90,nvlink_GBps=400,nics_per_node=8,nic_GBps=50 "
             "the same on every rank") +
         (someSet ? " (DYNAMICCL_TOPO lacks " + missing + ")" : "");
}

bool overridesComplete(const TopoOverrides& o) { return o.computeCap && o.nvlinkBw_GBps && o.nics && o.nicSpeed_GBps; }

}  // namespace

RuleFingerprint fingerprintForRules(const CommShape& shape, const std::optional<ClusterHardware>& declared,
                                    const HostSources& host) {
  RuleFingerprint out;
  const bool oneHost = shape.nNodes == 1;  // every rank probes this same host
  if (!oneHost && !declared && !overridesComplete(host.overrides)) {
    out.unavailable = undeclaredMessage(host.overrides);
    return out;
  }
  HostSources probe;  // without DYNAMICCL_TOPO: it goes last, over the declaration
  if (oneHost) {
    probe.nics = host.nics;
    probe.nvml = host.nvml;
  }
  TopologyFingerprint fp = buildFingerprint(shape, probe);
  if (declared) {
    applyClusterHardware(fp, *declared);
    out.probeDisagrees = disagreement(host, *declared);
  }
  applyTopoOverrides(fp, host.overrides);
  out.fingerprint = fp;
  return out;
}

}  // namespace dynamiccl
