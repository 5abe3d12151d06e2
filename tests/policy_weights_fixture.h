// Policy network weights for tests and benchmarks: seeded random ones of any hidden sizes, and the
// all-zero tensors hand-made networks start from.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "learned/learned.h"

namespace dynamiccl::fixture {

inline learned::Tensor zeroTensor(std::vector<int> shape) {
  size_t n = 1;
  for (int d : shape) n *= d;
  return learned::Tensor{shape, std::vector<float>(n, 0.0f)};
}

// A GRU that contributes nothing: hand-made networks then depend on the MLP alone.
inline void zeroGru(learned::PolicyWeights& w) {
  const int h = w.gruHidden;
  w.tensors["gru.weight_ih"] = zeroTensor({3 * h, 1});
  w.tensors["gru.weight_hh"] = zeroTensor({3 * h, h});
  w.tensors["gru.bias_ih"] = zeroTensor({3 * h});
  w.tensors["gru.bias_hh"] = zeroTensor({3 * h});
}

// Valid weights with small seeded values; `hidden` empty keeps the default MLP dimensions.
inline learned::PolicyWeights randomPolicyWeights(uint64_t seed, std::vector<int> hidden = {}) {
  learned::PolicyWeights w;
  if (!hidden.empty()) w.mlpHidden = std::move(hidden);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 0.3f);
  auto tensor = [&](std::vector<int> shape) {
    learned::Tensor t = zeroTensor(shape);
    for (float& v : t.data) v = n(rng);
    return t;
  };
  const int h = w.gruHidden;
  w.tensors["gru.weight_ih"] = tensor({3 * h, 1});
  w.tensors["gru.weight_hh"] = tensor({3 * h, h});
  w.tensors["gru.bias_ih"] = tensor({3 * h});
  w.tensors["gru.bias_hh"] = tensor({3 * h});
  int in = w.mlpInputs();
  for (size_t i = 0; i <= w.mlpHidden.size(); ++i) {
    const int out = i < w.mlpHidden.size() ? w.mlpHidden[i] : 1;
    w.tensors["mlp." + std::to_string(i) + ".weight"] = tensor({out, in});
    w.tensors["mlp." + std::to_string(i) + ".bias"] = tensor({out});
    in = out;
  }
  w.targetMean = 3.0f;
  return w;
}

}  // namespace dynamiccl::fixture
