// Hyperband's bracket arithmetic (Li et al. 2018). The resource is the number of timed
// iterations a configuration gets; each bracket runs successive halving from many cheap
// evaluations to few full ones.
#pragma once

#include <cstdint>
#include <vector>

namespace dynamiccl::tune {

struct HyperbandRung {
  int configs = 0;     // n_i = floor(n * eta^-i)
  int iterations = 0;  // r_i = r * eta^i
};

struct HyperbandBracket {
  int s = 0;
  std::vector<HyperbandRung> rungs;
  int64_t cost() const;  // iterations if every rung is run from scratch (an upper bound: samples are reused)
};

// s_max = floor(log_eta(R)).
int hyperbandMaxS(int maxIterations, int eta);
// Brackets s = s_max .. 0: n = ceil((s_max+1)/(s+1) * eta^s), r = R * eta^-s.
std::vector<HyperbandBracket> hyperbandBrackets(int maxIterations, int eta);

}  // namespace dynamiccl::tune
