// Resolving --preset / --probe-host / fact flags into a profile's declared hardware.
#include "offline/cli/cluster_facts.h"

#include <CLI/CLI.hpp>

#include "policy/policy.h"
#include "offline/platforms/platforms.h"

namespace dynamiccl::cli {
ProbedFacts probeThisHost() {
  const Expected<TopoOverrides> overrides = environmentTopoOverrides();
  const HostSources host = probeHostSources("/sys", "libnvidia-ml.so.1", overrides.ok() ? *overrides : TopoOverrides{});
  const TopologyFingerprint fp = buildFingerprint(CommShape{}, host);  // the probe, then DYNAMICCL_TOPO
  const bool amd = host.kfd && !host.overrides.computeCap;
  const bool gpuKnown = (host.nvml && host.nvml->computeCap > 0) || amd;  // then NVLink (XGMI) 0 means "none"
  ProbedFacts p;
  if (fp.computeCap > 0) p.gpuCc = fp.computeCap;
  if (amd) p.gpuArch = host.kfd->arch;
  if (gpuKnown || host.overrides.nvlinkBw_GBps) p.nvlinkGBps = fp.nvlinkBwPerGpu_GBps;
  if (fp.nicsPerNode > 0) p.nics = fp.nicsPerNode;
  if (fp.nicsPerNode > 0 || host.overrides.nicSpeed_GBps) p.nicGBps = fp.nicSpeed_GBps;
  if (!overrides.ok()) p.ignored = overrides.error();
  p.gpuSource = host.overrides.computeCap ? "DYNAMICCL_TOPO gpu_cc"
                : amd ? "KFD sysfs: " + std::to_string(host.kfd->count) + "x AMD " + host.kfd->arch + ", " +
                            std::to_string(host.kfd->xgmiLinks) + " XGMI links from GPU 0"
                : gpuKnown ? "NVML" : "unknown (no NVML or KFD answered)";
  p.nicSource = host.overrides.nics ? "DYNAMICCL_TOPO nics_per_node" : fp.nicsPerNode > 0 ? "sysfs (/sys/class/infiniband, net)"
                                                                                 : "unknown (no RDMA NIC found)";
  return p;
}


void addClusterFactsOptions(CLI::App* cmd, ClusterFactsOptions& o) {
  const std::string group = "Cluster the profile is for (its \"fingerprint\"; multi-node learned rules need it)";
  auto* preset = cmd->add_option("--preset", o.preset, "sim preset name or topology JSON of the cluster")->group(group);
  cmd->add_option("--fingerprint", o.fingerprintFile,
                  "the measured machine's fingerprint file (`dynamiccl probe -o FILE` run there)")
      ->group(group)
      ->excludes(preset);
  cmd->add_flag("--probe-host", o.probeHost, "probe this machine (sysfs NICs, NVML, DYNAMICCL_TOPO)")
      ->group(group)
      ->excludes(preset);
  cmd->add_option("--gpu-cc", o.gpuCc, "GPU compute capability x 10 (80, 90, 100)")->group(group);
  cmd->add_option("--nvlink-gbps", o.nvlinkGBps, "NVLink GB/s per GPU (0: none)")->group(group);
  cmd->add_option("--nics", o.nics, "NICs per node")->group(group);
  cmd->add_option("--nic-gbps", o.nicGBps, "GB/s per NIC (400 Gb/s = 50)")->group(group);
}

Expected<std::optional<ClusterHardware>> resolveClusterFacts(const ClusterFactsOptions& o) {
  if (!o.any()) return std::optional<ClusterHardware>{};
  struct {
    std::optional<int> gpuCc, nics;
    std::optional<double> nvlinkGBps, nicGBps;
  } f;
  std::string source = "flags";
  std::string gpuArch;
  if (!o.preset.empty()) {
    auto topo = sim::loadTopology(o.preset);
    if (!topo) return makeError("--preset " + o.preset + ": " + topo.error());
    const ClusterHardware hw = model::clusterHardwareOf(*topo);
    f = {hw.computeCap, hw.nicsPerNode, hw.nvlinkBwPerGpu_GBps, hw.nicSpeed_GBps};
    source = hw.source;
  } else if (!o.fingerprintFile.empty()) {
    auto text = readRegularFile(o.fingerprintFile, 1 << 16);
    if (!text) return makeError("--fingerprint " + o.fingerprintFile + ": " + text.error());
    auto hw = policy::parseClusterHardwareJson(*text);
    if (!hw) return makeError("--fingerprint " + o.fingerprintFile + ": " + hw.error());
    f = {hw->computeCap, hw->nicsPerNode, hw->nvlinkBwPerGpu_GBps, hw->nicSpeed_GBps};
    gpuArch = hw->gpuArch;
    source = "fingerprint file " + o.fingerprintFile;
  } else if (o.probeHost) {
    const ProbedFacts p = probeThisHost();
    f = {p.gpuCc, p.nics, p.nvlinkGBps, p.nicGBps};
    if (!p.gpuArch.empty() && !f.gpuCc) f.gpuCc = 0, gpuArch = p.gpuArch;  // AMD: no compute capability
    source = "probe of this host";
  }
  if (o.gpuCc) f.gpuCc = o.gpuCc;
  if (o.nics) f.nics = o.nics;
  if (o.nvlinkGBps) f.nvlinkGBps = o.nvlinkGBps;
  if (o.nicGBps) f.nicGBps = o.nicGBps;
  if (source != "flags" && (o.gpuCc || o.nics || o.nvlinkGBps || o.nicGBps)) source += " and flags";
  std::string missing;
  if (!f.gpuCc) missing += " --gpu-cc";
  if (!f.nvlinkGBps) missing += " --nvlink-gbps";
  if (!f.nics) missing += " --nics";
  if (!f.nicGBps) missing += " --nic-gbps";
  if (!missing.empty()) return makeError("cluster facts unknown (" + source + "); give" + missing);
  if (o.gpuCc) gpuArch.clear();  // --gpu-cc names an NVIDIA GPU
  ClusterHardware hw{*f.gpuCc, *f.nvlinkGBps, *f.nics, *f.nicGBps, source, gpuArch};
  if (auto s = policy::validateClusterHardware(hw); !s)
    return makeError("cluster facts (" + source + "): " + s.error());
  return std::optional<ClusterHardware>(hw);
}

}  // namespace dynamiccl::cli
