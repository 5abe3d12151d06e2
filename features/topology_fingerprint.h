// The topology fingerprint: what kind of machine a communicator runs on, merged from NCCL's cost
// table, sysfs, NVML and the DYNAMICCL_TOPO overrides (cheapest first, later sources win). Learned
// rules choose their sources in features/rule_fingerprint.h (a host probe is not the same on every node).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/expected.h"

namespace dynamiccl {

struct CommShape;

// NICs seen in sysfs (InfiniBand ports first; Ethernet only when no InfiniBand port has a rate).
struct SysfsNics {
  int count = 0;
  double speed_GBps = 0.0;  // fastest port, GB/s (1e9 bytes/s)
  std::string source;       // "infiniband", "net" or "" when sysfs said nothing
};
SysfsNics readSysfsNics(const std::string& sysRoot = "/sys");

// What NVML (dlopen'ed at run time; absent on machines without the driver) says about GPU 0.
struct NvmlInfo {
  int gpuCount = 0;
  int computeCap = 0;               // 80, 90, 100, ...
  int activeNvlinks = 0;
  double nvlinkBwPerGpu_GBps = 0.0; // active links x per-link bandwidth of that generation
};
// Errors name why NVML is unusable (library missing, symbol missing, init failed).
Expected<NvmlInfo> readNvml(const char* library = "libnvidia-ml.so.1");

// What the kernel's KFD topology (sysfs) says about AMD GPUs: read where NVML answers nothing.
struct KfdGpus {
  int count = 0;
  std::string arch;                // "gfx942", "gfx950": AMD has no CUDA compute capability
  int xgmiLinks = 0;               // the first GPU's XGMI links to the others
  double xgmiBwPerGpu_GBps = 0.0;  // their max bandwidth, summed
};
std::optional<KfdGpus> readKfdGpus(const std::string& sysRoot = "/sys");

// DYNAMICCL_TOPO="gpu_cc=90,nvlink_GBps=400,nics_per_node=8,nic_GBps=50,ranks_per_node=8", any of
// them, keyed as a profile's "fingerprint" declares them: nvlink_GBps may be 0 (no NVLink), the others
// are > 0, the counts integers. The job's configuration, the same on every rank.
inline constexpr const char* kTopoVariable = "DYNAMICCL_TOPO";
struct TopoOverrides {
  std::optional<int> computeCap, nics, ranksPerNode;
  std::optional<double> nvlinkBw_GBps, nicSpeed_GBps;
  bool operator==(const TopoOverrides&) const = default;
};
// A bad text is refused whole: the error names the field.
Expected<TopoOverrides> parseTopoOverrides(std::string_view text);
// The text parseTopoOverrides reads back to `o` (what the tools set for the plugin they drive).
std::string topoOverridesText(const TopoOverrides& o);

// A cluster's hardware as a profile declares it (its "fingerprint" key): unlike a probe of the host,
// the same on every rank, so multi-node communicators may generate learned rules from it.
struct ClusterHardware {
  int computeCap = 0;                // 80, 90, 100, ...
  double nvlinkBwPerGpu_GBps = 0.0;  // 0: no NVLink
  int nicsPerNode = 0;
  double nicSpeed_GBps = 0.0;        // per NIC, GB/s (1e9 bytes/s)
  std::string source;                // informative: where the facts came from ("sim preset h800")
  std::string gpuArch;               // AMD ("gfx942", KFD): computeCap 0, AMD has no CUDA compute capability
  bool operator==(const ClusterHardware&) const = default;
};

struct TopologyFingerprint {
  int nRanks = 0;
  int nNodes = 0;
  int ranksPerNode = 0;
  int nvlDomainMin = 0, nvlDomainMax = 0;  // ranks per NVLink domain (v5+ init), 0 unknown
  int computeCap = 0;                      // GPU generation, 0 unknown
  double nvlinkBwPerGpu_GBps = 0.0;        // 0: unknown or no NVLink
  int nicsPerNode = 0;
  double nicSpeed_GBps = 0.0;

  // NVLink:NIC bandwidth per GPU (H800 ~14:1 where NCCL's constants assume ~7:1); 0 unknown.
  double nvlinkToNicRatio() const;
  std::string text() const;  // one line, stable order, stored with runs
  auto operator<=>(const TopologyFingerprint&) const = default;  // ordered: rules are cached per fingerprint
};

// What the host says, gathered once per process by localHostSources().
struct HostSources {
  SysfsNics nics;
  std::optional<NvmlInfo> nvml;
  std::optional<KfdGpus> kfd;  // AMD, read only where NVML answered nothing
  TopoOverrides overrides;
};
HostSources probeHostSources(const std::string& sysRoot, const char* nvmlLibrary, const TopoOverrides& overrides = {});
// Probes /sys and NVML on first use; no overrides.
const HostSources& localHostSources();
// This host's probe with the job's DYNAMICCL_TOPO over it: what rules are judged and verdicts keyed
// with. The plugin passes the overrides its settings read; a tool showing what the plugin does
// passes its environment's (environmentTopoOverrides: none where unset), the same rule.
HostSources localHostSources(const TopoOverrides& overrides);
Expected<TopoOverrides> environmentTopoOverrides();

// Merges the sources.
TopologyFingerprint buildFingerprint(const CommShape& shape, const HostSources& host);
// Overwrite the hardware facts with a profile's declaration / with the DYNAMICCL_TOPO values set.
void applyClusterHardware(TopologyFingerprint& fp, const ClusterHardware& declared);
void applyTopoOverrides(TopologyFingerprint& fp, const TopoOverrides& overrides);

}  // namespace dynamiccl
