#include "plugin/tuner/cost_table_edit.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dynamiccl::plugin {

TableVerdict inspectCostTable(abi::CostTable table) {
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (!std::isfinite(table[a][p])) return TableVerdict::NonFinite;
  return TableVerdict::Usable;
}

int ncclOwnChoice(abi::CostTable table) {
  // NCCL's rule: the strict minimum below 3.6e9 us over entries >= 0 (IGNORE and negatives skipped),
  // ties to the lowest index. On the hot path: SSE2 (x86-64's baseline) finds it without a chain of
  // 21 dependent compares (guarded getCollInfo 35 ns against 44 ns with the scalar loop below).
  constexpr int kSlots = kNumAlgos * kNumProtos;
  constexpr float kNever = 3600000000.0f;
  const float* cost = table[0];  // float[7][3] is contiguous
#if defined(__SSE2__)
  static_assert(kSlots == 21, "five full vectors and one lane");
  const __m128 never = _mm_set1_ps(kNever), zero = _mm_setzero_ps();
  __m128 v[6];
  for (int k = 0; k < 5; ++k) v[k] = _mm_loadu_ps(cost + 4 * k);
  v[5] = _mm_setr_ps(cost[20], kNever, kNever, kNever);
  for (__m128& x : v) {
    const __m128 usable = _mm_cmpge_ps(x, zero);
    x = _mm_or_ps(_mm_and_ps(usable, x), _mm_andnot_ps(usable, never));
  }
  __m128 m = _mm_min_ps(_mm_min_ps(_mm_min_ps(v[0], v[1]), _mm_min_ps(v[2], v[3])), _mm_min_ps(v[4], v[5]));
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_min_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));  // every lane: the minimum
  if (!(_mm_cvtss_f32(m) < kNever)) return policy::kNcclChoiceUnknown;
  uint32_t holders = 0;
  for (int k = 0; k < 6; ++k) holders |= static_cast<uint32_t>(_mm_movemask_ps(_mm_cmpeq_ps(v[k], m))) << (4 * k);
  return __builtin_ctz(holders);
#else
  int best = policy::kNcclChoiceUnknown;
  float least = kNever;
  for (int i = 0; i < kSlots; ++i)
    if (cost[i] >= 0.0f && cost[i] < least) least = cost[i], best = i;
  return best;
#endif
}

const policy::Decision* applyCandidates(const policy::Candidates& candidates, abi::CostTable table, int* nChannels) {
  int ncclSlot = -1;  // NCCL's own choice, found once and only for guarded candidates
  for (int i = 0; i < candidates.count; ++i) {
    const policy::Decision& d = candidates.decisions[i];
    if (candidates.guarded(i)) {
      if (ncclSlot < 0) ncclSlot = ncclOwnChoice(table);
      if (!candidates.admitted(i, ncclSlot)) continue;
    }
    if (d.keepsAlgoProto()) {
      if (d.nChannels > 0) *nChannels = d.nChannels;
      return &d;
    }
    const int a = static_cast<int>(d.algo), p = static_cast<int>(d.proto);
    if (!(table[a][p] >= 0.0f)) continue;  // IGNORE (-1) or any negative: NCCL cannot run it
    // NCCL picks the strict minimum with ties to the lowest index: no earlier entry may also be 0.
    for (int k = 0; k < a * kNumProtos + p; ++k) {
      float& e = table[k / kNumProtos][k % kNumProtos];
      if (e == 0.0f) e = FLT_MIN;
    }
    table[a][p] = 0.0f;
    if (d.nChannels > 0) *nChannels = d.nChannels;
    return &d;
  }
  return nullptr;
}

const policy::Decision* firstFeasibleV2(const policy::Candidates& candidates, bool nvlsSupport, bool collNetSupport,
                                        int nNodes) {
  for (int i = 0; i < candidates.count; ++i) {
    const policy::Decision& d = candidates.decisions[i];
    if (!candidates.admitted(i, policy::kNcclChoiceUnknown)) continue;  // a guard needs NCCL's choice: not told here
    const bool nvls = d.algo == Algo::Nvls || d.algo == Algo::NvlsTree;
    const bool collnet = d.algo == Algo::CollNetDirect || d.algo == Algo::CollNetChain;
    if ((nvls && !nvlsSupport) || (collnet && !collNetSupport)) continue;
    if (d.algo == Algo::Nvls && nNodes > 1 && !collNetSupport) continue;
    if (d.algo == Algo::NvlsTree && nNodes <= 1) continue;
    return &d;
  }
  return nullptr;
}

}  // namespace dynamiccl::plugin
