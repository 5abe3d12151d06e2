// The learned policy's weights as stored under a profile's "policy" key: plain, versioned tensors
// (PyTorch names and row-major layouts) that the plugin evaluates with Eigen, never with LibTorch.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/features.h"

namespace dynamiccl::learned {

inline constexpr std::string_view kPolicyFormat = "dynamiccl-policy";
inline constexpr int kPolicyWeightsVersion = 1;
// Beyond these a finite value still overflows the forward pass or makes every key unconfident: a
// trained network's weights are O(1), its target is a log of microseconds, its covariance O(1).
inline constexpr float kMaxPolicyWeight = 1e4f;
inline constexpr float kMaxTargetMagnitude = 100.0f;
inline constexpr float kMaxCovarianceValue = 1e6f;
// The guard's default: the network's choice replaces NCCL's own only where the network predicts it
// at least 5% faster than NCCL's own choice (about twice the run-to-run noise of the measurements).

struct Tensor {
  std::vector<int> shape;
  std::vector<float> data;  // row-major
};

// GRU encoder of the timing window (input 1 per step) + MLP over [context | config | GRU state]
// that predicts the standardized log latency (us) of running a configuration.
struct PolicyWeights {
  int version = kPolicyWeightsVersion;
  int encodingVersion = kFeatureEncodingVersion;
  int contextFeatures = kContextFeatures;
  int configFeatures = kConfigFeatures;
  int windowLength = kTimingWindowLength;
  int gruHidden = 8;
  std::vector<int> mlpHidden = {64, 64};
  float targetMean = 0.0f;  // log latency = mean + std * network output
  float targetStd = 1.0f;
  // "guard_margin": in [0, 1); a choice applies only where predicted time < (1 - margin) x the
  // predicted time of NCCL's own choice for the call. Absent or null: no guard (off by default:
  // a self-judged guard measured worse on held-out presets, docs/LEARNED_POLICY.md).
  std::optional<float> guardMargin;
  // "last_layer_covariance": posterior covariance of the output layer [weights..., bias] fitted on
  // the training embeddings (Bayesian last layer, standardized units) and scaled so that its standard
  // deviations match the errors measured on held-out machines; (embedding + 1)^2 floats row-major.
  // Empty: none (no per-key confidence; the in-job prior then assumes an isotropic spread).
  std::vector<float> lastLayerCovariance;
  // "key_error_sigmas": a rule needs a predicted gain (log) above this many of the key's standard
  // deviations (the held-out error quantile the covariance was scaled to, in standard deviations).
  float keyErrorSigmas = 1.645f;
  std::string description;
  // gru.weight_ih [3H,1], gru.weight_hh [3H,H], gru.bias_ih [3H], gru.bias_hh [3H] (gates r, z, n);
  // mlp.<i>.weight [out,in], mlp.<i>.bias [out] for each hidden layer, then the output layer (out 1).
  std::map<std::string, Tensor> tensors;

  int mlpInputs() const { return contextFeatures + configFeatures + gruHidden; }
  int embeddingSize() const { return mlpHidden.empty() ? 0 : mlpHidden.back(); }
};

// Checks every expected tensor's presence, shape and finiteness, and that the encoding matches
// this build's features; the message names the first problem.
Status validatePolicyWeights(const PolicyWeights& w);
// How the "policy" value writes its float arrays (tensors' "data", "last_layer_covariance"): as JSON
// numbers, or as one string each, base64 (RFC 4648) of the little-endian IEEE-754 float32 values.
// Base64 takes 5.3 bytes a value where numbers take about 20, and reads several times faster (a
// 3 x 1024 network: docs/LEARNED_POLICY.md); the reader takes either, the same bits either way.
enum class WeightEncoding { Numbers, Base64 };

// Parses the JSON value of the "policy" key; validates before returning.
Expected<PolicyWeights> parsePolicyWeights(std::string_view json);
// The "policy" value, compact JSON.
std::string policyWeightsToJson(const PolicyWeights& w, WeightEncoding encoding = WeightEncoding::Numbers);

}  // namespace dynamiccl::learned
