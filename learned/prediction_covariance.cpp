#include "learned/prediction_covariance.h"

#include <cmath>

#include "learned/dense_kernel.h"

namespace dynamiccl::learned {

std::optional<PredictionCovariance> PredictionCovariance::of(const PolicyWeights& w) {
  const int e = w.embeddingSize();
  const size_t n = static_cast<size_t>(e) + 1;
  if (e <= 0 || w.lastLayerCovariance.size() != n * n) return std::nullopt;
  PredictionCovariance c;
  c.width_ = e;
  c.targetStd_ = w.targetStd;
  // Cholesky (in double) of the weights' block: the bias cancels in a difference. A non-positive
  // pivot (the matrix is only semi-definite there) leaves that column zero rather than failing.
  std::vector<double> L(static_cast<size_t>(e) * e, 0.0);
  for (int j = 0; j < e; ++j) {
    double d = w.lastLayerCovariance[j * n + j];
    for (int k = 0; k < j; ++k) d -= L[j * e + k] * L[j * e + k];
    if (!(d > 1e-300)) continue;
    const double root = std::sqrt(d);
    L[j * e + j] = root;
    for (int i = j + 1; i < e; ++i) {
      double s = w.lastLayerCovariance[i * n + j];
      for (int k = 0; k < j; ++k) s -= L[i * e + k] * L[j * e + k];
      L[i * e + j] = s / root;
    }
  }
  c.factor_.assign(L.begin(), L.end());
  c.zeros_.assign(e, 0.0f);
  return c;
}

void PredictionCovariance::project(std::span<const float> embeddings, float* out) const {
  // out = x L (a row x's L^T x): x^T Sigma x = |L^T x|^2.
  const int rows = static_cast<int>(embeddings.size() / width_);
  denseLayer(embeddings.data(), rows, width_, factor_.data(), zeros_.data(), width_, /*relu=*/false, out);
}

double PredictionCovariance::differenceSd_log(const float* a, const float* b) const {
  double s = 0;
  for (int k = 0; k < width_; ++k) {
    const double d = static_cast<double>(a[k]) - b[k];
    s += d * d;
  }
  return targetStd_ * std::sqrt(s);
}

}  // namespace dynamiccl::learned
