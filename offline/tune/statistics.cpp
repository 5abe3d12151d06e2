#include "offline/tune/statistics.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dynamiccl::tune {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double hi = v[mid];
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + mid));
}

double trimmedMean(std::vector<double> v, double trimFraction) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t drop = static_cast<size_t>(trimFraction * v.size());
  if (2 * drop >= v.size()) return median(v);
  double sum = 0;
  for (size_t i = drop; i < v.size() - drop; ++i) sum += v[i];
  return sum / static_cast<double>(v.size() - 2 * drop);
}

double medianAbsDeviation(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return median(dev);
}

double relativeStdErrOfMedian(const std::vector<double>& v) {
  if (v.size() < 2) return 0.05;  // one sample says nothing about noise: assume a typical 5%
  const double m = median(v);
  if (m <= 0) return 0.05;
  // Floor at 0.5%: a few identical samples must not claim perfect certainty.
  const double sigma = std::max(1.4826 * medianAbsDeviation(v), 0.005 * m);
  return 1.2533 * sigma / std::sqrt(static_cast<double>(v.size())) / m;
}

double standardNormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double meanLog(const std::vector<double>& v) {
  if (v.empty()) return 0.0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return s / static_cast<double>(v.size());
}

double logSumSquares(const std::vector<double>& v) {
  const double m = meanLog(v);
  double s = 0;
  for (double x : v) s += (std::log(x) - m) * (std::log(x) - m);
  return s;
}

double normalQuantile(double p) {
  if (!(p > 0) || !(p < 1)) return p <= 0 ? -INFINITY : INFINITY;
  double lo = -40, hi = 40;  // bisection on the CDF: off the hot path, exact to double precision
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    (standardNormalCdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double studentTQuantile(double p, double df) {
  if (!(df > 0)) return INFINITY;
  if (df < 3) df = std::max(1.0, std::floor(df));  // below 3 the expansion is poor: round down (conservative)
  if (df == 1) return std::tan(std::numbers::pi * (p - 0.5));
  if (df == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
  const double z = normalQuantile(p);
  if (!std::isfinite(df)) return z;
  const double z2 = z * z, v = df;
  return z + z * (z2 + 1) / (4 * v) + z * ((5 * z2 + 16) * z2 + 3) / (96 * v * v) +
         z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / (384 * v * v * v) +
         z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / (92160 * v * v * v * v);
}

double chiSquareQuantile(double p, double df) {
  if (!(df > 0)) return 0;
  const double a = 2.0 / (9.0 * df);
  const double c = 1 - a + normalQuantile(p) * std::sqrt(a);
  return df * c * c * c;
}

}  // namespace dynamiccl::tune
