#include "offline/tune/hyperband.h"

#include <algorithm>

namespace dynamiccl::tune {

int64_t HyperbandBracket::cost() const {
  int64_t c = 0;
  for (const HyperbandRung& r : rungs) c += int64_t{r.configs} * r.iterations;
  return c;
}

int hyperbandMaxS(int maxIterations, int eta) {
  if (eta < 2 || maxIterations < 1) return 0;
  int s = 0;
  for (int64_t p = eta; p <= maxIterations; p *= eta) ++s;
  return s;
}

std::vector<HyperbandBracket> hyperbandBrackets(int maxIterations, int eta) {
  std::vector<HyperbandBracket> out;
  if (eta < 2 || maxIterations < 1) return out;
  const int sMax = hyperbandMaxS(maxIterations, eta);
  for (int s = sMax; s >= 0; --s) {
    int64_t etaS = 1;
    for (int i = 0; i < s; ++i) etaS *= eta;
    HyperbandBracket b;
    b.s = s;
    // Integer form of ceil((s_max+1) * eta^s / (s+1)).
    const int64_t n = ((sMax + 1) * etaS + s) / (s + 1);
    const int64_t r = std::max<int64_t>(1, maxIterations / etaS);
    int64_t etaI = 1;
    for (int i = 0; i <= s; ++i, etaI *= eta) {
      const int configs = static_cast<int>(std::max<int64_t>(1, n / etaI));
      const int iters = i == s ? maxIterations : static_cast<int>(std::min<int64_t>(maxIterations, r * etaI));
      b.rungs.push_back({configs, iters});
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace dynamiccl::tune
