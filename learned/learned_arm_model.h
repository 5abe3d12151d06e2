// The learned policy learning inside the job (neural-linear): the network's embedding of every
// (key, algo/proto with NCCL's channels) stays fixed, its output layer becomes a Gaussian posterior
// whose prior is the trained layer, refit from the job's measured arms at each table build. What it
// believes picks the verification candidates; the measurements decide what runs.
#pragma once

#include <memory>
#include <vector>

#include "features/features.h"
#include "learned/last_layer_posterior.h"
#include "learned/network_eval.h"
#include "learner/learner.h"

namespace dynamiccl::learned {
using namespace dynamiccl::policy;  // the rule table's vocabulary: Rule, Profile, Decision
using namespace dynamiccl::learner;  // the arm model interface it implements


struct ArmModelOptions {
  // The network's error in log-latency on machines it never saw (its profile's confidence margin):
  // the prior's spread of an arm-vs-arm difference where the weights carry no trained covariance.
  // Without a measured one, this default.
  double priorErrorLog = 0.5;
  // Spread of one measured call's log-latency around the linear model (noise and misfit).
  double callNoiseLog = 0.1;
  // A key-arm's measurements count as at most this many calls: the heavily exploited arm must not
  // bend the shared layer away from the keys and arms it knows little of.
  double maxWeightPerArm = 20;
  WorkloadContext workload;
};

class LearnedArmModel final : public ArmModel {
 public:
  LearnedArmModel(std::shared_ptr<const PolicyNetwork> net, const TopologyFingerprint& fp, ArmModelOptions options);
  ~LearnedArmModel() override;

  void refit(const std::vector<MeasuredArm>& measured, const TimingWindows& windows) override;
  std::optional<ArmBelief> belief(int coll, int bucket, Algo algo, Proto proto) const override;
  std::optional<ArmBelief> difference(int coll, int bucket, Algo a, Proto pa, Algo b, Proto pb) const override;

 private:
  static constexpr int kSlots = kNumAlgos * kNumProtos;
  int keyIndex(int coll, int bucket) const;
  const float* embedding(int key, int slot) const;  // nullptr: not scored
  void embedKeys(const std::vector<int>& keys, const TimingWindows* windows);

  std::shared_ptr<const PolicyNetwork> net_;
  TopologyFingerprint fp_;
  ArmModelOptions options_;
  int width_ = 0;                       // embedding size
  std::vector<float> keyRows_;          // per key: [context | GRU state]
  std::vector<float> configRows_;       // per scored (collective, slot)
  std::vector<int> configOf_;           // [coll * kSlots + slot] -> config row, -1: not scored
  std::vector<float> embeddings_;       // [key * kSlots + slot] * width_
  std::unique_ptr<LastLayerPosterior> posterior_;
  double targetMean_ = 0, targetStd_ = 1;
};

}  // namespace dynamiccl::learned
