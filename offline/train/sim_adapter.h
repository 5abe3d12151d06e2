// train/'s view of sim/: named machines (sim/ presets at fixed node counts), each with sim/'s
// calibrated Simulator as the ground truth and NCCL's model (model::NcclReference) as NCCL's default
// and cost table, plus the congestion knob rollouts need.
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/model/model.h"
#include "policy/policy.h"
#include "offline/sim/sim.h"

namespace dynamiccl::train {

// Named machines, "<platform>x<nodes>" ("dgx-h100x2"): every platform whose file has "train", at the
// node counts it names, in its "order" (offline/platforms/README.md). h800 is the 14:1 NVLink:NIC cluster.
std::vector<model::Topology> presetTopologies();
std::optional<model::Topology> findPreset(const std::string& name);
// Presets whose name starts with one of the prefixes (e.g. "h800" -> every H800 size).
std::vector<model::Topology> presetsMatching(const std::vector<std::string>& prefixes, bool keepMatching);

// The simulator parameters a platform's file names (offline/platforms/<name>.json "calibration": the
// group measured on that hardware, or the nearest one), defaults when it names none or is unknown.
struct CalibratedParams {
  sim::SimParams params;
  std::string source;  // "<dataset>: <group>" or "defaults (no calibration for <preset>)"
};
CalibratedParams calibratedParams(const std::string& simPreset);
// The sim/ preset a named machine comes from ("dgx-h100x2" -> "dgx-h100").
std::string simPresetOf(const model::Topology& topo);

// What the plugin's fingerprint would be on that hardware (NVML + sysfs agree with the topology).
TopologyFingerprint fingerprintOf(const model::Topology& topo);

// One machine: NCCL's model of it and what the calibrated simulator says really happens on it.
class SimSystem {
 public:
  static Expected<SimSystem> make(const model::Topology& topo);

  const model::Topology& topology() const { return topo_; }
  const TopologyFingerprint& fingerprint() const { return fp_; }
  const model::NcclReference& nccl() const { return *ref_; }
  const sim::Simulator& simulator() const { return sim_; }
  const std::string& calibration() const { return calibration_; }

  // What NCCL alone would run (algo, proto, its channels) and what its model predicts for a config.
  policy::Decision ncclDefault(Collective coll, uint64_t nBytes) const;
  double predicted_us(Collective coll, uint64_t nBytes, const policy::Decision& d) const;
  // Noise-free simulated latency; congestion >= 0 cuts the network's achievable bandwidth by
  // 1 + congestion and stretches its hops alike; nullopt when NCCL cannot run it (IGNORE/infeasible).
  std::optional<double> trueLatency_us(Collective coll, uint64_t nBytes, const policy::Decision& d,
                                       double congestion) const;
  // The simulator configuration NCCL runs for a decision (channels/chunk 0 resolved to NCCL's).
  sim::Config toSimConfig(Collective coll, uint64_t nBytes, const policy::Decision& d) const;

 private:
  SimSystem(model::Topology topo, sim::SimParams params) : topo_(topo), sim_(std::move(topo), params) {}
  model::Topology topo_;
  sim::Simulator sim_;
  std::shared_ptr<const model::NcclReference> ref_;
  TopologyFingerprint fp_;
  std::string calibration_;
};

// Multiplicative measurement noise (lognormal, sigma 3%), seeded by the caller.
double measurementNoise(std::mt19937_64& rng);

}  // namespace dynamiccl::train
