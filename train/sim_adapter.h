// The one file that stands in for sim/ (being built concurrently): preset machines and a ground
// truth latency that deviates from NCCL's model where real systems do (NVLink:NIC ratio, LL128
// over the network, channel count, congestion). Swap the body for sim/ once it exists.
#pragma once

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "features/features.h"
#include "model/model.h"
#include "policy/profile.h"

namespace dynamiccl::train {

// Named machines; nodes in the name ("dgx-h100x2"). h800 is the 14:1 NVLink:NIC cluster.
std::vector<model::Topology> presetTopologies();
std::optional<model::Topology> findPreset(const std::string& name);
// Presets whose name starts with one of the prefixes (e.g. "h800" -> every H800 size).
std::vector<model::Topology> presetsMatching(const std::vector<std::string>& prefixes, bool keepMatching);

// One machine: NCCL's model of it and what really happens on it.
class SimSystem {
 public:
  static Expected<SimSystem> make(const model::Topology& topo);

  const model::Topology& topology() const { return topo_; }
  const TopologyFingerprint& fingerprint() const { return fp_; }
  const model::NcclModel& nccl() const { return nccl_; }

  // What NCCL alone would run (algo, proto, its channels) and what its model predicts for a config.
  policy::Decision ncclDefault(Collective coll, uint64_t nBytes) const;
  double predicted_us(Collective coll, uint64_t nBytes, const policy::Decision& d) const;
  // Noise-free true latency; congestion >= 0 slows the network share; nullopt when NCCL cannot run it.
  std::optional<double> trueLatency_us(Collective coll, uint64_t nBytes, const policy::Decision& d,
                                       double congestion) const;

 private:
  model::Topology topo_;
  model::NcclModel nccl_;
  TopologyFingerprint fp_;
};

// Multiplicative measurement noise (lognormal, sigma 3%), seeded by the caller.
double measurementNoise(std::mt19937_64& rng);

}  // namespace dynamiccl::train
