// Environments a learning loop can be replayed against: each serves latencies for a configuration.
// MeasuredEnvironment resamples real measurements; SimulatedEnvironment draws from the simulator.
#pragma once

#include <optional>
#include <random>
#include <string>

#include "offline/measurements/measurements.h"
#include "offline/sim/simulator.h"

namespace dynamiccl::sim {

class Environment {
 public:
  virtual ~Environment() = default;
  // One observed latency of (coll, bytes, config); nullopt when the environment cannot say
  // (a configuration nobody measured). Algo/Proto Default means NCCL's own choice.
  virtual std::optional<double> latency_us(Collective coll, uint64_t bytes, const Config& c) = 0;
};

// Serves one dataset shape from its measured points. A measured mean is resampled with the
// spread the dataset shows between repeats of the same point (lognormal, sigma estimated from
// the repeats; 3% where a point has none). A configuration is served at its own channel count where the
// point's rows force counts (ReplayPoint::judgedAs), else at NCCL's own.
class MeasuredEnvironment : public Environment {
 public:
  MeasuredEnvironment(const measurements::ReplayData& data, std::string group, int nRanks, int nNodes, uint64_t seed,
                      double sigma = 0.03);
  std::optional<double> latency_us(Collective coll, uint64_t bytes, const Config& c) override;

 private:
  const measurements::ReplayData& data_;
  std::string group_;
  int nRanks_, nNodes_;
  std::mt19937_64 rng_;
  double sigma_;
};

class SimulatedEnvironment : public Environment {
 public:
  SimulatedEnvironment(Simulator sim, uint64_t seed) : sim_(std::move(sim)), noise_(seed) {}
  std::optional<double> latency_us(Collective coll, uint64_t bytes, const Config& c) override;

 private:
  Simulator sim_;
  NoiseSource noise_;
};

}  // namespace dynamiccl::sim
