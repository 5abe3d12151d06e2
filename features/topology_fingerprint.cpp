// Merging the fingerprint sources; later sources override earlier ones.
#include "features/topology_fingerprint.h"

#include <cstdio>
#include <cstdlib>

#include "features/vocabulary.h"

namespace dynamiccl {

double TopologyFingerprint::nvlinkToNicRatio() const {
  if (ranksPerNode <= 0 || nicsPerNode <= 0 || nicSpeed_GBps <= 0 || nvlinkBwPerGpu_GBps <= 0) return 0.0;
  return nvlinkBwPerGpu_GBps / (nicsPerNode * nicSpeed_GBps / ranksPerNode);
}

std::string TopologyFingerprint::text() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "ranks=%d nodes=%d ppn=%d nvl_domain=%d-%d cc=%d nvlink_GBps=%.0f nics=%dx%.1fGBps ratio=%.1f",
                nRanks, nNodes, ranksPerNode, nvlDomainMin, nvlDomainMax, computeCap, nvlinkBwPerGpu_GBps,
                nicsPerNode, nicSpeed_GBps, nvlinkToNicRatio());
  return buf;
}

HostSources probeHostSources(const std::string& sysRoot, const char* nvmlLibrary, const TopoOverrides& overrides) {
  HostSources h;
  h.nics = readSysfsNics(sysRoot);
  if (auto nvml = readNvml(nvmlLibrary)) h.nvml = *nvml;
  else h.kfd = readKfdGpus(sysRoot);
  h.overrides = overrides;
  return h;
}

const HostSources& localHostSources() {
  // Probed once per process: communicators are created by the hundred and the host does not change.
  static const HostSources sources =
      probeHostSources("/sys", "libnvidia-ml.so.1");
  return sources;
}

HostSources localHostSources(const TopoOverrides& overrides) {
  HostSources host = localHostSources();
  host.overrides = overrides;  // the operator's word beats every probe
  return host;
}

TopologyFingerprint buildFingerprint(const CommShape& shape, const HostSources& host) {
  TopologyFingerprint fp;
  fp.nRanks = shape.nRanks;
  fp.nNodes = shape.nNodes;
  fp.ranksPerNode = shape.nNodes > 0 ? shape.nRanks / shape.nNodes : 0;
  fp.nvlDomainMin = shape.minRanksPerNode;
  fp.nvlDomainMax = shape.maxRanksPerNode;
  if (host.nics.count) {
    fp.nicsPerNode = host.nics.count;
    fp.nicSpeed_GBps = host.nics.speed_GBps;
  }
  if (host.nvml) {
    fp.computeCap = host.nvml->computeCap;
    fp.nvlinkBwPerGpu_GBps = host.nvml->nvlinkBwPerGpu_GBps;
  } else if (host.kfd) {
    fp.nvlinkBwPerGpu_GBps = host.kfd->xgmiBwPerGpu_GBps;  // XGMI is AMD's scale-up fabric; no gpu_cc there
  }
  applyTopoOverrides(fp, host.overrides);
  return fp;
}

void applyClusterHardware(TopologyFingerprint& fp, const ClusterHardware& declared) {
  fp.computeCap = declared.computeCap;
  fp.nvlinkBwPerGpu_GBps = declared.nvlinkBwPerGpu_GBps;
  fp.nicsPerNode = declared.nicsPerNode;
  fp.nicSpeed_GBps = declared.nicSpeed_GBps;
}

void applyTopoOverrides(TopologyFingerprint& fp, const TopoOverrides& o) {
  if (o.computeCap) fp.computeCap = *o.computeCap;
  if (o.nvlinkBw_GBps) fp.nvlinkBwPerGpu_GBps = *o.nvlinkBw_GBps;
  if (o.nics) fp.nicsPerNode = *o.nics;
  if (o.nicSpeed_GBps) fp.nicSpeed_GBps = *o.nicSpeed_GBps;
  if (o.ranksPerNode) fp.ranksPerNode = *o.ranksPerNode;
}

}  // namespace dynamiccl
