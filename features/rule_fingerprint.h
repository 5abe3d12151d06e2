// The fingerprint a communicator's learned rules are generated from, chosen so that every rank of
// the communicator computes the same one: a probe of this host is used only when every rank probes
// this host (single-node); across nodes only what the profile declares or DYNAMICCL_TOPO sets.
#pragma once

#include <optional>
#include <string>

#include "features/topology_fingerprint.h"

namespace dynamiccl {

struct RuleFingerprint {
  std::optional<TopologyFingerprint> fingerprint;  // nullopt: no source every rank shares
  std::string unavailable;     // when nullopt: why, and how to declare the cluster
  std::string probeDisagrees;  // the profile's declaration differs from this host's probe (not used)
};

// Sources, later ones win: the shape; this host's sysfs/NVML probe (single-node only); the profile's
// declared hardware; DYNAMICCL_TOPO (job configuration, assumed the same on every rank, like
// DYNAMICCL_PROFILE). Multi-node without a declaration needs the four hardware facts in DYNAMICCL_TOPO.
RuleFingerprint fingerprintForRules(const CommShape& shape, const std::optional<ClusterHardware>& declared,
                                    const HostSources& host);

}  // namespace dynamiccl
