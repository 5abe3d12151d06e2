// Robust statistics of repeated timings: medians and trimmed means resist stragglers and
// congestion episodes that would drag a plain mean.
#pragma once

#include <vector>

#include "offline/tune/config.h"

namespace dynamiccl::tune {

double median(std::vector<double> v);
double trimmedMean(std::vector<double> v, double trimFraction = 0.2);  // drops this share at each end
double medianAbsDeviation(const std::vector<double>& v);
// Relative standard error of the median (MAD-based sigma, 1.2533 sigma / sqrt(n)); 0.05 for n < 2.
double relativeStdErrOfMedian(const std::vector<double>& v);

// All samples of one configuration at one key.
struct ConfigStats {
  Config config;
  std::vector<double> samples_us;
  double median_us() const { return median(samples_us); }
  double relSe() const { return relativeStdErrOfMedian(samples_us); }
  int count() const { return static_cast<int>(samples_us.size()); }
};

double standardNormalCdf(double x);

}  // namespace dynamiccl::tune
