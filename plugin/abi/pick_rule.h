// NCCL's pick rule: which cost-table entry NCCL runs once the tuner has returned. One home for the
// plugin (hot path: SSE2) and the offline model and harness (scalar); header-only, no allocation.
#pragma once

#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "plugin/abi/nccl_abi.h"

namespace dynamiccl::abi {

// Which release's rule. 2.31 takes the lowest cost without skipping negative entries, over slots
// it alone knows to be valid (NCCL_FACTS.md): a table does not say which, so only 2.28's is here.
enum class PickRule : uint8_t { Nccl2_28 };

inline constexpr int kCostSlots = DYNAMICCL_NCCL_NUM_ALGORITHMS * DYNAMICCL_NCCL_NUM_PROTOCOLS;
inline constexpr float kPickCap_us = 3600000000.0f;  // NCCL's starting minimum: an hour never wins
inline constexpr int kNoPick = -1;                   // every entry IGNORE, negative, NaN or capped

// 2.28 (enqueue.cc topoGetAlgoInfo): the strict minimum below the cap over entries >= 0 (IGNORE,
// negatives and NaN skipped), ties to the lowest slot. cost: the contiguous float[7][3];
// returns the slot algo * 3 + proto, or kNoPick.
inline int pickLowestCostScalar(const float* cost, PickRule = PickRule::Nccl2_28) {
  int best = kNoPick;
  float least = kPickCap_us;
  for (int i = 0; i < kCostSlots; ++i)
    if (cost[i] >= 0.0f && cost[i] < least) least = cost[i], best = i;
  return best;
}

#if defined(__SSE2__)
// The same rule in SSE2 (x86-64's baseline): no chain of 21 dependent compares on the hot path.
inline int pickLowestCostSse2(const float* cost, PickRule = PickRule::Nccl2_28) {
  static_assert(kCostSlots == 21, "five full vectors and one lane");
  const __m128 cap = _mm_set1_ps(kPickCap_us), zero = _mm_setzero_ps();
  __m128 v[6];
  for (int k = 0; k < 5; ++k) v[k] = _mm_loadu_ps(cost + 4 * k);
  v[5] = _mm_setr_ps(cost[20], kPickCap_us, kPickCap_us, kPickCap_us);
  for (__m128& x : v) {  // entries that do not count become the cap (NaN compares false: too)
    const __m128 counts = _mm_cmpge_ps(x, zero);
    x = _mm_or_ps(_mm_and_ps(counts, x), _mm_andnot_ps(counts, cap));
  }
  __m128 m = _mm_min_ps(_mm_min_ps(_mm_min_ps(v[0], v[1]), _mm_min_ps(v[2], v[3])), _mm_min_ps(v[4], v[5]));
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));  // every lane: the minimum
  if (!(_mm_cvtss_f32(m) < kPickCap_us)) return kNoPick;
  uint32_t holders = 0;
  for (int k = 0; k < 6; ++k) holders |= static_cast<uint32_t>(_mm_movemask_ps(_mm_cmpeq_ps(v[k], m))) << (4 * k);
  return __builtin_ctz(holders);  // the lowest slot holding the minimum
}
#endif

// The rule as NCCL applies it, the fastest way this build has.
inline int pickLowestCost(const float* cost, PickRule rule = PickRule::Nccl2_28) {
#if defined(__SSE2__)
  return pickLowestCostSse2(cost, rule);
#else
  return pickLowestCostScalar(cost, rule);
#endif
}

}  // namespace dynamiccl::abi
