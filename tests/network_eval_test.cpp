// Batched network evaluation at rule generation: the same numbers as the per-row forward pass (up
// to rounding), and bit-identical whatever the CPU's vector width or the batch a pair sits in, since
// every rank of a communicator must generate the same rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "learned/dense_kernel.h"
#include "policy/policy.h"
#include "tests/policy_weights_fixture.h"

namespace dynamiccl {
namespace {

learned::PolicyWeights randomWeights(uint64_t seed, std::vector<int> hidden = {64, 64}) {
  learned::PolicyWeights w = fixture::randomPolicyWeights(seed, std::move(hidden));
  w.targetStd = 2.0f;
  return w;
}

// The documented order: products summed for i ascending, then the bias, then ReLU.
std::vector<float> referenceLayer(const std::vector<float>& x, int rows, int in, const std::vector<float>& wT,
                                  const std::vector<float>& b, int out, bool relu) {
  std::vector<float> y(static_cast<size_t>(rows) * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (int i = 0; i < in; ++i) acc += x[r * in + i] * wT[i * out + o];
      float v = acc + b[o];
      y[r * out + o] = relu && !(v > 0.0f) ? 0.0f : v;
    }
  return y;
}

TEST(DenseKernel, EveryPathGivesTheSameBitsAsTheScalarOrder) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int rows : {1, 3, 4, 5, 8, 9, 17})
    for (int in : {1, 7, 38, 64})
      for (int out : {1, 7, 8, 9, 16, 17, 64})
        for (bool relu : {false, true}) {
          std::vector<float> x(rows * in), wT(in * out), b(out);
          for (float& v : x) v = n(rng);
          for (float& v : wT) v = n(rng);
          for (float& v : b) v = n(rng);
          const std::vector<float> want = referenceLayer(x, rows, in, wT, b, out, relu);
          std::vector<float> got(want.size(), NAN), baseline(want.size(), NAN);
          learned::denseLayer(x.data(), rows, in, wT.data(), b.data(), out, relu, got.data());
          learned::denseLayerBaseline(x.data(), rows, in, wT.data(), b.data(), out, relu, baseline.data());
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
              << rows << "x" << in << "->" << out << " relu " << relu;
          ASSERT_EQ(0, std::memcmp(baseline.data(), want.data(), want.size() * sizeof(float)))
              << rows << "x" << in << "->" << out << " relu " << relu;
        }
}

struct Grid {
  std::vector<float> keyRows, configRows;
  std::vector<learned::PairIndex> pairs;
  int nKeys = 0, nConfigs = 0;
};

Grid randomGrid(const learned::PolicyNetwork& net, int nKeys, int nConfigs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Grid g;
  g.nKeys = nKeys;
  g.nConfigs = nConfigs;
  g.keyRows.resize(static_cast<size_t>(nKeys) * net.keyInputs());
  g.configRows.resize(static_cast<size_t>(nConfigs) * kConfigFeatures);
  for (float& v : g.keyRows) v = u(rng);
  for (float& v : g.configRows) v = u(rng);
  for (int k = 0; k < nKeys; ++k)
    for (int c = 0; c < nConfigs; ++c) g.pairs.push_back({k, c});
  return g;
}

TEST(PairEvaluation, AgreesWithThePerRowForwardPass) {
  for (std::vector<int> hidden : {std::vector<int>{64, 64}, std::vector<int>{16}, std::vector<int>{24, 9, 33}}) {
    auto net = learned::PolicyNetwork::create(randomWeights(5, hidden));
    ASSERT_TRUE(net.ok()) << net.error();
    const learned::PolicyNetwork& n = **net;
    const Grid g = randomGrid(n, 37, 11, 6);  // 407 pairs: more than one block of 256
    std::vector<float> pairs(g.pairs.size());
    n.predictPairsLogLatency_us(g.keyRows.data(), g.nKeys, g.configRows.data(), g.nConfigs, g.pairs, pairs.data());
    const int ctx = kContextFeatures, h = n.gruHidden();
    for (size_t i = 0; i < g.pairs.size(); ++i) {
      // The per-row layout: [context | config], the GRU state passed apart.
      const float* key = g.keyRows.data() + static_cast<size_t>(g.pairs[i].key) * n.keyInputs();
      std::vector<float> row(key, key + ctx);
      const float* cfg = g.configRows.data() + static_cast<size_t>(g.pairs[i].config) * kConfigFeatures;
      row.insert(row.end(), cfg, cfg + kConfigFeatures);
      float single = 0;
      n.predictLogLatency_us(row.data(), 1, key + ctx, &single);
      ASSERT_NEAR(pairs[i], single, 1e-4f * (1.0f + std::fabs(single))) << "pair " << i << ", " << h << " GRU";
    }
  }
}

TEST(PairEvaluation, APairsResultDoesNotDependOnItsBatch) {
  auto net = learned::PolicyNetwork::create(randomWeights(7));
  ASSERT_TRUE(net.ok());
  const learned::PolicyNetwork& n = **net;
  const Grid g = randomGrid(n, 29, 13, 8);
  std::vector<float> all(g.pairs.size());
  n.predictPairsLogLatency_us(g.keyRows.data(), g.nKeys, g.configRows.data(), g.nConfigs, g.pairs, all.data());
  // Alone, or in a reversed batch, each pair passes through other tiles and blocks: same bits.
  std::vector<learned::PairIndex> reversed(g.pairs.rbegin(), g.pairs.rend());
  std::vector<float> back(reversed.size());
  n.predictPairsLogLatency_us(g.keyRows.data(), g.nKeys, g.configRows.data(), g.nConfigs, reversed, back.data());
  for (size_t i = 0; i < g.pairs.size(); ++i) {
    float alone = NAN;
    n.predictPairsLogLatency_us(g.keyRows.data(), g.nKeys, g.configRows.data(), g.nConfigs,
                                std::span<const learned::PairIndex>(&g.pairs[i], 1), &alone);
    ASSERT_EQ(0, std::memcmp(&alone, &all[i], sizeof(float))) << "pair " << i;
    ASSERT_EQ(0, std::memcmp(&back[g.pairs.size() - 1 - i], &all[i], sizeof(float))) << "pair " << i;
  }
}

TEST(PairEvaluation, TheOutputLayerIsLinearInTheEmbedding) {
  for (std::vector<int> hidden : {std::vector<int>{64, 64}, std::vector<int>{16}, std::vector<int>{24, 9, 33}}) {
    auto net = learned::PolicyNetwork::create(randomWeights(11, hidden));
    ASSERT_TRUE(net.ok()) << net.error();
    const learned::PolicyNetwork& n = **net;
    ASSERT_EQ(n.embeddingSize(), hidden.back());
    const Grid g = randomGrid(n, 23, 12, 4);
    std::vector<float> scores(g.pairs.size()), emb(g.pairs.size() * n.embeddingSize());
    n.predictPairsLogLatency_us(g.keyRows.data(), g.nKeys, g.configRows.data(), g.nConfigs, g.pairs, scores.data());
    n.embedPairs(g.keyRows.data(), g.nKeys, g.configRows.data(), g.nConfigs, g.pairs, emb.data());
    const auto w = n.outputWeights();
    for (size_t i = 0; i < g.pairs.size(); ++i) {
      double out = n.outputBias();
      for (int j = 0; j < n.embeddingSize(); ++j) {
        ASSERT_GE(emb[i * n.embeddingSize() + j], 0.0f);  // after ReLU
        out += static_cast<double>(w[j]) * emb[i * n.embeddingSize() + j];
      }
      const double predicted = n.weights().targetMean + n.weights().targetStd * out;
      ASSERT_NEAR(scores[i], predicted, 1e-4 * (1.0 + std::fabs(predicted))) << "pair " << i;
    }
  }
}

}  // namespace
}  // namespace dynamiccl
