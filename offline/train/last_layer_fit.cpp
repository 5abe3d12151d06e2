// The Bayesian last layer fitted on the training rows' embeddings (Eigen; no LibTorch needed).
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

#include "offline/train/confidence.h"
#include "learned/learned.h"

namespace dynamiccl::train {

Expected<std::vector<float>> fitLastLayerCovariance(const learned::PolicyWeights& weights,
                                                    const std::vector<Sample>& rows, size_t maxRows) {
  learned::PolicyWeights plain = weights;
  plain.lastLayerCovariance.clear();
  auto net = learned::PolicyNetwork::create(std::move(plain));
  if (!net) return makeError(net.error());
  if (rows.empty()) return makeError("no training rows for the last layer's covariance");
  const size_t n = std::min(rows.size(), std::max<size_t>(1, maxRows));
  const int e = (*net)->embeddingSize(), keyWidth = (*net)->keyInputs(), d = e + 1;
  // Each row is its own key (its context and window) and its own configuration.
  std::vector<float> keyRows(n * keyWidth), configRows(n * kConfigFeatures);
  std::vector<learned::PairIndex> pairs(n);
  std::vector<const Sample*> picked(n);
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = rows[i * rows.size() / n];
    picked[i] = &s;
    std::copy(s.inputs, s.inputs + kContextFeatures, keyRows.begin() + i * keyWidth);
    (*net)->encodeWindow(s.window, keyRows.data() + i * keyWidth + kContextFeatures);
    std::copy(s.inputs + kContextFeatures, s.inputs + kContextFeatures + kConfigFeatures,
              configRows.begin() + i * kConfigFeatures);
    pairs[i] = learned::PairIndex{static_cast<int>(i), static_cast<int>(i)};
  }
  std::vector<float> scores(n), embeddings(n * e);
  (*net)->predictAndEmbedPairs(keyRows.data(), static_cast<int>(n), configRows.data(), static_cast<int>(n), pairs,
                               scores.data(), embeddings.data());
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(d, d);
  double residual = 0, total = 0;
  Eigen::VectorXd x(d);
  for (size_t i = 0; i < n; ++i) {
    const double w = picked[i]->weight;
    if (!(w > 0)) continue;
    for (int j = 0; j < e; ++j) x(j) = embeddings[i * e + j];
    x(e) = 1.0;
    gram.selfadjointView<Eigen::Lower>().rankUpdate(x, w);
    const double r = (picked[i]->logLatency_us - scores[i]) / weights.targetStd;
    residual += w * r * r;
    total += w;
  }
  if (!(total > 0)) return makeError("no weighted training rows for the last layer's covariance");
  const double s2 = std::max(1e-6, residual / total);
  Eigen::MatrixXd precision = gram.selfadjointView<Eigen::Lower>();
  precision.diagonal().array() += s2;  // the unit prior, in units of the noise
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(precision);
  if (ldlt.info() != Eigen::Success) return makeError("the last layer's precision matrix is singular");
  Eigen::MatrixXd cov = s2 * ldlt.solve(Eigen::MatrixXd::Identity(d, d));
  cov = 0.5 * (cov + cov.transpose());
  if (!cov.allFinite()) return makeError("the last layer's covariance is not finite");
  std::vector<float> out(static_cast<size_t>(d) * d);
  for (int r = 0; r < d; ++r)
    for (int c = 0; c < d; ++c) out[static_cast<size_t>(r) * d + c] = static_cast<float>(cov(r, c));
  return out;
}

}  // namespace dynamiccl::train
