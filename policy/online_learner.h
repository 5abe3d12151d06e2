// The online learner: per (collective, size bucket) a bandit over (algo, proto) arms on
// log-latency, with the static profile's choice as the incumbent prior. Pure and deterministic:
// the same observations in the same order build the same table. Runs on the leader only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "features/features.h"
#include "policy/decision_table.h"
#include "policy/online_table.h"

namespace dynamiccl::policy {

struct OnlineConfig {
  uint64_t epochCalls = 1000;      // DYNAMICCL_EPOCH_CALLS: calls per table version
  double exploreTimeShare = 0.01;  // DYNAMICCL_EXPLORE_BUDGET: expected extra time from exploring
  double exploreCallShare = 0.05;  // at most this share of a key's calls explore
  double retestEvery = 1000;       // a clearly worse arm is re-measured about once per this many calls
  int minSamples = 6;              // before an arm's mean is trusted
  double halfLifeCalls = 1000;     // a key's old measurements count half after this many of its calls
  double noiseFloor = 0.02;        // log-latency sigma assumed at least (run-to-run noise)
  double guardSigmas = 3;          // "worse beyond noise": this many standard errors, 1% at least
  // Prior for arms not yet measured: NCCL's modelled time relative to the incumbent's, times this
  // allowance for the model's error; without a model, an unknown arm is assumed this much slower.
  double modelErrorFactor = 1.5;
  double unknownRatio = 2.0;
  double maxModelledRatio = 2.0;   // untried arms the model puts beyond this x the incumbent: not explored
};

// Static candidates of a key: the profile's answer at the bucket's smallest size (the prior).
using PriorFn = std::function<Candidates(int coll, int bucket)>;

class OnlineLearner {
 public:
  OnlineLearner(OnlineConfig config, PriorFn prior);

  // What NCCL would have run for the key when left alone (the guard's reference).
  void setNcclDefault(int coll, int bucket, Algo algo, Proto proto);
  // NCCL's cost table for the key (kNumAlgos x kNumProtos, us; < 0 = IGNORE): the prior for what an
  // untried arm costs. IGNOREd arms are never explored (NCCL would not run them).
  void setModelledCost(int coll, int bucket, const float* costTable);
  // One measured call: what actually ran and how long it took.
  void observe(int coll, uint64_t nBytes, Algo algo, Proto proto, double latency_us);
  // The next version: exploit choices and exploration rates from everything observed so far.
  std::unique_ptr<OnlineTable> build(uint64_t version);

  struct Counters {
    uint64_t observations = 0, switches = 0, guardTrips = 0;
  };
  Counters counters() const { return counters_; }
  const OnlineConfig& config() const { return config_; }

 private:
  static constexpr int kArmSlots = kNumAlgos * kNumProtos;
  struct ArmStats {
    double w = 0, s = 0, ss = 0;  // discounted weight, sum and sum of squares of log-latency
    uint64_t n = 0;               // raw count
    uint64_t lastCall = 0;        // key call count at the last decay
  };
  struct KeyState {
    bool active = false;
    uint64_t calls = 0;
    int incumbent = -1;     // arm slot exploited; -1: the prior
    int ncclDefault = -1;   // arm slot NCCL picks alone; -1 unknown
    bool modelled = false;  // modelled_us holds NCCL's cost table
    double bestScale = 0;   // lowest measured/modelled time of a trusted arm seen so far (0: none)
    std::array<float, kArmSlots> modelled_us{};
    std::array<ArmStats, kArmSlots> arms{};
  };
  void decay(KeyState& k, ArmStats& a) const;
  std::vector<int> armSlots(int coll, int bucket, const KeyState& k) const;
  // Expected time of an untried arm relative to the incumbent; nullopt: not worth exploring.
  // incumbentMean: the incumbent's measured mean log-latency when trusted.
  std::optional<double> untriedRatio(const KeyState& k, int slot, std::optional<double> incumbentMean) const;

  OnlineConfig config_;
  PriorFn prior_;
  double decayPerCall_;
  std::vector<KeyState> keys_;
  Counters counters_;
};

}  // namespace dynamiccl::policy
