#include "policy/prediction_covariance.h"

#include <cmath>

namespace dynamiccl::policy {

std::optional<PredictionCovariance> PredictionCovariance::of(const PolicyWeights& w) {
  const int e = w.embeddingSize();
  const size_t n = static_cast<size_t>(e) + 1;
  if (e <= 0 || w.lastLayerCovariance.size() != n * n) return std::nullopt;
  PredictionCovariance c;
  c.width_ = e;
  c.targetStd_ = w.targetStd;
  // Cholesky of the weights' block (the bias cancels in a difference). A non-positive pivot (the
  // matrix is only semi-definite there) leaves that column zero rather than failing.
  std::vector<double>& L = c.factor_;
  L.assign(static_cast<size_t>(e) * e, 0.0);
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
  return c;
}

void PredictionCovariance::project(std::span<const float> embedding, double* out) const {
  // out = L^T x: x^T Sigma x = |L^T x|^2.
  for (int k = 0; k < width_; ++k) {
    double s = 0;
    for (int i = k; i < width_; ++i) s += factor_[static_cast<size_t>(i) * width_ + k] * embedding[i];
    out[k] = s;
  }
}

double PredictionCovariance::differenceSd_log(const double* a, const double* b) const {
  double s = 0;
  for (int k = 0; k < width_; ++k) s += (a[k] - b[k]) * (a[k] - b[k]);
  return targetStd_ * std::sqrt(s);
}

}  // namespace dynamiccl::policy
