// Eigen forward pass of the GRU + MLP, matching torch::nn::GRU (gates r, z, n) and Linear/ReLU.
#include "learned/network_eval.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <vector>

#include "learned/dense_kernel.h"

namespace dynamiccl::learned {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct PolicyNetwork::Layers {
  RowMatrix gruWih, gruWhh;
  Eigen::VectorXf gruBih, gruBhh;
  std::vector<RowMatrix> w;
  std::vector<Eigen::RowVectorXf> b;
  RowMatrix w0Key, w0Config;  // the first layer's columns for [context | GRU state] and for the configuration
  std::vector<RowMatrix> wT;  // each layer's weight transposed (in x out), as denseLayer reads it
};

namespace {

RowMatrix matrixOf(const Tensor& t) {
  return Eigen::Map<const RowMatrix>(t.data.data(), t.shape[0], t.shape[1]);
}
Eigen::VectorXf vectorOf(const Tensor& t) { return Eigen::Map<const Eigen::VectorXf>(t.data.data(), t.shape[0]); }

}  // namespace

PolicyNetwork::PolicyNetwork(PolicyWeights w) : weights_(std::move(w)), layers_(std::make_unique<Layers>()) {
  const auto& t = weights_.tensors;
  layers_->gruWih = matrixOf(t.at("gru.weight_ih"));
  layers_->gruWhh = matrixOf(t.at("gru.weight_hh"));
  layers_->gruBih = vectorOf(t.at("gru.bias_ih"));
  layers_->gruBhh = vectorOf(t.at("gru.bias_hh"));
  for (size_t i = 0; i <= weights_.mlpHidden.size(); ++i) {
    layers_->w.push_back(matrixOf(t.at("mlp." + std::to_string(i) + ".weight")));
    layers_->b.push_back(vectorOf(t.at("mlp." + std::to_string(i) + ".bias")).transpose());
  }
  const RowMatrix& w0 = layers_->w[0];
  const int ctx = weights_.contextFeatures, cfg = weights_.configFeatures, h = weights_.gruHidden;
  layers_->w0Key.resize(w0.rows(), ctx + h);
  layers_->w0Key << w0.leftCols(ctx), w0.rightCols(h);
  layers_->w0Config = w0.middleCols(ctx, cfg);
  for (const RowMatrix& w : layers_->w) layers_->wT.push_back(w.transpose());
  covariance_ = PredictionCovariance::of(weights_);
}

PolicyNetwork::~PolicyNetwork() = default;

namespace {

// Values in range can still overflow together: a forward pass over plain inputs (a quiet timing
// window, features 0 and 1) must give finite scores, embeddings and confidences.
Status forwardPassIsFinite(const PolicyNetwork& net) {
  const PolicyWeights& w = net.weights();
  std::vector<float> window(static_cast<size_t>(w.windowLength), 0.0f), hidden(static_cast<size_t>(w.gruHidden));
  net.encodeWindow(window.data(), hidden.data());
  std::vector<float> keyRows(static_cast<size_t>(2 * net.keyInputs()), 0.0f);
  for (int k = 0; k < 2; ++k) {
    std::fill_n(keyRows.begin() + k * net.keyInputs(), w.contextFeatures, static_cast<float>(k));
    std::copy(hidden.begin(), hidden.end(), keyRows.begin() + k * net.keyInputs() + w.contextFeatures);
  }
  std::vector<float> configRows(static_cast<size_t>(2 * w.configFeatures), 0.0f);
  std::fill(configRows.begin() + w.configFeatures, configRows.end(), 1.0f);
  const PairIndex pairs[] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
  const int e = net.embeddingSize();
  std::vector<float> scores(std::size(pairs)), embeddings(std::size(pairs) * static_cast<size_t>(e));
  net.predictAndEmbedPairs(keyRows.data(), 2, configRows.data(), 2, pairs, scores.data(), embeddings.data());
  auto finite = [](const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
  };
  if (!finite(hidden) || !finite(scores) || !finite(embeddings))
    return makeError("values out of range: the network's outputs overflow on plain inputs");
  if (const PredictionCovariance* c = net.covariance()) {
    std::vector<float> projected(embeddings.size());
    c->project(embeddings, projected.data());
    if (!finite(projected) || !std::isfinite(c->differenceSd_log(projected.data(), projected.data() + e)))
      return makeError("covariance unusable: the confidence it gives overflows on plain inputs");
  }
  return Ok{};
}

}  // namespace

Expected<std::shared_ptr<const PolicyNetwork>> PolicyNetwork::create(PolicyWeights weights) {
  if (auto s = validatePolicyWeights(weights); !s) return makeError(s.error());
  try {
    auto net = std::shared_ptr<const PolicyNetwork>(new PolicyNetwork(std::move(weights)));
    if (auto s = forwardPassIsFinite(*net); !s) return makeError(s.error());
    return net;
  } catch (const std::exception& e) {
    return makeError(std::string("policy network: ") + e.what());
  }
}

void PolicyNetwork::encodeWindow(const float* window, float* hidden) const {
  const int h = weights_.gruHidden;
  const Layers& L = *layers_;
  Eigen::VectorXf state = Eigen::VectorXf::Zero(h);
  auto sigmoid = [](const Eigen::VectorXf& x) -> Eigen::VectorXf { return (1.0f + (-x.array()).exp()).inverse().matrix(); };
  for (int step = 0; step < weights_.windowLength; ++step) {
    const Eigen::VectorXf gi = L.gruWih.col(0) * window[step] + L.gruBih;
    const Eigen::VectorXf gh = L.gruWhh * state + L.gruBhh;
    const Eigen::VectorXf r = sigmoid(gi.segment(0, h) + gh.segment(0, h));
    const Eigen::VectorXf z = sigmoid(gi.segment(h, h) + gh.segment(h, h));
    const Eigen::VectorXf n = (gi.segment(2 * h, h).array() + r.array() * gh.segment(2 * h, h).array()).tanh().matrix();
    state = ((1.0f - z.array()) * n.array() + z.array() * state.array()).matrix();
  }
  Eigen::Map<Eigen::VectorXf>(hidden, h) = state;
}

void PolicyNetwork::predictLogLatency_us(const float* rows, int n, const float* hidden, float* out) const {
  const Layers& L = *layers_;
  const int in = inputs(), h = weights_.gruHidden;
  RowMatrix x(n, in + h);
  x.leftCols(in) = Eigen::Map<const RowMatrix>(rows, n, in);
  x.rightCols(h).rowwise() = Eigen::Map<const Eigen::RowVectorXf>(hidden, h);
  for (size_t i = 0; i < L.w.size(); ++i) {
    RowMatrix y = x * L.w[i].transpose();
    y.rowwise() += L.b[i];
    if (i + 1 < L.w.size()) y = y.cwiseMax(0.0f);
    x = std::move(y);
  }
  for (int r = 0; r < n; ++r) out[r] = weights_.targetMean + weights_.targetStd * x(r, 0);
}

int PolicyNetwork::embeddingSize() const { return static_cast<int>(layers_->w.back().cols()); }

std::span<const float> PolicyNetwork::outputWeights() const {
  return {layers_->w.back().data(), static_cast<size_t>(layers_->w.back().cols())};
}

float PolicyNetwork::outputBias() const { return layers_->b.back()(0); }

void PolicyNetwork::predictPairsLogLatency_us(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                                              std::span<const PairIndex> pairs, float* out) const {
  forwardPairs(keyRows, nKeys, configRows, nConfigs, pairs, out, nullptr);
}

void PolicyNetwork::embedPairs(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                               std::span<const PairIndex> pairs, float* out) const {
  forwardPairs(keyRows, nKeys, configRows, nConfigs, pairs, nullptr, out);
}

void PolicyNetwork::predictAndEmbedPairs(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                                         std::span<const PairIndex> pairs, float* scores, float* embeddings) const {
  forwardPairs(keyRows, nKeys, configRows, nConfigs, pairs, scores, embeddings);
}

void PolicyNetwork::forwardPairs(const float* keyRows, int nKeys, const float* configRows, int nConfigs,
                                 std::span<const PairIndex> pairs, float* scores, float* embeddings) const {
  const Layers& L = *layers_;
  RowMatrix keyPart = Eigen::Map<const RowMatrix>(keyRows, nKeys, keyInputs()) * L.w0Key.transpose();
  keyPart.rowwise() += L.b[0];
  const RowMatrix configPart =
      Eigen::Map<const RowMatrix>(configRows, nConfigs, weights_.configFeatures) * L.w0Config.transpose();
  // Blocks of pairs small enough to stay in cache; the layers after the first go through
  // denseLayer, whose results do not depend on the CPU's vector width.
  constexpr int kBlock = 256;
  int widest = 1;
  for (const RowMatrix& w : L.w) widest = std::max(widest, static_cast<int>(w.rows()));
  std::vector<float> a(static_cast<size_t>(kBlock) * widest), b(a.size());
  const int total = static_cast<int>(pairs.size());
  const size_t layers = L.w.size() - 1;  // the hidden layers; the output layer below
  const int width = embeddingSize();
  for (int begin = 0; begin < total; begin += kBlock) {
    const int n = std::min(kBlock, total - begin);
    const int width0 = static_cast<int>(L.w[0].rows());
    Eigen::Map<RowMatrix> first(a.data(), n, width0);
    for (int r = 0; r < n; ++r) {
      const PairIndex& p = pairs[begin + r];
      first.row(r) = (keyPart.row(p.key) + configPart.row(p.config)).cwiseMax(0.0f);
    }
    float *x = a.data(), *y = b.data();
    for (size_t i = 1; i < layers; ++i) {
      denseLayer(x, n, static_cast<int>(L.w[i].cols()), L.wT[i].data(), L.b[i].data(), static_cast<int>(L.w[i].rows()),
                 /*relu=*/true, y);
      std::swap(x, y);
    }
    if (embeddings) std::copy(x, x + static_cast<size_t>(n) * width, embeddings + static_cast<size_t>(begin) * width);
    if (scores) {
      denseLayer(x, n, static_cast<int>(L.w[layers].cols()), L.wT[layers].data(), L.b[layers].data(), 1, /*relu=*/false, y);
      for (int r = 0; r < n; ++r) scores[begin + r] = weights_.targetMean + weights_.targetStd * y[r];
    }
  }
}

}  // namespace dynamiccl::learned
