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

}  // namespace dynamiccl::tune
