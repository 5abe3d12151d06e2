#include "learned/learned_arm_model.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "learned/policy_rules.h"

namespace dynamiccl::learned {
namespace {

constexpr int kBuckets = kPolicyMaxBucket - kPolicyMinBucket + 1;
constexpr int slotOf(Algo a, Proto p) { return static_cast<int>(a) * kNumProtos + static_cast<int>(p); }

}  // namespace

LearnedArmModel::LearnedArmModel(std::shared_ptr<const PolicyNetwork> net, const TopologyFingerprint& fp,
                                 ArmModelOptions options)
    : net_(std::move(net)), fp_(fp), options_(options) {
  width_ = net_->embeddingSize();
  targetMean_ = net_->weights().targetMean;
  targetStd_ = net_->weights().targetStd > 0 ? net_->weights().targetStd : 1.0;
  // The arms: every (algo, proto) the policy scores here, with NCCL's own channel count.
  configOf_.assign(static_cast<size_t>(kNumCollectives) * kSlots, -1);
  for (int c = 0; c < kNumCollectives; ++c)
    for (const Decision& d : policyConfigurations(static_cast<Collective>(c), fp_)) {
      if (d.nChannels != 0) continue;
      configOf_[static_cast<size_t>(c) * kSlots + slotOf(d.algo, d.proto)] =
          static_cast<int>(configRows_.size() / kConfigFeatures);
      configRows_.resize(configRows_.size() + kConfigFeatures);
      encodeConfig(d.algo, d.proto, 0,
                   std::span<float, kConfigFeatures>(configRows_.data() + configRows_.size() - kConfigFeatures,
                                                     kConfigFeatures));
    }
  const int keys = kNumCollectives * kBuckets, keyWidth = net_->keyInputs();
  keyRows_.resize(static_cast<size_t>(keys) * keyWidth);
  float calm[kTimingWindowLength] = {};
  std::vector<float> calmState(net_->gruHidden());
  net_->encodeWindow(calm, calmState.data());
  for (int key = 0; key < keys; ++key) {
    float* row = keyRows_.data() + static_cast<size_t>(key) * keyWidth;
    const Collective coll = static_cast<Collective>(key / kBuckets);
    encodeContext(fp_, coll, policyProbeBytes(kPolicyMinBucket + key % kBuckets), options_.workload,
                  std::span<float, kContextFeatures>(row, kContextFeatures));
    std::copy(calmState.begin(), calmState.end(), row + kContextFeatures);
  }
  embeddings_.assign(static_cast<size_t>(keys) * kSlots * width_, 0.0f);
  std::vector<int> all(keys);
  for (int k = 0; k < keys; ++k) all[k] = k;
  embedKeys(all, nullptr);

  // The prior: the trained output layer. Its spread: the trained covariance where the weights carry
  // one (already scaled to the error on held-out machines, so the isotropic part only keeps it
  // invertible); else isotropic, such that an arm-vs-arm difference at a key is off by about
  // priorErrorLog (the network's measured error on unseen machines), on average.
  std::vector<float> mean(net_->outputWeights().begin(), net_->outputWeights().end());
  mean.push_back(net_->outputBias());
  double sum = 0;
  int pairs = 0;
  for (int key = 0; key < keys; ++key)
    for (int a = 0; a < kSlots; ++a)
      for (int b = a + 1; b < kSlots; ++b) {
        const float *x = embedding(key, a), *y = embedding(key, b);
        if (!x || !y) continue;
        for (int i = 0; i < width_; ++i) sum += (x[i] - y[i]) * static_cast<double>(x[i] - y[i]);
        ++pairs;
      }
  const double spread = pairs && sum > 0 ? sum / pairs : 1.0;
  const double errorStd = options_.priorErrorLog / targetStd_;
  const double noiseStd = options_.callNoiseLog / targetStd_;
  const bool trained = !net_->weights().lastLayerCovariance.empty();
  posterior_ = std::make_unique<LastLayerPosterior>(mean, net_->weights().lastLayerCovariance,
                                                    (trained ? 0.01 : 1.0) * errorStd * errorStd / spread,
                                                    noiseStd * noiseStd);
  posterior_->solve();
}

LearnedArmModel::~LearnedArmModel() = default;

int LearnedArmModel::keyIndex(int coll, int bucket) const {
  if (coll < 0 || coll >= kNumCollectives) return -1;
  return coll * kBuckets + std::clamp(bucket, kPolicyMinBucket, kPolicyMaxBucket) - kPolicyMinBucket;
}

const float* LearnedArmModel::embedding(int key, int slot) const {
  if (key < 0 || slot < 0 || slot >= kSlots || configOf_[static_cast<size_t>(key / kBuckets) * kSlots + slot] < 0)
    return nullptr;
  return embeddings_.data() + (static_cast<size_t>(key) * kSlots + slot) * width_;
}

void LearnedArmModel::embedKeys(const std::vector<int>& keys, const TimingWindows* windows) {
  const int keyWidth = net_->keyInputs();
  std::vector<PairIndex> pairs;
  std::vector<size_t> at;  // where each pair's embedding goes
  for (int key : keys) {
    const int coll = key / kBuckets;
    if (windows) {
      const RatioRing& ring =
          windows->at(static_cast<Collective>(coll), policyProbeBytes(kPolicyMinBucket + key % kBuckets));
      float window[kTimingWindowLength];
      ring.snapshot(window);
      net_->encodeWindow(window, keyRows_.data() + static_cast<size_t>(key) * keyWidth + kContextFeatures);
    }
    for (int s = 0; s < kSlots; ++s)
      if (const int cfg = configOf_[static_cast<size_t>(coll) * kSlots + s]; cfg >= 0) {
        pairs.push_back(PairIndex{key, cfg});
        at.push_back((static_cast<size_t>(key) * kSlots + s) * width_);
      }
  }
  if (pairs.empty()) return;
  std::vector<float> out(pairs.size() * width_);
  net_->embedPairs(keyRows_.data(), static_cast<int>(keyRows_.size() / keyWidth), configRows_.data(),
                   static_cast<int>(configRows_.size() / kConfigFeatures), pairs, out.data());
  for (size_t i = 0; i < pairs.size(); ++i)
    std::copy(out.begin() + i * width_, out.begin() + (i + 1) * width_, embeddings_.begin() + at[i]);
}

void LearnedArmModel::refit(const std::vector<MeasuredArm>& measured, const TimingWindows& windows) {
  // Keys with recent timings are embedded with them (the GRU reads the window).
  std::vector<int> windowed;
  const int keys = kNumCollectives * kBuckets;
  for (int key = 0; key < keys; ++key)
    if (windows.at(static_cast<Collective>(key / kBuckets), policyProbeBytes(kPolicyMinBucket + key % kBuckets))
            .count() > 0)
      windowed.push_back(key);
  embedKeys(windowed, &windows);
  posterior_->reset();
  for (const MeasuredArm& m : measured) {
    const float* phi = embedding(keyIndex(m.coll, m.bucket), slotOf(m.algo, m.proto));
    if (!phi || !(m.weight > 0) || !std::isfinite(m.meanLog)) continue;
    posterior_->add(std::span<const float>(phi, width_), (m.meanLog - targetMean_) / targetStd_,
                    std::min(m.weight, options_.maxWeightPerArm));
  }
  if (!posterior_->solve()) {  // singular: start from the prior again
    posterior_->reset();
    posterior_->solve();
  }
}

std::optional<ArmBelief> LearnedArmModel::belief(int coll, int bucket, Algo algo, Proto proto) const {
  if (algo == Algo::Default || proto == Proto::Default) return std::nullopt;
  const float* phi = embedding(keyIndex(coll, bucket), slotOf(algo, proto));
  if (!phi) return std::nullopt;
  const std::span<const float> x(phi, width_);
  return ArmBelief{targetMean_ + targetStd_ * posterior_->mean(x),
                   targetStd_ * std::sqrt(std::max(0.0, posterior_->variance(x)))};
}

std::optional<ArmBelief> LearnedArmModel::difference(int coll, int bucket, Algo a, Proto pa, Algo b, Proto pb) const {
  if (a == Algo::Default || pa == Proto::Default || b == Algo::Default || pb == Proto::Default) return std::nullopt;
  const int key = keyIndex(coll, bucket);
  const float *x = embedding(key, slotOf(a, pa)), *y = embedding(key, slotOf(b, pb));
  if (!x || !y) return std::nullopt;
  const std::span<const float> sx(x, width_), sy(y, width_);
  return ArmBelief{targetStd_ * posterior_->differenceMean(sx, sy),
                   targetStd_ * std::sqrt(std::max(0.0, posterior_->differenceVariance(sx, sy)))};
}

}  // namespace dynamiccl::learned
