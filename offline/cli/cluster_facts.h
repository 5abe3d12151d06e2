// The cluster a profile is for, written as its "fingerprint" key (the hardware facts learned rules
// of multi-node communicators use): from a sim preset, a probe of this machine, or flags. Shared by
// `dynamiccl tune`, `train`, `export` and `profile`; `probe` prints the probe.
#pragma once

#include <optional>
#include <string>

#include "features/features.h"
#include "offline/model/model.h"

namespace CLI {
class App;
}

namespace dynamiccl::cli {

struct ClusterFactsOptions {
  std::string preset;  // sim preset name or topology JSON file
  std::string fingerprintFile;  // a "fingerprint" JSON file, as `dynamiccl probe -o` writes it on the machine
  bool probeHost = false;
  std::optional<int> gpuCc, nics;
  std::optional<double> nvlinkGBps, nicGBps;
  bool any() const {
    return !preset.empty() || !fingerprintFile.empty() || probeHost || gpuCc || nics || nvlinkGBps || nicGBps;
  }
};

// This machine as the plugin would probe it (sysfs NICs, NVML, then DYNAMICCL_TOPO); unknown facts
// stay unset, each known one says where it came from; a DYNAMICCL_TOPO the plugin would refuse is
// named in `ignored` and left out, as the plugin leaves it.
struct ProbedFacts {
  std::optional<int> gpuCc, nics;
  std::string gpuArch;  // AMD (KFD sysfs): there is no gpu_cc
  std::optional<double> nvlinkGBps, nicGBps;
  std::string gpuSource, nicSource;
  std::string ignored;
};
ProbedFacts probeThisHost();

// --preset, --fingerprint, --probe-host, --gpu-cc, --nvlink-gbps, --nics, --nic-gbps.
void addClusterFactsOptions(CLI::App* cmd, ClusterFactsOptions& o);

// nullopt when no option was given; an error naming what is missing or out of bounds otherwise.
// Flags override single facts of the preset or of the probe.
Expected<std::optional<ClusterHardware>> resolveClusterFacts(const ClusterFactsOptions& o);

}  // namespace dynamiccl::cli
