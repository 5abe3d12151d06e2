#include "policy/decision_rule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dynamiccl::policy {

Judgement judge(double d, double se, double df, const DecisionRule& rule) {
  const double t = studentTQuantile(rule.confidence, df);
  const double threshold = std::log(1 - rule.minGain);
  Judgement j;
  j.lower = d - t * se;
  j.upper = d + t * se;
  j.faster = j.upper < threshold;
  j.noGain = j.lower >= threshold;
  j.slower = j.lower > -threshold;
  return j;
}

double standardNormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double normalQuantile(double p) {
  if (!(p > 0) || !(p < 1)) return p <= 0 ? -INFINITY : INFINITY;
  double lo = -40, hi = 40;  // bisection on the CDF: exact to double precision
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

}  // namespace dynamiccl::policy
