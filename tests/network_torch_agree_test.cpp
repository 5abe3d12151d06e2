// The plugin's Eigen evaluator and LibTorch compute the same network on the same weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "policy/policy.h"
#include "learned/learned.h"
#include "offline/train/train.h"

namespace dynamiccl {
namespace {

TEST(EigenMatchesLibTorch, SameWeightsSameOutputs) {
  train::TrainOptions o;
  o.seed = 7;
  auto weights = train::torchInitialWeights(o);
  ASSERT_TRUE(weights.ok()) << weights.error();
  weights->targetMean = 2.5f;
  weights->targetStd = 1.7f;
  auto net = learned::PolicyNetwork::create(*weights);
  ASSERT_TRUE(net.ok()) << net.error();
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int n = 64, in = (*net)->inputs();
  std::vector<float> rows(n * in);
  for (float& x : rows) x = u(rng);
  for (int trial = 0; trial < 3; ++trial) {
    float window[kTimingWindowLength];
    for (float& x : window) x = trial == 0 ? 0.0f : u(rng);
    std::vector<float> hidden((*net)->gruHidden()), eigen(n);
    (*net)->encodeWindow(window, hidden.data());
    (*net)->predictLogLatency_us(rows.data(), n, hidden.data(), eigen.data());
    auto torch = train::torchPredictLogLatency_us(*weights, rows.data(), n, window);
    ASSERT_TRUE(torch.ok()) << torch.error();
    double maxDiff = 0;
    for (int i = 0; i < n; ++i) maxDiff = std::max(maxDiff, std::abs(double(eigen[i]) - double((*torch)[i])));
    EXPECT_LT(maxDiff, 1e-5) << "trial " << trial;
  }
}

TEST(EigenMatchesLibTorch, AfterAShortTrainingRun) {
  auto sys = train::SimSystem::make(*train::findPreset("dgx-h100x2"));
  ASSERT_TRUE(sys.ok()) << sys.error();
  train::RolloutOptions ro;
  ro.keysPerSystem = 40;
  const auto rows = train::simulatorRollouts({*sys}, ro);
  ASSERT_GT(rows.size(), 100u);
  train::TrainOptions o;
  o.epochs = 2;
  auto weights = train::trainPolicyNetwork(rows, rows, {}, o, nullptr);
  ASSERT_TRUE(weights.ok()) << weights.error();
  auto net = learned::PolicyNetwork::create(*weights);
  ASSERT_TRUE(net.ok());
  const train::Sample& s = rows[5];
  float eigen = 0;
  std::vector<float> hidden((*net)->gruHidden());
  (*net)->encodeWindow(s.window, hidden.data());
  (*net)->predictLogLatency_us(s.inputs, 1, hidden.data(), &eigen);
  auto torch = train::torchPredictLogLatency_us(*weights, s.inputs, 1, s.window);
  ASSERT_TRUE(torch.ok());
  EXPECT_LT(std::abs(eigen - (*torch)[0]), 1e-5);
}

}  // namespace
}  // namespace dynamiccl
