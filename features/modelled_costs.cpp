// Recovering NCCL's modelled latency and bandwidth from its cost table at two sizes.
#include <cmath>

#include "features/topology_fingerprint.h"

namespace dynamiccl {

ModelledCosts recoverModelledCosts(const float (&small)[7][3], uint64_t smallBytes, const float (&large)[7][3],
                                   uint64_t largeBytes) {
  ModelledCosts m;
  if (largeBytes <= smallBytes) return m;
  const double dBytes = static_cast<double>(largeBytes - smallBytes);
  for (int a = 0; a < 7; ++a)
    for (int p = 0; p < 3; ++p) {
      const double t1 = small[a][p], t2 = large[a][p];
      // IGNORE (-1), NaN, or a table that does not grow with size says nothing about bandwidth.
      if (!std::isfinite(t1) || !std::isfinite(t2) || t1 < 0 || t2 <= t1) continue;
      const double bytesPerUs = dBytes / (t2 - t1);
      const double lat = t1 - static_cast<double>(smallBytes) / bytesPerUs;
      m.bw_GBps[a][p] = static_cast<float>(bytesPerUs / 1e3);
      m.lat_us[a][p] = static_cast<float>(lat > 0 ? lat : 0.0);
      m.valid[a][p] = true;
    }
  return m;
}

}  // namespace dynamiccl
