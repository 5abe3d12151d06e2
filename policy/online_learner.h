// The online learner: per (collective, size bucket) a bandit over (algo, proto) arms on
// log-latency, with the static profile's choice as the incumbent prior. Pure and deterministic:
// the same observations in the same order build the same table. Runs on the leader only.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
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
};

// Static candidates of a key: the profile's answer at the bucket's smallest size (the prior).
using PriorFn = std::function<Candidates(int coll, int bucket)>;

class OnlineLearner {
 public:
  OnlineLearner(OnlineConfig config, PriorFn prior);

  // What NCCL would have run for the key when left alone (the guard's reference).
  void setNcclDefault(int coll, int bucket, Algo algo, Proto proto);
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
    std::array<ArmStats, kArmSlots> arms{};
  };
  void decay(KeyState& k, ArmStats& a) const;
  std::vector<int> armSlots(int coll, int bucket, const KeyState& k) const;

  OnlineConfig config_;
  PriorFn prior_;
  double decayPerCall_;
  std::vector<KeyState> keys_;
  Counters counters_;
};

}  // namespace dynamiccl::policy
