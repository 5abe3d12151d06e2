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

}  // namespace dynamiccl::tune
