// Training rows for the policy network: simulator rollouts (with congestion episodes) and logged
// observations from the SQLite store (with importance weights against the logging policy's bias).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "features/features.h"
#include "offline/train/sim_adapter.h"

namespace dynamiccl::train {

struct Sample {
  float inputs[kContextFeatures + kConfigFeatures];  // [context | config], the network's row
  float window[kTimingWindowLength];                 // log(observed / predicted), oldest first
  float logLatency_us;                               // target
  float weight = 1.0f;                               // importance weight (1 for full-information rows)
};

struct RolloutOptions {
  int keysPerSystem = 300;         // (collective, size, congestion) situations per machine
  double congestedFraction = 0.35; // situations inside a congestion episode
  uint64_t seed = 1;
};

// Every policy configuration at every sampled situation (the simulator gives full information).
std::vector<Sample> simulatorRollouts(const std::vector<SimSystem>& systems, const RolloutOptions& options);

// Importance weights 1 / p_logged(config | key), normalized to mean 1 per key and clipped to
// [1/clip, clip]: the logging policy (mostly NCCL's default) must not dominate the fit.
std::vector<float> importanceWeights(const std::vector<std::string>& keys, const std::vector<std::string>& configs,
                                     float clip = 10.0f);

struct StoreRows {
  std::vector<Sample> samples;
  size_t read = 0;     // measurements in the store
  size_t skipped = 0;  // unknown config/time, untunable collective, unknown hardware, symmetric-memory kernel
  size_t unknownHardware = 0;  // of skipped: no preset or platform matches the row's system
  size_t symmetric = 0;  // of skipped: symmetric-memory kernels (a variant NCCL picks, not an algo/proto choice)
};
// Observations of a store file, each with the fingerprint of the machine it was measured on (a
// preset machine by name, else the platform its system string names; rows of neither are skipped).
Expected<StoreRows> storeSamples(const std::string& dbPath);

}  // namespace dynamiccl::train
