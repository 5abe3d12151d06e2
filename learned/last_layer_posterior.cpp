#include "learned/last_layer_posterior.h"

#include <Eigen/Dense>

namespace dynamiccl::learned {

struct LastLayerPosterior::State {
  int d = 0;                    // features + 1 (the bias)
  double noiseVariance = 1;
  Eigen::MatrixXd priorPrecision;
  Eigen::VectorXd priorShift;   // priorPrecision * priorMean
  Eigen::MatrixXd precision;    // accumulated: prior + observations
  Eigen::VectorXd shift;
  Eigen::VectorXd mean;         // posterior
  Eigen::MatrixXd covariance;

  Eigen::VectorXd augmented(std::span<const float> phi) const {
    Eigen::VectorXd x(d);
    for (int i = 0; i + 1 < d; ++i) x(i) = phi[static_cast<size_t>(i)];
    x(d - 1) = 1.0;
    return x;
  }
};

LastLayerPosterior::LastLayerPosterior(std::span<const float> priorMean, std::span<const float> priorCovariance,
                                       double priorVariance, double noiseVariance)
    : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.d = static_cast<int>(priorMean.size());
  s.noiseVariance = noiseVariance > 0 ? noiseVariance : 1.0;
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(s.d, s.d);
  if (priorCovariance.size() == static_cast<size_t>(s.d) * s.d)
    for (int r = 0; r < s.d; ++r)
      for (int c = 0; c < s.d; ++c) cov(r, c) = priorCovariance[static_cast<size_t>(r) * s.d + c];
  cov.diagonal().array() += priorVariance > 0 ? priorVariance : 1.0;
  Eigen::VectorXd m(s.d);
  for (int i = 0; i < s.d; ++i) m(i) = priorMean[static_cast<size_t>(i)];
  s.priorPrecision = cov.ldlt().solve(Eigen::MatrixXd::Identity(s.d, s.d));
  s.priorPrecision = 0.5 * (s.priorPrecision + s.priorPrecision.transpose());
  s.priorShift = s.priorPrecision * m;
  s.mean = m;
  s.covariance = cov;
  reset();
}

LastLayerPosterior::~LastLayerPosterior() = default;
LastLayerPosterior::LastLayerPosterior(LastLayerPosterior&&) noexcept = default;
LastLayerPosterior& LastLayerPosterior::operator=(LastLayerPosterior&&) noexcept = default;

int LastLayerPosterior::features() const { return s_->d - 1; }

void LastLayerPosterior::reset() {
  s_->precision = s_->priorPrecision;
  s_->shift = s_->priorShift;
}

void LastLayerPosterior::add(std::span<const float> phi, double mean, double weight) {
  if (!(weight > 0) || phi.size() + 1 != static_cast<size_t>(s_->d)) return;
  const Eigen::VectorXd x = s_->augmented(phi);
  const double w = weight / s_->noiseVariance;
  s_->precision.selfadjointView<Eigen::Lower>().rankUpdate(x, w);
  s_->shift += w * mean * x;
}

bool LastLayerPosterior::solve() {
  State& s = *s_;
  // rankUpdate filled the lower triangle only.
  const Eigen::MatrixXd p = s.precision.selfadjointView<Eigen::Lower>();
  Eigen::LLT<Eigen::MatrixXd> llt(p);
  if (llt.info() != Eigen::Success) return false;
  s.mean = llt.solve(s.shift);
  s.covariance = llt.solve(Eigen::MatrixXd::Identity(s.d, s.d));
  return s.mean.allFinite() && s.covariance.allFinite();
}

double LastLayerPosterior::mean(std::span<const float> phi) const { return s_->mean.dot(s_->augmented(phi)); }

double LastLayerPosterior::variance(std::span<const float> phi) const {
  const Eigen::VectorXd x = s_->augmented(phi);
  return x.dot(s_->covariance * x);
}

double LastLayerPosterior::differenceMean(std::span<const float> a, std::span<const float> b) const {
  return mean(a) - mean(b);
}

double LastLayerPosterior::differenceVariance(std::span<const float> a, std::span<const float> b) const {
  Eigen::VectorXd x = s_->augmented(a) - s_->augmented(b);
  return x.dot(s_->covariance * x);
}

}  // namespace dynamiccl::learned
