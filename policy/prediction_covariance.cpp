#include "policy/prediction_covariance.h"

#include <cmath>
#include <cstring>

namespace dynamiccl::policy {
namespace {

using Vec4 = float __attribute__((vector_size(16)));  // SSE2: every x86-64 CPU takes this same path
constexpr int kLanes = 4;

}  // namespace

std::optional<PredictionCovariance> PredictionCovariance::of(const PolicyWeights& w) {
  const int e = w.embeddingSize();
  const size_t n = static_cast<size_t>(e) + 1;
  if (e <= 0 || w.lastLayerCovariance.size() != n * n) return std::nullopt;
  PredictionCovariance c;
  c.width_ = e;
  c.padded_ = (e + kLanes - 1) / kLanes * kLanes;
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
  c.factor_.assign(static_cast<size_t>(e) * c.padded_, 0.0f);
  for (int i = 0; i < e; ++i)
    for (int k = 0; k <= i; ++k) c.factor_[static_cast<size_t>(i) * c.padded_ + k] = static_cast<float>(L[i * e + k]);
  return c;
}

void PredictionCovariance::project(std::span<const float> embedding, float* out) const {
  // out = L^T x (x^T Sigma x = |L^T x|^2), accumulated row by row of L: each out[k] sums over i
  // ascending whatever the vector width, and row i is zero beyond column i.
  std::memset(out, 0, sizeof(float) * padded_);
  for (int i = 0; i < width_; ++i) {
    const Vec4 xi = {embedding[i], embedding[i], embedding[i], embedding[i]};
    const float* row = factor_.data() + static_cast<size_t>(i) * padded_;
    for (int k = 0; k <= i; k += kLanes) {
      Vec4 acc, l;
      std::memcpy(&acc, out + k, sizeof acc);
      std::memcpy(&l, row + k, sizeof l);
      acc += xi * l;
      std::memcpy(out + k, &acc, sizeof acc);
    }
  }
}

double PredictionCovariance::differenceSd_log(const float* a, const float* b) const {
  double s = 0;
  for (int k = 0; k < width_; ++k) {
    const double d = static_cast<double>(a[k]) - b[k];
    s += d * d;
  }
  return targetStd_ * std::sqrt(s);
}

}  // namespace dynamiccl::policy
