// The cluster a profile is for, written as its "fingerprint" key (the hardware facts learned rules
// of multi-node communicators use): from a sim preset, a probe of this machine, or flags. Shared by
// `dynamiccl train`, `export` and the demo.
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
  bool probeHost = false;
  std::optional<int> gpuCc, nics;
  std::optional<double> nvlinkGBps, nicGBps;
  bool any() const { return !preset.empty() || probeHost || gpuCc || nics || nvlinkGBps || nicGBps; }
};

// --preset, --probe-host, --gpu-cc, --nvlink-gbps, --nics, --nic-gbps.
void addClusterFactsOptions(CLI::App* cmd, ClusterFactsOptions& o);

// nullopt when no option was given; an error naming what is missing or out of bounds otherwise.
// Flags override single facts of the preset or of the probe.
Expected<std::optional<ClusterHardware>> resolveClusterFacts(const ClusterFactsOptions& o);

}  // namespace dynamiccl::cli
